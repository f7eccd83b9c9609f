"""The kept-results cache under attack: files exchanged, cut short, rewritten or put under another
store version. Each case damages the kept files of a first run, runs `ddlx analyze` again through
the real command line, and holds it to what `ddlx.analysis.cache` promises: exit 0, every finding and
every table equal to a `--no-cache` run, the damaged files counted as refused and replaced (a third
run reads them all), the data home byte-identical."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ddlx.analysis.cache import METADATA_PREFIX
from ddlx.datasets.ingest import ingest
from ddlx.traces.pai.generator import generate as generate_pai
from tests.conftest import tree_digest

pytestmark = [pytest.mark.usefixtures("duckdb_on_one_thread"), pytest.mark.slow]

#: A small generated PAI release: enough rows that every module keeps results.
SCALE = 0.004


@pytest.fixture(scope="module")
def pai_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cache-attack")
    generate_pai(folder / "release", scale=SCALE, seed=11)
    ingest("pai", folder / "release", folder / "home")
    return folder / "home"


def _analyze(cli, home: Path, out: Path, *extra: str) -> dict:
    """Run `ddlx analyze pai-trace` into `out`; its summary.json."""
    result = cli("analyze", "pai-trace", "--data-home", home, "--out", out, *extra)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err and "Error:" not in result.err
    return json.loads((out / "summary.json").read_text())


def _tables(out: Path) -> dict[str, pl.DataFrame]:
    return {str(path.relative_to(out)): pl.read_parquet(path) for path in sorted(out.rglob("*.parquet"))}


def _findings(summary: dict) -> dict:
    """Every module's findings, tables, checks and what did not apply, as summary.json holds them."""
    return summary["modules"]


def _kept_files(summary: dict) -> list[Path]:
    return sorted(Path(summary["provenance"]["kept_results"]["folder"]).glob("*.parquet"))


def _exchange(a: Path, b: Path) -> None:
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)


def exchange_alike(files: list[Path]) -> list[Path]:
    """Exchange every pair of kept files whose columns are the same (the case found from outside:
    two CDF tables holding each other's rows); returns the files damaged."""
    by_schema: dict[str, list[Path]] = {}
    for path in files:
        by_schema.setdefault(str(pq.read_schema(path).remove_metadata()), []).append(path)
    damaged = []
    for group in by_schema.values():
        for a, b in zip(group[::2], group[1::2]):
            _exchange(a, b)
            damaged += [a, b]
    assert damaged, "no two kept results share their columns: the case tests nothing"
    return damaged


def exchange_at_random(files: list[Path]) -> list[Path]:
    """Put every kept file at another one's path (a random derangement)."""
    rng = random.Random(7)
    contents = [path.read_bytes() for path in files]
    order = list(range(len(files)))
    while any(i == j for i, j in enumerate(order)):
        rng.shuffle(order)
    for path, source in zip(files, order):
        path.write_bytes(contents[source])
    return files


def truncate(files: list[Path]) -> list[Path]:
    """Cut every kept file to half its bytes."""
    for path in files:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    return files


def _rewrite(path: Path, change: Callable[[pl.DataFrame], pl.DataFrame], keep_metadata: bool = True,
             metadata_change: Callable[[dict[str, str]], dict[str, str]] = lambda m: m) -> None:
    metadata = {key.decode(): value.decode() for key, value in (pq.read_metadata(path).metadata or {}).items()
                if key.decode().startswith(METADATA_PREFIX)}
    frame = change(pl.read_parquet(path))
    frame.write_parquet(path, metadata=metadata_change(metadata) if keep_metadata else None)


def _largest(files: list[Path], count: int = 4) -> list[Path]:
    """The kept files with the most rows (so a changed value is one a table shows)."""
    return sorted(files, key=lambda p: (-pq.read_metadata(p).num_rows, p.name))[:count]


def _first_numeric(frame: pl.DataFrame) -> str:
    return next(name for name, dtype in frame.schema.items() if dtype.is_numeric())


def rewrite_a_value(files: list[Path]) -> list[Path]:
    """Rewrite files with their metadata kept whole but the first value of a numeric column changed."""
    chosen = [p for p in _largest(files, 8) if any(t.is_numeric() for t in pl.read_parquet_schema(p).values())][:4]
    for path in chosen:
        _rewrite(path, _change_first_value)
    return chosen


def _change_first_value(frame: pl.DataFrame) -> pl.DataFrame:
    column = _first_numeric(frame)
    first = frame[column][0]
    new = 12_345 if first != 12_345 else 54_321
    return frame.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.lit(new).cast(frame.schema[column]))
                              .otherwise(pl.col(column)).alias(column))


def rewrite_without_provenance(files: list[Path]) -> list[Path]:
    """Rewrite files with the same rows but no metadata (a file ddlx did not write)."""
    for path in files:
        _rewrite(path, lambda f: f, keep_metadata=False)
    return files


def rewrite_another_schema(files: list[Path]) -> list[Path]:
    """Rewrite files with their metadata but a column cast to text (a wrong schema)."""
    chosen = [p for p in _largest(files, 8) if any(t.is_numeric() for t in pl.read_parquet_schema(p).values())][:4]
    for path in chosen:
        _rewrite(path, lambda f: f.with_columns(pl.col(_first_numeric(f)).cast(pl.String)))
    return chosen


def claim_another_store(files: list[Path]) -> list[Path]:
    """Rewrite files whole but with the metadata of another store version."""
    chosen = _largest(files)
    for path in chosen:
        _rewrite(path, lambda f: f, metadata_change=lambda m: {**m, f"{METADATA_PREFIX}store": "/elsewhere/v1"})
    return chosen


DAMAGES = {fn.__name__: fn for fn in (exchange_alike, exchange_at_random, truncate, rewrite_a_value,
                                      rewrite_without_provenance, rewrite_another_schema, claim_another_store)}


#: The `--no-cache` run every case is compared with (its summary and tables), made by the first case.
_REFERENCE: dict[str, tuple[dict, dict[str, pl.DataFrame]]] = {}


def _reference(cli, home: Path, out: Path) -> tuple[dict, dict[str, pl.DataFrame]]:
    if "run" not in _REFERENCE:
        summary = _analyze(cli, home, out, "--no-cache")
        assert summary["provenance"]["kept_results"]["folder"] is None
        _REFERENCE["run"] = summary, _tables(out)
    return _REFERENCE["run"]


def _stems(files: list[Path]) -> set[str]:
    """The kept results the files belong to (a tuple of frames is kept as several files)."""
    return {path.name.split(".")[0] for path in files}


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_kept_results_are_refused_and_computed_again(
        damage: str, cli, pai_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary, tables = _reference(cli, pai_home, tmp_path / "reference")
    monkeypatch.setenv("DDLX_CACHE_DIR", str(tmp_path / "cache"))
    first = _analyze(cli, pai_home, tmp_path / "first")
    files = _kept_files(first)
    assert len(_stems(files)) == first["provenance"]["kept_results"]["kept"] >= 20
    home_before = tree_digest(pai_home)
    damaged = len(_stems(DAMAGES[damage](files)))

    again = _analyze(cli, pai_home, tmp_path / "again")
    kept = again["provenance"]["kept_results"]
    assert kept["refused"] == damaged, kept
    assert kept["read"] == first["provenance"]["kept_results"]["kept"] - damaged
    assert kept["kept"] == damaged  # each refused file computed again and replaced
    assert _findings(again) == _findings(summary)
    assert _tables(tmp_path / "again").keys() == tables.keys()
    for name, frame in _tables(tmp_path / "again").items():
        assert frame.equals(tables[name]) and frame.schema == tables[name].schema, name
    assert tree_digest(pai_home) == home_before

    third = _analyze(cli, pai_home, tmp_path / "third")["provenance"]["kept_results"]
    assert (third["read"], third["refused"], third["kept"]) == (len(_stems(files)), 0, 0)


def test_every_kept_file_records_what_produced_it(cli, pai_home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_CACHE_DIR", str(tmp_path / "cache"))
    summary = _analyze(cli, pai_home, tmp_path / "out")
    files = _kept_files(summary)
    code = Path(summary["provenance"]["kept_results"]["folder"]).name
    parts: dict[str, list[str]] = {}
    for path in files:
        metadata = {k.decode(): v.decode() for k, v in pq.read_metadata(path).metadata.items()}
        assert metadata[f"{METADATA_PREFIX}code"] == code
        assert Path(metadata[f"{METADATA_PREFIX}store"]).parent == pai_home / "store" / "pai"
        assert len(metadata[f"{METADATA_PREFIX}key"]) == 64 and path.name.split(".")[0].endswith(
            metadata[f"{METADATA_PREFIX}key"][:24])
        assert int(metadata[f"{METADATA_PREFIX}rows"]) == pq.read_metadata(path).num_rows
        parts.setdefault(path.name.split(".")[0], []).append(metadata[f"{METADATA_PREFIX}part"])
    for stem, found in parts.items():
        assert sorted(found) == sorted(f"{i}/{len(found)}" for i in range(len(found))), stem
    assert any(len(found) > 1 for found in parts.values())  # tuples of frames are among them
    assert len(set(itertools.chain.from_iterable([p.name] for p in files))) == len(files)
