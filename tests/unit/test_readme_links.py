"""The README's links into the docs site lead somewhere (mkdocs build --strict checks the site's own links)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_readme_exists() -> None:
    targets = [t for t in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")) if "://" not in t]
    assert len(targets) >= 15
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_every_page_of_the_site_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert [p for p in pages if p not in nav] == []
