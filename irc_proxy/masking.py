"""Credentials out of sight: the one masking function for URLs and for text that may contain them.

Used wherever a URL or a foreign error message is shown: ``check-config`` (through
``settings.SecretUrl``), log lines (``logs``), start-up and command-line errors (``cli``). A URL
keeps what an operator needs to recognise it (scheme, host, port, path, user name) and loses
what would let someone else use it: the password of its user-info, and the values of query
parameters whose names look like credentials (``token``, ``secret``, ``password``, ``key``,
``signature``, ``sig``, ``credential``, ``X-Amz-*``, ...).
"""

from __future__ import annotations

import re

MASK = "***"
# A URL ends at white space, a quote, a bracket or a backslash (so masking never breaks a JSON escape). Its scheme
# is at most 64 characters: unbounded, every word start of a long run of scheme characters not followed by "://"
# (``/://a.a.a.a…``, a client's path) scanned the rest of the run, quadratic: a 60 KB HTTP/2 path held the event
# loop ~3.4 s in the access log's masking. A longer run is still matched from a word start in its last 64.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,63}://[^\s'\"<>`\\]+")
# user-info: everything between "://" and the last "@" of the authority (which ends at / ? or #).
_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#]*)(?P<rest>.*)$", re.DOTALL)
_CREDENTIAL_NAME = re.compile(
    r"^x-(amz|goog)-|token|secret|passw|pwd|key|signature|^sig$|credential|auth|session|apikey|private",
    re.IGNORECASE,
)
_KEYWORD_PASSWORD = re.compile(r"\b(?P<name>password|passwd|pwd)=(?!\*\*\*)[^\s&;'\"\\]+", re.IGNORECASE)
_PARAM = re.compile(r"(?P<sep>^|[?&;])(?P<name>[^=&;#]+)=(?P<value>[^&;#]*)")


def mask_url(url: str) -> str:
    """``url`` without its password and without the values of credential-looking query parameters.

    ``postgresql+psycopg://irc:s3cret@db/irc`` -> ``postgresql+psycopg://irc:***@db/irc``;
    ``https://hooks.example/audit?token=abc&x=1`` -> ``https://hooks.example/audit?token=***&x=1``.
    A user-info without a password is kept for database URLs (a user name) and masked for other
    schemes (``https://<token>@host`` is a common way to pass a token).
    """
    match = _AUTHORITY.match(url)
    if match is None:
        return _mask_query(url)
    scheme, authority, rest = match["scheme"], match["authority"], match["rest"]
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        user, has_password, _password = userinfo.partition(":")
        if has_password:
            userinfo = f"{user}:{MASK}"
        elif scheme.lower().startswith(("http", "ws")):
            userinfo = MASK
        authority = f"{userinfo}@{host}"
    return scheme + authority + _mask_query(rest)


def _mask_query(text: str) -> str:
    head, mark, tail = text.partition("?")
    if not mark or "=" not in tail:
        return text

    def replace(param: re.Match[str]) -> str:
        name = param["name"]
        if param["value"] and _CREDENTIAL_NAME.search(name):
            return f"{param['sep']}{name}={MASK}"
        return param.group(0)

    query, hash_mark, fragment = tail.partition("#")
    return head + mark + _PARAM.sub(replace, query) + hash_mark + fragment


def mask_text(text: str) -> str:
    """``text`` with every URL in it masked (:func:`mask_url`), and ``password=…`` pairs of
    connection strings (``host=db password=…``); cheap when there is neither."""
    if "://" in text:
        text = _URL.sub(lambda found: mask_url(found.group(0)), text)
    if "=" in text and _may_name_password(text):
        text = _KEYWORD_PASSWORD.sub(lambda found: f"{found['name']}={MASK}", text)
    return text


def _may_name_password(text: str) -> bool:
    """Whether ``_KEYWORD_PASSWORD`` can match: a log line (``id=…``) is searched only when a name it looks for
    is there, case-folded as the pattern's IGNORECASE compares (the long s, U+017F, is an ``s``)."""
    folded = text.casefold()
    return "pass" in folded or "pwd" in folded
