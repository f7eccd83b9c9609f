"""Shanghai AI Lab Acme: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list, the scale of the SYNTHETIC sample (`SAMPLE_SCALE`) and the trace's place
  in `ddlx datasets list` (`LIST_POSITION`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `views.py`: how Acme derives the core definitions (it publishes no view beyond its jobs);
- `reproduce.py`: the published figures of the NSDI'24 paper and its repository (profile `acme-nsdi24`).
"""

from ddlx.datasets.traces.acme.release import RELEASE

__all__ = ["LIST_POSITION", "RELEASE", "SAMPLE_SCALE"]

#: Scale of the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested (a few seconds).
SAMPLE_SCALE = 0.01

#: Where `ddlx datasets list` and the help texts show this trace among the others.
LIST_POSITION = 5
