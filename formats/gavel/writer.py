"""The job trace of Gavel's simulator (stanford-futuredata/gavel), a heterogeneity-aware GPU cluster
scheduler.

Format: read by `stanford-futuredata/gavel`'s `scheduler/utils.py` (`parse_trace`, called by
`scheduler/scripts/drivers/simulate_scheduler_with_trace.py`): no header; one line per job of 10
tab-separated fields, in arrival order (the simulator asserts arrival times never decrease):

 1 job_type         a Gavel job type, e.g. `ResNet-18 (batch size 64)` (a key of its throughput table)
 2 command          3 working_directory    4 num_steps_arg (used only on a physical cluster)
 5 needs_data_dir   integer (0/1)          6 total_steps   integer, steps the job must run
 7 scale_factor     integer >= 1, GPUs      8 priority_weight  number
 9 SLO              number; a negative one means no SLO
10 arrival_time     number, seconds since the trace's start

Gavel keys every throughput by (job type, scale factor) and has measured them for 1, 2, 4 and 8
GPUs (several job types only for 1). In simulation a job runs until it has done `total_steps`
steps; alone on a GPU type `w`, it lasts total_steps / throughput(w, job type, scale factor)
seconds (slower when packed with another job, and in rounds of the scheduler's `time_per_iteration`).

How a canonical job becomes a line (each rule is also in the export's loss report):
- jobs in submission order; Gavel numbers them 0..N-1 in that order; `<file>.ids.csv` maps that
  number back to the job id and cluster;
- arrival_time: whole seconds since the first submission among the written jobs;
- scale_factor: the job's GPUs rounded up to the next of 1, 2, 4, 8 (a part of a GPU counts as one);
  a job of more than 8 GPUs is written with 8; CPU-only jobs and jobs without a GPU count are dropped
  (Gavel needs scale_factor >= 1);
- job_type: traces record no model, so it comes from `--option models=`:
  `auto` (default): the dataset's `workload` when it names a Gavel job type or family (compared in
  lower case without punctuation: `resnet18`, `resnet50`, `transformer`, `lm`, `recommendation`,
  `a3c`, `cyclegan`, or a full job type name), else a fixed type per scale factor: 1 GPU
  `ResNet-18 (batch size 64)`, 2 `ResNet-50 (batch size 64)`, 4 `Transformer (batch size 64)`,
  8 `LM (batch size 20)`; a family stands for its type in `FAMILIES` (batch sizes 64, 64, 64, 20,
  2048, -, -);
  `<job type>`: that type for every job;
  `<file.csv>`: a table with columns `key,job_type`; a job whose workload, else job_group, equals a
  key gets that type; other jobs follow `auto`.
  A type Gavel has not measured at the job's scale factor gives way to the fixed type of that
  scale factor (counted);
- total_steps: run_s x the throughput (steps/s) of (job type, scale factor) on the reference GPU
  type, rounded, at least 1, so that Gavel replays the job alone on that GPU type in its recorded
  run time. Gavel's simulator runs int(throughput x round length) steps per round and gives each
  of a job's workers a round's steps `//` its scale factor, failing the job when a worker gets 0:
  where the last round would hold fewer steps than the job's GPUs, total_steps is raised by the
  few steps that fill it to the scale factor (rounds of `--option round_s`, default Gavel's 360 s).
  The throughputs are those of Gavel's `scheduler/simulation_throughputs.json` for a v100
  running the job alone (built in for the types above), or `--option throughputs=<that file or
  another of its shape>` with `--option worker=<GPU type in it>` (default v100), which also allows
  every job type of the file. Jobs without a run time (never started, still running) are dropped;
- command is `ddlx:<job id>`, working_directory `.`, num_steps_arg `--num_steps`, needs_data_dir 0:
  the trace is for the simulator, which runs no command; priority_weight 1; SLO -1 (none).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import polars as pl

from ddlx.formats.jobs import ExportRequest, write_id_map, write_text
from ddlx.formats.model import ExportError, ExportFormat, LossReport, Written
from ddlx.jsontext import load_json

#: Fields of a trace line, in order.
FIELDS: tuple[str, ...] = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
                           "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")
#: The scale factors Gavel measured throughputs for.
SCALE_FACTORS: tuple[int, ...] = (1, 2, 4, 8)
#: Steps per second of a job type running alone on one v100 worker group, by scale factor (Gavel's
#: `scheduler/simulation_throughputs.json`, entry `v100`, co-located job `null`).
V100_THROUGHPUTS: dict[str, dict[int, float]] = {
    "ResNet-18 (batch size 64)": {1: 24.093231895382736, 2: 74.13589143268821, 4: 95.58814453205626,
                                  8: 255.82913926317391},
    "ResNet-50 (batch size 64)": {1: 4.394774823323071, 2: 7.922054367597505, 4: 9.451949566394442,
                                  8: 17.303172756892167},
    "Transformer (batch size 64)": {1: 8.61775899193302, 2: 15.876496488983058, 4: 19.65962221663049,
                                    8: 49.650700211670745},
    "LM (batch size 20)": {1: 64.74245099960703, 2: 132.17413449742747, 4: 110.99685986392635,
                           8: 497.2952582330656},
    "Recommendation (batch size 2048)": {1: 7.469632060833725},
    "A3C": {1: 7.175767179667988},
    "CycleGAN": {1: 4.426088263367452},
}
#: The job type a Gavel model family stands for (key: the family name in lower case, no punctuation).
FAMILIES: dict[str, str] = {
    "resnet18": "ResNet-18 (batch size 64)", "resnet50": "ResNet-50 (batch size 64)",
    "transformer": "Transformer (batch size 64)", "lm": "LM (batch size 20)",
    "recommendation": "Recommendation (batch size 2048)", "a3c": "A3C", "cyclegan": "CycleGAN"}
#: The job type of a job whose workload names none, by scale factor.
BY_SCALE_FACTOR: dict[int, str] = {1: "ResNet-18 (batch size 64)", 2: "ResNet-50 (batch size 64)",
                                   4: "Transformer (batch size 64)", 8: "LM (batch size 20)"}
OPTIONS: dict[str, str] = {
    "models": "how a job gets its Gavel job type: auto (default: the workload when it names a Gavel job type "
              "or family, else a fixed type per GPU count), one job type for every job, or a CSV file of "
              "key,job_type matched against the workload, then the job group",
    "throughputs": "Gavel's throughputs JSON (as its simulator's --throughputs_file) that turns run time into "
                   "steps (default: the built-in v100 throughputs of the job types ddlx picks)",
    "worker": "the GPU type of the throughputs file on which a job replays in its run time (default v100)",
    "round_s": "the length of Gavel's rounds, seconds (its simulator's --time_per_iteration; default 360), used "
               "to keep a job's last round from leaving a worker without steps",
}
#: Gavel's default round length, seconds (its simulator's --time_per_iteration).
DEFAULT_ROUND_S = 360


def _key(name: str) -> str:
    """A name compared without case and punctuation ("ResNet-50" -> "resnet50")."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def read_throughputs(path: Path, worker: str) -> dict[str, dict[int, float]]:
    """Steps/s by job type and scale factor of `worker` in a Gavel throughputs JSON (keys
    `('<job type>', <scale factor>)`, the job alone under `null`)."""
    try:
        document = load_json(path.read_text())
    except FileNotFoundError:
        raise ExportError(f"--option throughputs={path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExportError(f"--option throughputs={path}: not a JSON file ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get(worker), dict):
        kinds = ", ".join(document) if isinstance(document, dict) else "none"
        raise ExportError(f"--option throughputs={path}: no worker type '{worker}' (it has: {kinds}); "
                          "choose one with --option worker=")
    table: dict[str, dict[int, float]] = {}
    for key, entry in document[worker].items():
        match = re.fullmatch(r"\('(.*)', (\d+)\)", key)
        alone = entry.get("null") if isinstance(entry, dict) else None
        if match is None or not isinstance(alone, (int, float)) or isinstance(alone, bool):
            raise ExportError(f"--option throughputs={path}: entry {key!r} of '{worker}' is not "
                              "\"('<job type>', <scale factor>)\" with a number under \"null\"")
        if alone > 0:
            table.setdefault(match.group(1), {})[int(match.group(2))] = float(alone)
    return table


def _read_model_file(path: Path, known: dict[str, dict[int, float]]) -> dict[str, str]:
    """key -> job type of a `key,job_type` CSV file."""
    try:
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as error:
        raise ExportError(f"--option models={path}: cannot read it ({error})") from None
    if not rows or [c.strip() for c in rows[0]] != ["key", "job_type"]:
        raise ExportError(f"--option models={path}: line 1 must be the header key,job_type")
    mapping: dict[str, str] = {}
    for line, row in enumerate(rows[1:], 2):
        if not row:
            continue
        if len(row) != 2 or row[1].strip() not in known:
            raise ExportError(f"--option models={path}, line {line}: expected key,job_type with a Gavel job type "
                              f"of the throughput table (e.g. {next(iter(known))}), got {','.join(row)!r}")
        mapping[row[0].strip()] = row[1].strip()
    return mapping


class ModelRule:
    """The job type of a job, from `--option models=` (see the module's docstring)."""

    def __init__(self, value: str, known: dict[str, dict[int, float]]) -> None:
        self.value = value
        self.known = known
        self.fixed: str | None = None
        self.table: dict[str, str] = {}
        if value != "auto":
            if value in known:
                self.fixed = value
            elif Path(value).is_file():
                self.table = _read_model_file(Path(value), known)
            else:
                raise ExportError(f"--option models={value}: neither auto, a Gavel job type of the throughput "
                                  f"table (e.g. {BY_SCALE_FACTOR[1]}) nor an existing CSV file")
        self.names = {_key(name): name for name in known}
        self.names.update({family: name for family, name in FAMILIES.items() if name in known})
        missing = [name for name in BY_SCALE_FACTOR.values() if name not in known]
        if missing:
            raise ExportError(f"the throughput table has no entry for {missing[0]}, the job type of jobs whose "
                              "workload names none")

    def chosen(self, workload: str | None, group: str | None) -> str | None:
        """The job type the option names for a job, before checking its scale factor (None: the default)."""
        if self.fixed:
            return self.fixed
        for key in (workload, group):
            if key is not None and key in self.table:
                return self.table[key]
        return self.names.get(_key(workload)) if workload else None

    def __call__(self, workload: str | None, group: str | None, scale: int) -> tuple[str, bool]:
        """The job type, and whether the chosen one gave way to the default of the scale factor."""
        name = self.chosen(workload, group)
        if name is not None and scale in self.known.get(name, {}):
            return name, False
        return BY_SCALE_FACTOR[scale], name is not None


def _round_length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ExportError(f"--option round_s={text}: expected a whole number of seconds above 0")
    return value


def last_round_safe(steps: pl.Expr, rate: pl.Expr, scale_factor: pl.Expr, round_s: int) -> pl.Expr:
    """`steps`, raised by less than `scale_factor` where needed so that, replayed alone on the
    reference GPU type in rounds of `round_s` seconds (int(rate x round_s) steps each), the last
    round holds at least one step per worker: Gavel's simulator splits a round's steps among a job's
    workers with `//` and fails a job whose worker gets none."""
    per_round = (rate * round_s).floor().cast(pl.Int64)
    left = steps % pl.max_horizontal(per_round, pl.lit(1))
    short = (per_round > 0) & (left > 0) & (left < scale_factor)
    return pl.when(short).then(steps + scale_factor - left).otherwise(steps)


def gavel_lines(request: ExportRequest, loss: LossReport) -> pl.DataFrame:
    """The trace lines (FIELDS) of the request's jobs, with `job_id` and `cluster` for the id map."""
    worker = request.option("worker", "v100")
    source = request.option("throughputs", "")
    if source:
        known = read_throughputs(Path(source), worker)
    elif worker != "v100":
        raise ExportError(f"--option worker={worker}: the built-in throughputs are those of v100; give Gavel's "
                          "throughputs file with --option throughputs= to use another GPU type")
    else:
        known = V100_THROUGHPUTS
    rule = ModelRule(request.option("models", "auto"), known)
    round_s = _round_length(request.option("round_s", str(DEFAULT_ROUND_S)))
    jobs = request.jobs(loss)
    gpus, run = pl.col("num_gpus"), pl.col("run_s")
    jobs = loss.keep(jobs, gpus.is_not_null() & (gpus > 0),
                     "CPU-only or without a GPU count (Gavel needs a scale factor of at least 1 GPU)")
    jobs = loss.keep(jobs, run.is_not_null() & (run >= 0),
                     "no run time (never started or still running): Gavel needs the steps a job runs")
    scale = (pl.when(gpus <= 1).then(1).when(gpus <= 2).then(2).when(gpus <= 4).then(4).otherwise(8)
             .cast(pl.Int64))
    jobs = jobs.with_columns(scale.alias("scale_factor"))
    picked = [rule(w, g, s) for w, g, s in zip(jobs["workload"].cast(pl.String).to_list(),
                                              jobs["job_group"].cast(pl.String).to_list(),
                                              jobs["scale_factor"].to_list(), strict=True)]
    types = [name for name, _ in picked]
    rate = [known[name][s] for name, s in zip(types, jobs["scale_factor"].to_list(), strict=True)]
    origin = int(jobs["submit_s"].min() // 1) if jobs.height else 0
    lines = jobs.with_columns(
        pl.Series("job_type", types, dtype=pl.String), pl.Series("rate", rate, dtype=pl.Float64)).select(
        "job_type",
        pl.concat_str([pl.lit("ddlx:"), pl.col("export_id").str.replace_all(r"[\t\r\n]", " ")]).alias("command"),
        pl.lit(".").alias("working_directory"), pl.lit("--num_steps").alias("num_steps_arg"),
        pl.lit(0, pl.Int64).alias("needs_data_dir"),
        last_round_safe(pl.max_horizontal((run * pl.col("rate")).round(0), pl.lit(1.0)).cast(pl.Int64),
                        pl.col("rate"), pl.col("scale_factor"), round_s).alias("total_steps"),
        "scale_factor", pl.lit(1, pl.Int64).alias("priority_weight"), pl.lit(-1, pl.Int64).alias("SLO"),
        (pl.col("submit_s") - origin).floor().cast(pl.Int64).alias("arrival_time"),
        "job_id", "cluster")
    _record_losses(jobs, picked, rule, worker, source, loss)
    return lines


def _record_losses(jobs: pl.DataFrame, picked: list[tuple[str, bool]], rule: ModelRule, worker: str, source: str,
                   loss: LossReport) -> None:
    gpus = pl.col("num_gpus")
    fractional = jobs.filter(gpus != gpus.ceil()).height
    rounded = jobs.filter((gpus == gpus.ceil()) & ~gpus.is_in([1.0, 2.0, 4.0, 8.0]) & (gpus < 8)).height
    large = jobs.filter(gpus > 8).height
    gave_way = sum(1 for _, fallback in picked if fallback)
    by_rule = sum(1 for (w, g) in zip(jobs["workload"].cast(pl.String).to_list(),
                                      jobs["job_group"].cast(pl.String).to_list(), strict=True)
                  if rule.chosen(w, g) is not None)
    throughputs = (f"{source}, worker type {worker}" if source
                   else "Gavel's simulation_throughputs.json for v100 (built in)")
    how = {"auto": "auto: the workload when it names a Gavel job type or family"}.get(
        rule.value, f"the job type {rule.value}" if rule.fixed else f"the file {rule.value} (key,job_type)")
    loss.without_place += [
        ("job_id, cluster", "no field: Gavel numbers jobs 0..N-1 in arrival order; <file>.ids.csv maps the number "
                            "back (the id is also in the command, ddlx:<id>)"),
        ("user, vc, job_group, workload, gpu_type, num_cpus, mem_gb, queue_s, state, end_time",
         "no field: left out (the workload and job group only choose the job type)"),
        ("sub-second times", "arrival times are whole seconds"),
    ]
    defaults = ", ".join(f"{s} GPU(s) {name}" for s, name in BY_SCALE_FACTOR.items())
    loss.filled += [
        ("job_type", f"{how}: {by_rule:,} jobs; the others the type of their scale factor ({defaults}); "
                     f"{gave_way:,} jobs whose chosen type Gavel has not measured at their scale factor got that "
                     "default"),
        ("total_steps", f"run_s x steps/s of (job type, scale factor) from {throughputs}, rounded, at least 1: "
                        "alone on that GPU type Gavel replays a job in its recorded run time; raised by fewer steps "
                        "than the job's GPUs where its last round would leave a worker without steps (Gavel's "
                        "simulator fails such a job), rounds of --option round_s seconds"),
        ("scale_factor", f"GPUs rounded up to 1, 2, 4 or 8: {fractional:,} jobs with a part of a GPU, {rounded:,} "
                         f"rounded up to the next measured size, {large:,} jobs of more than 8 GPUs written with 8"),
        ("command, working_directory, num_steps_arg, needs_data_dir",
         "ddlx:<job id>, '.', --num_steps, 0: the simulator runs no command"),
        ("priority_weight, SLO", "1 and -1 (no SLO): not recorded"),
    ]


def write_gavel(request: ExportRequest, path: Path, loss: LossReport) -> Written:
    """Write the request's jobs as a Gavel trace to `path` and the id map beside it (`<path>.ids.csv`)."""
    lines = gavel_lines(request, loss)
    body = lines.select(pl.concat_str([pl.col(f).cast(pl.String) for f in FIELDS], separator="\t")
                        .alias("line"))["line"].to_list()
    write_text(path, "".join(f"{line}\n" for line in body))
    id_map = write_id_map(lines.select(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("gavel_job"), "job_id",
                                       "cluster"), path)
    return Written(lines.height, [id_map])


FORMAT = ExportFormat(
    name="gavel", title="Gavel simulator job trace (tab-separated)",
    consumer="Gavel's simulator (stanford-futuredata/gavel, scripts/drivers/simulate_scheduler_with_trace.py)",
    reference="stanford-futuredata/gavel scheduler/utils.py parse_trace", suffix=".trace", write=write_gavel,
    options=OPTIONS)
