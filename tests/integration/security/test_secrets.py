"""Guarantee 10: secrets are never printed: not by ``check-config``, not in start-up errors, not in logs.

Each secret below is a distinctive word placed where operators put credentials: the password of
a database URL, a webhook's ``?token=``, a REST upstream's ``user:password@``, an ``X-Amz-*``
signature. The real CLI and a real served proxy must never show any of them.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import ProxyProcess, free_port

STATE_PASSWORD = "statepw-Zq81"
CATALOG_PASSWORD = "catalogpw-Kx22"
WEBHOOK_TOKEN = "hooktoken-Mv93"
UPSTREAM_PASSWORD = "upstreampw-Hd47"
SIGNATURE = "sigvalue-Rt55"
SECRETS = (STATE_PASSWORD, CATALOG_PASSWORD, WEBHOOK_TOKEN, UPSTREAM_PASSWORD, SIGNATURE)


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("IRC_PROXY_")} | (env or {})
    command = [sys.executable, "-m", "irc_proxy", *args]
    return subprocess.run(command, capture_output=True, text=True, env=clean, timeout=timeout)


def _assert_no_secret(*outputs: str) -> None:
    for output in outputs:
        for secret in SECRETS:
            assert secret not in output, f"{secret} printed:\n{output}"


def test_check_config_masks_every_credential_in_urls(tmp_path: Path) -> None:
    config = tmp_path / "irc-proxy.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[state]\ndatabase_url = "postgresql+psycopg://irc:{STATE_PASSWORD}@db.example:5432/irc"\n'
        f'[audit.webhook]\nurl = "https://hooks.example/audit?token={WEBHOOK_TOKEN}&team=data"\n'
        f'[catalogs.lake]\nwarehouse = "file:///srv/lake"\n'
        f'database_url = "postgresql+psycopg://cat:{CATALOG_PASSWORD}@db.example/catalog"\n'
        f'[catalogs.upstream]\nkind = "rest"\nuri = "https://svc:{UPSTREAM_PASSWORD}@rest.example/api"\n'
        f'[catalogs.glue]\nkind = "glue"\nregion = "us-east-1"\ncatalog_id = "123456789012"\n'
        f'warehouse = "s3://bucket/wh"\nendpoint_url = "https://glue.example/?X-Amz-Signature={SIGNATURE}"\n',
        encoding="utf-8",
    )
    result = _cli("check-config", "--config", str(config))
    assert result.returncode == 0, result.stderr
    _assert_no_secret(result.stdout, result.stderr)
    # Masked, not dropped: the operator still sees where each URL points.
    for shown in ("db.example:5432/irc", "irc:***@", "hooks.example/audit?token=***", "svc:***@rest.example"):
        assert shown in result.stdout


def test_check_config_masks_secrets_given_in_the_environment(tmp_path: Path) -> None:
    env = {
        "IRC_PROXY_DATA_DIR": str(tmp_path),
        "IRC_PROXY_STATE__DATABASE_URL": f"postgresql+psycopg://irc:{STATE_PASSWORD}@db.example/irc",
        "IRC_PROXY_AUDIT__WEBHOOK__URL": f"https://hooks.example/a?token={WEBHOOK_TOKEN}",
    }
    result = _cli("check-config", env=env)
    assert result.returncode == 0, result.stderr
    _assert_no_secret(result.stdout, result.stderr)


def test_failed_start_up_on_an_unreachable_state_database_hides_its_password(tmp_path: Path) -> None:
    config = tmp_path / "irc-proxy.toml"
    url = f"postgresql+psycopg://irc:{STATE_PASSWORD}@127.0.0.1:{free_port()}/irc"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[state]\ndatabase_url = "{url}"\n', encoding="utf-8")
    result = _cli("serve", "--config", str(config), "--port", str(free_port()))
    assert result.returncode == 2
    assert "refusing to start" in result.stderr and "state database" in result.stderr
    _assert_no_secret(result.stdout, result.stderr)
    for command in (("db", "status"), ("db", "upgrade"), ("audit", "query")):
        failed = _cli(*command, "--config", str(config))
        assert failed.returncode != 0
        _assert_no_secret(failed.stdout, failed.stderr)


class _Receiver(http.server.BaseHTTPRequestHandler):
    received: list[str] = []  # noqa: RUF012  (one receiver per test run)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).received.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/audit"
    server.shutdown()
    server.server_close()


def test_served_proxy_uses_the_webhook_token_but_never_logs_it(tmp_path: Path, webhook: str) -> None:
    """httpx logs every request URL at INFO; the proxy's log lines must still hide the token."""
    _Receiver.received.clear()
    config = f'[server]\nlog_level = "debug"\n[audit.webhook]\nurl = "{webhook}?token={WEBHOOK_TOKEN}"\n'
    proxy = ProxyProcess(tmp_path, config).start()
    try:
        assert httpx.get(f"{proxy.url}/v1/config", timeout=30).status_code == 200
        deadline = time.monotonic() + 15
        while not _Receiver.received and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"/audit?token={WEBHOOK_TOKEN}" in _Receiver.received  # the whole URL was used
    finally:
        proxy.stop()
    log = proxy.log()
    assert "/audit?token=***" in log  # httpx's request line, masked
    _assert_no_secret(log)
