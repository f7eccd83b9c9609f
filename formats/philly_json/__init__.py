"""Philly's job log (`cluster_job_log`, a JSON array of jobs with attempts), as Blox and Synergy
load it; read back by `ddlx datasets import --preset philly-json`.

- `writer.py`: `FORMAT`, canonical jobs (and attempts) -> the job log;
- `reader.py`: `PRESET`, a job log -> the importer's table, through the Philly ingest's parser.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "philly-json", trace="philly")
