"""The soak (``benchmarks/soak.py``), short: two replicas on one PostgreSQL under mixed load for ~15 s.

Every acknowledged append is in its table's ``main`` lineage, every acknowledged view version is kept, every
created namespace exists; no 5xx and no dropped connection. The 2-minute run is ``python -m benchmarks.soak``.
"""

from __future__ import annotations

import pytest

from benchmarks.soak import run

pytestmark = pytest.mark.postgres


def test_two_replicas_under_mixed_load_lose_nothing_and_answer_no_5xx() -> None:
    summary = run(seconds=15, clients=4, tables=3, views=2, seed=7)
    print("\n" + summary.render())
    assert summary.lost_snapshots == summary.lost_view_versions == summary.lost_namespaces == 0
    assert summary.server_errors == 0 and summary.transport_errors == 0, summary.failures
    assert summary.commits_acknowledged > 0 and summary.view_replaces_acknowledged > 0
    assert summary.namespaces_created > 0
    assert set(summary.by_operation) == {
        "load",
        "append-load",
        "append-commit",
        "view-load",
        "view-replace",
        "namespace-create",
    }
    assert summary.gave_up == 0
