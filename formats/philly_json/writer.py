"""Philly's `cluster_job_log` JSON (msr-fiddle/philly-traces): written from any dataset of the catalog
(`ddlx datasets export NAME --format philly-json`) and read back from any source
(`ddlx datasets import NAME --preset philly-json --from FILE`).

Format (the release's job log, `reader.py` of this folder): one JSON array of jobs, each an object with
exactly the keys, in this order, `status`, `vc`, `jobid`, `user`, `submitted_time`, `attempts`;
`attempts` a list of `{start_time, end_time, detail}`, `detail` a list of `{ip, gpus}`, `gpus` a list of
GPU names (`"gpu0"`, `"gpu1"`, ...). Times are text `YYYY-MM-DD HH:MM:SS` (whole seconds, no zone);
a missing time is the text `"None"`.

Loaders checked, and what they read:
- msr-fiddle/philly-traces `analysis/Philly Trace Analysis.ipynb` (the release's own parser): builds each
  job with `Job(**job)`, so a job must have exactly the six keys above, no other; a time is None, `""`
  or `"None"` when missing, else parsed with `%Y-%m-%d %H:%M:%S`; GPUs = entries of the `gpus` lists of
  the FIRST attempt's `detail`; queueing delay = first attempt's start - submitted_time; run time =
  last attempt's end - first attempt's start; statuses Pass, Killed, Failed.
- msr-fiddle/blox `workload/parse_philly_jobs.py` and msr-fiddle/synergy
  `simulator/helpers/parse_philly_trace_full.py` (also `parse_philly_jobs.py`): `json.load`; keep jobs
  with at least one attempt; parse `submitted_time` of every such job with `%Y-%m-%d %H:%M:%S`; skip an
  attempt whose start or end CONTAINS the text `"None"` (a JSON null there stops them: `in` on None);
  an attempt's GPUs = sum of the lengths of its `detail` `gpus` lists; skip attempts with no GPUs or a
  duration <= 0; `vc` becomes the job's cluster id and `user` its user; the job id is `jobid` (or
  `jobid + "-attempt<i>"`: it must be text); `status` is not read.
- michaelzhiluo/starburst `skyburst/traces/philly.py`: the notebook's rules; sorts jobs by the parsed
  submitted_time.
None of them parses or sorts `jobid`: it is an opaque text label.

How a canonical job becomes a job object (each rule is also in the export's loss report):
- jobs in submission order (then cluster and job id); `jobid` = `export_id` (the job id, or
  `<cluster>/<job id>` when ids repeat across clusters), not rewritten into Philly's
  `application_<n>_<n>` shape;
- times: wall clock in UTC by default (`--option tz=UTC`); `tz=source` writes the dataset's own zone
  (`source_tz`, the US/Pacific wall clock of Philly's file for the Philly trace; the dataset must have
  one zone), `tz=<IANA name>` any zone. UTC is the default because the loaders subtract naive wall
  clocks: in a zone with daylight saving a difference across the change is an hour off and the repeated
  hour is ambiguous. The zone goes to the loss report and the sidecar: import back with `--tz` of it.
  Times are cut to the whole second;
- status from the canonical state: completed Pass, cancelled Killed, failed Failed; a job running,
  pending or without a state is left out (counted): the format has no word for it, and ddlx's own
  reader of the format refuses any other status. `--option unknown_status=Pass` (or Killed, Failed)
  writes the jobs without a state with that status instead (stated in the loss report); a dataset
  that records no state at all (an ITP import) needs it;
- attempts: the dataset's `attempts` view when it has one (start, end, GPUs of each attempt), else one
  attempt from start_time to end_time (`"None"` for an end not recorded), none for a job that never
  started;
- detail: for the Philly trace itself, machines and GPU names of each attempt exactly as its raw
  `philly_job_log` holds them (a missing list written `[]`). For any other source the machines are not
  known: an attempt of G GPUs (G = the job's num_gpus, or the attempt's, rounded up: a part of a GPU
  counts as one GPU) gets ceil(G / 8) placeholder machines `placeholder-<seq>-<k>` (seq = the job's
  number in submission order, k = 1..), the first ones full with `gpu0`..`gpu7`, the last one with the
  remaining `gpu0`..`gpu<r-1>`, so that every loader counts G GPUs; a job of 0 GPUs (or unknown GPUs)
  has an empty detail;
- vc: the format's one place for where a job ran (Blox and Synergy read it as the job's
  `cluster_id`; the notebook keeps it as a label; Starburst does not read it). A dataset of one
  cluster writes each job's vc (JSON null when it has none); a dataset of several clusters writes
  each job's cluster there, `<cluster>` for a job without a vc and `<cluster>/<vc>` for one with a
  vc, so that jobs of different clusters (ITP's ten, Helios' four) stay apart;
- user: JSON null when the dataset has none (the loaders keep it as a label only).

The import preset `philly-json` reads such a file from any source (`convert_job_log`) through the Philly
ingest's own parser of the log (`reader.raw_job_log`), so both refuse the same shapes (a GPU entry that is
not a string, such as a nested list; a key twice; nesting too deep; ...): one row per job
with job_id, user, vc, status, submit, start (earliest start of any attempt), end (end of the last
attempt), gpus and instances (of the attempt with most GPUs, the earliest on a tie: Philly's reader's
rule, counted by the ingest's expressions) and attempts (how many), times as the text written, read in
the import's `--tz`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from ddlx.formats.jobs import ExportRequest, write_text
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written
from ddlx.traces.philly.reader import (
    WALL_CLOCK_FORMAT,
)
from ddlx.traces.philly.release import RELEASE as PHILLY

#: Keys of a job object, of an attempt and of a detail entry, in the order written.
JOB_KEYS: tuple[str, ...] = ("status", "vc", "jobid", "user", "submitted_time", "attempts")
ATTEMPT_KEYS: tuple[str, ...] = ("start_time", "end_time", "detail")
DETAIL_KEYS: tuple[str, ...] = ("ip", "gpus")
#: Canonical state -> status word of the format.
STATUS: dict[str, str] = {"completed": "Pass", "cancelled": "Killed", "failed": "Failed"}
#: Status word -> canonical state (for `--option unknown_status`).
STATE_OF: dict[str, str] = {word: state for state, word in STATUS.items()}
#: Wall-clock format of every time, and the text of a missing time.
TIME_FORMAT = WALL_CLOCK_FORMAT
MISSING = "None"
#: GPUs of one placeholder machine (the largest machines of the Philly cluster have 8).
GPUS_PER_MACHINE = 8
PLACEHOLDER = "placeholder"
#: The table the Philly trace stores its job log in (nested attempts with their detail).
JOB_LOG = "philly_job_log"
DEFAULT_TZ = "UTC"


# -- export --------------------------------------------------------------------------------


def _zone(request: ExportRequest, jobs: pl.DataFrame) -> str:
    """The zone times are written in (`--option tz`): UTC, `source` (the dataset's one zone) or an IANA name."""
    wanted = request.option("tz", DEFAULT_TZ)
    if wanted == "source":
        zones = jobs.get_column("source_tz").drop_nulls().unique().to_list() if jobs.height else []
        if len(zones) != 1:
            found = ", ".join(sorted(zones)) or "none"
            raise ExportError(f"dataset '{request.ctx.trace}': tz=source needs one source time zone; the jobs have "
                              f"{found}; give tz=UTC or tz=<IANA name>")
        return str(zones[0])
    try:
        ZoneInfo(wanted)
    except (ZoneInfoNotFoundError, ValueError):
        raise ExportError(f"tz={wanted!r}: unknown time zone; expected UTC, source or an IANA name such as "
                          "America/Los_Angeles") from None
    return wanted


def _wall_clock(column: str, zone: str) -> pl.Expr:
    """The instant `column` as the format's text in `zone` (cut to the second), `"None"` when missing."""
    return (pl.col(column).dt.convert_time_zone(zone).dt.strftime(TIME_FORMAT).fill_null(MISSING))


def placeholder_detail(seq: int, gpus: float | None) -> list[dict[str, Any]]:
    """Detail of an attempt on unknown machines: ceil(gpus) GPUs on machines of at most 8 GPUs."""
    whole = math.ceil(gpus) if gpus is not None and gpus > 0 else 0
    machines = []
    for k in range(math.ceil(whole / GPUS_PER_MACHINE)):
        count = min(GPUS_PER_MACHINE, whole - k * GPUS_PER_MACHINE)
        machines.append({"ip": f"{PLACEHOLDER}-{seq}-{k + 1}", "gpus": [f"gpu{i}" for i in range(count)]})
    return machines


def _raw_details(request: ExportRequest) -> dict[str, list[list[dict[str, Any]]]] | None:
    """jobid -> the detail of each attempt as the Philly trace's raw job log holds them; None for any
    other source."""
    ctx = request.ctx
    if ctx.trace != PHILLY.name or not ctx.has(JOB_LOG):
        return None
    raw = ctx.query(f"SELECT jobid, [coalesce(a.detail, []) FOR a IN coalesce(attempts, [])] AS details "
                    f"FROM {JOB_LOG}")
    return {jobid: [[{"ip": d["ip"], "gpus": list(d["gpus"] or [])} for d in detail] for detail in details]
            for jobid, details in raw.iter_rows()}


def _attempts_of(request: ExportRequest, zone: str) -> dict[tuple[Any, str], list[dict[str, Any]]] | None:
    """(cluster, job_id) -> the job's attempts from the `attempts` view (start, end as text, GPUs); None
    when the dataset has no such view."""
    ctx = request.ctx
    if not ctx.has_view("attempts"):
        return None
    rows = ctx.query("SELECT cluster, job_id, attempt, start_time, end_time, num_gpus FROM attempts "
                     "ORDER BY cluster, job_id, attempt")
    rows = rows.with_columns(_wall_clock("start_time", zone).alias("start"), _wall_clock("end_time", zone).alias("end"))
    found: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for row in rows.select("cluster", "job_id", "start", "end", "num_gpus").iter_rows(named=True):
        found.setdefault((row["cluster"], row["job_id"]), []).append(row)
    return found


def _unknown_status(request: ExportRequest, jobs: pl.DataFrame) -> str | None:
    """The status word `--option unknown_status` gives jobs without a state (None: they are left
    out). A dataset that records no state at all is refused without the option: every job would be
    left out."""
    given = request.options.get("unknown_status")
    if given is not None and given not in STATE_OF:
        raise ExportError(f"--option unknown_status={given}: expected one of {', '.join(STATE_OF)}")
    if given is None and jobs.height and jobs.get_column("state").null_count() == jobs.height:
        raise ExportError(f"dataset '{request.ctx.trace}' records no job states, and the job log's status is Pass, "
                          "Killed or Failed: pass --option unknown_status=Pass (or Killed, Failed) to write every job "
                          "with that status (stated in the loss report)")
    return given


def job_objects(request: ExportRequest, loss: LossReport) -> tuple[list[dict[str, Any]], str]:
    """The job objects of the request's jobs, in submission order, and the zone of their times."""
    jobs = request.jobs(loss)
    zone = _zone(request, jobs)
    unknown = _unknown_status(request, jobs)
    if unknown:
        filled = jobs.filter(pl.col("state").is_null()).height
        jobs = jobs.with_columns(pl.col("state").fill_null(STATE_OF[unknown]))
        loss.filled.append(("status of jobs without a state", f"{unknown} (--option unknown_status), {filled:,} jobs"))
    for state, count in jobs.filter(~pl.col("state").is_in(list(STATUS)) | pl.col("state").is_null()) \
            .group_by("state").len().sort("state").iter_rows():
        loss.drop(f"state {state or 'unknown'}: the format's status is Pass, Killed or Failed", count)
    jobs = jobs.filter(pl.col("state").is_in(list(STATUS)))
    jobs = jobs.with_columns(_wall_clock("submit_time", zone).alias("submitted"),
                             _wall_clock("start_time", zone).alias("start"), _wall_clock("end_time", zone).alias("end"),
                             _vc_field(jobs).alias("vc_field"))
    raw = _raw_details(request)
    attempts = _attempts_of(request, zone)
    counts = {"placeholder": 0, "fractional": 0, "no_gpus": 0, "unknown_gpus": 0, "raw_missing": 0}
    out = []
    for job in jobs.iter_rows(named=True):
        if attempts is not None:
            spans = [(a["start"], a["end"], a["num_gpus"] if a["num_gpus"] is not None else job["num_gpus"])
                     for a in attempts.get((job["cluster"], job["job_id"]), [])]
        elif job["start_time"] is not None:
            spans = [(job["start"], job["end"], job["num_gpus"])]
        else:
            spans = []
        details = raw.get(job["job_id"]) if raw is not None else None
        if raw is not None and (details is None or len(details) != len(spans)):
            counts["raw_missing"] += 1
            details = None
        if details is None:
            details = [placeholder_detail(job["seq"], gpus) for _, _, gpus in spans]
            if spans:
                gpus = job["num_gpus"]
                counts["placeholder"] += 1
                counts["unknown_gpus"] += gpus is None
                counts["no_gpus"] += gpus == 0
                counts["fractional"] += gpus is not None and gpus > 0 and gpus != math.ceil(gpus)
        out.append({"status": STATUS[job["state"]], "vc": job["vc_field"], "jobid": job["export_id"],
                    "user": job["user"],
                    "submitted_time": job["submitted"],
                    "attempts": [{"start_time": start, "end_time": end, "detail": detail}
                                 for (start, end, _), detail in zip(spans, details)]})
    _record_losses(jobs, zone, raw is not None, attempts is not None, counts, loss)
    return out, zone


def _clusters(jobs: pl.DataFrame) -> list[str]:
    """The clusters of the written jobs, in name order."""
    return sorted(jobs.get_column("cluster").drop_nulls().unique().to_list())


def _vc_field(jobs: pl.DataFrame) -> pl.Expr:
    """The `vc` of each job: its vc when the jobs come from one cluster, else its cluster
    (`<cluster>` without a vc, `<cluster>/<vc>` with one)."""
    if len(_clusters(jobs)) <= 1:
        return pl.col("vc")
    cluster = pl.col("cluster")
    return (pl.when(cluster.is_null()).then(pl.col("vc"))
            .when(pl.col("vc").is_null()).then(cluster)
            .otherwise(pl.concat_str([cluster, pl.col("vc")], separator="/")))


def _record_losses(jobs: pl.DataFrame, zone: str, raw: bool, has_attempts: bool, counts: dict[str, int],
                   loss: LossReport) -> None:
    clusters = _clusters(jobs)
    if len(clusters) > 1:
        with_vc = jobs.filter(pl.col("cluster").is_not_null() & pl.col("vc").is_not_null()).height
        loss.filled.append(("vc", f"the job's cluster, one of {len(clusters)} ({', '.join(clusters[:10])}"
                                  f"{', ...' if len(clusters) > 10 else ''}): <cluster> for a job without a vc, "
                                  f"<cluster>/<vc> for one with a vc ({with_vc:,} jobs); Blox and Synergy read it as "
                                  "the job's cluster_id"))
    else:
        loss.without_place.append(("cluster", f"left out: every job is of the one cluster {clusters[0]}" if clusters
                                   else "left out: no job records one"))
    loss.without_place += [
        ("job_group, job_name, workload, num_cpus, mem_gb, gpu_type, fractional_gpu, raw_state",
         "no field in the job log: left out"),
        ("sub-second times", "times are written to the whole second (cut, not rounded)"),
    ]
    loss.filled += [
        ("times (submitted_time, start_time, end_time)",
         f"wall clock in {zone}, 'YYYY-MM-DD HH:MM:SS' without zone; \"None\" when missing; "
         f"import back with --tz {zone}"),
        ("status", "completed Pass, cancelled Killed, failed Failed; jobs in any other state are left out"),
        ("jobid", "the job's export id (its job id, or <cluster>/<job id> where ids repeat across clusters)"),
        ("attempts", "the dataset's attempts view" if has_attempts else
         "one attempt from start_time to end_time (\"None\" for an end not recorded); none if never started"),
        ("vc, user", f"JSON null where the dataset has none ({jobs['vc_field'].null_count():,} jobs without vc, "
                     f"{jobs['user'].null_count():,} without user)"),
    ]
    if raw:
        loss.filled.append(("detail", "machines and GPUs of each attempt as the trace's raw job log holds them; "
                                      f"{counts['raw_missing']:,} jobs whose raw attempts do not match get "
                                      "placeholder machines"))
    if counts["placeholder"]:
        loss.filled.append((
            "detail (machines)",
            f"machines not known ({counts['placeholder']:,} jobs): ceil(GPUs) GPUs gpu0..gpu7 on placeholder "
            f"machines 'placeholder-<seq>-<k>' of at most {GPUS_PER_MACHINE} GPUs; a part of a GPU counts as one "
            f"GPU ({counts['fractional']:,} jobs); empty detail for 0 GPUs ({counts['no_gpus']:,} jobs) or "
            f"unknown GPUs ({counts['unknown_gpus']:,} jobs)"))


def write_job_log(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as a Philly `cluster_job_log` JSON array to `path`."""
    jobs, _ = job_objects(request, loss)
    write_text(path, json.dumps(jobs, separators=(", ", ": ")) + "\n")
    return Written(len(jobs))


FORMAT = ExportFormat(
    name="philly-json", title="Philly cluster_job_log (JSON array of jobs with attempts)",
    consumer="simulators that load the Philly job log: Blox, Synergy, Starburst, the release's analysis notebook",
    reference="msr-fiddle/philly-traces cluster_job_log, as read by msr-fiddle/blox workload/parse_philly_jobs.py "
              "and msr-fiddle/synergy simulator/helpers/parse_philly_trace_full.py",
    suffix=".json", write=write_job_log,
    options={"tz": "zone the times are written in: UTC (default), source (the dataset's own zone) or an IANA "
                   "name",
             "unknown_status": "status of the jobs the dataset records no state for: Pass, Killed or Failed "
                               "(default: such jobs are left out; a dataset without any state needs it)"})
