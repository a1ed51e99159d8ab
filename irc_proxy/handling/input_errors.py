"""What pyiceberg and pydantic raise on bad client input, and how it is told back to the client.

pyiceberg's models validate with plain exceptions (``ValueError`` for ``bucket[-1]``, its own
``ValidationError`` for ``decimal(999999999999,2)``, ``KeyError`` for a list type without
``element``, ``OverflowError`` for huge numbers, ``AssertionError`` in a few places); every one of
them is the client's fault when it comes out of parsing or applying a request, so they become a 400.
Messages quote input, which may be megabytes long: they are clipped.
"""

from __future__ import annotations

from pyiceberg.exceptions import ValidationError as IcebergValidationError

INPUT_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # includes pydantic.ValidationError
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,  # OverflowError, ZeroDivisionError
    AssertionError,
    RecursionError,
    StopIteration,  # next() over metadata lists when the current spec / schema / order is missing
    IcebergValidationError,
)
MAX_MESSAGE = 300


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def explain(exc: BaseException) -> str:
    """A short description of ``exc`` for a 400 message (a KeyError names the missing key)."""
    if isinstance(exc, KeyError) and exc.args:
        return clip(f"missing field {exc.args[0]!r}")
    return clip(str(exc) or type(exc).__name__)
