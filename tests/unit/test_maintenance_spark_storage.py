"""The Spark driver's storage options (``irc_proxy/maintenance_spark.py``): what a table load's REST config becomes
for Hadoop's S3A, so the driver reads and writes S3 with the credentials the proxy vends to its run."""

from __future__ import annotations

from irc_proxy.maintenance_spark import s3a_options, storage_config

VENDED = {
    "s3.access-key-id": "ASIAVENDED",
    "s3.secret-access-key": "vended-secret",
    "s3.session-token": "vended-token",
    "s3.endpoint": "http://127.0.0.1:5000",
    "s3.path-style-access": "true",
    "client.region": "eu-west-1",
}


def test_vended_session_credentials_become_the_catalogs_s3a_options() -> None:
    options = s3a_options("s3://lake/wh/sales/orders", VENDED)
    assert options["io-impl"] == "org.apache.iceberg.hadoop.HadoopFileIO"
    assert {options[f"hadoop.fs.{scheme}.impl"] for scheme in ("s3", "s3a", "s3n")} == {
        "org.apache.hadoop.fs.s3a.S3AFileSystem"
    }
    assert options["hadoop.fs.s3a.access.key"] == "ASIAVENDED"
    assert options["hadoop.fs.s3a.secret.key"] == "vended-secret"
    assert options["hadoop.fs.s3a.session.token"] == "vended-token"
    assert options["hadoop.fs.s3a.aws.credentials.provider"].endswith(".TemporaryAWSCredentialsProvider")
    assert options["hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:5000"
    assert options["hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert options["hadoop.fs.s3a.path.style.access"] == "true"
    assert options["hadoop.fs.s3a.endpoint.region"] == "eu-west-1"


def test_without_vending_no_keys_are_set_and_s3a_keeps_its_own_chain() -> None:
    options = s3a_options("s3a://lake/wh/t", {})
    assert options["io-impl"] == "org.apache.iceberg.hadoop.HadoopFileIO"
    assert not [key for key in options if "key" in key or "token" in key or "provider" in key]
    assert "hadoop.fs.s3a.endpoint" not in options and "hadoop.fs.s3a.connection.ssl.enabled" not in options


def test_tables_off_s3_get_no_storage_options() -> None:
    assert s3a_options("file:///data/wh/t", VENDED) == {}
    assert s3a_options("gs://bucket/wh/t", VENDED) == {}


def test_the_longest_storage_credential_prefix_covering_the_table_wins_over_the_config() -> None:
    loaded = {
        "metadata": {"location": "s3://lake/wh/sales/orders"},
        "config": {"s3.endpoint": "http://s3.local", "s3.access-key-id": "from-config"},
        "storage-credentials": [
            {"prefix": "s3://lake/wh", "config": {"s3.access-key-id": "bucket-wide"}},
            {"prefix": "s3://lake/wh/sales/orders", "config": {"s3.access-key-id": "the-table"}},
            {"prefix": "s3://other/wh/sales/orders/x", "config": {"s3.access-key-id": "elsewhere"}},
        ],
    }
    assert storage_config(loaded) == {"s3.endpoint": "http://s3.local", "s3.access-key-id": "the-table"}
