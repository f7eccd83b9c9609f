"""What an import is told: the `ImportSpec` (dataset name, column mapping, time unit, zone, origin,
delimiter, preset), the mapping keys and units it may use, and `build_spec`, which checks the
command line's options into one."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import duckdb

from ddlx.datasets.canonical import jobs_table_name
from ddlx.datasets.importers.presets import presets
from ddlx.datasets.ranges import ValueRange
from ddlx.datasets.sqltext import sql_string
from ddlx.datasets.timezones import utc_offset_pattern
from ddlx.errors import UnknownDatasetError, UsageError

#: Bump when the stored tables of an import change shape, so unchanged inputs are imported again.
IMPORT_FORMAT = 2

#: Mapping key -> (kind, meaning). Kinds: text (VARCHAR), number (DOUBLE), time, state.
MAPPING_KEYS: dict[str, tuple[str, str]] = {
    "job_id": ("text", "job identifier"),
    "user": ("text", "submitting user"),
    "vc": ("text", "virtual cluster, queue or partition"),
    "cluster": ("text", "cluster name (default: the input file's name without extension)"),
    "job_name": ("text", "job name"),
    "job_group": ("text", "recurring-job tag"),
    "workload": ("text", "workload label"),
    "gpu_type": ("text", "GPU model"),
    "state": ("state", "job state (mapped to completed, failed, cancelled, running, pending)"),
    "submit": ("time", "submission time"),
    "start": ("time", "start time"),
    "end": ("time", "end time"),
    "duration": ("number", "run time, in the time unit (seconds when the unit is datetime)"),
    "gpus": ("number", "GPUs of the whole job"),
    "cpus": ("number", "CPU cores of the whole job"),
    "mem_gb": ("number", "memory of the whole job, GB"),
    "instances": ("number", "instances, pods or nodes of the job"),
    "tres": ("text", "Slurm TRES string (AllocTRES): gpus, cpus, mem_gb, gpu_type, instances"),
    "req_tres": ("text", "Slurm requested TRES (ReqTRES), used where tres is empty"),
    "node_list": ("text", "Slurm hostlist of the job's nodes (NodeList, e.g. gpu[001-003]): GPU allocations"),
    "gres_detail": ("text", "GPU indices per node, ;-separated in node-list order (GresDetail, e.g. "
                            "gpu:a100:4(IDX:0-3)): GPU allocations"),
}

#: Time unit -> seconds per unit; `datetime` means date-time strings.
TIME_UNITS: dict[str, float | None] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "datetime": None}

#: Lower-cased first word of a state value -> canonical state. Slurm's job states (the JOB STATE
#: CODES of `man sacct`: BOOT_FAIL, CANCELLED, COMPLETED, DEADLINE, FAILED, NODE_FAIL, OUT_OF_MEMORY,
#: PENDING, PREEMPTED, RUNNING, REQUEUED, RESIZING, REVOKED, SUSPENDED, TIMEOUT) are all here, in
#: `SLURM_STATES`; the other words are those of other schedulers' exports.
STATE_WORDS: dict[str, str] = {
    "completed": "completed", "pass": "completed", "passed": "completed", "succeeded": "completed",
    "success": "completed",
    "failed": "failed", "timeout": "failed", "node_fail": "failed", "out_of_memory": "failed",
    "boot_fail": "failed", "deadline": "failed",
    "cancelled": "cancelled", "canceled": "cancelled", "killed": "cancelled", "preempted": "cancelled",
    "revoked": "cancelled",
    "running": "running", "suspended": "running", "resizing": "running",
    "pending": "pending", "waiting": "pending", "queued": "pending", "requeued": "pending",
}
#: Every job state sacct prints (`man sacct`, JOB STATE CODES), each a key of `STATE_WORDS` lower-cased.
SLURM_STATES: tuple[str, ...] = (
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING",
    "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED", "TIMEOUT")

#: Accepted range of the canonical times: numeric times count from the Unix epoch by default, so
#: nothing real lies before 1970.
TIME_RANGE = ValueRange("1970-01-01", "2100-01-01")
#: Accepted range of each mapped number (`duration` in seconds; scaled to the time unit).
NUMBER_RANGES: dict[str, ValueRange] = {
    "duration": ValueRange(0, 3.2e9, "seconds, about 100 years"),
    "gpus": ValueRange(0, 1_000_000, "GPUs"),
    "cpus": ValueRange(0, 100_000_000, "CPU cores"),
    "mem_gb": ValueRange(0, 1e9, "GB"),
    "instances": ValueRange(0, 1_000_000, "instances"),
}

#: Values of a datetime column that mean "missing" (compared lower-cased, after trimming).
MISSING_TIME_WORDS: tuple[str, ...] = ("", "unknown", "none", "null", "na", "n/a", "nan", "nat")

#: A date-time string without zone: read as wall clock in the import's time zone.
NAIVE_DATETIME_RE = r"^\d{4}-\d{1,2}-\d{1,2}([T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$"
#: A date-time string ending with a zone (offset, Z, UTC/GMT or an IANA name): read as that instant.
#: An offset must be one a real zone has (-12:00 to +14:00, minutes 00, 15, 30 or 45).
ZONED_DATETIME_RE = (r"\d:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|" + utc_offset_pattern(":?", minutes_optional=True)
                     + r"|UTC|GMT|[A-Za-z_]+/[A-Za-z_/+-]+)$")

CSV_SUFFIXES = (".csv", ".txt", ".psv", ".tsv")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Columns every part gets (constant per part).
LABEL_COLUMNS = ("source_file", "source_cluster")
NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


class ImportSpecError(UsageError):
    """An import option is malformed; `option` names it (e.g. `--map`), for the command line."""

    def __init__(self, option: str, message: str):
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


@dataclass(frozen=True)
class ImportSpec:
    """Everything that says how to read one imported dataset (stored in its manifest).

    `mapping` is canonical key -> column (every one must exist); `optional` likewise, used when
    the column exists. `origin_us` is the instant numeric times count from, in Unix microseconds.
    `wall_clock` says whether the times are real instants (hours of day and weekdays mean
    something): True or False as told, None to decide from the data (`has_wall_clock`).
    """

    name: str
    mapping: dict[str, str]
    optional: dict[str, str]
    time_unit: str
    tz: str
    origin: str | None
    origin_us: int
    delimiter: str
    preset: str | None
    drop_job_steps: bool
    wall_clock: bool | None = None

    @property
    def raw_table(self) -> str:
        return f"{self.name.replace('-', '_')}_job_table"

    @property
    def jobs_table(self) -> str:
        return jobs_table_name(self.name)

    @property
    def unit_seconds(self) -> float | None:
        return TIME_UNITS[self.time_unit]

    @property
    def title(self) -> str:
        how = f"preset {self.preset}" if self.preset else "mapped columns"
        return f"Imported: {self.name} ({how})"

    def options(self) -> dict[str, Any]:
        """The spec as JSON-ready data (the adapter's `options`, kept in the manifest)."""
        return {
            "import_format": IMPORT_FORMAT, "preset": self.preset, "mapping": dict(self.mapping),
            "optional_mapping": dict(self.optional), "time_unit": self.time_unit, "tz": self.tz,
            "origin": self.origin, "origin_unix_us": self.origin_us, "delimiter": self.delimiter,
            "drop_job_steps": self.drop_job_steps, "wall_clock": self.wall_clock,
        }

    @classmethod
    def from_options(cls, name: str, options: dict[str, Any]) -> "ImportSpec":
        """The spec of the imported dataset `name` from its stored `options()` (the manifest's
        `adapter_options`)."""
        return cls(
            name=name, mapping=dict(options.get("mapping", {})), optional=dict(options.get("optional_mapping", {})),
            time_unit=str(options.get("time_unit", "s")), tz=str(options.get("tz") or "UTC"),
            origin=options.get("origin"), origin_us=int(options.get("origin_unix_us") or 0),
            delimiter=str(options.get("delimiter", ",")), preset=options.get("preset"),
            drop_job_steps=bool(options.get("drop_job_steps")), wall_clock=options.get("wall_clock"))

    def kind(self, key: str) -> str:
        """text, number, time or state; time columns are numbers unless the unit is datetime."""
        kind = MAPPING_KEYS[key][0]
        if kind == "time":
            return "text_time" if self.time_unit == "datetime" else "number"
        return kind

    def number_columns(self) -> set[str]:
        """Columns read as DOUBLE: those mapped to number keys (and numeric times)."""
        wanted = {**self.optional, **self.mapping}
        return {col for key, col in wanted.items() if self.kind(key) == "number"}


# -- building a spec ------------------------------------------------------------------------

def check_dataset_name(name: str, registered: Sequence[str] = ()) -> None:
    """`UnknownDatasetError` unless `name` can name an imported dataset.

    Allowed: lowercase letters, digits, `_` and `-`, starting with a letter (64 at most). It must
    not be a registered trace (`ddlx datasets list`), nor name the same tables as one (`-` and `_`
    are the same in table names), nor clash that way with another dataset in `registered`.
    """
    from ddlx.datasets.plugins import TRACES

    if not NAME_RE.match(name):
        raise UnknownDatasetError(
            f"dataset name {name!r} is not allowed; expected lowercase letters, digits, '_' or '-', "
            "starting with a letter (at most 64 characters)")
    for trace in TRACES:
        if jobs_table_name(trace) == jobs_table_name(name):
            raise UnknownDatasetError(
                f"dataset name {name!r} clashes with the registered trace '{trace}'; registered traces "
                f"are ingested with `ddlx datasets ingest {trace} --from DIR`; choose another name")
    for other in registered:
        if other != name and jobs_table_name(other) == jobs_table_name(name):
            raise UnknownDatasetError(
                f"dataset name {name!r} would share its tables with the dataset '{other}' already in "
                "the catalog ('-' and '_' are the same in table names); choose another name")


def parse_mapping(text: str) -> dict[str, str]:
    """`submit=COL,gpus=COL,...` -> {key: column}; `ImportSpecError` for a malformed mapping."""
    mapping: dict[str, str] = {}
    for item in (piece.strip() for piece in text.split(",")):
        if not item:
            continue
        key, sep, column = item.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not key or not column:
            raise ImportSpecError("--map", f"{item!r} is not KEY=COLUMN (e.g. submit=submit_time)")
        if key not in MAPPING_KEYS:
            raise ImportSpecError("--map", f"unknown key {key!r}; expected one of: {', '.join(MAPPING_KEYS)}")
        if key in mapping:
            raise ImportSpecError("--map", f"key {key!r} is mapped twice")
        mapping[key] = column
    return mapping


def _check_zone(tz: str) -> None:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ImportSpecError("--tz", f"unknown time zone {tz!r}; expected an IANA name such as UTC, "
                                      "America/Los_Angeles or Asia/Shanghai") from None
    con = duckdb.connect()
    try:
        con.execute(f"SELECT epoch(timezone({sql_string(tz)}, TIMESTAMP '2000-01-01 00:00:00'))").fetchall()
    except duckdb.Error:
        raise ImportSpecError("--tz", f"time zone {tz!r} is not known to DuckDB; expected an IANA name") from None
    finally:
        con.close()


def _origin_us(origin: str | None, tz: str) -> int:
    """Unix microseconds of `origin` (wall clock in `tz` unless it has an offset); 0 for None."""
    if origin is None:
        return 0
    try:
        moment = datetime.fromisoformat(origin.strip())
    except ValueError:
        raise ImportSpecError("--origin", f"{origin!r} is not a date-time; expected 'YYYY-MM-DD HH:MM:SS' "
                                          "(optionally with an offset such as +08:00)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(tz))
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _delimiter(text: str) -> str:
    value = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if len(value) != 1 or value in ('"', "\n", "\r"):
        raise ImportSpecError("--delimiter", f"{text!r} is not one character (use \\t or tab for a tab)")
    return value


def build_spec(name: str, mapping: dict[str, str] | str | None = None, preset: str | None = None,
               time_unit: str | None = None, tz: str | None = None, origin: str | None = None,
               delimiter: str | None = None, registered: Sequence[str] = (),
               wall_clock: bool | None = None) -> ImportSpec:
    """Check the options of an import and return its spec.

    `mapping` entries override the preset's. Defaults: the preset's time unit, delimiter and wall
    clock (else `s`, `,` and decided from the data), time zone UTC, origin the Unix epoch. Raises
    `UnknownDatasetError` for a bad name and `ImportSpecError` (naming the option) for anything
    else.
    """
    check_dataset_name(name, registered)
    chosen = None
    if preset is not None:
        known = presets()
        if preset not in known:
            raise ImportSpecError("--preset", f"unknown preset {preset!r}; expected one of: {', '.join(known)}")
        chosen = known[preset]
    given = parse_mapping(mapping) if isinstance(mapping, str) else dict(mapping or {})
    for key in given:
        if key not in MAPPING_KEYS:
            raise ImportSpecError("--map", f"unknown key {key!r}; expected one of: {', '.join(MAPPING_KEYS)}")
    full = {**(chosen.mapping if chosen else {}), **given}
    optional = {k: v for k, v in (chosen.optional if chosen else {}).items() if k not in full}
    if not full:
        raise ImportSpecError("--map", "no column mapping; give --preset itp|slurm or "
                                       "--map submit=COL,duration=COL,gpus=COL")
    missing = []
    if "submit" not in full:
        missing.append("submit (submission time)")
    if "gpus" not in full and "tres" not in full:
        missing.append("gpus (GPUs of the job)")
    if "duration" not in full and "end" not in full:
        missing.append("duration or end")
    if missing:
        raise ImportSpecError("--map", "missing required mapping: " + "; ".join(missing))
    unit = time_unit if time_unit is not None else (chosen.time_unit if chosen else "s")
    if unit not in TIME_UNITS:
        raise ImportSpecError("--time-unit", f"unknown time unit {unit!r}; expected one of: {', '.join(TIME_UNITS)}")
    zone = tz if tz is not None else "UTC"
    _check_zone(zone)
    return ImportSpec(
        name=name, mapping=full, optional=optional, time_unit=unit, tz=zone, origin=origin,
        origin_us=_origin_us(origin, zone),
        delimiter=_delimiter(delimiter) if delimiter is not None else (chosen.delimiter if chosen else ","),
        preset=chosen.name if chosen else None, drop_job_steps=bool(chosen and chosen.drop_job_steps),
        wall_clock=wall_clock if wall_clock is not None else (chosen.wall_clock if chosen else None),
    )


#: Numeric times with no origin whose earliest submission falls before this instant are taken for
#: offsets from an undisclosed start (a real job trace does not begin before 1980).
OFFSET_TIMES_BEFORE = datetime(1980, 1, 1, tzinfo=timezone.utc)


def starts_recorded(options: dict[str, Any]) -> bool:
    """Whether an imported dataset maps a start column (from its stored spec, `options`). Without
    one every job is taken to start at its submission, so GPUs held over time are the demand
    assuming no queueing, and no queueing delay is known."""
    return "start" in options.get("mapping", {}) or "start" in options.get("optional_mapping", {})


def has_wall_clock(options: dict[str, Any], earliest_submit_s: float | None) -> bool:
    """Whether an imported dataset's times are real instants, from its stored spec (`options`):
    as told when `wall_clock` is set; else False when its times are numbers counted from the
    default origin (none given) and its earliest submission (`earliest_submit_s`, Unix seconds) is
    before `OFFSET_TIMES_BEFORE` (offsets from an undisclosed start, like ITP's), True otherwise."""
    told = options.get("wall_clock")
    if told is not None:
        return bool(told)
    offsets = options.get("time_unit") != "datetime" and options.get("origin") is None
    return not (offsets and earliest_submit_s is not None
                and earliest_submit_s < OFFSET_TIMES_BEFORE.timestamp())


