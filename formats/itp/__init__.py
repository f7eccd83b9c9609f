"""The job tables of the Microsoft ITP traces released with ElasticFlow (microsoft/elasticflow-traces),
as ElasticFlow's simulator reads them: one `clusterNN.csv` per cluster, seconds from the trace start.

- `reader.py`: `PRESET`, the `itp` import preset (`ddlx datasets import NAME --preset itp`);
- `reproduce.py`: `PROFILES`, the release counts of the archive (profile `itp-elasticflow`).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "itp")
