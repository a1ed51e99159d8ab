"""How large a whole-filter residual is still repeated in every task (pyiceberg 0.12's count() needs it)."""

from __future__ import annotations

import json

from irc_proxy.planning.planner import MIN_REPEATED_RESIDUAL_BYTES, repeated_residual_bytes
from irc_proxy.settings import ScanPlanningSettings


def test_the_largest_admitted_in_list_is_repeated_under_the_default_answer_bound() -> None:
    settings = ScanPlanningSettings()
    values = [f"value-{i:04d}" for i in range(settings.max_filter_in_values)]
    residual = json.dumps({"type": "in", "term": "data", "values": values}, separators=(",", ":"))
    assert len(residual) <= repeated_residual_bytes(settings.max_response_bytes)


def test_a_residual_never_takes_more_than_a_thousandth_of_a_small_answer_bound() -> None:
    assert repeated_residual_bytes(64 * 1024) == MIN_REPEATED_RESIDUAL_BYTES
    assert repeated_residual_bytes(64 << 20) == 64 * 1024
