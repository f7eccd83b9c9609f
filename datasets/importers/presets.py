"""The importer's presets: known table shapes (Slurm `sacct`), each a column mapping
with its time unit, delimiter and rules, for `ddlx datasets import NAME --preset P`; `presets()`
adds the file formats read through a converter (the Standard Workload Format, and the formats of
tools published with a trace)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Preset:
    """A known table shape: its mapping, time unit, delimiter and extra rules. `wall_clock` False
    when its times are offsets from an undisclosed start (no time of day or weekday). A file that is
    no table (a log with comments, a JSON document) has a `convert(source, display, out)`, which
    reads the file `source` (named `display` to the user), writes the table the mapping reads as
    Parquet to `out`, and raises `InputError` naming the line and field of bad input."""

    name: str
    description: str
    mapping: dict[str, str]
    optional: dict[str, str] = field(default_factory=dict)
    time_unit: str = "s"
    delimiter: str = ","
    drop_job_steps: bool = False
    wall_clock: bool | None = None
    convert: Callable[[Path, str, Path], None] | None = None
    #: file name endings the converter reads (besides the table files), e.g. (".swf",)
    suffixes: tuple[str, ...] = ()


PRESETS: dict[str, Preset] = {
    "slurm": Preset(
        name="slurm",
        description="Slurm `sacct --parsable2` export: |-delimited, JobID,User,Account,Partition,State,"
                    "Submit,Start,End,AllocTRES (JobName, ReqTRES, Cluster, NodeList, GresDetail used when present)",
        mapping={"job_id": "JobID", "user": "User", "vc": "Partition", "state": "State",
                 "submit": "Submit", "start": "Start", "end": "End", "tres": "AllocTRES"},
        optional={"job_name": "JobName", "req_tres": "ReqTRES", "cluster": "Cluster", "node_list": "NodeList",
                  "gres_detail": "GresDetail"},
        time_unit="datetime",
        delimiter="|",
        drop_job_steps=True,
    ),
}




def presets() -> dict[str, Preset]:
    """Every preset: the table shapes above, then the readers of the format plugins
    (`ddlx.formats.<folder>.reader`: the Standard Workload Format, ...)."""
    from ddlx.datasets.plugins import format_plugins

    found = dict(PRESETS)
    for plugin in format_plugins():
        if (preset := plugin.reader) is not None:
            found[preset.name] = preset
    return found


def get_preset(name: str | None) -> Preset | None:
    """The preset called `name` (None for None); None for an unknown name."""
    return presets().get(name) if name else None
