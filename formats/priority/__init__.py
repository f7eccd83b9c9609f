"""The per-job duration estimates (`job_id,priority`) the QSSF scheduler of the Helios simulator and
the Lucid simulator read.

- `writer.py`: `FORMAT`, canonical jobs and predictions -> the estimates CSV.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "priority", trace="helios")
