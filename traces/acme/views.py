"""How Acme derives the core definitions; Acme publishes no canonical view beyond its jobs."""

from __future__ import annotations

from ddlx.datasets.canonical import job_table_derivations
from ddlx.traces.acme.reader import STATE_MAP

#: How Acme derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = job_table_derivations("gpu_num", STATE_MAP)


def canonical_views(present: set[str]) -> dict[str, str]:
    """Acme's trace has one job table: no view beyond its jobs."""
    return {}
