"""End-to-end fixtures: real clients (PySpark, pyiceberg, DuckDB) against the served proxy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spark_jars import ensure_s3a_jars, ensure_spark_jars
from tests.support.server import ProxyProcess
from tests.support.spark_session import local_builder, started

SPARK_CATALOG = "irc"


@pytest.fixture(scope="session")
def s3a_jars() -> list[Path] | str:
    """hadoop-aws + the AWS SDK v1 bundle (S3A) for the one SparkSession, or why they are missing.

    Outside CI a failed download only skips the ``s3://`` Spark tests; in CI it is an error.
    """
    try:
        return ensure_s3a_jars()
    except RuntimeError as exc:
        if os.environ.get("CI"):
            raise
        return f"S3A jars unavailable: {exc}"


@pytest.fixture(scope="session")
def spark(proxy: ProxyProcess, s3a_jars: list[Path] | str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local SparkSession (Iceberg 1.10.2 runtime) whose catalog ``irc`` is the proxy over REST.

    S3A is on the class path too (when available); catalogs opt in with their own ``hadoop.*`` options.
    More catalogs can be added to this one session at run time with ``spark.conf.set``.
    """
    jars = ensure_spark_jars() + (s3a_jars if isinstance(s3a_jars, list) else [])
    builder = (
        local_builder("irc-proxy-e2e", tmp_path_factory.mktemp("spark"), jars)
        .config(f"spark.sql.catalog.{SPARK_CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.type", "rest")
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.uri", proxy.url)
        .config(f"spark.sql.catalog.{SPARK_CATALOG}.warehouse", "local")
    )
    session = started(builder)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright, for the console's browser tests (one per module: Playwright's
    sync API keeps an event loop of its own, so it is closed before other modules' asyncio code runs)."""
    from playwright.sync_api import sync_playwright

    from tests.support.console import CHROMIUM

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and its page, 1280 by 900 pixels."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()
