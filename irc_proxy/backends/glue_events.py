"""Glue Data Catalog change events, read from SQS, for the Glue pointer cache.

Glue sends "Glue Data Catalog Table State Change" (``detail.databaseName``, ``detail.tableName``,
``detail.typeOfChange``: UpdateTable, CreateTable, DeleteTable, partition changes...) and "Glue Data
Catalog Database State Change" (``detail.databaseName``, ``detail.changedTables``) events to
EventBridge; a rule targeting an SQS queue puts each event, as JSON, in a message body. A thread of
its own long-polls the queue (a pool thread held 20 s per poll would starve requests), hands the
changed (database, table) names to the event loop, and deletes the messages. Delivery is best effort
(EventBridge's own words): the cache's ttl stays the bound when an event is lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from irc_proxy.backends.pointer_cache import Key

log = logging.getLogger("irc_proxy.glue_events")

TABLE_CHANGE = "Glue Data Catalog Table State Change"
DATABASE_CHANGE = "Glue Data Catalog Database State Change"
WAIT_SECONDS = 10
"""SQS long poll; also how long closing may leave the thread blocked (it is a daemon)."""
RETRY_SECONDS = 5.0
MAX_KEYS_PER_BATCH = 1000
"""Distinct tables one poll may hand to the event loop; a batch naming more is handed over as a flush
(None): whoever may send to the queue could otherwise name ~100,000 tables per message and block the
event loop for seconds per poll (a flush costs one dict clear)."""


def changed_tables(event: Mapping[str, Any], catalog_id: str) -> list[Key]:
    """The (database, table) names an event says changed; [] for other events or another account's."""
    detail = event.get("detail")
    if event.get("source") != "aws.glue" or not isinstance(detail, Mapping):
        return []
    if catalog_id and event.get("account") not in (None, catalog_id):
        return []
    database = detail.get("databaseName")
    if not isinstance(database, str):
        return []
    if event.get("detail-type") == TABLE_CHANGE and isinstance(detail.get("tableName"), str):
        return [(database, detail["tableName"])]
    if event.get("detail-type") == DATABASE_CHANGE and isinstance(detail.get("changedTables"), list):
        return [(database, str(name)) for name in detail["changedTables"]]
    return []


class GlueEvents:
    """Long-polls one SQS queue and calls ``changed`` on the event loop with the tables each batch names."""

    def __init__(
        self, sqs: Any, queue_url: str, catalog_id: str, changed: Callable[[Iterable[Key] | None], None]
    ) -> None:
        """``changed`` gets the tables a batch names, or None for "forget them all" (too many named)."""
        self._sqs = sqs
        self._queue_url = queue_url
        self._catalog_id = catalog_id
        self._changed = changed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._poll, args=(loop,), name="glue-events", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def _poll(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self._stop.is_set():
            try:
                self._receive(loop)
            except Exception as exc:  # a queue that is gone or refused: keep trying, the ttl still bounds staleness
                log.warning("reading Glue events from %s failed: %s", self._queue_url, exc)
                self._stop.wait(RETRY_SECONDS)

    def _receive(self, loop: asyncio.AbstractEventLoop) -> None:
        answer = self._sqs.receive_message(
            QueueUrl=self._queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=WAIT_SECONDS
        )
        messages = answer.get("Messages") or []
        if not messages:
            return
        keys: set[Key] = set()
        for message in messages:
            keys.update(self._named(message))
        if keys and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed, keys if len(keys) <= MAX_KEYS_PER_BATCH else None)
        entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        self._sqs.delete_message_batch(QueueUrl=self._queue_url, Entries=entries)

    def _named(self, message: Mapping[str, Any]) -> list[Key]:
        """The tables one message names; [] for anything that is not a well-formed event.

        Whoever may send to the queue controls the body: a body nested too deep raises RecursionError
        (not ValueError), and one failure must not abort the batch before its messages are deleted, or
        they would come back forever and wedge the poller (every event received with them lost)."""
        try:
            event = json.loads(message.get("Body") or "")
            return changed_tables(event, self._catalog_id) if isinstance(event, Mapping) else []
        except Exception:  # any malformed body is skipped (and deleted with its batch)
            return []
