"""The job CSV of the scheduling simulator released with Alibaba's cluster-trace-gpu-v2020
(`simulator/simulator.py`, `Simulator.add_job`).

- `writer.py`: `FORMAT`, canonical jobs -> the simulator's job CSV.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "pai-sim", trace="pai")
