"""Batsim's JSON workload (oar-team/batsim), the input of the Batsim/SimGrid scheduling simulator.

Format: read by `oar-team/batsim`'s `src/workload.cpp`, `src/jobs.cpp` (`Job::from_json`) and
`src/profiles.cpp` (`Profile::from_json`), described in its `docs/input-workload.rst`:

    {"nb_res": <int > 0>,
     "jobs": [{"id": <string>, "subtime": <number, s>, "res": <int >= 0>, "profile": <profile name>,
               "walltime": <number > 0, s; optional: absent means no limit>}, ...],
     "profiles": {<name>: {"type": "DelayProfile", "delay": <number > 0, s>}, ...}}

A delay profile holds its resources for `delay` seconds whatever the platform; Batsim kills a job
that reaches its walltime (relative to its start). Batsim names each workload file `w0`, `w1`, ...
in command-line order and prefixes a job id that does not contain that name with it (`w0!12`); an id
that does contain it must be `<name>!<id>`, so ids are plain numbers here.

Target release: the type name of a delay profile is the one thing ddlx writes that Batsim's releases
read differently. Batsim 5 (`v5.0.0-rc0` to `v5.0.0-rc2`, the newest tag of the repository) accepts
only `DelayProfile` (`Profile::from_json`; any other type stops it: "Cannot create the profile ... of
unknown type"); Batsim 4 (`v4.0.0` to `v4.2.1`) only `delay`. The default, `--option version=5`,
targets Batsim 5.0.0-rc2; `version=4` writes `delay` for Batsim 4.2.1 and earlier 4.x. The release
targeted is named in the loss report and as the sidecar's `target`. Every other rule below holds in
both (jobs.cpp and workload.cpp of both tags).

How a canonical job becomes a job (each rule is also in the export's loss report):
- jobs in submission order; id: "1".."N" (strings of the job's number); `<file>.ids.csv` maps them
  back to the job id and cluster;
- subtime: seconds since the first submission among the written jobs (fractional);
- res: the job's GPUs (GPUs are Batsim's resources), a part of a GPU counted as one; CPU-only jobs and
  jobs without a GPU count are dropped (they hold none of the resources);
- profile: a delay profile of run_s seconds, shared by the jobs of equal run time and named
  `delay_<seconds>`; jobs without a positive run time (never started, still running, 0 s) are
  dropped, since Batsim needs a strictly positive delay;
- walltime: the model's estimate with `--predictions` (seconds, when positive), else absent (no
  limit): a job whose estimate is below its run time is killed at the estimate;
- nb_res: `--option nb_res=N`, else the GPUs the dataset documents (its gpu_capacity view, the
  largest total), else the largest job's GPUs; jobs asking more than nb_res are counted.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ddlx.formats.jobs import ExportRequest, documented_gpus, write_id_map, write_text
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written

#: The name of the delay profile type by Batsim major version (5: v5.0.0-rc0 to rc2; 4: v4.0.0 to v4.2.1).
DELAY_TYPE: dict[str, str] = {"5": "DelayProfile", "4": "delay"}
#: The release each `--option version` targets: the newest tag of that major version.
TARGET_RELEASE: dict[str, str] = {"5": "Batsim 5.0.0-rc2 (oar-team/batsim tag v5.0.0-rc2)",
                                  "4": "Batsim 4.2.1 (oar-team/batsim tag v4.2.1)"}
DEFAULT_VERSION = "5"
OPTIONS: dict[str, str] = {
    "nb_res": "the resources (GPUs) of the workload, an integer > 0 (default: the GPUs the dataset documents, "
              "else the largest job)",
    "version": "the Batsim major version that reads the file: 5 (default; Batsim 5.0.0-rc2, the repository's "
               "newest release; delay profiles typed 'DelayProfile') or 4 (Batsim 4.x up to 4.2.1; 'delay')",
}


def _seconds_text(value: float) -> str:
    """A number of seconds as a profile name part: `3600`, `12.5`."""
    return str(int(value)) if value == int(value) else repr(float(value))


def _nb_res_option(request: ExportRequest) -> int | None:
    text = request.option("nb_res", "")
    if not text:
        return None
    if not text.strip().isdigit() or int(text) <= 0:
        raise ExportError(f"--option nb_res={text}: expected a whole number of resources (GPUs) above 0")
    return int(text)


def target_version(request: ExportRequest) -> str:
    """The Batsim major version the file is written for (`--option version`, default `DEFAULT_VERSION`)."""
    version = request.option("version", DEFAULT_VERSION)
    if version not in DELAY_TYPE:
        raise ExportError(f"--option version={version}: expected 5 (Batsim 5.0.0-rc2, the default) or 4 (Batsim "
                          "4.x up to 4.2.1), the Batsim version that reads the file")
    return version


def batsim_workload(request: ExportRequest, loss: LossReport) -> tuple[dict, pl.DataFrame]:
    """The workload document of the request's jobs and the id map (id, job_id, cluster)."""
    version = target_version(request)
    chosen_nb_res = _nb_res_option(request)
    jobs = request.jobs(loss)
    gpus, run = pl.col("num_gpus"), pl.col("run_s")
    jobs = loss.keep(jobs, gpus.is_not_null() & (gpus > 0),
                     "CPU-only or without a GPU count (GPUs are the resources; such a job holds none)")
    jobs = loss.keep(jobs, run.is_not_null() & (run > 0),
                     "no positive run time (never started, still running or 0 s): a delay profile needs one")
    origin = jobs["submit_s"].min() if jobs.height else 0.0
    table = jobs.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("number"),
        (pl.col("submit_s") - origin).alias("subtime"), gpus.ceil().cast(pl.Int64).alias("res"),
        run.alias("delay"), pl.col("estimate_s").alias("walltime"), "job_id", "cluster")
    delay_type = DELAY_TYPE[version]
    profiles: dict[str, dict] = {}
    entries: list[dict] = []
    for number, subtime, res, delay, walltime in table.select(
            "number", "subtime", "res", "delay", "walltime").iter_rows():
        name = f"delay_{_seconds_text(delay)}"
        profiles.setdefault(name, {"type": delay_type, "delay": _number(delay)})
        entry = {"id": str(number), "subtime": _number(subtime), "res": res, "profile": name}
        if walltime is not None and walltime > 0:
            entry["walltime"] = _number(walltime)
        entries.append(entry)
    capacity = documented_gpus(request.ctx)
    largest = int(table["res"].max()) if table.height else 1
    nb_res = chosen_nb_res or capacity or largest
    _record_losses(jobs, table, loss, nb_res, chosen_nb_res, capacity, len(profiles), version)
    document = {"nb_res": nb_res, "jobs": entries, "profiles": profiles}
    ids = table.select(pl.col("number").cast(pl.String).alias("id"), "job_id", "cluster")
    return document, ids


def _number(value: float) -> int | float:
    """An integer when whole (written `8`, never `8.0`), else the float."""
    return int(value) if float(value) == int(value) else float(value)


def _record_losses(jobs: pl.DataFrame, table: pl.DataFrame, loss: LossReport, nb_res: int,
                   chosen: int | None, capacity: int | None, profiles: int, version: str) -> None:
    fractional = jobs.filter(pl.col("num_gpus") != pl.col("num_gpus").ceil()).height
    with_walltime = table.filter(pl.col("walltime") > 0).height
    killed = table.filter((pl.col("walltime") > 0) & (pl.col("walltime") < pl.col("delay"))).height
    too_large = table.filter(pl.col("res") > nb_res).height
    source = ("--option nb_res" if chosen else "the GPUs the dataset documents (gpu_capacity)" if capacity
              else "the largest job's GPUs: the dataset documents no GPU capacity")
    loss.without_place += [
        ("job_id, cluster", "replaced by the job's number in submission order ('1'..'N'); <file>.ids.csv maps it "
                            "back"),
        ("user, vc, job_group, workload, gpu_type, num_cpus, mem_gb, queue_s, state, end_time",
         "no Batsim field: left out"),
    ]
    loss.filled += [
        ("res", f"the job's GPUs (GPUs are the resources); a part of a GPU counts as one ({fractional:,} jobs)"),
        ("profile", f"a delay profile of run_s seconds, shared by jobs of equal run time ({profiles:,} profiles), "
                    f"typed '{DELAY_TYPE[version]}' for {TARGET_RELEASE[version]} (--option version={version}"
                    f"{', the default' if version == DEFAULT_VERSION else ''}); the other major version refuses "
                    "that type"),
        ("walltime", f"the model's estimate with --predictions, when positive ({with_walltime:,} jobs, {killed:,} "
                     "of them below their run time: Batsim kills those at the estimate); else absent (no limit)"),
        ("nb_res", f"{nb_res:,} from {source}; {too_large:,} jobs ask more GPUs than that"),
        ("subtime", "seconds since the first submission among the written jobs"),
    ]


def write_batsim(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as a Batsim JSON workload to `path` and the id map beside it (`<path>.ids.csv`)."""
    document, ids = batsim_workload(request, loss)
    write_text(path, json.dumps(document, indent=1) + "\n")
    id_map = write_id_map(ids, path)
    return Written(ids.height, [id_map], target=TARGET_RELEASE[target_version(request)])


FORMAT = ExportFormat(
    name="batsim", title="Batsim JSON workload (delay profiles)",
    consumer="Batsim, the SimGrid-based scheduling simulator (oar-team/batsim): by default Batsim 5.0.0-rc2, "
             "the repository's newest release (--option version=4: Batsim 4.x up to 4.2.1)",
    reference="oar-team/batsim docs/input-workload.rst; src/jobs.cpp and src/profiles.cpp (from_json)",
    suffix=".json", write=write_batsim, options=OPTIONS, carries_estimate=True)
