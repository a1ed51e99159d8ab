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


def test_a_storm_of_names_costs_the_event_loop_one_flush_not_a_million_invalidations() -> None:
    """Anyone who may send to the queue sends ten messages of 100,000 table names each: handing them all to
    the event loop would block it for seconds per poll (measured ~0.17 s per message). Beyond
    ``MAX_KEYS_PER_BATCH`` distinct names a batch is handed over as a flush (None)."""
    import asyncio
    import json

    from irc_proxy.backends.glue_events import MAX_KEYS_PER_BATCH, GlueEvents

    body = json.dumps(
        _event("Glue Data Catalog Database State Change", {"databaseName": "db", "changedTables": list(range(100_000))})
    )
    small = json.dumps(_event("Glue Data Catalog Table State Change", {"databaseName": "db", "tableName": "t"}))

    class Queue:
        def __init__(self, bodies: list[str]) -> None:
            self.bodies = bodies

        def receive_message(self, **_: object) -> dict[str, object]:
            return {"Messages": [{"Body": b, "ReceiptHandle": str(i)} for i, b in enumerate(self.bodies)]}

        def delete_message_batch(self, **_: object) -> None:
            return None

    handed: list[object] = []

    def changed(keys: object) -> None:
        handed.append(keys if keys is None else list(keys))  # type: ignore[call-overload]

    loop = asyncio.new_event_loop()
    try:
        GlueEvents(Queue([body] * 10), "q", ACCOUNT, changed)._receive(loop)
        GlueEvents(Queue([small, small]), "q", ACCOUNT, changed)._receive(loop)
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert handed == [None, [("db", "t")]]
    assert MAX_KEYS_PER_BATCH <= 10_000
