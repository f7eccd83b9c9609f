"""Microsoft Philly: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list, the scale of the SYNTHETIC sample (`SAMPLE_SCALE`) and the trace's place
  in `ddlx datasets list` (`LIST_POSITION`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `views.py`: the canonical views beyond jobs (`gpu_capacity` both ways, `attempts`), their
  definitions, and how Philly derives the core definitions;
- `analyses.py`: Philly's own science (measured GPU utilisation per GPU-minute and per job),
  declared as parts of the analysis modules;
- `reproduce.py`: the published figures of the ATC'19 paper and the job log (profile `philly-atc19`);
- `formats.py`: the `philly-json` job log, written by `ddlx datasets export` and read back by
  `ddlx datasets import --preset philly-json`.
"""

from ddlx.datasets.traces.philly.release import RELEASE

__all__ = ["LIST_POSITION", "RELEASE", "SAMPLE_SCALE"]

#: Scale of the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested (a few seconds).
SAMPLE_SCALE = 0.01

#: Where `ddlx datasets list` and the help texts show this trace among the others.
LIST_POSITION = 2
