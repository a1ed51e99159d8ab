"""Counters and histograms cheap enough for every request, exposed through prometheus_client when scraped.

A request used to cost ~7 µs of metrics: prometheus_client's ``Counter.inc`` (~1.1 µs) and ``Histogram.observe``
(~2.4 µs) check their arguments, and each value (every bucket of a histogram) has its own lock and wrapper
object; a request made two observations and two or three increments. Here a labelled child is one small object:
``inc`` adds to a float and ``observe`` finds its bucket with ``bisect`` and adds to a list, each under one
uncontended lock (~0.1 µs; ``http.metrics.observe``, a request's labels found and both updates made, measured
alone ~4.3 µs). The lock stays because
some of these metrics are also updated from worker threads (the metadata cache serves scan planning's threads):
an unlocked ``+=`` could lose an update there.

The values turn into prometheus_client's samples only when ``/metrics`` is scraped: each family is a
``Collector`` registered in the registry as prometheus_client's own metric would be, with the same name, help,
type, labels and buckets, children in the order they were created, cumulative ``_bucket`` series, ``_count``,
``_sum`` and the ``_created`` series (unless ``PROMETHEUS_DISABLE_CREATED_SERIES`` turns them off, read as
prometheus_client reads it). ``tests/unit/test_metric_cells.py`` compares the exposition with prometheus_client's
for the same updates. Not supported: prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``),
exemplars, ``remove``/``clear`` (nothing here uses them).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from threading import Lock

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client import metrics as client_metrics
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import INF, floatToGoString


def _created_series() -> bool:
    """Whether ``_created`` samples are exposed (prometheus_client's switch, also set by its functions)."""
    return bool(client_metrics._use_created)


class _Family(Collector):
    """One metric family: its children by label values, created on first use (an unlabelled family has one)."""

    _type = ""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self._name = name.removesuffix("_total") if self._type == "counter" else name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._lock = Lock()
        self._children: dict[tuple[str, ...], _Child] = {}
        if not self._labelnames:
            self._children[()] = self._new_child()
        if registry is not None:
            registry.register(self)

    def _new_child(self) -> _Child:
        raise NotImplementedError

    def _child(self, values: tuple[object, ...]) -> _Child:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {values}")
        key = tuple(str(value) for value in values)
        child = self._children.get(key)
        if child is None:
            with self._lock:
                child = self._children.setdefault(key, self._new_child())
        return child

    def describe(self) -> Iterable[Metric]:
        return [Metric(self._name, self._documentation, self._type)]

    def collect(self) -> Iterable[Metric]:
        metric = Metric(self._name, self._documentation, self._type)
        created = _created_series()
        with self._lock:
            children = list(self._children.items())
        for values, child in children:
            labels = dict(zip(self._labelnames, values, strict=True))
            for suffix, extra, value in child.samples(created):
                metric.add_sample(self._name + suffix, labels | extra if extra else labels, value)
        return [metric]


class _Child:
    """One labelled series (or the only one of an unlabelled family)."""

    __slots__ = ("_created", "_lock")

    def __init__(self) -> None:
        self._lock = Lock()
        self._created = time.time()

    def samples(self, created: bool) -> list[tuple[str, dict[str, str], float]]:
        raise NotImplementedError


class CounterChild(_Child):
    __slots__ = ("_value",)

    def __init__(self) -> None:
        super().__init__()
        self._value = 0.0

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        with self._lock:
            self._value += amount

    def get(self) -> float:
        return self._value

    def samples(self, created: bool) -> list[tuple[str, dict[str, str], float]]:
        found: list[tuple[str, dict[str, str], float]] = [("_total", {}, self._value)]
        return [*found, ("_created", {}, self._created)] if created else found


class Counter(_Family):
    """prometheus_client's ``Counter`` for the hot path: ``labels(...)`` then ``inc``; ``inc`` when unlabelled."""

    _type = "counter"

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def labels(self, *values: object) -> CounterChild:
        child = self._child(values)
        assert isinstance(child, CounterChild)
        return child

    def inc(self, amount: float = 1) -> None:
        """Add to the only series of an unlabelled counter."""
        self._only().inc(amount)

    def _only(self) -> CounterChild:
        child = self._children.get(())
        if not isinstance(child, CounterChild):
            raise ValueError(f"{self._name} has labels {self._labelnames}: call labels() first")
        return child


class HistogramChild(_Child):
    __slots__ = ("_bounds", "_counts", "_sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        super().__init__()
        self._bounds = bounds
        self._counts = [0.0] * len(bounds)
        """Observations per bucket, not cumulative (``_bucket`` sums them when scraped)."""
        self._sum = 0.0

    def observe(self, amount: float) -> None:
        index = bisect_left(self._bounds, amount)  # the first bound >= amount, as prometheus_client's loop finds it
        with self._lock:
            self._sum += amount
            if amount <= self._bounds[index]:  # False for NaN only: no bucket, as prometheus_client counts it
                self._counts[index] += 1

    def samples(self, created: bool) -> list[tuple[str, dict[str, str], float]]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        found: list[tuple[str, dict[str, str], float]] = []
        cumulative = 0.0
        for bound, count in zip(self._bounds, counts, strict=True):
            cumulative += count
            found.append(("_bucket", {"le": _LE[bound]}, cumulative))
        found.append(("_count", {}, cumulative))
        if self._bounds[0] >= 0:
            found.append(("_sum", {}, total))
        if created:
            found.append(("_created", {}, self._created))
        return found


class _GoFloats(dict[float, str]):
    """Bucket bounds as prometheus_client writes them in ``le`` (``floatToGoString``), each worked out once."""

    def __missing__(self, bound: float) -> str:
        text: str = floatToGoString(bound)  # type: ignore[no-untyped-call]
        self[bound] = text
        return text


_LE = _GoFloats()


class Histogram(_Family):
    """prometheus_client's ``Histogram`` for the hot path: ``labels(...)`` then ``observe``."""

    _type = "histogram"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        registry: CollectorRegistry | None = REGISTRY,
        buckets: Sequence[float] = (),
    ) -> None:
        bounds = [float(bound) for bound in buckets]
        if bounds != sorted(bounds) or not bounds:
            raise ValueError("Buckets must be given, in sorted order")
        self._bounds = tuple(bounds if bounds[-1] == INF else [*bounds, INF])
        super().__init__(name, documentation, labelnames, registry)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self._bounds)

    def labels(self, *values: object) -> HistogramChild:
        child = self._child(values)
        assert isinstance(child, HistogramChild)
        return child

    def observe(self, amount: float) -> None:
        """Observe in the only series of an unlabelled histogram."""
        child = self._children.get(())
        if not isinstance(child, HistogramChild):
            raise ValueError(f"{self._name} has labels {self._labelnames}: call labels() first")
        child.observe(amount)
