"""The README's curl session works as printed (against the test proxy instead of port 8181)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from tests.support.server import ProxyProcess

README = Path(__file__).resolve().parents[2] / "README.md"


def curl_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- curl-session -->", 1)[1].split("<!-- /curl-session -->", 1)[0]
    body = re.search(r"```sh\n(.*?)```", block, re.S)
    assert body is not None
    return [c.strip() for c in body.group(1).replace("\\\n", " ").splitlines() if c.strip().startswith("curl")]


def test_readme_curl_session_works_as_printed(proxy: ProxyProcess) -> None:
    commands = curl_commands()
    assert len(commands) >= 5
    outputs = []
    for command in commands:
        args = shlex.split(command.replace("http://127.0.0.1:8181", proxy.url))
        result = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        assert result.returncode == 0, (command, result.stderr)
        body = json.loads(result.stdout)
        assert "error" not in body, (command, body)
        outputs.append(body)
    assert ["demo", "sales"] in outputs[3]["namespaces"]
    assert outputs[4]["properties"] == {"owner": "data-team"}
    assert outputs[-1]["identifiers"] == [{"namespace": ["demo", "sales"], "name": "orders"}]
