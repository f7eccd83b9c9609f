"""Microsoft Philly: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list and the plugin (`PLUGIN`: release, sample scale, place in
  `ddlx datasets list`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `views.py`: the canonical views beyond jobs (`gpu_capacity` both ways, `attempts`), their
  definitions, and how Philly derives the core definitions;
- `analyses.py`: Philly's own science (measured GPU utilisation per GPU-minute and per job),
  declared as parts of the analysis modules;
- `reproduce.py`: the published figures of the ATC'19 paper and the job log (profile `philly-atc19`).
"""

from ddlx.datasets.plugins import TracePlugin
from ddlx.traces.philly.release import RELEASE

__all__ = ["PLUGIN"]

#: The trace's plugin: the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested
#: takes a few seconds at `sample_scale`; `list_position` is its place in `ddlx datasets list`.
PLUGIN = TracePlugin(__name__, RELEASE, sample_scale=0.01, list_position=2)
