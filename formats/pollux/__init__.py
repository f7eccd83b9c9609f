"""The workload CSV of the Pollux simulator (petuum/adaptdl) and of the Sia simulator.

- `writer.py`: `FORMAT`, canonical jobs -> a Pollux/Sia workload CSV.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "pollux")
