"""Reading the Standard Workload Format (SWF 2.2) of the Parallel Workloads Archive back:
`ddlx datasets import NAME --preset swf --from FILE.swf`.

Format (the archive's definition, https://www.cs.huji.ac.il/labs/parallel/workload/swf.html, and
Feitelson et al., "Experience with using the Parallel Workloads Archive", JPDC 2014; the format ddlx's
own `formats/swf/writer.py` writes; read the same way by `renatolfc/sched-rl-gym`'s
`schedgym/workload/swf_parser.py`, with the status codes of its `schedgym/job.py`): comment lines
start with `;` (header comments `; Label: value`), blank lines are skipped, every other line is one
record of 18 whitespace-separated numbers (integers; time fields may be decimals such as `3600.5`,
and some logs write `-1.00`), -1 where a value is unknown:

 1 job number          2 submit time (s)       3 wait time (s)        4 run time (s)
 5 allocated procs     6 average CPU time (s)  7 used memory (KB/proc) 8 requested procs
 9 requested time (s) 10 requested memory (KB/proc) 11 status     12 user number
13 group number       14 executable number    15 queue number        16 partition number
17 preceding job      18 think time (s)

Status: 1 completed, 0 failed, 5 cancelled, -1 meaningless (e.g. a model). A log with checkpoint or
swap information also holds partial-execution records with the job's number: 2 (partial, to be
continued), 3 (last partial, completed), 4 (last partial, failed); the job's own line (status 0, 1
or 5) summarises the whole job.

The table the converter writes (one row per job; Parquet, read with the mapping below):
- the 18 SWF fields named `FIELDS` as written: counters, processor counts, status and the numbered
  fields as BIGINT (they must be whole numbers; `-1.00` is -1), times and memory as DOUBLE;
- `submit_unix` (s): UnixStartTime + submit when the header has `UnixStartTime` (a Unix time, so the
  times are instants), else the submit time itself (offsets from an undisclosed start: the import
  then finds no wall clock, as its times fall before 1980);
- `start` = submit_unix + wait when wait >= 0, else NULL (never started or unknown);
  `end` = start + run when run >= 0, else NULL; a job whose wait is unknown has no start, so its run
  time stays in `run` but not in the canonical jobs (the importer ends only started jobs);
- `state`: status 1 or 3 `completed`, 0 or 4 `failed`, 5 `cancelled`, anything else (-1, 2) NULL;
- `procs`: allocated processors when >= 0, else requested processors when >= 0, else NULL;
  `no_gpus`: 0 (see the processors rule below);
- `mem_gb`: requested memory (KB per processor) x max(procs, 1) / 1024^2, NULL when unknown;
- `user_name`, `group_name`, `executable_name`, `queue_name`, `partition_name`: the number as text
  (NULL for -1), or the name it stands for when the export's sidecar gives one (below);
- `job_id`: the job number as text, or the original id from the id map (below); `cluster` (only when
  the id map or sidecar names one): the job's cluster; `time_zone`: the header's TimeZoneString.

Rules:
- processors are GPUs (the GPU-as-processor convention ddlx's export writes): `procs` maps to `gpus`.
  An HPC log counts CPUs: import it with `--map gpus=no_gpus,cpus=procs` to read them as CPU cores
  of jobs without GPUs;
- partial-execution records (status 2, 3, 4) of a job that has its own line are dropped: that line
  already holds the whole job; one without such a line is read as a job (3 completed, 4 failed,
  2 no state);
- negative wait, run or processor counts other than -1 are read as unknown too;
- time zone: UnixStartTime is a Unix time, so the instants need no zone; TimeZoneString (the zone
  the log's installation keeps local time in) is kept in `time_zone`, and hours of day are read in
  the import's `--tz` (UTC unless told): give `--tz` the log's TimeZoneString to read its local
  hours. The deprecated `TimeZone` header is ignored;
- the id map `<file>.ids.csv` beside the file (written by `ddlx datasets export --format swf`:
  columns job,job_id,cluster) restores each job's original id and cluster; a job number it lacks
  keeps its number as id;
- the sidecar `<file>.datapackage.json` beside the file (also written by the export) maps names to
  the numbers of users, executables (recurring job groups), queues (virtual clusters) and
  partitions (clusters) in its `codes`; the names replace the numbers, and without an id map the
  partition's name is the job's cluster. Neither file is looked for inside an archive;
- bad input: a record with other than 18 fields, or a field that is no number (or not a whole
  number where one is needed), or a malformed UnixStartTime, is an `InputError` naming the line and
  the SWF field.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from ddlx.datasets.importers.presets import Preset
from ddlx.datasets.sqltext import PARQUET_ZSTD_LEVEL
from ddlx.errors import InputError
from ddlx.jsontext import load_json

#: The 18 fields of a record, in order (the names of the columns they are written to).
FIELDS: tuple[str, ...] = (
    "job", "submit", "wait", "run", "allocated_procs", "avg_cpu_time", "used_memory", "requested_procs",
    "requested_time", "requested_memory", "status", "user", "group", "executable", "queue", "partition",
    "preceding_job", "think_time")
#: Fields holding times (s) or memory (KB per processor), which may be decimals (DOUBLE columns).
DECIMAL_FIELDS: frozenset[str] = frozenset({
    "submit", "wait", "run", "avg_cpu_time", "used_memory", "requested_time", "requested_memory", "think_time"})
#: Canonical state of each status code that has one (2, partial to be continued, has none).
STATES: dict[int, str] = {1: "completed", 0: "failed", 5: "cancelled", 3: "completed", 4: "failed"}
#: Status codes of partial-execution records.
PARTIAL: frozenset[int] = frozenset({2, 3, 4})
#: Numbered fields: SWF field -> the column of their text (a name from the sidecar, else the number).
NAMED: dict[str, str] = {"user": "user_name", "group": "group_name", "executable": "executable_name",
                         "queue": "queue_name", "partition": "partition_name"}
#: The columns derived from the fields, in the order written after them (`cluster` only when known).
DERIVED: tuple[str, ...] = (
    "job_id", "cluster", "submit_unix", "start", "end", "state", "procs", "no_gpus", "mem_gb", *NAMED.values(),
    "time_zone")
#: Columns of the id map the export writes beside the file.
ID_MAP_HEADER = ["job", "job_id", "cluster"]
#: A number as SWF writes one (no `nan`, `inf` or `1_000`, which Python's float() would take).
NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
#: A header comment `; Label: value`.
HEADER_RE = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")


def _first_bad(frame: pl.DataFrame, bad: dict[str, pl.Expr]) -> tuple[int, str] | None:
    """(row, field) of the first row where one of the `bad` tests (field -> expression) holds, naming
    the first such field of that row; None when none does."""
    flags = frame.select(pl.int_range(pl.len()).alias("row"), *(test.alias(field) for field, test in bad.items()))
    hits = flags.filter(pl.any_horizontal(*bad))
    if not hits.height:
        return None
    first = hits.row(0, named=True)
    return first["row"], next(field for field in bad if first[field])


def _records(texts: list[str], lines: list[int], display: str) -> pl.DataFrame:
    """The 18 fields of the job lines `texts` (at line numbers `lines`) as DOUBLE columns, checked:
    18 fields a line, each a number, whole where the format needs it."""
    split = pl.DataFrame({"parts": texts}).select(pl.col("parts").str.extract_all(r"\S+"))
    counts = split.get_column("parts").list.len()
    wrong = (counts != len(FIELDS)).arg_true()
    if wrong.len():
        row, found = int(wrong[0]), int(counts[int(wrong[0])])
        raise InputError(display, f"{found} fields; expected the {len(FIELDS)} whitespace-separated fields of an "
                                  "SWF job line", line=lines[row], field=FIELDS[min(found, len(FIELDS) - 1)])
    text = split.select(pl.col("parts").list.get(i).alias(field) for i, field in enumerate(FIELDS))
    values = text.select(pl.col(field).cast(pl.Float64, strict=False) for field in FIELDS)
    both = pl.concat([text, values.rename({f: f"{f}#" for f in FIELDS})], how="horizontal")
    found = _first_bad(both, {f: ~pl.col(f).str.contains(NUMBER_RE.pattern) | pl.col(f"{f}#").is_null()
                              for f in FIELDS})
    if found:
        row, field = found
        raise InputError(display, f"{text[field][row]!r} is not a number; expected an integer (or a decimal "
                                  "such as 3600.5 in a time field), -1 when unknown", line=lines[row], field=field)
    found = _first_bad(values, {f: (pl.col(f) != pl.col(f).floor()) | (pl.col(f).abs() > 2.0 ** 53)
                                for f in FIELDS if f not in DECIMAL_FIELDS})
    if found:
        row, field = found
        raise InputError(display, f"{values[field][row]:g} is not a whole number; expected an integer (below "
                                  "2^53), -1 when unknown", line=lines[row], field=field)
    return values


def read_swf(source: Path, display: str) -> tuple[dict[str, str], pl.DataFrame]:
    """The header labels (first value of each) and the records (18 DOUBLE columns) of the SWF file
    `source`."""
    header: dict[str, str] = {}
    texts: list[str] = []
    lines: list[int] = []
    try:
        with open(source, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                stripped = line.strip()
                if not stripped:
                    continue
                if stripped.startswith(";"):
                    found = HEADER_RE.match(stripped)
                    if found:
                        header.setdefault(found.group(1), found.group(2))
                        if found.group(1) == "UnixStartTime" and not NUMBER_RE.match(found.group(2)):
                            raise InputError(display, f"{found.group(2)!r} is not a Unix time; expected whole "
                                                      "seconds since 1970-01-01 UTC", line=number,
                                             field="UnixStartTime")
                    continue
                texts.append(stripped)
                lines.append(number)
    except OSError as exc:
        raise InputError(display, f"cannot be read ({exc.strerror or exc})") from None
    if not texts:
        raise InputError(display, "holds no job line; expected SWF records of 18 numbers after the `;` comments")
    return header, _records(texts, lines, display)


def _beside(source: Path, suffix: str) -> Path | None:
    path = Path(f"{source}{suffix}")
    return path if path.is_file() else None


def read_id_map(source: Path) -> dict[int, tuple[str, str | None]]:
    """Job number -> (original job id, cluster) from the export's `<file>.ids.csv`, if present."""
    path = _beside(source, ".ids.csv")
    if path is None:
        return {}
    try:
        table = pl.read_csv(path, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(str(path), f"cannot be read as the id map ({str(exc).splitlines()[0]})") from None
    if table.columns != ID_MAP_HEADER:
        raise InputError(str(path), f"header is {','.join(table.columns)!r}; expected "
                                    f"{','.join(ID_MAP_HEADER)!r} (the id map of an SWF export)", line=1)
    found: dict[int, tuple[str, str | None]] = {}
    for line, (job, job_id, cluster) in enumerate(table.iter_rows(), 2):
        if job is None or not job.strip().isdigit() or job_id is None:
            raise InputError(str(path), f"job {job!r} with id {job_id!r}; expected a job number and its id",
                             line=line, field="job")
        found[int(job)] = (job_id, cluster)
    return found


def read_codes(source: Path) -> dict[str, dict[int, str]]:
    """SWF field -> number -> name from the `codes` of the export's sidecar
    `<file>.datapackage.json`, if present."""
    path = _beside(source, ".datapackage.json")
    if path is None:
        return {}
    try:
        document = load_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot be read as the export's sidecar ({exc})") from None
    codes = document.get("codes") if isinstance(document, dict) else None
    if not isinstance(codes, dict):
        return {}
    names: dict[str, dict[int, str]] = {}
    for field, numbering in codes.items():
        if field in NAMED and isinstance(numbering, dict):
            names[field] = {int(number): str(name) for name, number in numbering.items()
                            if isinstance(number, int)}
    return names


def _table(header: dict[str, str], records: pl.DataFrame, id_map: dict[int, tuple[str, str | None]],
           codes: dict[str, dict[int, str]]) -> pl.DataFrame:
    """The converted table of the records (see the module docstring)."""
    frame = records.with_columns(pl.col(f).cast(pl.Int64) for f in FIELDS if f not in DECIMAL_FIELDS)
    partial = pl.col("status").is_in(sorted(PARTIAL))
    own = frame.filter(~partial).get_column("job").unique()
    frame = frame.filter(~(partial & pl.col("job").is_in(own.implode())))
    origin = float(header["UnixStartTime"]) if "UnixStartTime" in header else 0.0
    procs = (pl.when(pl.col("allocated_procs") >= 0).then(pl.col("allocated_procs"))
             .when(pl.col("requested_procs") >= 0).then(pl.col("requested_procs")).cast(pl.Float64))
    start = pl.when(pl.col("wait") >= 0).then(pl.col("submit_unix") + pl.col("wait"))
    frame = frame.with_columns((pl.col("submit") + origin).alias("submit_unix"), procs.alias("procs"))
    frame = frame.with_columns(start.alias("start"))
    frame = frame.with_columns(
        pl.when(pl.col("run") >= 0).then(pl.col("start") + pl.col("run")).alias("end"),
        pl.col("status").replace_strict(STATES, default=None, return_dtype=pl.String).alias("state"),
        pl.lit(0.0).alias("no_gpus"),
        pl.when(pl.col("requested_memory") >= 0)
          .then(pl.col("requested_memory") * pl.max_horizontal(pl.col("procs"), 1.0) / 1024 / 1024).alias("mem_gb"),
        *(pl.when(pl.col(field) >= 0).then(pl.col(field).cast(pl.String)
                                           .replace(_text_keys(codes.get(field, {}))))
          .alias(column) for field, column in NAMED.items()),
        pl.lit(header.get("TimeZoneString"), dtype=pl.String).alias("time_zone"),
    )
    jobs = frame.get_column("job").to_list()
    frame = frame.with_columns(pl.Series("job_id", [id_map[j][0] if j in id_map else str(j) for j in jobs],
                                         dtype=pl.String))
    if id_map:
        clusters = [id_map[j][1] if j in id_map else None for j in jobs]
        frame = frame.with_columns(pl.Series("cluster", clusters, dtype=pl.String))
        if "partition" in codes:  # a job number the map lacks: its partition's name
            frame = frame.with_columns(pl.coalesce("cluster", "partition_name").alias("cluster"))
    elif "partition" in codes:
        frame = frame.with_columns(pl.col("partition_name").alias("cluster"))
    return _ordered(frame)


def _ordered(frame: pl.DataFrame) -> pl.DataFrame:
    """The SWF fields, then the derived columns in the order of `DERIVED` (those present)."""
    return frame.select(*FIELDS, *(column for column in DERIVED if column in frame.columns))


def _text_keys(numbering: dict[int, str]) -> dict[str, str]:
    return {str(number): name for number, name in numbering.items()}


def convert(source: Path, display: str, out: Path) -> None:
    """Read the SWF file `source` (named `display` to the user) and write its jobs as Parquet to
    `out` (through a temporary name); `InputError` naming the line and field of bad input."""
    header, records = read_swf(Path(source), display)
    frame = _table(header, records, read_id_map(Path(source)), read_codes(Path(source)))
    partial = Path(f"{out}.tmp")
    try:
        frame.write_parquet(partial, compression="zstd", compression_level=PARQUET_ZSTD_LEVEL)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


PRESET = Preset(
    name="swf",
    description="Standard Workload Format 2.2 (Parallel Workloads Archive logs, ddlx's SWF export): "
                "18 numbers a line, -1 unknown; times from the header's UnixStartTime (offsets without "
                "one); processors read as GPUs (for CPUs: --map gpus=no_gpus,cpus=procs); "
                "the export's <file>.ids.csv and .datapackage.json restore ids, clusters and names",
    mapping={"job_id": "job_id", "user": "user_name", "vc": "queue_name", "job_group": "executable_name",
             "state": "state", "submit": "submit_unix", "start": "start", "end": "end", "gpus": "procs",
             "mem_gb": "mem_gb"},
    optional={"cluster": "cluster"},
    time_unit="s",
    wall_clock=None,  # decided from the data: instants with UnixStartTime, offsets without
    convert=convert,
    suffixes=(".swf",),
)
