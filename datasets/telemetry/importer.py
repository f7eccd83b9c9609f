"""Import GPU telemetry beside a dataset: plan bounded chunks, skip those already stored, screen the
samples for data-quality findings, and write each finished chunk (`store.write_chunk`).

Sources (`import_metrics(source=...)`):
- an `http://` or `https://` address: a Prometheus server, read with range queries
  (`prometheus.py`) of one field over one window of `chunk` seconds at `step` seconds, from
  `start` to `end` (required). A chunk is (source `prometheus <url> step <s>s`, field, window).
- a file: `.csv`/`.csv.gz` and `.parquet` are dumps (`dumps.py`); anything else is OpenMetrics or
  Prometheus text (`openmetrics.py`, `.gz` allowed). The file is streamed once; its samples are
  grouped by field and by window of `chunk` seconds counted from 1970-01-01 UTC, spooled to
  temporary Parquet files in the telemetry folder (removed at the end), then written chunk by chunk.
  A chunk is (source `file <absolute path>`, field, from its first sample's second to one second after
  its last). `start`/`end`, if given, keep only samples with start <= time < end.

Resuming and appending: chunks recorded in `chunks.jsonl` are skipped, so an import that stopped
(killed, a server that went away) is resumed by running it again, and never stores a sample twice.
Before anything is written, a planned chunk that overlaps a stored chunk of the same field under
another key (another source, another --chunk or --step, or a window shifted against the stored one)
is refused: its samples would be stored twice. A new window only adds files; old ones are not
rewritten.

Data-quality findings (`QUALITY`), counted over the chunks this run writes (unknown metrics and
samples outside the window over everything it reads), returned, printed by the command and appended to
`<home>/telemetry/<dataset>/quality.json` (one entry per run, also for a run that failed part-way):
- `missing_labels`: samples without a `Hostname` label or without an integer `gpu` label: dropped.
- `non_finite`: values NaN, +Inf or -Inf (Prometheus writes a NaN as a staleness marker): dropped.
- `out_of_order`: samples earlier than a sample of the same series (metric and every label) read
  before them: kept, as samples are stored sorted by host, gpu, field and time.
- `duplicates`: samples with the same host, gpu, field and time as one read before them (in input
  order; for Prometheus, series in the order of the response): the first is kept, the later ones
  dropped.
- `unknown_metrics`: samples of metrics that are not among the DCGM fields ddlx reads (fields left out
  with `fields` are not counted): skipped; counted per metric name in `unknown_metrics`.
- `partial_responses`: Prometheus responses carrying `warnings` (possibly partial data): kept.
- `outside_window`: samples of a file outside `start`/`end`: skipped (a selection, not a defect).
Counter resets do not apply: the six fields ddlx reads are gauges. Hosts that no job names are
counted by the analysis, not here.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from ddlx.datasets.telemetry import store
from ddlx.datasets.telemetry.model import BY_NAME, FIELDS
from ddlx.datasets.telemetry.prometheus import (
    DEFAULT_CHUNK_S,
    DEFAULT_RETRIES,
    DEFAULT_STEP_S,
    DEFAULT_TIMEOUT_S,
    PrometheusClient,
    PrometheusError,
    check_resolution,
    parse_duration,
    parse_time,
    read_range,
    windows,
)
from ddlx.errors import InputError, UsageError
from ddlx.progress import step

#: Data-quality findings: key -> definition (what was counted and what was done with it).
QUALITY: dict[str, str] = {
    "missing_labels": "samples without a Hostname label or an integer gpu label (dropped)",
    "non_finite": "values NaN, +Inf or -Inf (dropped)",
    "out_of_order": "samples earlier than a sample of the same series read before them (kept, stored sorted)",
    "duplicates": "samples with the same host, gpu, field and time as one read before them (first kept, "
                  "later dropped)",
    "unknown_metrics": "samples of metrics ddlx does not read (skipped)",
    "partial_responses": "Prometheus responses with warnings, possibly partial data (kept)",
    "outside_window": "samples of a file outside --start/--end (skipped)",
}
#: The columns that make a series: the metric (field) and every label.
SERIES = ("field", "host", "gpu", "uuid", "model", "pod", "namespace", "container", "hpc_job", "labels")
_SPOOL_ROWS = 4_000_000


@dataclass
class MetricsImportResult:
    """What one import wrote (this run only) and what it found."""

    dataset: str
    source: str
    folder: Path
    fields: list[str]
    samples: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    days: list[str] = field(default_factory=list)
    quality: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUALITY, 0))
    unknown_metrics: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def quality_path(self) -> Path:
        return self.folder / "quality.json"


def select_fields(names: Iterable[str] | None) -> dict[str, str]:
    """DCGM metric -> short name of the fields to import: all, or those named (short or DCGM names)."""
    if not names:
        return {metric: f.name for metric, f in FIELDS.items()}
    chosen: dict[str, str] = {}
    for name in names:
        spec = BY_NAME.get(name) or FIELDS.get(name)
        if spec is None:
            raise UsageError(f"--fields: unknown field {name!r}; expected some of {', '.join(BY_NAME)} "
                             "(or their DCGM names)")
        chosen[spec.metric] = spec.name
    return chosen


def _seconds(value: int | float | str | datetime | None, option: str, kind: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return math.floor((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp())
    if isinstance(value, str):
        return parse_time(value, option) if kind == "time" else parse_duration(value, option)
    if kind == "duration" and (value <= 0 or value != int(value)):
        raise UsageError(f"{option}: must be a positive whole number of seconds, got {value}")
    return math.floor(value)


def _iso(seconds: int) -> str:
    return store.iso_utc(datetime.fromtimestamp(seconds, timezone.utc))


class _Screen:
    """Counts and drops bad samples, counts out-of-order ones, across the batches of one run."""

    def __init__(self) -> None:
        self.last: pl.DataFrame | None = None  # series -> latest time read so far (columns SERIES, time)
        self.counts: dict[tuple[str, int], Counter[str]] = {}
        self.bounds: dict[tuple[str, int], tuple[int, int]] = {}

    def _count(self, frame: pl.DataFrame, flag: str) -> None:
        for fld, key, n in frame.filter(pl.col(flag)).group_by("field", "_key").len().iter_rows():
            self.counts.setdefault((fld, key), Counter())[flag] += n

    def apply(self, frame: pl.DataFrame) -> pl.DataFrame:
        """`frame` (stored columns, `_seq` input order, `_key` window) without the dropped samples."""
        for fld, key, low, high in frame.group_by("field", "_key").agg(
                pl.col("time").min().dt.epoch("us").alias("low"),
                pl.col("time").max().dt.epoch("us").alias("high")).iter_rows():
            old = self.bounds.get((fld, key))
            self.bounds[(fld, key)] = (low, high) if old is None else (min(old[0], low), max(old[1], high))
        frame = frame.with_columns(
            missing_labels=pl.col("host").is_null() | pl.col("gpu").is_null(),
            non_finite=pl.col("host").is_not_null() & pl.col("gpu").is_not_null() & ~pl.col("value").is_finite())
        self._count(frame, "missing_labels")
        self._count(frame, "non_finite")
        frame = frame.filter(~pl.col("missing_labels") & ~pl.col("non_finite")).drop("missing_labels", "non_finite")
        # out of order: earlier than the latest time of its series read before it, in this batch (rows
        # are in input order) or an earlier one (the latest times so far, put first)
        series = list(SERIES)
        times = frame.select(*series, "time")
        prior = 0 if self.last is None else self.last.height
        if self.last is not None:
            times = pl.concat([self.last, times])
        late = times.select((pl.col("time") < pl.col("time").cum_max().shift(1).over(series)).fill_null(False)
                            .alias("out_of_order")).to_series().slice(prior)
        self._count(frame.with_columns(late), "out_of_order")
        self.last = times.group_by(series).agg(pl.col("time").max())
        return frame


def _in_order(frame: pl.DataFrame, columns: list[str]) -> bool:
    """Whether the rows of `frame` are already sorted by `columns` (ascending, nulls first), checked
    row against row (a linear pass where a sort is not)."""
    if frame.height < 2:
        return True
    not_before = pl.lit(True)  # row >= previous row, lexicographically over `columns`
    for name in reversed(columns):
        now, before = pl.col(name), pl.col(name).shift(1)
        after = (now > before).fill_null(before.is_null() & now.is_not_null())
        not_before = after | (now.eq_missing(before) & not_before)
    return bool(frame.select(not_before.slice(1).all()).item())


def _dedupe(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """`frame` (one chunk: one field) sorted by host, gpu and time, keeping the first read (lowest
    `_seq`) of the samples that share them; and how many were dropped."""
    key = ["host", "gpu", "time"]
    if not _in_order(frame, [*key, "_seq"]):
        frame = frame.sort([*key, "_seq"])
    repeated = pl.all_horizontal([pl.col(c).eq_missing(pl.col(c).shift(1)) for c in key]).fill_null(False)
    kept = frame.filter(~repeated)
    return kept, frame.height - kept.height


def _check_overlap(plan: list[store.Chunk], done: list[store.Chunk]) -> None:
    """`UsageError` if a chunk to write overlaps a stored chunk of the same field under another key."""
    for chunk in plan:
        for old in done:
            if old.field == chunk.field and old.key != chunk.key and old.start < chunk.end and chunk.start < old.end:
                raise UsageError(
                    f"samples of {chunk.field} from {old.start} to {old.end} were already imported from "
                    f"{old.source}; this import's chunk {chunk.start} .. {chunk.end} ({chunk.source}) overlaps "
                    "them and would store samples twice; import a window that does not overlap (--start/--end), "
                    "with the same --chunk and --step as before")


def import_metrics(home: Path, dataset: str, source: str | Path, *,
                   start: int | float | str | datetime | None = None, end: int | float | str | datetime | None = None,
                   step: int | str = DEFAULT_STEP_S, chunk: int | str = DEFAULT_CHUNK_S,
                   timeout: float = DEFAULT_TIMEOUT_S, retries: int = DEFAULT_RETRIES, backoff: float = 1.0,
                   deadline: float | None = None, fields: Iterable[str] | None = None, job_label: str = "hpc_job",
                   progress: Callable[[str], None] | None = None) -> MetricsImportResult:
    """Import the DCGM samples of `source` (a Prometheus URL or a dump file) beside `dataset`, a
    dataset of the catalog of the data home `home`. Times are RFC 3339 text, Unix seconds or
    datetimes; `step` and `chunk` are seconds or durations (`15s`, `6h`); `timeout`, `backoff` and
    `deadline` (the whole answer to one Prometheus query; None: `DDLX_PROMETHEUS_DEADLINE_S`, else
    300) seconds. See the module docstring."""
    from ddlx.atomic import folder_lock
    from ddlx.datasets.catalog import registered_dataset
    from ddlx.datasets.importers.spec import NAME_RE

    if not NAME_RE.match(dataset):
        raise UsageError(f"dataset name {dataset!r} is not allowed; expected lowercase letters, digits, '_' or "
                         "'-', starting with a letter (at most 64 characters)")
    if not job_label or not job_label.replace("_", "a").isalnum():
        raise UsageError(f"--job-label: {job_label!r} is not a label name (letters, digits and '_')")
    wanted = select_fields(fields)
    start_s, end_s = _seconds(start, "--start", "time"), _seconds(end, "--end", "time")
    step_s, chunk_s = _seconds(step, "--step", "duration"), _seconds(chunk, "--chunk", "duration")
    assert step_s is not None and chunk_s is not None
    if timeout <= 0:
        raise UsageError(f"--timeout: must be above 0 seconds, got {timeout}")
    url = str(source) if str(source).startswith(("http://", "https://")) else None
    client = None
    if url is not None:
        if start_s is None or end_s is None:
            raise UsageError("--prometheus needs --start and --end")
        check_resolution(chunk_s, step_s)
        client = PrometheusClient(url, timeout_s=timeout, retries=retries, backoff_s=backoff, deadline_s=deadline)
    elif start_s is not None and end_s is not None and end_s <= start_s:
        raise UsageError("--end must be after --start")
    registered_dataset(home, dataset, remedy=f"expected the dataset the samples belong to: import its jobs first "
                                             f"(ddlx datasets import {dataset} --from FILE, e.g. a sacct export with "
                                             "--preset slurm), then its telemetry")
    folder = store.telemetry_folder(home, dataset)
    created = [p for p in (folder, folder.parent) if not p.exists()]
    result = MetricsImportResult(dataset, "", folder, sorted(wanted.values(), key=list(BY_NAME).index))
    run = {"started": _now()}
    try:
        if client is not None:
            result.source = f"prometheus {client.url} step {step_s}s"
            folder.mkdir(parents=True, exist_ok=True)
            with folder_lock(folder):
                _from_prometheus(home, dataset, client, wanted, start_s, end_s, step_s, chunk_s, job_label, result,
                                 progress)
        else:
            path = Path(source)
            if not path.is_file():
                raise InputError(path, "no such file; expected an OpenMetrics, CSV or Parquet dump of DCGM samples")
            if path.stat().st_size == 0:
                raise InputError(path, "the file is empty (0 bytes); expected an OpenMetrics, CSV or Parquet dump "
                                 "of DCGM samples")
            result.source = f"file {path.resolve()}"
            folder.mkdir(parents=True, exist_ok=True)
            with folder_lock(folder):
                _from_file(home, dataset, path, wanted, start_s, end_s, chunk_s, job_label, result, progress)
                store.mark_synthetic_if_generated(home, dataset, path.parent)
        run["completed"] = True
    except BaseException as exc:
        run["completed"] = False
        run["error"] = str(exc) or type(exc).__name__
        raise
    finally:
        if result.chunks_written or result.chunks_skipped or run.get("completed"):
            _record_quality(result, run)
        else:  # nothing written: leave no empty folders behind
            for made in created:
                if made.is_dir() and not any(made.iterdir()):
                    made.rmdir()
    return result


def _now() -> str:
    return store.iso_utc(datetime.now(timezone.utc))


def _record_quality(result: MetricsImportResult, run: dict) -> None:
    """Append this run's findings to quality.json (rewritten whole through a temporary file)."""
    from ddlx.atomic import write_text_atomic

    path = result.quality_path
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("imports", [])
    except (OSError, ValueError, AttributeError):
        entries = []
    entry = {**run, "source": result.source, "fields": result.fields, "samples": result.samples,
             "chunks_written": result.chunks_written, "chunks_skipped": result.chunks_skipped, "days": result.days,
             "quality": result.quality, "unknown_metrics": result.unknown_metrics, "warnings": result.warnings[:20]}
    document = {"definitions": QUALITY, "counter_resets": "not applicable: every field ddlx reads is a gauge",
                "imports": [*entries, entry]}
    write_text_atomic(path, json.dumps(document, indent=2) + "\n")


def _write(home: Path, dataset: str, chunk: store.Chunk, frame: pl.DataFrame, counts: Counter[str],
           result: MetricsImportResult, progress: Callable[[str], None] | None, total: int | None = None) -> None:
    """Dedupe and write one chunk's samples (one of `total` this import writes); add its findings to the
    result."""
    kept, duplicates = _dedupe(frame)
    counts = Counter(counts)
    counts["duplicates"] += duplicates
    days = kept["time"].dt.date().unique().sort().cast(pl.String).to_list() if kept.height else []
    done = store.write_chunk(home, dataset, chunk, kept.drop("_seq", "_key"), presorted=True)
    result.samples += done.rows
    result.chunks_written += 1
    result.days = sorted(set(result.days) | set(days))
    for key, n in counts.items():
        result.quality[key] = result.quality.get(key, 0) + n
    step(progress, f"{dataset}: writing", result.chunks_written, total, "chunks",
         detail=f"{chunk.field} {chunk.start} .. {chunk.end}: {done.rows:,} samples")


def _from_prometheus(home: Path, dataset: str, client: PrometheusClient, wanted: dict[str, str], start_s: int,
                     end_s: int, step_s: int, chunk_s: int, job_label: str, result: MetricsImportResult,
                     progress: Callable[[str], None] | None) -> None:
    plan = [store.Chunk(result.source, name, _iso(a), _iso(b))
            for metric, name in wanted.items() for a, b in windows(start_s, end_s, chunk_s)]
    done = store.recorded_chunks(home, dataset)
    todo = store.pending(plan, done)
    result.chunks_skipped = len(plan) - len(todo)
    _check_overlap(todo, done)
    metrics = {name: metric for metric, name in wanted.items()}
    screen = _Screen()
    seq = 0
    for chunk in todo:
        a = parse_time(chunk.start, "start")
        b = parse_time(chunk.end, "end")
        try:
            answer = read_range(client, metrics[chunk.field], chunk.field, a, b, step_s, job_label)
        except PrometheusError as exc:
            kept = result.chunks_written + result.chunks_skipped
            if kept:
                raise PrometheusError(f"{exc}; the chunks of this import stored before it ({kept:,}) are kept: "
                                      "run the same import again to resume") from None
            raise
        frame = answer.samples.with_columns(pl.int_range(seq, seq + answer.samples.height, dtype=pl.Int64)
                                            .alias("_seq"), pl.lit(a, pl.Int64).alias("_key"))
        seq += frame.height
        counts: Counter[str] = Counter()
        if answer.warnings:
            counts["partial_responses"] += 1
            result.warnings.extend(f"{chunk.field} {chunk.start}: {w}" for w in answer.warnings)
        frame = screen.apply(frame)
        counts.update(screen.counts.pop((chunk.field, a), Counter()))
        _write(home, dataset, chunk, frame, counts, result, progress, len(todo))


def _read_file(path: Path, wanted: dict[str, str], job_label: str, unknown: Counter[str]) -> Iterator[pl.DataFrame]:
    from ddlx.datasets.telemetry.dumps import is_csv, is_parquet, read_dump
    from ddlx.datasets.telemetry.openmetrics import read_openmetrics

    if is_csv(path) or is_parquet(path):
        return read_dump(path, wanted, job_label, unknown)
    return read_openmetrics(path, wanted, job_label, unknown)


def _no_samples(wanted: dict[str, str], unknown: Counter[str]) -> str:
    """Why a dump that holds no sample of the fields asked (`wanted`: DCGM metric -> short name) is
    refused, naming the other metrics it holds (`unknown`: samples by metric name)."""
    if len(wanted) == len(FIELDS):
        asked = f"any DCGM field ddlx reads ({', '.join(FIELDS)})"
    else:
        asked = ", ".join(f"{name} ({metric})" for metric, name in wanted.items())
    held = ""
    if unknown:
        names = ", ".join(name for name, _ in unknown.most_common(3)) + (", ..." if len(unknown) > 3 else "")
        held = f", only {sum(unknown.values()):,} samples of other metrics ({names})"
    return f"holds no sample of {asked}{held}; expected a dump of DCGM exporter samples"


def _from_file(home: Path, dataset: str, path: Path, wanted: dict[str, str], start_s: int | None,
               end_s: int | None, chunk_s: int, job_label: str, result: MetricsImportResult,
               progress: Callable[[str], None] | None) -> None:
    unknown: Counter[str] = Counter()
    screen = _Screen()
    outside: Counter[tuple[str, int]] = Counter()
    spool_root = Path(tempfile.mkdtemp(prefix=".spool-", dir=store.telemetry_folder(home, dataset)))
    try:
        buffers: dict[tuple[str, int], list[pl.DataFrame]] = {}
        buffered = 0
        parts = 0
        seq = 0

        def flush() -> None:
            nonlocal buffered, parts
            for (fld, key), frames in buffers.items():
                target = spool_root / fld / str(key)
                target.mkdir(parents=True, exist_ok=True)
                pl.concat(frames).write_parquet(target / f"{parts:06d}.parquet", compression="lz4")
                parts += 1
            buffers.clear()
            buffered = 0

        for batch in _read_file(path, wanted, job_label, unknown):
            batch = batch.with_columns(pl.int_range(seq, seq + batch.height, dtype=pl.Int64).alias("_seq"),
                                       (pl.col("time").dt.epoch("s") // chunk_s * chunk_s).alias("_key"))
            seq += batch.height
            step(progress, f"{dataset}: reading {path.name}", seq, None, "samples")
            if start_s is not None or end_s is not None:
                epoch = pl.col("time").dt.epoch("us")
                inside = pl.lit(True)
                if start_s is not None:
                    inside = inside & (epoch >= start_s * 1_000_000)
                if end_s is not None:
                    inside = inside & (epoch < end_s * 1_000_000)
                for fld, key, n in batch.filter(~inside).group_by("field", "_key").len().iter_rows():
                    outside[(fld, key)] += n
                batch = batch.filter(inside)
            valid = screen.apply(batch)
            for (fld, key), part in valid.partition_by("field", "_key", as_dict=True).items():
                buffers.setdefault((str(fld), int(key)), []).append(part)  # type: ignore[call-overload]
            buffered += valid.height
            if buffered >= _SPOOL_ROWS:
                flush()
        flush()
        if not seq:
            raise InputError(path, _no_samples(wanted, unknown))
        result.unknown_metrics = dict(unknown.most_common())
        result.quality["unknown_metrics"] = sum(unknown.values())
        result.quality["outside_window"] = sum(outside.values())
        plan: dict[tuple[str, str, str, str], tuple[str, int]] = {}
        for (fld, key), (low, high) in sorted(screen.bounds.items()):
            chunk = store.Chunk(result.source, fld, _iso(low // 1_000_000), _iso(high // 1_000_000 + 1))
            plan[chunk.key] = (fld, key)
        chunks = [store.Chunk(*k) for k in plan]
        done = store.recorded_chunks(home, dataset)
        todo = store.pending(chunks, done)
        result.chunks_skipped = len(chunks) - len(todo)
        _check_overlap(todo, done)
        empty = {name: dtype for name, dtype in store.SAMPLE_SCHEMA.items()} | {"_seq": pl.Int64, "_key": pl.Int64}
        for chunk in todo:
            fld, key = plan[chunk.key]
            folder = spool_root / fld / str(key)
            frame = pl.read_parquet(folder / "*.parquet") if folder.is_dir() else pl.DataFrame(schema=empty)
            _write(home, dataset, chunk, frame, screen.counts.get((fld, key), Counter()), result, progress,
                   len(todo))
    finally:
        shutil.rmtree(spool_root, ignore_errors=True)

