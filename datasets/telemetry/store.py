"""Where a dataset's GPU samples are kept, and how a window of them is added.

Layout, beside the catalog in the data home:

    <home>/telemetry/<dataset>/gpu_samples/day=YYYY-MM-DD/<chunk id>.parquet
    <home>/telemetry/<dataset>/chunks.jsonl

A *chunk* is one bounded piece of an import (one field of one source over one time range, e.g.
one Prometheus range query). Its samples are split by UTC day and written under a name derived
from the chunk (source, field, start, end), each file through a temporary name, so writing the same
chunk again replaces its files instead of adding a copy; then one line recording the chunk is
appended to `chunks.jsonl`. An import that stops is resumed by skipping the chunks recorded there;
one that died between writing a chunk's files and recording it writes the same files again. Old
days are never rewritten by a new window: each chunk only adds its own files.

The files hold exactly the columns of the canonical view `gpu_samples`
(`ddlx.datasets.canonical.GPU_SAMPLES`), in order; `TraceContext` opens that view for a dataset
whose folder holds any.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from ddlx.datasets.canonical import GPU_SAMPLES
from ddlx.datasets.sqltext import sql_string

#: Columns of a stored sample file, in order, with their polars types.
SAMPLE_SCHEMA: dict[str, pl.DataType] = {
    "host": pl.String(), "gpu": pl.Int32(), "uuid": pl.String(), "model": pl.String(),
    "time": pl.Datetime("us", "UTC"), "field": pl.String(), "value": pl.Float64(), "pod": pl.String(),
    "namespace": pl.String(), "container": pl.String(), "hpc_job": pl.String(), "labels": pl.String(),
}
assert tuple(SAMPLE_SCHEMA) == GPU_SAMPLES.column_names


@dataclass(frozen=True)
class Chunk:
    """One bounded piece of an import: samples of `field` from `source` with start <= time < end
    (UTC, ISO 8601 text), and how many were written (`rows`; -1 until known)."""

    source: str
    field: str
    start: str
    end: str
    rows: int = -1

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.source, self.field, self.start, self.end)

    @property
    def chunk_id(self) -> str:
        """A file name stem unique to the chunk (the same for the same chunk, whatever its rows)."""
        return hashlib.sha256("\x1f".join(self.key).encode()).hexdigest()[:20]


def telemetry_folder(home: Path, dataset: str) -> Path:
    """The folder of the telemetry of `dataset` in the data home `home`."""
    return Path(home) / "telemetry" / dataset


def samples_folder(home: Path, dataset: str) -> Path:
    return telemetry_folder(home, dataset) / "gpu_samples"


def chunks_path(home: Path, dataset: str) -> Path:
    return telemetry_folder(home, dataset) / "chunks.jsonl"


def conform(samples: pl.DataFrame) -> pl.DataFrame:
    """`samples` with exactly the stored columns, in order and typed (a missing column is NULL)."""
    columns = []
    for name, dtype in SAMPLE_SCHEMA.items():
        if name in samples.columns:
            column = pl.col(name)
            if name == "time" and samples.schema[name] != dtype:
                column = column.dt.convert_time_zone("UTC") if getattr(samples.schema[name], "time_zone", None) \
                    else column.dt.replace_time_zone("UTC")
            columns.append(column.cast(dtype).alias(name))
        else:
            columns.append(pl.lit(None, dtype).alias(name))
    return samples.select(columns)


def write_chunk(home: Path, dataset: str, chunk: Chunk, samples: pl.DataFrame, presorted: bool = False) -> Chunk:
    """Write the samples of `chunk` (split by UTC day, each day's file sorted by host, gpu, field and
    time; `presorted`: `samples` already are) and record the chunk; returns it with its row count.
    Writing a chunk that is already stored replaces its files."""
    from ddlx.atomic import atomic_file, fsync_folder, write_parquet_file

    samples = conform(samples)
    folder = samples_folder(home, dataset)
    days = samples.with_columns(pl.col("time").dt.date().alias("_day")).partition_by("_day", as_dict=True,
                                                                                    include_key=False)
    for (day,), part in sorted(days.items(), key=lambda item: str(item[0][0])):
        target = folder / f"day={day.isoformat()}" / f"{chunk.chunk_id}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(target) as tmp:
            write_parquet_file(part if presorted else part.sort(["host", "gpu", "field", "time"]), tmp)
    done = Chunk(chunk.source, chunk.field, chunk.start, chunk.end, samples.height)
    record = chunks_path(home, dataset)
    record.parent.mkdir(parents=True, exist_ok=True)
    with open(record, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(done)) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    fsync_folder(record.parent)
    return done


def recorded_chunks(home: Path, dataset: str) -> list[Chunk]:
    """The chunks stored for `dataset`, in the order they were first written; a chunk written again
    counts once, with its last row count (a line cut short by a crash is ignored: its chunk is
    written again)."""
    path = chunks_path(home, dataset)
    if not path.exists():
        return []
    chunks: dict[tuple[str, str, str, str], Chunk] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            chunk = Chunk(**json.loads(line))
        except (ValueError, TypeError):
            continue
        chunks[chunk.key] = chunk
    return list(chunks.values())


def pending(chunks: Iterable[Chunk], done: Iterable[Chunk]) -> list[Chunk]:
    """The chunks of `chunks` not yet stored (compared by source, field, start and end)."""
    stored = {chunk.key for chunk in done}
    return [chunk for chunk in chunks if chunk.key not in stored]


def mark_synthetic_if_generated(home: Path, dataset: str, source_folder: Path) -> bool:
    """Keep ddlx's SYNTHETIC marker with the telemetry when the file read came from a folder that
    holds one (a generator's output): analyses of the dataset are then labelled SYNTHETIC."""
    from ddlx.atomic import write_text_atomic
    from ddlx.datasets.ingest import SYNTHETIC_MARKER

    marker = Path(source_folder) / SYNTHETIC_MARKER
    if not marker.is_file():
        return False
    write_text_atomic(telemetry_folder(home, dataset) / SYNTHETIC_MARKER, marker.read_text(encoding="utf-8"))
    return True


def synthetic_marker(home: Path, dataset: str) -> dict[str, Any] | None:
    """The generator's marker kept with the dataset's telemetry (`mark_synthetic_if_generated`);
    None when none of it was generated."""
    from ddlx.datasets.ingest import SYNTHETIC_MARKER

    marker = telemetry_folder(home, dataset) / SYNTHETIC_MARKER
    if not marker.is_file():
        return None
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"note": "generated by ddlx"}


def has_samples(home: Path, dataset: str) -> bool:
    folder = samples_folder(home, dataset)
    return folder.is_dir() and any(folder.glob("day=*/*.parquet"))


def samples_select(home: Path, dataset: str) -> str:
    """A SELECT of every stored sample of `dataset`, in the stored columns."""
    pattern = str(samples_folder(home, dataset) / "day=*" / "*.parquet")
    columns = ", ".join(SAMPLE_SCHEMA)
    return f"SELECT {columns} FROM read_parquet({sql_string(pattern)}, hive_partitioning = false)"


def iso_utc(moment: datetime) -> str:
    """An instant as the ISO 8601 text chunks record: UTC, to the second (a naive time is UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")
