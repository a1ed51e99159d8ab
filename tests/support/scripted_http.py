"""A scripted HTTP/1.1 server on 127.0.0.1 (asyncio, plain or TLS) for tests of HTTP clients.

Each request read (head, then a ``Content-Length`` body) is answered with the next step of the script:
raw bytes written as they are (a well-formed answer, a truncated one, garbage), or an async function that
gets the connection's writer and does what it likes (wait, close, write in pieces). ``None`` hangs up
without answering. The last step repeats. Connections and request heads are counted for assertions such as
"one connection for many requests".
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

Step = bytes | Callable[[asyncio.StreamWriter], Awaitable[None]] | None


def answer(status: int = 200, body: bytes = b"{}", *headers: tuple[str, str], length: int | None = None) -> bytes:
    """An HTTP/1.1 answer with ``Content-Length`` (``length`` overrides it, to truncate or lie)."""
    lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body) if length is None else length}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(*pieces: bytes) -> bytes:
    """A 200 with a chunked body made of ``pieces``."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n" + body


class ScriptedServer:
    """Answers requests with the steps of ``script`` in order (see the module docstring)."""

    def __init__(self, script: Sequence[Step], tls: ssl.SSLContext | None = None) -> None:
        self.script = list(script)
        self.tls = tls
        self.connections = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"{'https' if self.tls else 'http'}://{'localhost' if self.tls else '127.0.0.1'}:{port}"

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length) if length else b"")
                step = self.script[min(len(self.heads) - 1, len(self.script) - 1)]
                if step is None:
                    writer.close()
                    return
                if isinstance(step, bytes):
                    writer.write(step)
                    await writer.drain()
                else:
                    await step(writer)
                if writer.is_closing():
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()


def self_signed(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for ``localhost`` and the PEM file of its certificate (to trust as a CA bundle)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, cert_path
