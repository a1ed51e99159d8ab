"""The ASGI application of one hypercorn worker process, for ``server.workers > 1``.

``irc-proxy serve`` binds the sockets and starts the workers; each imports this module and reads the
same configuration the parent read ($IRC_PROXY_CONFIG, which ``serve`` sets from ``--config``, plus
the ``IRC_PROXY_*`` environment). Host and port overrides only concern the parent's sockets.
"""

from __future__ import annotations

from irc_proxy import h11_linear
from irc_proxy.app import create_app
from irc_proxy.http.read_timeout import install as install_read_loop
from irc_proxy.logs import configure_logging
from irc_proxy.settings import load_settings

h11_linear.install()  # this worker's hypercorn reads request heads with h11 (see irc_proxy.h11_linear)
_settings = load_settings()
configure_logging(_settings.server.log_level, _settings.server.log_format)
app = create_app(_settings)
install_read_loop()  # this process's hypercorn reads with one timer per connection (http/read_timeout.py)
