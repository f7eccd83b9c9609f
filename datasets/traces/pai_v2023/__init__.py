"""Alibaba GPU cluster trace v2023: everything ddlx knows about this release, in one folder.

- `__init__.py`: this list, the scale of the SYNTHETIC sample (`SAMPLE_SCALE`) and the trace's place
  in `ddlx datasets list` (`LIST_POSITION`);
- `release.py`: the release facts (files, sha256, licence, paper, time zone), as `RELEASE`;
- `reader.py`: the reader (raw files -> typed Parquet -> canonical views), as `ADAPTER`;
- `generator.py`: ddlx's generator of SYNTHETIC files in the official format, as `generate`;
- `views.py`: the canonical views beyond jobs (`gpu_capacity`, `gpu_nodes`, `gpu_tasks`,
  `gpu_task_lists`), their definitions, and how the trace derives the core definitions;
- `reproduce.py`: the published figures of the ATC'23 paper (profile `openb-atc23`);
- `formats.py`: the `openb` export, the node and pod lists (and node YAML) the FGD simulator reads.
"""

from ddlx.datasets.traces.pai_v2023.release import RELEASE

__all__ = ["LIST_POSITION", "RELEASE", "SAMPLE_SCALE"]

#: Scale of the SYNTHETIC sample `ddlx analyze` builds when the trace is not ingested (a few seconds).
SAMPLE_SCALE = 1.0

#: Where `ddlx datasets list` and the help texts show this trace among the others.
LIST_POSITION = 4
