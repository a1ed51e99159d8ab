"""The ASGI application of one hypercorn worker process, for ``server.workers > 1``.

``irc-proxy serve`` binds the sockets and starts the workers; each imports this module and reads the
same configuration the parent read ($IRC_PROXY_CONFIG, which ``serve`` sets from ``--config``, plus
the ``IRC_PROXY_*`` environment). Host and port overrides only concern the parent's sockets.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

from irc_proxy import h11_linear
from irc_proxy.app import create_app
from irc_proxy.http.read_timeout import install as install_read_loop
from irc_proxy.logs import configure_logging, flush_logs
from irc_proxy.settings import load_settings

h11_linear.install()  # this worker's hypercorn reads request heads with h11 (see irc_proxy.h11_linear)
_settings = load_settings()
configure_logging(_settings.server.log_level, _settings.server.log_format)
app = create_app(_settings)
# this process's hypercorn reads with one timer per connection, with a write timeout and a connection cap
install_read_loop(_settings.server.write_timeout_seconds, _settings.server.max_connections)  # (http/read_timeout.py)


def _flush_then_terminate(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM in a worker: the access log's pending lines written, then the signal's default action (the
    worker ends at once, as it did before). hypercorn stops its workers through an event the parent sets and
    leaves their SIGTERM alone, but a SIGTERM sent to the whole process group (systemd's default
    ``KillMode=control-group``, ``kill -- -PGID``) reaches each worker too and ended it before its lines of the
    last ``logs.LINGER_SECONDS`` were written: 2 to 7 of 30 requests' lines lost, none with this
    (``tests/integration/security/test_log_linger_attacks.py``)."""
    flush_logs()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # a server that handles SIGTERM itself keeps its handler
    signal.signal(signal.SIGTERM, _flush_then_terminate)
