"""The job trace and cluster spec CSVs of the Tiresias simulator, as `simulator/run_sim.py` and
`jobs.py` read them.

- `writer.py`: `FORMAT`, canonical jobs -> the job CSV and the cluster spec beside it.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "tiresias")
