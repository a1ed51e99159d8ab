"""How much of the state database one principal's open scan plans may hold (per process).

A plan with plan tasks left keeps its request (its simplified filter, up to ``max_filter_bytes``, and its
names; ``stores.scan_plans``) for ``plan_ttl``, so that any replica can plan each task. Nothing else bounds
how many plans a principal opens: a reader sending 240 KB filters stored 3 MB a second, for an hour. So each
process remembers, per principal, the plans it stored with a request, and past ``MAX_OPEN_PLAN_BYTES`` or
``MAX_OPEN_PLANS`` the oldest are cancelled (their tasks answer 404 NoSuchPlanTask, a poll ``cancelled``:
the client plans again). With several replicas a principal may hold that much on each. In ``auth.mode =
none`` every client is the one principal ``anonymous`` and shares the bound.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

MAX_OPEN_PLAN_BYTES = 16 << 20
"""Requests and chunks one principal's open plans keep together (16 plans of the largest request)."""
MAX_OPEN_PLANS = 1000
"""Open plans (with tasks left) of one principal."""
_PRUNE_EVERY = 10_000
"""Principals remembered before the ones whose plans all expired are forgotten."""


@dataclass
class _Principal:
    plans: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)
    """plan id -> (bytes kept, monotonic expiry), oldest first."""
    total: int = 0

    def expire(self, now: float) -> None:
        while self.plans:
            plan_id, (size, expires) = next(iter(self.plans.items()))
            if expires > now:
                return
            del self.plans[plan_id]
            self.total -= size


class OpenPlans:
    """This process's open plans per principal; :meth:`opened` says which older ones to cancel."""

    def __init__(self, max_bytes: int = MAX_OPEN_PLAN_BYTES, max_plans: int = MAX_OPEN_PLANS) -> None:
        self.max_bytes, self.max_plans = max_bytes, max_plans
        self._by_principal: dict[str, _Principal] = {}

    def opened(self, principal: str, plan_id: str, size: int, ttl_seconds: float) -> list[str]:
        """Remember a plan stored with ``size`` bytes of request and chunks; the plan ids to cancel now (the
        principal's oldest, never this one)."""
        now = time.monotonic()
        if len(self._by_principal) >= _PRUNE_EVERY:
            self._prune(now)
        held = self._by_principal.setdefault(principal, _Principal())
        held.expire(now)
        held.plans[plan_id] = (size, now + ttl_seconds)
        held.total += size
        evicted: list[str] = []
        while len(held.plans) > 1 and (len(held.plans) > self.max_plans or held.total > self.max_bytes):
            old, (old_size, _) = held.plans.popitem(last=False)
            held.total -= old_size
            evicted.append(old)
        return evicted

    def closed(self, principal: str, plan_id: str) -> None:
        """The plan keeps nothing any more (cancelled)."""
        held = self._by_principal.get(principal)
        if held is not None and (entry := held.plans.pop(plan_id, None)) is not None:
            held.total -= entry[0]

    def _prune(self, now: float) -> None:
        for principal, held in list(self._by_principal.items()):
            held.expire(now)
            if not held.plans:
                del self._by_principal[principal]
