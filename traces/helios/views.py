"""Helios' canonical views beyond jobs, their definitions, and how Helios derives the core definitions.

- `gpu_capacity`: GPUs per cluster, VC and day from `helios_vc_capacity` (definition
  `capacity.helios_vc_capacity`).
"""

from __future__ import annotations

from ddlx.analysis.definitions import Definition
from ddlx.datasets.canonical import job_table_derivations
from ddlx.datasets.sqltext import sql_string
from ddlx.traces.helios.reader import STATE_MAP
from ddlx.traces.helios.release import RELEASE

CAPACITY_TABLE = "helios_vc_capacity"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "capacity.helios_vc_capacity", "GPU capacity, Helios VCs per day", "GPUs",
        "Helios: GPUs of each VC of each cluster on each day, as cluster_gpu_number.csv gives them "
        "(helios_vc_capacity; empty cells left out). A day runs from local midnight (Asia/Shanghai) "
        "to the next; the capacity of a cluster on a day is the sum over its VCs.",
    ),
)

#: How Helios derives the core definitions (`ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = job_table_derivations("gpu_num", STATE_MAP)


def canonical_views(present: set[str]) -> dict[str, str]:
    """View name -> SELECT over the stored tables (by name), for the views Helios can publish."""
    if CAPACITY_TABLE not in present:
        return {}
    zone = sql_string(RELEASE.source_tz)
    return {"gpu_capacity": f"""
        SELECT cluster, vc, NULL AS gpu_type,
               timezone({zone}, CAST(date AS TIMESTAMP)) AS valid_from,
               timezone({zone}, CAST(date + 1 AS TIMESTAMP)) AS valid_to,
               gpus, 'helios_vc_capacity' AS source, 1 AS preference
        FROM {CAPACITY_TABLE} WHERE gpus IS NOT NULL"""}
