"""The README's five-minute tour works as printed (against a fresh proxy instead of port 8181)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_docs_snippets import run_session
from tests.support.doc_snippets import ROOT, session

README = ROOT / "README.md"


def test_readme_curl_session_works_as_printed(tmp_path: Path) -> None:
    answers = run_session(README, tmp_path)
    assert len(answers) >= 5
    assert {"namespace": ["demo", "sales"], "properties": {"owner": "data-team"}} in answers
    assert answers[-1]["identifiers"] == [{"namespace": ["demo", "sales"], "name": "orders"}]


def test_readme_stays_short_and_says_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "make serve" in text and "make test" in text
    assert len(session(README)) >= 5
