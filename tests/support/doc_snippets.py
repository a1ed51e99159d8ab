"""Snippets of the README and the docs site, taken apart so the tests can run them as printed.

Conventions in the Markdown (see docs/contributing.md):
- ``<!-- session -->`` ... ``<!-- /session -->``: ``sh`` blocks of curl commands, each followed by a ``json``
  block with its answer;
- ``<!-- run -->`` before a ``python`` block: the block is run, and the ``text`` block after it is its output;
- every ``toml`` block is a configuration that ``irc-proxy check-config`` accepts.
In an expected output ``"..."`` stands for any value, a ``"...": "..."`` entry for any further keys, a last
list element ``"..."`` for any further elements, and ``...`` inside a string or a text line for any text.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINTED_URL = "http://127.0.0.1:8181"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    start: int  # offset in the document


@dataclass(frozen=True)
class Snippet:
    code: str
    expected: str


def blocks(text: str) -> list[Block]:
    return [Block(m.group(1), m.group(2), m.start()) for m in FENCE.finditer(text)]


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def session(path: Path) -> list[Snippet]:
    """The curl commands of the document's ``<!-- session -->`` and the answers printed after them."""
    text = path.read_text(encoding="utf-8")
    part = text.split("<!-- session -->", 1)[1].split("<!-- /session -->", 1)[0]
    found = blocks(part)
    pairs = []
    for command, answer in itertools.pairwise(found):
        if command.lang == "sh":
            assert answer.lang == "json", f"{path.name}: the answer after {command.body!r} is missing"
            pairs.append(Snippet(command.body.replace("\\\n", " ").strip(), answer.body))
    return pairs


def runnable(path: Path) -> list[Snippet]:
    """The ``<!-- run -->`` Python blocks of the document, in order, with the output printed after each."""
    text = path.read_text(encoding="utf-8")
    found = blocks(text)
    snippets = []
    for index, block in enumerate(found):
        if text[: block.start].rstrip().endswith("<!-- run -->"):
            output = found[index + 1]
            assert block.lang == "python" and output.lang == "text", f"{path.name}: a run block needs its output"
            snippets.append(Snippet(block.body, output.body))
    return snippets


def toml_blocks() -> list[tuple[str, str]]:
    """Every TOML block of the README and the docs: (``file:n``, text)."""
    return [
        (f"{path.relative_to(ROOT)}:{n}", block.body)
        for path in documents()
        for n, block in enumerate(b for b in blocks(path.read_text(encoding="utf-8")) if b.lang == "toml")
    ]


def matches(expected: object, actual: object) -> bool:
    """Whether ``actual`` is what the document printed, ``...`` standing for what differs between runs."""
    if expected == "...":
        return True
    if isinstance(expected, str) and "..." in expected and isinstance(actual, str):
        return re.fullmatch(".*".join(re.escape(part) for part in expected.split("...")), actual, re.S) is not None
    if isinstance(expected, dict) and isinstance(actual, dict):
        keys = set(expected) - {"..."}
        if not (keys <= set(actual) if "..." in expected else keys == set(actual)):
            return False
        return all(matches(expected[key], actual[key]) for key in keys)
    if isinstance(expected, list) and isinstance(actual, list):
        if expected and expected[-1] == "...":
            expected = expected[:-1]
            actual = actual[: len(expected)]
        return len(expected) == len(actual) and all(map(matches, expected, actual))
    return expected == actual


def json_matches(expected: str, actual: str) -> bool:
    return matches(json.loads(expected), json.loads(actual))


def text_matches(expected: str, actual: str) -> bool:
    want, got = expected.strip().splitlines(), actual.strip().splitlines()
    return len(want) == len(got) and all(matches(w, g) for w, g in zip(want, got, strict=True))
