"""Numbers in a client's text: ASCII digits only, and not too many of them.

``"²".isdigit()`` holds but ``int("²")`` raises, and ``int()`` of more than 4,300 digits raises too: either
would be a 500 where a 400 is due. Every page size, offset, id and limit read from a request passes here.
"""

from __future__ import annotations


def is_number(text: str, most_digits: int = 18) -> bool:
    """Whether ``text`` is 1 to ``most_digits`` ASCII digits (``int(text)`` then cannot fail)."""
    return 0 < len(text) <= most_digits and text.isascii() and text.isdigit()
