"""The analysis modules, in the order `ddlx analyze` runs them.

Each is a Python module `ddlx.analysis.<name>` that declares its metric definitions at the top
(`DEFINITIONS`) and exposes `analyze(ctx) -> ModuleResult`, besides functions returning tidy
polars DataFrames for library users.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Module name -> what it covers (shown by `ddlx analyze --help`).
MODULES: dict[str, str] = {
    "overview": "jobs, GPU jobs, state and GPU-request mixes, queueing and run-time quantiles",
    "utilization": "allocated GPUs against capacity over time, hour-of-week profile, measured "
                   "utilisation, requests against usage",
    "failures": "final-state mix by count and GPU-time, by size, user and VC; time to failure; "
                "GPU-time lost; attempts and retries",
    "queueing": "queueing-delay quantiles and CDFs by size, GPU type, VC and hour; waits over "
                "thresholds; wait over completion time; queueing against load",
    "sharing": "fractional GPU requests, co-location, GPU memory against capacity, fragmentation",
    "durations": "run-time CDFs by size and state with still-running jobs censored",
    "users": "GPU-time concentration over jobs and users; per-user summaries",
    "time_patterns": "submissions by hour of week; recurring jobs",
    "gpu_efficiency": "GPU telemetry attributed to jobs: GPU-hours allocated and idle, SM and tensor activity, "
                      "memory used, per job, user and partition; fleet allocated-but-idle share per hour",
}


def load(name: str) -> ModuleType:
    """The Python module of analysis module `name`."""
    return importlib.import_module(f"ddlx.analysis.{name}")
