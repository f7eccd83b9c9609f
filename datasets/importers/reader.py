"""The importer's reader: an `ImportSpec` -> SQL that reads the table's parts (CSV, Parquet,
archives) into typed Parquet and canonical jobs, run through the ordinary ingest (see
`ddlx.datasets.importers` for the input format and the roll-up)."""

from __future__ import annotations

import contextlib
import csv
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ddlx.datasets.adapter import (
    CsvFormat,
    LocalPart,
    SourcePart,
    TraceAdapter,
    is_archive,
    is_input_file,
    load_csv_parts,
    merge_results,
    parquet_sql,
)
from ddlx.datasets.archives import archive_member_names
from ddlx.datasets.canonical import STATES
from ddlx.datasets.csvload import SOURCE, LoadResult, read_header
from ddlx.datasets.ranges import ValueRange
from ddlx.datasets.sqltext import copy_to_parquet, quote_identifier, sql_string
from ddlx.datasets.timezones import utc_from_zone_sql
from ddlx.datasets.validation import Check, Figure
from ddlx.errors import InputError, first_line, read_error

if TYPE_CHECKING:
    from ddlx.datasets.ingest import IngestResult

from ddlx.datasets.importers.presets import PRESETS, Preset, get_preset
from ddlx.datasets.importers.spec import (
    CSV_SUFFIXES,
    IMPORT_FORMAT,
    LABEL_COLUMNS,
    MAPPING_KEYS,
    MISSING_TIME_WORDS,
    NAIVE_DATETIME_RE,
    NUMBER_RANGES,
    PARQUET_SUFFIXES,
    STATE_WORDS,
    TIME_RANGE,
    TIME_UNITS,
    ZONED_DATETIME_RE,
    ImportSpec,
    ImportSpecError,
    build_spec,
    check_dataset_name,
    parse_mapping,
)

# -- SQL pieces -----------------------------------------------------------------------------

def _sql_list(values: Sequence[str]) -> str:
    return ", ".join(sql_string(v) for v in values)


def text_time_sql(value: str, tz: str) -> str:
    """The instant (TIMESTAMPTZ) of a date-time string `value` (SQL); NULL when missing or unreadable."""
    v = f"trim(CAST({value} AS VARCHAR))"
    return (f"CASE WHEN {v} IS NULL OR lower({v}) IN ({_sql_list(MISSING_TIME_WORDS)}) THEN NULL "
            f"WHEN regexp_matches({v}, {sql_string(NAIVE_DATETIME_RE)}) "
            f"THEN {utc_from_zone_sql(f'TRY_CAST({v} AS TIMESTAMP)', tz)} "
            f"WHEN regexp_matches({v}, {sql_string(ZONED_DATETIME_RE)}) THEN TRY_CAST({v} AS TIMESTAMPTZ) "
            "END")


def text_time_missing_sql(value: str) -> str:
    """True when a date-time string `value` (SQL) means missing."""
    v = f"trim(CAST({value} AS VARCHAR))"
    return f"({v} IS NULL OR lower({v}) IN ({_sql_list(MISSING_TIME_WORDS)}))"


def number_time_sql(value: str, spec: ImportSpec) -> str:
    """The instant of a number `value` (SQL) of `spec.time_unit`s after the origin."""
    unit_us = repr(spec.unit_seconds * 1e6)  # type: ignore[operator]
    return f"make_timestamptz(CAST(round({spec.origin_us} + {value} * {unit_us}) AS BIGINT))"


def state_word_sql(value: str) -> str:
    """The lower-cased first word of a state `value` (SQL), trailing `+` dropped."""
    return f"lower(rtrim(split_part(trim(CAST({value} AS VARCHAR)), ' ', 1), '+'))"


def state_sql(value: str) -> str:
    """The canonical state of a raw state `value` (SQL); NULL for an unknown word."""
    cases = " ".join(f"WHEN {sql_string(word)} THEN {sql_string(state)}" for word, state in STATE_WORDS.items())
    return f"CASE {state_word_sql(value)} {cases} END"


def _tres_number(tres: str, key: str) -> str:
    return f"TRY_CAST(NULLIF(regexp_extract({tres}, {sql_string(f'(?:^|,){key}=([0-9.]+)')}, 1), '') AS DOUBLE)"


#: What TRES names are made of: a type of lowercase letters (cpu, mem, node, billing, energy, gres,
#: license, fs, bb, ic, ...), optionally `/` and a name of `:`-separated segments (gres/gpu, gres/gpu:a100,
#: license/matlab, fs/disk). `_SEGMENT` is a character of a segment.
_LETTER = "abcdefghijklmnopqrstuvwxyz"
_SEGMENT = r"[^=,/:\s]"
TRES_NAME = rf"^[a-z]+(/{_SEGMENT}+(:{_SEGMENT}+)*)?$"
#: The TRES names whose value is a count ddlx reads, and what a count and a memory size look like (at
#: most 15 digits before the point, so they stay finite; memory with an optional K, M, G, T or P).
_COUNT_NAME = rf"(?:cpu|node|gres/gpu(?::{_SEGMENT}+)*)"
TRES_COUNT_NAME = f"^{_COUNT_NAME}$"
_COUNT = r"[0-9]{1,15}(?:\.[0-9]+)?"
TRES_COUNT = f"^{_COUNT}$"
TRES_MEMORY = f"^{_COUNT}[KMGTP]?$"


def _other_than(words: Sequence[str], char: Callable[[str], str]) -> str:
    """A regex (RE2: no look-ahead) of the non-empty strings of the characters `char('')` other than
    `words` (of lowercase letters); `char(used)` is that character class without the characters `used`."""
    longest = max(map(len, words))
    alternatives = [f"{char('')}{{{longest + 1},}}"]
    for length in range(1, longest + 1):
        same = [word for word in words if len(word) == length]
        if not same:
            alternatives.append(f"{char('')}{{{length}}}")
            continue
        for prefix in sorted({word[:i] for word in same for i in range(length)}):
            following = "".join(sorted({word[len(prefix)] for word in same if word.startswith(prefix)}))
            rest = length - len(prefix) - 1
            alternatives.append(prefix + char(following) + (f"{char('')}{{{rest}}}" if rest else ""))
    return "(?:" + "|".join(alternatives) + ")"


def _letters(used: str) -> str:
    return "[" + "".join(c for c in _LETTER if c not in used) + "]"


def _segment_chars(used: str) -> str:
    return _SEGMENT[:-1] + used + "]"


#: One entry ddlx accepts: a count name with a count, mem with a size, or any other TRES name with a
#: non-empty value. `_OTHER_NAME` is a TRES name that is neither a count name nor mem (built without
#: look-ahead, so the whole string is checked by one regular expression).
_OTHER_NAME = (rf"(?:{_other_than(('cpu', 'mem', 'node'), _letters)}"
               rf"|{_other_than(('gres',), _letters)}/{_SEGMENT}+(?::{_SEGMENT}+)*"
               rf"|gres/{_other_than(('gpu',), _segment_chars)}(?::{_SEGMENT}+)*)")
_ENTRY = rf"(?:{_COUNT_NAME}={_COUNT}|mem={_COUNT}[KMGTP]?|{_OTHER_NAME}=[^,]+)"
#: A TRES string whose every entry ddlx accepts (a name may still be given twice).
TRES_STRING = rf"^{_ENTRY}(?:,{_ENTRY})*$"


def _tres_names_sql(tres: str) -> str:
    return f"[split_part(e, '=', 1) FOR e IN string_split({tres}, ',')]"


def _tres_outside_sql(tres: str) -> dict[str, str]:
    """Per count read (gpus, cpus, mem_gb, instances): SQL true when `tres` gives it outside `NUMBER_RANGES`."""
    read = tres_sql(tres)
    return {key: f"coalesce({NUMBER_RANGES[key].outside_sql(read[key])}, false)"
            for key in ("gpus", "cpus", "mem_gb", "instances")}


def tres_refused_sql(tres: str) -> str:
    """SQL true when the import refuses the Slurm TRES string `tres` (a non-empty VARCHAR
    expression): an entry that is not NAME=VALUE with a name of `TRES_NAME` and a value (`cpu8`,
    `gres/gpu`, `cpu=`, an empty entry), a count ddlx reads (cpu, node, gres/gpu, gres/gpu:TYPE)
    that is no number in digits, memory that is no size, a name given twice, or counts outside
    `NUMBER_RANGES`. Values of the other names (billing, energy, licences) are not read.
    `tres_problem_sql` says which of these it is."""
    names = _tres_names_sql(tres)
    return (f"(NOT regexp_full_match({tres}, {sql_string(TRES_STRING)}) "
            f"OR len(list_distinct({names})) < len({names}) OR {' OR '.join(_tres_outside_sql(tres).values())})")


def tres_problem_sql(tres: str) -> str:
    """SQL: why the import refuses the Slurm TRES string `tres` (`tres_refused_sql`), as text naming
    the entry; NULL when it does not. Run in the error path only."""
    entries = f"string_split({tres}, ',')"
    name = "split_part(e, '=', 1)"
    value = "substr(e, strpos(e, '=') + 1)"
    entry = (f"CASE WHEN e = '' THEN 'an empty entry (a comma at an end, or two in a row)' "
             f"WHEN NOT contains(e, '=') OR {value} = '' THEN format('entry ''{{}}'' has no value', e) "
             f"WHEN NOT regexp_matches({name}, {sql_string(TRES_NAME)}) "
             f"THEN format('entry ''{{}}'': ''{{}}'' is not a TRES name', e, {name}) "
             f"WHEN regexp_matches({name}, {sql_string(TRES_COUNT_NAME)}) "
             f"AND NOT regexp_matches({value}, {sql_string(TRES_COUNT)}) "
             f"THEN format('entry ''{{}}'': the {{}} count is not a number in digits', e, {name}) "
             f"WHEN {name} = 'mem' AND NOT regexp_matches({value}, {sql_string(TRES_MEMORY)}) "
             f"THEN format('entry ''{{}}'': mem is not a size in digits with K, M, G, T or P', e) END")
    names = _tres_names_sql(tres)
    repeated = f"[k FOR k, i IN {names} IF list_position({names}, k) < i]"
    outside = " ".join(f"WHEN {condition} THEN {sql_string(f'gives {key} outside {NUMBER_RANGES[key].describe()}')}"
                       for key, condition in _tres_outside_sql(tres).items())
    return (f"coalesce([p FOR p IN [{entry} FOR e IN {entries}] IF p IS NOT NULL][1], "
            f"CASE WHEN len({repeated}) > 0 THEN format('the name ''{{}}'' is given twice', {repeated}[1]) END, "
            f"CASE {outside} END)")


def tres_problem(tres: str | None) -> str | None:
    """What is wrong with one Slurm TRES string (`tres_problem_sql` run on it); None when nothing is
    (an empty or missing string is a job without an allocation)."""
    if tres is None or not tres.strip():
        return None
    con = duckdb.connect()
    try:
        return con.execute(f"SELECT {tres_problem_sql('t')} FROM (SELECT trim(CAST(? AS VARCHAR)) AS t)",
                           [tres]).fetchall()[0][0]
    finally:
        con.close()


def tres_sql(tres: str) -> dict[str, str]:
    """Expressions reading a Slurm TRES string `tres` (SQL): gpus, cpus, mem_gb, instances, gpu_type."""
    typed_counts = f"CAST(regexp_extract_all({tres}, '(?:^|,)gres/gpu:[^=,]+=([0-9.]+)', 1) AS DOUBLE[])"
    typed_names = f"regexp_extract_all({tres}, '(?:^|,)gres/gpu:([^=,]+)=', 1)"
    unit = f"upper(regexp_extract({tres}, '(?:^|,)mem=[0-9.]+([KMGTP]?)', 1))"
    # GB per unit (1024-based; no unit is MB), the unit read once
    mem_factor = (f"[1.0 / 1048576, 1.0 / 1024, 1.0 / 1024, 1.0, 1024.0, 1048576.0]"
                  f"[list_position(['K', 'M', '', 'G', 'T', 'P'], {unit})]")
    return {
        "gpus": (f"CASE WHEN {tres} IS NULL THEN 0.0 "
                 f"WHEN regexp_matches({tres}, '(^|,)gres/gpu=') THEN {_tres_number(tres, 'gres/gpu')} "
                 f"ELSE coalesce(list_sum({typed_counts}), 0.0) END"),
        "cpus": _tres_number(tres, "cpu"),
        "mem_gb": f"{_tres_number(tres, 'mem')} * {mem_factor}",
        "instances": f"CAST({_tres_number(tres, 'node')} AS BIGINT)",
        "gpu_type": f"{typed_names}[list_position({typed_counts}, list_max({typed_counts}))]",
    }


@dataclass(frozen=True)
class _Columns:
    """The mapped columns of a stored raw table, as SQL over its alias `r`."""

    spec: ImportSpec
    present: frozenset[str]

    def column(self, key: str) -> str | None:
        name = self.spec.mapping.get(key) or self.spec.optional.get(key)
        if name is None or name not in self.present:
            return None
        return f"r.{quote_identifier(name)}"

    def text(self, key: str) -> str:
        col = self.column(key)
        return f"NULLIF(trim(CAST({col} AS VARCHAR)), '')" if col else "CAST(NULL AS VARCHAR)"

    def number(self, key: str) -> str | None:
        col = self.column(key)
        return f"CAST({col} AS DOUBLE)" if col else None

    def time(self, key: str) -> str | None:
        col = self.column(key)
        if col is None:
            return None
        if self.spec.time_unit == "datetime":
            return text_time_sql(col, self.spec.tz)
        return number_time_sql(col, self.spec)

    def row_filter(self) -> str:
        """Keeps job rows: with `drop_job_steps`, rows whose job id has no `.`."""
        job_id = self.column("job_id")
        if self.spec.drop_job_steps and job_id:
            return f"coalesce(NOT contains(CAST({job_id} AS VARCHAR), '.'), true)"
        return "true"

    def tres(self) -> str | None:
        alloc, requested = self.column("tres"), self.column("req_tres")
        parts = [f"NULLIF(trim(CAST({c} AS VARCHAR)), '')" for c in (alloc, requested) if c]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"


def cluster_sql(spec: ImportSpec, cols: "_Columns", raw: str) -> str:
    """SQL: the cluster of a row of the raw table `raw` (aliased `r`). Without a cluster column, each
    input file is a cluster, named after the file; a dataset read from one file is one cluster, named
    after the dataset (a file name is no cluster name)."""
    if cols.column("cluster"):
        return cols.text("cluster")
    return (f"CASE WHEN (SELECT count(DISTINCT source_file) FROM {raw}) = 1 THEN {sql_string(spec.name)} "
            "ELSE r.source_cluster END")


def row_id_sql(cols: "_Columns", present: set[str]) -> str:
    """The job id of a row of a table without an id column: its position (1, 2, ...) when the rows
    are ordered by submission time, then by every stored value of the row as text (so identical
    input gives identical ids, however the files were read)."""
    values = ", ".join(f"CAST(r.{quote_identifier(name)} AS VARCHAR) NULLS FIRST" for name in sorted(present))
    submit = cols.time("submit") or "NULL"
    return f"CAST(row_number() OVER (ORDER BY {submit} NULLS LAST, {values}) AS VARCHAR)"


def jobs_sql(spec: ImportSpec, raw: str, present: set[str]) -> str:
    """The canonical rows of an import, from the stored raw table `raw` (a table expression)
    whose columns are `present`."""
    cols = _Columns(spec, frozenset(present))
    tres = cols.tres()
    from_tres = tres_sql("r.ddlx_tres") if tres else {}

    def number(key: str, default: str = "CAST(NULL AS DOUBLE)") -> str:
        return cols.number(key) or from_tres.get(key) or default

    cluster = cluster_sql(spec, cols, raw)
    duration = cols.number("duration")
    if duration is not None and spec.unit_seconds is not None:
        duration = f"{duration} * {spec.unit_seconds!r}"
    gpu_type = cols.text("gpu_type") if cols.column("gpu_type") else from_tres.get("gpu_type", "CAST(NULL AS VARCHAR)")
    state = cols.column("state")
    start_mapped, end_mapped = cols.column("start") is not None, cols.column("end") is not None
    start = "start_given" if start_mapped else "submit_time"
    end = ("end_given" if end_mapped else
           "make_timestamptz(epoch_us(start_time) + CAST(round(duration_s * 1e6) AS BIGINT))")
    queue = "(epoch_us(start_time) - epoch_us(submit_time)) / 1e6" if start_mapped else "CAST(NULL AS DOUBLE)"
    if end_mapped:
        run = "(epoch_us(end_time) - epoch_us(start_time)) / 1e6"
    else:
        run = "CASE WHEN start_time IS NULL THEN NULL ELSE duration_s END"
    instances = cols.number("instances")
    if instances:
        instances = f"CAST(round({instances}) AS BIGINT)"
    else:
        instances = f"coalesce({from_tres.get('instances', 'NULL')}, 1)"
    source = f"(SELECT *, {tres} AS ddlx_tres FROM {raw} AS r) AS r" if tres else f"{raw} AS r"
    return f"""
WITH given AS (
    SELECT
        {cluster} AS cluster,
        {cols.text('job_id') if cols.column('job_id') else row_id_sql(cols, present)} AS job_id,
        {cols.text('user')} AS "user",
        {cols.text('vc')} AS vc,
        {cols.text('job_group')} AS job_group,
        {cols.text('job_name')} AS job_name,
        {cols.text('workload')} AS workload,
        {cols.time('submit')} AS submit_time,
        {cols.time('start') or 'CAST(NULL AS TIMESTAMPTZ)'} AS start_given,
        {cols.time('end') or 'CAST(NULL AS TIMESTAMPTZ)'} AS end_given,
        {duration or 'CAST(NULL AS DOUBLE)'} AS duration_s,
        {number('gpus')} AS num_gpus,
        {number('cpus')} AS num_cpus,
        {number('mem_gb')} AS mem_gb,
        {instances} AS num_instances,
        {gpu_type} AS gpu_type,
        {state_sql(state) if state else 'CAST(NULL AS VARCHAR)'} AS state,
        {f"NULLIF(trim(CAST({state} AS VARCHAR)), '')" if state else 'CAST(NULL AS VARCHAR)'} AS raw_state
    FROM {source}
    WHERE {cols.row_filter()}
),
started AS (SELECT *, {start} AS start_time FROM given),
ended AS (SELECT *, CASE WHEN start_time IS NULL THEN NULL ELSE {end} END AS end_time FROM started)
SELECT
    {sql_string(spec.name)} AS trace, cluster, job_id, "user", vc, job_group, job_name, workload,
    submit_time, start_time, end_time, {sql_string(spec.tz)} AS source_tz,
    {queue} AS queue_s,
    {run} AS run_s,
    num_gpus, num_cpus, mem_gb, num_instances, CAST(1 AS BIGINT) AS num_tasks,
    CASE WHEN coalesce(num_gpus, 0) > 0 THEN gpu_type END AS gpu_type,
    coalesce(num_gpus <> floor(num_gpus), false) AS fractional_gpu,
    state, raw_state
FROM ended
"""


# -- locating the input ---------------------------------------------------------------------

#: The ending of the Parquet table a preset's converter writes from one input file.
CONVERTED_SUFFIX = ".converted.parquet"


def _is_parquet(name: str) -> bool:
    return name.lower().endswith(PARQUET_SUFFIXES)


def _is_table_file(name: str) -> bool:
    return name.lower().endswith(CSV_SUFFIXES + PARQUET_SUFFIXES)


def _stem(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def _archive_parts(archive: Path, shown: str, wanted: Callable[[str], bool]) -> list[SourcePart]:
    names = archive_member_names(archive, wanted=wanted)
    parts = []
    for member in sorted(names):
        base = member.replace("\\", "/").rsplit("/", 1)[-1]
        if wanted(member) and not base.startswith("."):
            parts.append(SourcePart(archive, member, labels=(
                ("source_file", f"{shown}:{member}"), ("source_cluster", _stem(member)))))
    return parts


def _file_part(path: Path, shown: str) -> SourcePart:
    return SourcePart(path, labels=(("source_file", shown), ("source_cluster", _stem(path.name))))


def _wanted_by(preset: Preset | None) -> Callable[[str], bool]:
    """Which file names of a folder or archive an import reads: table files, or for a preset with a
    converter, the names ending as its `suffixes` say."""
    if preset is None or preset.convert is None:
        return _is_table_file
    endings = tuple(suffix.lower() for suffix in preset.suffixes)
    return lambda name: name.lower().endswith(endings)


def locate_parts(source: Path, preset: Preset | None = None) -> list[SourcePart]:
    """The parts of an import input: a CSV or Parquet file, an archive of them, or a folder of them
    (for a preset with a converter: files of its format instead of tables)."""
    wanted = _wanted_by(preset)
    if not os.path.exists(source):
        raise InputError(str(source), "does not exist; expected a CSV or Parquet file, a .tar.gz/.zip "
                                      "archive of CSV files, or a folder of them")
    if not source.is_dir() and is_input_file(source):
        parts = (_archive_parts(source, source.name, wanted) if is_archive(source)
                 else [_file_part(source, source.name)])
    else:
        parts = []
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(source)
            if any(p.startswith(".") for p in relative.parts):
                continue
            if not (is_archive(path) or wanted(path.name)) or not is_input_file(path):
                continue  # is_input_file refuses a folder or FIFO named like a table file
            if is_archive(path):
                parts += _archive_parts(path, relative.as_posix(), wanted)
            elif wanted(path.name):
                parts.append(_file_part(path, relative.as_posix()))
    if not parts:
        if preset is not None and preset.convert is not None:
            endings = ", ".join(suffix for suffix in preset.suffixes if suffix)
            raise InputError(str(source), f"holds no file of the {preset.name} format ({endings}); expected "
                                          f"{preset.description.split(':')[0]}")
        raise InputError(str(source), "holds no CSV or Parquet file (.csv, .txt, .psv, .tsv, .parquet); "
                                      "expected the job table")
    return parts


# -- loading --------------------------------------------------------------------------------

def _label(part: SourcePart, name: str) -> str:
    return dict(part.labels)[name]


def _check_columns(spec: ImportSpec, display: str, found: Sequence[str]) -> None:
    """One `InputError` naming every mapped column missing from `found`, and the columns there are."""
    missing = [f"{key}={col}" for key, col in spec.mapping.items() if col not in found]
    if missing:
        raise InputError(display, f"mapping {', '.join(missing)}: no such column; the file has the columns: "
                                  f"{', '.join(found)}")
    clash = [name for name in LABEL_COLUMNS if name in found]
    if clash:
        raise InputError(display, f"has a column named {clash[0]!r}, which ddlx adds to every imported row; "
                                  "rename that column")


def _csv_format(spec: ImportSpec, local: LocalPart) -> CsvFormat:
    """The format of one CSV part, from its header: mapped numbers DOUBLE, everything else VARCHAR."""
    display = local.part.display
    try:
        size = local.local_path.stat().st_size
    except OSError as exc:
        raise InputError(display, f"cannot be read ({exc.strerror or exc})") from None
    if size == 0:
        raise InputError(display, "file is empty; expected a header line naming the columns, then rows")
    header = read_header(local.local_path, display, spec.delimiter)
    duplicated = sorted({name for name in header if name and header.count(name) > 1})
    if duplicated:
        raise InputError(display, f"the header names the column {duplicated[0]!r} twice; expected distinct "
                                  "column names", line=1)
    names = [name or f"column{index + 1}" for index, name in enumerate(header)]
    _check_columns(spec, display, names)
    numbers = spec.number_columns()
    columns = {name: "DOUBLE" if name in numbers else "VARCHAR" for name in names}
    labels = ", ".join(f"{sql_string(value)} AS {quote_identifier(name)}" for name, value in local.part.labels)
    return CsvFormat(columns=columns, select=f"SELECT *, {labels} FROM {SOURCE}", header=True,
                     delimiter=spec.delimiter, expected_header=tuple(header))


#: A value that reads as a date or a time of day: 2023-01-05, 2023/01/05, 05/01/2023, 10:00.
_DATE_LIKE = re.compile(r"'(\d{4}[-/]\d{1,2}[-/]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}|\d{1,2}:\d{2})")


@contextlib.contextmanager
def _time_unit_hint(spec: ImportSpec) -> Iterator[None]:
    """Name the likely fix of a time column (submit, start, end) whose date-time strings were read as
    numbers: `--time-unit datetime`."""
    try:
        yield
    except InputError as exc:
        times = {spec.mapping.get(key) or spec.optional.get(key) for key in ("submit", "start", "end")}
        if (spec.time_unit == "datetime" or exc.field not in times - {None} or "expected a number" not in exc.problem
                or not _DATE_LIKE.search(exc.problem)):
            raise
        exc.args = (f"{exc.args[0]}; the values are date-times: use --time-unit datetime",)
        raise


#: Parquet column types a mapped number column may have (text is checked value by value).
_NUMBER_SOURCE_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                        "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "VARCHAR")


def _load_parquet(con: duckdb.DuckDBPyConnection, spec: ImportSpec, local: LocalPart, out_path: Path) -> LoadResult:
    """One Parquet part -> the stored shape: mapped numbers DOUBLE, mapped text VARCHAR, labels added."""
    display = local.part.display
    source = f"read_parquet({sql_string(str(local.local_path))})"
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except duckdb.Error as exc:
        raise InputError(display, f"cannot be read as Parquet ({first_line(exc)})") from None
    types = {row[0]: str(row[1]) for row in described}
    _check_columns(spec, display, list(types))
    numbers = spec.number_columns()
    texts = {col for key, col in {**spec.optional, **spec.mapping}.items() if spec.kind(key) != "number"}
    selected = []
    for name, sql_type in types.items():
        if name in numbers:
            if not sql_type.startswith(_NUMBER_SOURCE_TYPES):
                timelike = "TIME" in sql_type or "DATE" in sql_type
                hint = " (use --time-unit datetime for date-time columns)" if timelike else ""
                raise InputError(display, f"column is {sql_type}; expected numbers{hint}", field=name)
            selected.append(f"TRY_CAST({quote_identifier(name)} AS DOUBLE) AS {quote_identifier(name)}")
        elif name in texts:
            selected.append(f"CAST({quote_identifier(name)} AS VARCHAR) AS {quote_identifier(name)}")
        else:
            selected.append(quote_identifier(name))
    for name in numbers & set(types):
        bad = con.execute(
            f"SELECT file_row_number, CAST({quote_identifier(name)} AS VARCHAR) FROM read_parquet("
            f"{sql_string(str(local.local_path))}, file_row_number=true) WHERE {quote_identifier(name)} IS NOT NULL "
            f"AND TRY_CAST({quote_identifier(name)} AS DOUBLE) IS NULL LIMIT 1").fetchall()
        if bad:
            raise InputError(display, f"row {bad[0][0] + 1}: cannot read {bad[0][1]!r}; expected a number", field=name)
    labels = ", ".join(f"{sql_string(value)} AS {quote_identifier(name)}" for name, value in local.part.labels)
    try:
        rows = copy_to_parquet(con, f"SELECT {', '.join(selected)}, {labels} FROM {source}", out_path)
    except duckdb.Error as exc:
        out_path.unlink(missing_ok=True)
        raise read_error(exc, display, "cannot be read as Parquet", out_path) from None
    if rows == 0:
        out_path.unlink(missing_ok=True)
        raise InputError(display, "has no rows; expected at least one job row")
    return LoadResult(rows=int(rows))


@dataclass(frozen=True)
class _ValueCheck:
    """A condition (`bad_when`, SQL over `r`) that flags a stored raw value that cannot become a
    canonical value; `problem(value)` says what is wrong. `numeric` values are compared as numbers
    when the error path looks for the row."""

    column: str
    bad_when: str
    problem: Callable[[str], str]
    numeric: bool = False


def _value_checks(spec: ImportSpec, present: set[str]) -> list[_ValueCheck]:
    """What the raw values of the mapped columns are checked for before the canonical rows are built."""
    cols = _Columns(spec, frozenset(present))
    checks = []
    window = TIME_RANGE.describe()
    for key in ("submit", "start", "end"):
        col = cols.column(key)
        if col is None:
            continue
        name = spec.mapping.get(key) or spec.optional[key]
        if spec.time_unit == "datetime":
            instant = text_time_sql(col, spec.tz)
            checks.append(_ValueCheck(
                name, f"NOT {text_time_missing_sql(col)} "
                      f"AND (({instant}) IS NULL OR {TIME_RANGE.outside_sql(instant)})",
                lambda v: f"cannot read {v!r} as a date-time in {window}; expected e.g. 2023-01-05 10:00:00 or "
                          "2023-01-05T10:00:00+02:00 (an offset from -12:00 to +14:00; empty, Unknown or None "
                          "for missing)"))
        else:
            first, last = (_unix_us(str(bound)) for bound in (TIME_RANGE.low, TIME_RANGE.high))
            instant = f"{spec.origin_us} + {col} * {spec.unit_seconds * 1e6!r}"  # type: ignore[operator]
            checks.append(_ValueCheck(
                name, f"{col} IS NOT NULL AND NOT (({instant}) BETWEEN {first} AND {last})",
                lambda v: f"time {v} ({spec.time_unit} after the origin) is outside the accepted range {window}; "
                          "expected a finite number in the time unit", numeric=True))
    for key, ranged in NUMBER_RANGES.items():
        col = cols.column(key)
        if col is None:
            continue
        if key == "duration" and spec.unit_seconds:
            ranged = ValueRange(ranged.low, float(ranged.high) / spec.unit_seconds,
                                f"{spec.time_unit}, about 100 years")
        checks.append(_ValueCheck(
            spec.mapping[key], f"{col} IS NOT NULL AND {ranged.outside_sql(col)}",
            lambda v, key=key, ranged=ranged: f"value {v} of {key} is outside the accepted range {ranged.describe()}",
            numeric=True))
    for key in ("tres", "req_tres"):
        if cols.column(key) is not None:
            checks.append(_ValueCheck(
                spec.mapping.get(key) or spec.optional[key],
                f"{cols.text(key)} IS NOT NULL AND {tres_refused_sql(cols.text(key))}",
                lambda v: f"cannot read the TRES string {v!r}: {tres_problem(v)}; expected NAME=VALUE entries "
                          "separated by commas, each name once, e.g. billing=8,cpu=8,gres/gpu:a100=2,mem=64G,node=1 "
                          "(cpu, node and gres/gpu: numbers; mem: a number ending with K, M, G, T or P, MB "
                          "without)"))
    state = cols.column("state")
    if state is not None:
        accepted = ", ".join(f"{s} ({'/'.join(w for w, c in STATE_WORDS.items() if c == s)})" for s in STATES)
        given = f"NULLIF(trim(CAST({state} AS VARCHAR)), '')"
        checks.append(_ValueCheck(
            spec.mapping["state"], f"{given} IS NOT NULL AND ({state_sql(state)}) IS NULL",
            lambda v: f"unknown state {v!r}; expected a word meaning one of {accepted} (case ignored)"))
    return checks


def _unix_us(day: str) -> int:
    """Unix microseconds of the UTC midnight starting `day` (`YYYY-MM-DD`)."""
    moment = datetime.fromisoformat(day).replace(tzinfo=timezone.utc)
    return int(moment.timestamp()) * 1_000_000


def _same(cell: str, value: str, numeric: bool) -> bool:
    """Whether a CSV `cell` holds `value` (as numbers when `numeric`: `1E3` is `1000.0`)."""
    if not numeric:
        return cell == value
    try:
        a, b = float(cell), float(value)
    except ValueError:
        return False
    return a == b or (math.isnan(a) and math.isnan(b))


def _find_row(local: LocalPart, check: _ValueCheck, value: str, delimiter: str) -> tuple[int | None, str | None]:
    """Where `check.column` first holds `value` in `local`: (line, None) for a CSV, (None, 'row N')
    for Parquet. Runs only in the error path, after DuckDB found the bad value."""
    column = check.column
    if _is_parquet(local.part.member or local.part.path.name) or local.local_path.name.endswith(CONVERTED_SUFFIX):
        con = duckdb.connect()
        try:
            found = con.execute(
                f"SELECT file_row_number FROM read_parquet({sql_string(str(local.local_path))}, "
                f"file_row_number=true) WHERE CAST({quote_identifier(column)} AS VARCHAR) = ? LIMIT 1",
                [value]).fetchall()
        finally:
            con.close()
        return None, (f"row {found[0][0] + 1}" if found else None)
    with open(local.local_path, encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter, quotechar='"')
        header = [name.strip().lstrip("\ufeff") for name in next(reader, [])]
        if column not in header:
            return None, None
        index = header.index(column)
        for row in reader:
            if index < len(row) and _same(row[index], value, check.numeric):
                return reader.line_num, None
    return None, None


def check_values(con: duckdb.DuckDBPyConnection, spec: ImportSpec, stored: Path,
                 parts: dict[str, LocalPart]) -> None:
    """Raise one `InputError` (file, line, column) for the first raw value that cannot become a
    canonical value: an unknown state, an unreadable date-time, a non-finite number."""
    table = f"read_parquet({sql_string(str(stored))})"
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {table}").fetchall()}
    where = _Columns(spec, frozenset(present)).row_filter()
    for check in _value_checks(spec, present):
        bad = con.execute(f"SELECT source_file, CAST({quote_identifier(check.column)} AS VARCHAR) FROM {table} AS r "
                          f"WHERE {where} AND ({check.bad_when}) LIMIT 1").fetchall()
        if not bad:
            continue
        source_file, value = bad[0]
        local = parts[source_file]
        line, row = _find_row(local, check, value, spec.delimiter)
        problem = check.problem(value)
        raise InputError(local.part.display, f"{row}: {problem}" if row else problem, line=line, field=check.column)


def stored_columns(path: Path) -> set[str]:
    """The column names of a stored Parquet file."""
    con = duckdb.connect()
    try:
        return {row[0] for row in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet({sql_string(str(path))})").fetchall()}
    finally:
        con.close()


# -- the adapter ----------------------------------------------------------------------------

@dataclass
class ImportAdapter(TraceAdapter):
    """The adapter of an imported dataset, built from its `ImportSpec` (see the module docstring).

    `input_path` is the file, archive or folder to read: ingest only takes folders and archives,
    so a plain file is handed to ingest as its folder and located here.
    """

    spec: ImportSpec | None = None
    input_path: Path | None = None

    @classmethod
    def for_spec(cls, spec: ImportSpec, input_path: Path | None = None) -> "ImportAdapter":
        return cls(name=spec.name, source_tz=spec.tz, tables=(spec.raw_table,), title=spec.title,
                   options=spec.options(), spec=spec, input_path=input_path)

    @property
    def import_spec(self) -> ImportSpec:
        assert self.spec is not None, "ImportAdapter needs a spec (use ImportAdapter.for_spec)"
        return self.spec

    def locate(self, source: Path, tables: Sequence[str]) -> dict[str, list[SourcePart]]:
        spec = self.import_spec
        return {spec.raw_table: locate_parts(self.input_path or source, get_preset(spec.preset))}

    def load_table(self, con: duckdb.DuckDBPyConnection, table: str, parts: list[LocalPart],
                   out_path: Path, max_rejected_rows: int) -> LoadResult:
        spec = self.import_spec
        convert = getattr(get_preset(spec.preset), "convert", None)
        total = LoadResult(rows=0)
        part_paths: list[Path] = []
        read: list[LocalPart] = []  # the parts as read (a converted part: its table)
        try:
            with _time_unit_hint(spec):
                for index, local in enumerate(parts):
                    single = len(parts) == 1
                    part_path = out_path if single else out_path.with_name(f"{out_path.stem}.part{index}.parquet")
                    part_paths.append(part_path)
                    if convert is not None:
                        converted = out_path.with_name(f"{out_path.stem}.part{index}{CONVERTED_SUFFIX}")
                        part_paths.append(converted)
                        convert(local.local_path, local.part.display, converted)
                        local = LocalPart(local.part, converted)
                        result = _load_parquet(con, spec, local, part_path)
                    elif _is_parquet(local.part.member or local.part.path.name):
                        result = _load_parquet(con, spec, local, part_path)
                    else:
                        csv_format = _csv_format(spec, local)
                        result = load_csv_parts(con, [local], part_path, max_rejected_rows, lambda _part: csv_format)
                    merge_results(total, result)
                    read.append(local)
                if len(parts) > 1:
                    sources = ", ".join(sql_string(str(p)) for p in part_paths if not p.name.endswith(CONVERTED_SUFFIX))
                    copy_to_parquet(con, f"SELECT * FROM read_parquet([{sources}], union_by_name=true)", out_path)
                check_values(con, spec, out_path, {_label(p.part, "source_file"): p for p in read})
        finally:
            for part_path in part_paths:
                if part_path != out_path:
                    part_path.unlink(missing_ok=True)
        return total

    def derived_tables(self, folder: Path, present: set[str]) -> dict[str, str]:
        spec = self.import_spec
        if spec.raw_table not in present:
            return {}
        columns = stored_columns(folder / f"{spec.raw_table}.parquet")
        return {self.jobs_table: jobs_sql(spec, parquet_sql(folder, spec.raw_table), columns)}

    def validation_checks(self, present: set[str]) -> list[Check]:
        spec, jobs = self.import_spec, self.jobs_table
        checks: list[Check] = []
        if spec.raw_table in present and spec.drop_job_steps and "job_id" in spec.mapping:
            checks.append(Check(spec.raw_table, "job step rows (job id with '.'), not counted as jobs",
                                f"contains(CAST({quote_identifier(spec.mapping['job_id'])} AS VARCHAR), '.')"))
        if jobs not in present:
            return checks
        checks += [
            Check(jobs, "missing submit time", "submit_time IS NULL"),
            Check(jobs, "missing GPU count", "num_gpus IS NULL"),
            Check(jobs, "negative run time (end before start)", "run_s < 0"),
            Check(jobs, "no run time (still running, never started or no end)", "run_s IS NULL"),
        ]
        if "start" in spec.mapping or "start" in spec.optional:
            checks += [
                Check(jobs, "never started (no start time)", "start_time IS NULL"),
                Check(jobs, "negative queueing delay (start before submit)", "queue_s < 0"),
            ]
        if "state" in spec.mapping:
            checks.append(Check(jobs, "empty state", "raw_state IS NULL"))
        if "job_id" in spec.mapping:
            checks.append(Check(jobs, "duplicate job_id within a cluster (rows beyond the first)", query=(
                f'SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {quote_identifier(jobs)} '
                "WHERE job_id IS NOT NULL GROUP BY cluster, job_id HAVING count(*) > 1)")))
        return checks

    def figures(self, present: set[str]) -> list[Figure]:
        jobs = self.jobs_table
        if jobs not in present:
            return []
        return [
            Figure(jobs, "GPU time (num_gpus x run_s)",
                   f'SELECT sum(num_gpus * run_s) / 3600 FROM {quote_identifier(jobs)}', "GPU-hours"),
            Figure(jobs, "submission span (first to last submit)",
                   f'SELECT (epoch(max(submit_time)) - epoch(min(submit_time))) / 86400 FROM {quote_identifier(jobs)}',
                   "days"),
            Figure(jobs, "clusters", f'SELECT count(DISTINCT cluster) FROM {quote_identifier(jobs)}', "clusters"),
        ]


def import_with_spec(spec: ImportSpec, source: Path, home: Path, max_rejected_rows: int = 0,
                     progress: Callable[[str], None] | None = None) -> "IngestResult":
    """Import `source` (file, archive or folder) as described by `spec` into the catalog of `home`."""
    from ddlx.datasets import ingest

    source = Path(source)
    if not os.path.exists(source):
        locate_parts(source, get_preset(spec.preset))  # raises the `InputError` saying what --from should be
    adapter = ImportAdapter.for_spec(spec, input_path=source)
    handed = source if source.is_dir() or is_archive(source) else source.parent
    return ingest.ingest_with(adapter, handed, home, max_rejected_rows=max_rejected_rows, progress=progress)


def import_dataset(name: str, source: Path, home: Path, mapping: dict[str, str] | str | None = None,
                   preset: str | None = None, time_unit: str | None = None, tz: str | None = None,
                   origin: str | None = None, delimiter: str | None = None, max_rejected_rows: int = 0,
                   progress: Callable[[str], None] | None = None, wall_clock: bool | None = None) -> "IngestResult":
    """Import a job table as the dataset `name` (see `build_spec` for the options).

    Raises `ImportSpecError` for bad options, `UnknownDatasetError` for a bad name and
    `InputError` for bad input; the catalog is then unchanged.
    """
    from ddlx.datasets.catalog import read_registrations

    spec = build_spec(name, mapping=mapping, preset=preset, time_unit=time_unit, tz=tz, origin=origin,
                      delimiter=delimiter, registered=list(read_registrations(Path(home))), wall_clock=wall_clock)
    return import_with_spec(spec, Path(source), Path(home), max_rejected_rows, progress)


__all__ = [
    "IMPORT_FORMAT", "MAPPING_KEYS", "PRESETS", "STATE_WORDS", "TIME_UNITS", "ImportAdapter", "ImportSpec",
    "ImportSpecError", "Preset", "build_spec", "check_dataset_name", "import_dataset", "import_with_spec",
    "jobs_sql", "locate_parts", "parse_mapping",
]
