"""A small IAM policy evaluator for the statements a session policy uses (moto does not enforce them).

Supports Allow/Deny statements with ``Action`` and ``Resource`` (strings or lists, ``*``/``?``
wildcards, case-insensitive actions) and the ``StringLike``/``StringEquals`` condition operators.
Like IAM: an explicit Deny wins, otherwise some Allow must match, otherwise the request is denied.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _glob(pattern: str, value: str, case_sensitive: bool = True) -> bool:
    regex = fnmatch.translate(pattern)  # * and ? (IAM has no [] classes; none appear in our policies)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE) is not None


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, tests in conditions.items():
        for key, expected in tests.items():
            actual = context.get(key)
            if actual is None:
                return False
            patterns = _as_list(expected)
            if operator == "StringLike":
                if not any(_glob(p, actual) for p in patterns):
                    return False
            elif operator == "StringEquals":
                if actual not in patterns:
                    return False
            else:
                raise NotImplementedError(f"condition operator {operator}")
    return True


def _matches(statement: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    return (
        any(_glob(a, action, case_sensitive=False) for a in _as_list(statement["Action"]))
        and any(_glob(r, resource) for r in _as_list(statement["Resource"]))
        and _conditions_hold(statement.get("Condition", {}), context)
    )


def allowed(policy: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str] | None = None) -> bool:
    """Whether ``policy`` allows ``action`` on ``resource`` (with request ``context`` keys such as ``s3:prefix``)."""
    context = context or {}
    statements = policy["Statement"]
    if any(s["Effect"] == "Deny" and _matches(s, action, resource, context) for s in statements):
        return False
    return any(s["Effect"] == "Allow" and _matches(s, action, resource, context) for s in statements)


def object_arn(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def bucket_arn(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"
