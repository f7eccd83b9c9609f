"""The importer's presets: known table shapes (Microsoft ITP, Slurm `sacct`), each a column mapping
with its time unit, delimiter and rules, for `ddlx datasets import NAME --preset P`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Preset:
    """A known table shape: its mapping, time unit, delimiter and extra rules. `wall_clock` False
    when its times are offsets from an undisclosed start (no time of day or weekday)."""

    name: str
    description: str
    mapping: dict[str, str]
    optional: dict[str, str] = field(default_factory=dict)
    time_unit: str = "s"
    delimiter: str = ","
    drop_job_steps: bool = False
    wall_clock: bool | None = None


PRESETS: dict[str, Preset] = {
    "itp": Preset(
        name="itp",
        description="Microsoft ITP (ElasticFlow raw traces): clusterNN.csv with "
                    "job_id,submission_time,duration,num_gpu; seconds from the trace start",
        mapping={"job_id": "job_id", "submit": "submission_time", "duration": "duration", "gpus": "num_gpu"},
        time_unit="s",
        wall_clock=False,
    ),
    "slurm": Preset(
        name="slurm",
        description="Slurm `sacct --parsable2` export: |-delimited, JobID,User,Account,Partition,State,"
                    "Submit,Start,End,AllocTRES (JobName, ReqTRES, Cluster used when present)",
        mapping={"job_id": "JobID", "user": "User", "vc": "Partition", "state": "State",
                 "submit": "Submit", "start": "Start", "end": "End", "tres": "AllocTRES"},
        optional={"job_name": "JobName", "req_tres": "ReqTRES", "cluster": "Cluster"},
        time_unit="datetime",
        delimiter="|",
        drop_job_steps=True,
    ),
}


