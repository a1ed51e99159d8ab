"""The ``rewrite-manifests`` job's cleanup of a refused attempt (the job itself, its commit and concurrency:
tests/integration/test_maintenance_manifests.py)."""

from __future__ import annotations

from pathlib import Path

from pyiceberg.io.pyarrow import PyArrowFileIO

from irc_proxy.handling.maintenance.deleting import discard


def test_discard_deletes_only_the_tables_own_files_and_never_through_a_link(tmp_path: Path) -> None:
    table, other = tmp_path / "t", tmp_path / "other"
    (table / "metadata").mkdir(parents=True)
    other.mkdir()
    (table / "metadata" / "m1.avro").write_bytes(b"x")
    (other / "m2.avro").write_bytes(b"x")
    (table / "linked").symlink_to(other)
    outside = tmp_path / "outside.avro"
    outside.write_bytes(b"x")

    def owns(path: str) -> bool:
        return path.startswith(f"file://{table}/")

    paths = [f"file://{table}/metadata/{name}" for name in ("m1.avro", "gone.avro")]
    paths += [f"file://{table}/linked/m2.avro", f"file://{outside}"]
    discard(paths, owns, PyArrowFileIO(), [str(table)])

    assert not (table / "metadata" / "m1.avro").exists()
    assert (other / "m2.avro").exists() and outside.exists()
