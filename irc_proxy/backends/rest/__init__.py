"""A catalog federated to a remote Iceberg REST catalog.

``upstream`` is the pooled client (discovery, sending, transport errors); ``auth`` the upstream
authentication strategies; ``backend`` the Backend protocol over the upstream for the parts the
proxy serves itself (mapped namespaces, existence checks for proxy-held views). Table requests are
forwarded unchanged by ``irc_proxy.handling.federation.forwarding``
over the ``backends.base.Upstream`` protocol, which ``RestUpstream`` implements.
"""

from irc_proxy.backends.base import UpstreamConfig
from irc_proxy.backends.rest.auth import CALLER_AUTHORIZATION
from irc_proxy.backends.rest.backend import RestBackend
from irc_proxy.backends.rest.upstream import REQUEST_ID, RestUpstream

__all__ = ["CALLER_AUTHORIZATION", "REQUEST_ID", "RestBackend", "RestUpstream", "UpstreamConfig"]
