"""What one placement experiment places: the nodes and the tasks, with where they came from.

`ddlx.analysis.placement_inputs` reads them from a dataset's canonical `gpu_nodes` and
`gpu_task_lists` views.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ddlx.errors import DdlxError

#: The task list of a trace's real workload.
DEFAULT_TASK_LIST = "default"


class PlacementInputError(DdlxError):
    """The dataset has no node list or no such task list."""


@dataclass
class PlacementInputs:
    """Nodes and tasks of one experiment, and where they came from."""

    nodes: pl.DataFrame
    tasks: pl.DataFrame
    dataset: str
    task_list: str
    synthetic: bool
    source: dict[str, Any] = field(default_factory=dict)
