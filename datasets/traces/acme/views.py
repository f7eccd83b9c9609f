"""How Acme derives the core definitions; Acme publishes no canonical view beyond its jobs."""

from __future__ import annotations

from ddlx.datasets.canonical import state_mapping_text
from ddlx.datasets.traces.acme.reader import STATE_MAP

#: How Acme derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = {
    "utilization.allocated_gpus": "start_time to end_time",
    "queue_delay.submit_to_first_start": "submit_time to start_time",
    "runtime.first_start_to_last_end": "start_time to end_time",
    "gpu_request.job_total": "gpu_num",
    "state.canonical": state_mapping_text(STATE_MAP),
}


def canonical_views(present: set[str]) -> dict[str, str]:
    """Acme's trace has one job table: no view beyond its jobs."""
    return {}
