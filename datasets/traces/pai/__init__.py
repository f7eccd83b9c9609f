"""Alibaba PAI cluster-trace-gpu-v2020: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list, the scale of the SYNTHETIC sample (`SAMPLE_SCALE`) and the trace's place
  in `ddlx datasets list` (`LIST_POSITION`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `schema.py`: the official file format (columns, types, units), declared once;
- `views.py`: the canonical views beyond jobs (`gpu_capacity`, `gpu_instance_requests`), their
  definitions, and how PAI derives the core definitions;
- `analyses.py`: PAI's own science (measured utilisation, requests against usage, co-location, GPU
  memory, the release's readings of the wait), declared as parts of the analysis modules;
- `reproduce.py`: the published figures of the NSDI'22 paper, the release's notebook and its
  simulator (profile `pai-nsdi22`);
- `formats.py`: the `pai-sim` export, the job CSV of the simulator shipped with the release.
"""

from ddlx.datasets.traces.pai.release import RELEASE

__all__ = ["LIST_POSITION", "RELEASE", "SAMPLE_SCALE"]

#: Scale of the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested (a few seconds).
SAMPLE_SCALE = 0.01

#: Where `ddlx datasets list` and the help texts show this trace among the others.
LIST_POSITION = 1
