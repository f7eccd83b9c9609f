"""Batsim's JSON workload (delay profiles), as Batsim 5 loads it (`src/jobs.cpp`, `src/profiles.cpp`).

- `writer.py`: `FORMAT`, canonical jobs -> a Batsim workload.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "batsim")
