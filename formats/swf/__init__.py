"""The Standard Workload Format 2.2 of the Parallel Workloads Archive: read by the simulators of HPC
schedulers that take the Archive's logs, and read back by `ddlx datasets import --preset swf`.

- `writer.py`: `FORMAT`, canonical jobs -> an SWF log with its header comments;
- `reader.py`: `PRESET`, an SWF log (the Archive's or ddlx's) -> the importer's table.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "swf")
