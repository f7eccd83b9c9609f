"""The tab-separated job trace of Gavel's simulator, as `scheduler/utils.py parse_trace` reads it.

- `writer.py`: `FORMAT`, canonical jobs -> a Gavel trace.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "gavel")
