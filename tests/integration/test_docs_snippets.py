"""The docs site's snippets work as printed: the getting-started steps (curl, pyiceberg, DuckDB with its
offline extension install) against a fresh proxy, and every configuration example through ``check-config``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.doc_snippets import (
    PRINTED_URL,
    ROOT,
    json_matches,
    runnable,
    session,
    text_matches,
    toml_blocks,
)
from tests.support.server import ProxyProcess

GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def clean_env(home: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | {"HOME": str(home)}


def run_session(path: Path, workdir: Path) -> list[Any]:
    """Runs the document's curl session against a fresh proxy; every answer must be the one printed."""
    proxy = ProxyProcess(workdir).start()
    try:
        answers = []
        for snippet in session(path):
            args = shlex.split(snippet.code.replace(PRINTED_URL, proxy.url))
            assert args[0] == "curl", snippet.code
            result = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
            assert result.returncode == 0, (snippet.code, result.stderr)
            assert json_matches(snippet.expected, result.stdout), (snippet.code, result.stdout)
            answers.append(json.loads(result.stdout))
        return answers
    finally:
        proxy.stop()


def test_getting_started_curl_session_works_as_printed(tmp_path: Path) -> None:
    answers = run_session(GETTING_STARTED, tmp_path)
    assert len(answers) >= 7


def test_getting_started_pyiceberg_and_duckdb_work_as_printed(tmp_path: Path) -> None:
    snippets = runnable(GETTING_STARTED)
    assert len(snippets) >= 2
    assert any("pyiceberg" in s.code for s in snippets) and any("duckdb" in s.code for s in snippets)
    proxy = ProxyProcess(tmp_path).start()
    try:
        for snippet in snippets:
            code = snippet.code.replace(PRINTED_URL, proxy.url)
            result = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
                cwd=tmp_path,
                env=clean_env(tmp_path),
            )
            assert result.returncode == 0, (snippet.code, result.stderr[-3000:])
            assert text_matches(snippet.expected, result.stdout), (snippet.expected, result.stdout)
    finally:
        proxy.stop()


@pytest.mark.parametrize(("where", "toml"), toml_blocks(), ids=[where for where, _ in toml_blocks()])
def test_configuration_example_passes_check_config(tmp_path: Path, where: str, toml: str) -> None:
    config = tmp_path / "irc-proxy.toml"
    config.write_text(toml, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "irc_proxy", "check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env=clean_env(tmp_path),
    )
    assert result.returncode == 0, (where, result.stderr)


def test_every_document_with_toml_is_checked() -> None:
    checked = {where.rsplit(":", 1)[0] for where, _ in toml_blocks()}
    assert {"docs/configuration/index.md", "docs/glue.md", "docs/vending.md", "docs/remote-catalogs.md"} <= checked
