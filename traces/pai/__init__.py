"""Alibaba PAI cluster-trace-gpu-v2020: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list and the plugin (`PLUGIN`: release, sample scale, place in
  `ddlx datasets list`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `schema.py`: the official file format (columns, types, units), declared once;
- `views.py`: the canonical views beyond jobs (`gpu_capacity`, `gpu_instance_requests`), their
  definitions, and how PAI derives the core definitions;
- `analyses.py`: PAI's own science (measured utilisation, requests against usage, co-location, GPU
  memory, the release's readings of the wait), declared as parts of the analysis modules;
- `reproduce.py`: the published figures of the NSDI'22 paper, the release's notebook and its
  simulator (profile `pai-nsdi22`).
"""

from ddlx.datasets.plugins import TracePlugin
from ddlx.traces.pai.release import RELEASE

__all__ = ["PLUGIN"]

#: The trace's plugin: the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested
#: takes a few seconds at `sample_scale`; `list_position` is its place in `ddlx datasets list`.
PLUGIN = TracePlugin(__name__, RELEASE, sample_scale=0.01, list_position=1)
