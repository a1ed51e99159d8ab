"""The hot path's counters and histograms expose exactly what prometheus_client's own would for the same updates."""

from __future__ import annotations

import math
import re
import threading

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from irc_proxy import metric_cells
from irc_proxy.metrics import LATENCY_BUCKETS

_CREATED = re.compile(rb"^(\S+_created(?:\{[^}]*\})?) \S+$", re.MULTILINE)


def _exposition(registry: CollectorRegistry) -> bytes:
    """The text format with each ``_created`` value replaced (creation times differ by microseconds)."""
    return _CREATED.sub(rb"\1 T", generate_latest(registry))


def _pair() -> tuple[CollectorRegistry, CollectorRegistry]:
    return CollectorRegistry(), CollectorRegistry()


def test_a_labelled_counter_exposes_what_prometheus_client_would() -> None:
    theirs, ours = _pair()
    their = prometheus_client.Counter("x_requests_total", "Requests.", ["method", "status"], registry=theirs)
    our = metric_cells.Counter("x_requests_total", "Requests.", ["method", "status"], registry=ours)
    for method, status, amount in [("GET", 200, 1), ("POST", "409", 2.5), ("GET", "200", 1), ("HEAD", 404, 0)]:
        their.labels(method, status).inc(amount)
        our.labels(method, status).inc(amount)
    assert _exposition(ours) == _exposition(theirs)
    assert b'x_requests_total{method="GET",status="200"} 2.0' in generate_latest(ours)


def test_an_unlabelled_counter_is_exposed_at_zero_before_any_increment() -> None:
    theirs, ours = _pair()
    their = prometheus_client.Counter("x_hits_total", "Hits.", registry=theirs)
    our = metric_cells.Counter("x_hits_total", "Hits.", registry=ours)
    assert _exposition(ours) == _exposition(theirs)
    their.inc()
    our.inc()
    assert _exposition(ours) == _exposition(theirs)
    assert ours.get_sample_value("x_hits_total") == 1.0


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 0.005, 0.0051, 0.2, 30.0, 31.0, 1e-9],  # on a bound, just over, past the last bound
        [],
        [-1.0, 2.5, 2.5, 10.0],
    ],
)
def test_a_labelled_histogram_exposes_what_prometheus_client_would(values: list[float]) -> None:
    theirs, ours = _pair()
    args = ("x_duration_seconds", "Time.", ["method", "route"])
    their = prometheus_client.Histogram(*args, registry=theirs, buckets=LATENCY_BUCKETS)
    our = metric_cells.Histogram(*args, registry=ours, buckets=LATENCY_BUCKETS)
    for i, value in enumerate(values):
        route = f"/r{i % 2}"
        their.labels("GET", route).observe(value)
        our.labels("GET", route).observe(value)
    their.labels("DELETE", "/r0")
    our.labels("DELETE", "/r0")
    assert _exposition(ours) == _exposition(theirs)


def test_a_nan_observation_is_counted_as_prometheus_client_counts_it() -> None:
    theirs, ours = _pair()
    their = prometheus_client.Histogram("x_seconds", "Time.", registry=theirs, buckets=(1.0,))
    our = metric_cells.Histogram("x_seconds", "Time.", registry=ours, buckets=(1.0,))
    their.observe(math.nan)
    our.observe(math.nan)
    their.observe(0.5)
    our.observe(0.5)
    assert _exposition(ours) == _exposition(theirs)


def test_created_series_follow_prometheus_clients_switch() -> None:
    registry = CollectorRegistry()
    metric_cells.Counter("x_total", "X.", registry=registry).inc()
    assert b"x_created" in generate_latest(registry)
    prometheus_client.disable_created_metrics()
    try:
        assert b"x_created" not in generate_latest(registry)
    finally:
        prometheus_client.enable_created_metrics()


def test_a_name_taken_by_prometheus_client_cannot_be_registered_again() -> None:
    registry = CollectorRegistry()
    prometheus_client.Counter("x_total", "X.", registry=registry)
    with pytest.raises(ValueError, match="Duplicated"):
        metric_cells.Counter("x_total", "X.", registry=registry)


def test_wrong_label_counts_and_negative_increments_are_refused() -> None:
    counter = metric_cells.Counter("x_total", "X.", ["a"], registry=None)
    with pytest.raises(ValueError, match="expected labels"):
        counter.labels("1", "2")
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("1").inc(-1)


def test_updates_from_several_threads_are_all_counted() -> None:
    registry = CollectorRegistry()
    counter = metric_cells.Counter("x_total", "X.", registry=registry)
    histogram = metric_cells.Histogram("x_seconds", "X.", registry=registry, buckets=(0.5,))

    def work() -> None:
        for _ in range(20_000):
            counter.inc()
            histogram.observe(0.25)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert registry.get_sample_value("x_total") == 80_000
    assert registry.get_sample_value("x_seconds_count") == 80_000
    assert registry.get_sample_value("x_seconds_sum") == 20_000
