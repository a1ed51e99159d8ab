"""Which tables a Glue change event (as EventBridge puts it in an SQS message) names."""

from __future__ import annotations

from irc_proxy.backends.glue_events import changed_tables

ACCOUNT = "123456789012"


def _event(detail_type: str, detail: dict[str, object], account: str = ACCOUNT) -> dict[str, object]:
    return {"source": "aws.glue", "detail-type": detail_type, "account": account, "detail": detail}


def test_a_table_state_change_names_its_table() -> None:
    event = _event(
        "Glue Data Catalog Table State Change",
        {"databaseName": "db", "tableName": "t", "typeOfChange": "UpdateTable"},
    )
    assert changed_tables(event, ACCOUNT) == [("db", "t")]


def test_a_database_state_change_names_its_changed_tables() -> None:
    event = _event(
        "Glue Data Catalog Database State Change",
        {"databaseName": "db", "typeOfChange": "DeleteTable", "changedTables": ["a", "b"]},
    )
    assert changed_tables(event, ACCOUNT) == [("db", "a"), ("db", "b")]


def test_other_accounts_sources_and_kinds_name_nothing() -> None:
    detail: dict[str, object] = {"databaseName": "db", "tableName": "t", "typeOfChange": "UpdateTable"}
    assert changed_tables(_event("Glue Data Catalog Table State Change", detail, "999"), ACCOUNT) == []
    assert changed_tables(_event("Glue Job State Change", detail), ACCOUNT) == []
    assert changed_tables({"source": "aws.s3", "detail": detail}, ACCOUNT) == []
    assert changed_tables(_event("Glue Data Catalog Table State Change", {"tableName": "t"}), ACCOUNT) == []
