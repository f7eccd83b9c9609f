"""Tests of ddlx.traces.pai_v2023.generator: a synthetic Alibaba GPU trace v2023 (`openb` files).

Every figure is recomputed here from the written CSVs (the csv module for formats, polars and
DuckDB for aggregates), never taken from the generator. Expected values are recomputed from the
real release in shared/traces/alibaba-gpu-v2023 (read here) or are format facts of TRACES.md;
tolerances allow for the sampling noise of a release of the real size (scale 1, ~8,000 pods).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ddlx.traces.pai_v2023.generator import generate as generate_pai_v2023
from tests.conftest import FULL_TRACES, SHARED_TRACES, needs_shared_traces, real_file

SCALE = 1.0
SEED = 11
REAL = SHARED_TRACES / "alibaba-gpu-v2023"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time")
HEADERS = {
    "openb_node_list_all_node.csv": NODE_HEADER,
    "openb_node_list_gpu_node.csv": NODE_HEADER,
    "openb_pod_list_default.csv": POD_HEADER,
    "openb_pod_list_gpushare40.csv": POD_HEADER,
    "openb_pod_list_multigpu50.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
    "openb_pod_list_gpuspec25.csv": POD_HEADER,
    "openb_pod_list_cpu050.csv": POD_HEADER,
}
POD_FILES = [name for name in HEADERS if name.startswith("openb_pod_list")]
TYPES = {"sn": pl.String, "model": pl.String, "name": pl.String, "gpu_spec": pl.String,
         "qos": pl.String, "pod_phase": pl.String}
needs_real = needs_shared_traces


# ------------------------------------------------------------------------------- helpers


def _read(path: Path) -> pl.DataFrame:
    """A node or pod list with an explicit schema (strings for names, Int64 for numbers)."""
    with open(path, newline="") as handle:
        header = next(csv.reader(handle))
    return pl.read_csv(path, schema={c: TYPES.get(c, pl.Int64) for c in header})


def _gpu_request(frame: pl.DataFrame) -> pl.Series:
    """Requested GPU per pod in thousandths of a GPU."""
    return frame["num_gpu"] * frame["gpu_milli"]


def _sharing(frame: pl.DataFrame) -> pl.Series:
    return (frame["num_gpu"] == 1) & (frame["gpu_milli"] < 1000)


def _family_shares(frame: pl.DataFrame) -> dict[str, float]:
    """What distinguishes the owners' variants: shares of pods and of requested GPU."""
    request = _gpu_request(frame)
    gpu_pods = frame.filter(pl.col("num_gpu") > 0)
    shares = {
        "cpu_only_pods": float((frame["num_gpu"] == 0).mean()),  # type: ignore[arg-type]
        "sharing_pods": float(_sharing(frame).mean()),  # type: ignore[arg-type]
        "sharing_request": float(request.filter(_sharing(frame)).sum() / request.sum()),
        "multi_request": float(request.filter(frame["num_gpu"] > 1).sum() / request.sum()),
    }
    if "gpu_spec" in frame.columns:
        specified = gpu_pods["gpu_spec"].is_not_null()
        shares["spec_of_gpu_pods"] = float(specified.mean())  # type: ignore[arg-type]
    return shares


# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[str]]:
    """One release of the real size: folder, returned paths and progress messages."""
    out = tmp_path_factory.mktemp("v2023")
    messages: list[str] = []
    paths = generate_pai_v2023(out, scale=SCALE, seed=SEED, progress=messages.append)
    return out, paths, messages


@pytest.fixture(scope="module")
def tables(release: tuple[Path, list[Path], list[str]]) -> dict[str, pl.DataFrame]:
    return {path.name: _read(path) for path in release[1]}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    """A release far below the real size (a handful of nodes and pods)."""
    out = tmp_path_factory.mktemp("v2023_tiny")
    return {path.name: _read(path) for path in generate_pai_v2023(out, scale=0.0005, seed=SEED)}


@pytest.fixture(scope="module")
def real() -> dict[str, pl.DataFrame]:
    """The real files of the same names."""
    if not REAL.is_dir():
        pytest.skip("../shared/traces is not beside the repo")
    return {name: _read(REAL / name) for name in HEADERS}


# ------------------------------------------------------------------------------- format


def test_writes_the_seven_files_and_nothing_else(release: tuple[Path, list[Path], list[str]]) -> None:
    out, paths, messages = release
    assert [p.name for p in paths] == list(HEADERS)
    assert sorted(p.name for p in out.iterdir()) == sorted(HEADERS)  # no temp file left
    assert len(messages) == len(HEADERS)
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in paths)


def test_headers_are_exactly_the_official_ones(release: tuple[Path, list[Path], list[str]]) -> None:
    for path in release[1]:
        with open(path, newline="") as handle:
            assert handle.readline() == HEADERS[path.name] + "\n", path.name


def test_headers_equal_the_real_files() -> None:
    """The seven real files' headers (the excerpts' three in a fresh clone: the two node lists and
    the default pods)."""
    present = [name for name in HEADERS if real_file(f"alibaba-gpu-v2023/{name}").is_file()]
    assert len(present) == (7 if FULL_TRACES else 3)
    for name in present:
        with open(real_file(f"alibaba-gpu-v2023/{name}"), newline="") as handle:
            assert handle.readline().rstrip("\r\n") == HEADERS[name], name


def test_values_are_written_like_the_real_files(release: tuple[Path, list[Path], list[str]]) -> None:
    integer = re.compile(r"^\d+$")
    spec = re.compile(r"^[A-Z][A-Za-z0-9]*(\|[A-Z][A-Za-z0-9]*)*$")
    for path in release[1]:
        text = path.read_text()
        assert text.endswith("\n") and "\r" not in text and '"' not in text, path.name
        rows = list(csv.DictReader(text.splitlines()))
        prefix = "openb-node-" if "node" in path.name else "openb-pod-"
        key = "sn" if "node" in path.name else "name"
        assert [r[key] for r in rows] == [f"{prefix}{i:04d}" for i in range(len(rows))], path.name
        for row in rows:
            for column, value in row.items():
                if column in ("cpu_milli", "memory_mib", "gpu", "num_gpu", "gpu_milli",
                              "creation_time", "deletion_time"):
                    assert integer.match(value), (path.name, column, value)
                elif column == "scheduled_time":
                    assert value == "" or integer.match(value), (path.name, value)
                elif column == "gpu_spec":
                    assert value == "" or spec.match(value), (path.name, value)
                elif column == "model":
                    assert (value == "") == (row["gpu"] == "0"), (path.name, row)


def test_gpu_node_list_is_the_gpu_subset_of_all_node(tables: dict[str, pl.DataFrame]) -> None:
    all_node = tables["openb_node_list_all_node.csv"]
    gpu_node = tables["openb_node_list_gpu_node.csv"]
    subset = all_node.filter(pl.col("gpu") > 0)
    # Same rows in the same order; gpu_node renumbers `sn` from 0 (as the real file does).
    assert subset.drop("sn").equals(gpu_node.drop("sn"))
    assert all_node.filter(pl.col("gpu") == 0)["model"].null_count() == (all_node["gpu"] == 0).sum()
    assert gpu_node["model"].null_count() == 0


@needs_real
def test_the_real_gpu_node_list_is_renumbered_too(real: dict[str, pl.DataFrame]) -> None:
    subset = real["openb_node_list_all_node.csv"].filter(pl.col("gpu") > 0)
    assert subset.drop("sn").equals(real["openb_node_list_gpu_node.csv"].drop("sn"))
    assert not subset["sn"].equals(real["openb_node_list_gpu_node.csv"]["sn"])


@pytest.mark.parametrize("which", ["tables", "tiny"])
def test_every_pod_fits_some_node(which: str, request: pytest.FixtureRequest) -> None:
    frames: dict[str, pl.DataFrame] = request.getfixturevalue(which)
    con = duckdb.connect()
    con.register("nodes", frames["openb_node_list_all_node.csv"])
    for name in POD_FILES:
        pods = frames[name]
        if "gpu_spec" not in pods.columns:
            pods = pods.with_columns(pl.lit(None, dtype=pl.String).alias("gpu_spec"))
        con.register("pods", pods)
        unfit = con.execute("""
            SELECT count(*) FROM pods p WHERE NOT EXISTS (
                SELECT 1 FROM nodes n
                WHERE n.gpu >= p.num_gpu AND n.cpu_milli >= p.cpu_milli
                  AND n.memory_mib >= p.memory_mib
                  AND (p.gpu_spec IS NULL OR list_contains(string_split(p.gpu_spec, '|'), n.model)))
        """).fetchall()[0][0]
        con.unregister("pods")
        assert unfit == 0, (which, name)


def test_pod_times_are_consistent(tables: dict[str, pl.DataFrame]) -> None:
    for name in POD_FILES:
        pods = tables[name]
        if "creation_time" not in pods.columns:
            continue
        scheduled = pods.filter(pl.col("scheduled_time").is_not_null())
        assert (scheduled["creation_time"] <= scheduled["scheduled_time"]).all(), name
        assert (scheduled["scheduled_time"] <= scheduled["deletion_time"]).all(), name
        assert (pods["creation_time"] <= pods["deletion_time"]).all(), name
        never = pods["scheduled_time"].is_null()
        assert never.equals(pods["pod_phase"] == "Pending", check_names=False), name
    default = tables["openb_pod_list_default.csv"]
    assert default["creation_time"].is_sorted() and default["creation_time"][0] == 0


def test_small_scales_keep_every_model_and_pod_kind(tiny: dict[str, pl.DataFrame],
                                                     tables: dict[str, pl.DataFrame]) -> None:
    models = set(tables["openb_node_list_gpu_node.csv"]["model"])
    assert set(tiny["openb_node_list_gpu_node.csv"]["model"]) == models
    assert tiny["openb_node_list_all_node.csv"]["model"].null_count() >= 1
    pods = tiny["openb_pod_list_default.csv"]
    one_gpu = pl.col("num_gpu") == 1
    kinds = pods.select(
        (pl.col("num_gpu") == 0).any().alias("cpu"),
        (one_gpu & (pl.col("gpu_milli") < 1000)).any().alias("sharing"),
        (one_gpu & (pl.col("gpu_milli") == 1000)).any().alias("whole"),
        (pl.col("num_gpu") > 1).any().alias("multi"))
    assert kinds.row(0) == (True, True, True, True)
    assert len(tiny["openb_node_list_all_node.csv"]) < 20 and len(pods) < 20


# ------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes_and_another_seed_differs(
        release: tuple[Path, list[Path], list[str]], tmp_path: Path) -> None:
    again = generate_pai_v2023(tmp_path / "again", scale=SCALE, seed=SEED)
    other = generate_pai_v2023(tmp_path / "other", scale=SCALE, seed=SEED + 1)
    for first, second, third in zip(release[1], again, other):
        assert first.read_bytes() == second.read_bytes(), first.name
        assert first.read_bytes() != third.read_bytes(), first.name


def test_bad_arguments_raise_value_error(tmp_path: Path) -> None:
    for scale in (0, -1.0, math.nan, math.inf, "1"):
        with pytest.raises(ValueError):
            generate_pai_v2023(tmp_path, scale=scale)  # type: ignore[arg-type]
    for seed in (-1, 1.5, True):
        with pytest.raises(ValueError):
            generate_pai_v2023(tmp_path, seed=seed)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------- calibration


def _counts(frame: pl.DataFrame, *by: str) -> dict[tuple, int]:
    return {row[:-1]: row[-1] for row in frame.group_by(list(by)).len().iter_rows()}


@needs_real
def test_nodes_at_scale_1_are_the_real_cluster(tables: dict[str, pl.DataFrame],
                                               real: dict[str, pl.DataFrame]) -> None:
    for name in ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv"):
        ours, theirs = tables[name], real[name]
        assert len(ours) == len(theirs), name
        by = ("model", "gpu", "cpu_milli", "memory_mib")
        assert _counts(ours, *by) == _counts(theirs, *by), name
    # Most CPU-only nodes come first, as in the real list.
    head = len(real["openb_node_list_all_node.csv"]) // 6
    for frame in (tables["openb_node_list_all_node.csv"], real["openb_node_list_all_node.csv"]):
        assert (frame.head(head)["gpu"] == 0).mean() > 0.8  # type: ignore[operator]


@needs_real
def test_default_pods_match_the_real_workload(tables: dict[str, pl.DataFrame],
                                              real: dict[str, pl.DataFrame]) -> None:
    ours, theirs = tables["openb_pod_list_default.csv"], real["openb_pod_list_default.csv"]
    assert len(ours) == pytest.approx(len(theirs), rel=0.01)
    mine, target = _family_shares(ours), _family_shares(theirs)
    assert mine["cpu_only_pods"] == pytest.approx(target["cpu_only_pods"], abs=0.015)
    assert mine["sharing_pods"] == pytest.approx(target["sharing_pods"], abs=0.02)
    assert mine["sharing_request"] == pytest.approx(target["sharing_request"], abs=0.03)
    assert mine["multi_request"] == pytest.approx(target["multi_request"], abs=0.03)
    assert mine["spec_of_gpu_pods"] == target["spec_of_gpu_pods"] == 0.0  # default has no gpu_spec
    for column in ("pod_phase", "qos"):
        shares_ours = dict(ours[column].value_counts(normalize=True).iter_rows())
        shares_real = dict(theirs[column].value_counts(normalize=True).iter_rows())
        assert set(shares_ours) == set(shares_real), column
        for value, share in shares_real.items():
            assert shares_ours[value] == pytest.approx(share, abs=0.02), (column, value)
    never = ours["scheduled_time"].null_count() / len(ours)
    assert never == pytest.approx(theirs["scheduled_time"].null_count() / len(theirs), abs=0.015)
    counts = dict(ours["num_gpu"].value_counts().iter_rows())
    assert set(counts) == set(theirs["num_gpu"].unique())  # 0, 1, 2, 4, 8
    top_real = theirs["gpu_milli"].value_counts(sort=True)["gpu_milli"].head(4).to_list()
    top_ours = ours["gpu_milli"].value_counts(sort=True)["gpu_milli"].head(4).to_list()
    assert set(top_ours) == set(top_real)
    for column in ("cpu_milli", "memory_mib"):
        # Requests are discrete profiles: compare the median with the real 40th-60th percentiles.
        low, high = theirs[column].quantile(0.4), theirs[column].quantile(0.6)
        median = ours[column].median()
        assert low is not None and high is not None and median is not None
        assert low <= median <= high, column  # type: ignore[operator]
        assert ours[column].mean() == pytest.approx(theirs[column].mean(), rel=0.05), column
        assert ours[column].max() <= theirs[column].max(), column


@needs_real
def test_time_line_matches_the_real_trace(tables: dict[str, pl.DataFrame],
                                          real: dict[str, pl.DataFrame]) -> None:
    ours, theirs = tables["openb_pod_list_default.csv"], real["openb_pod_list_default.csv"]
    assert ours["creation_time"].min() == theirs["creation_time"].min() == 0
    assert ours["deletion_time"].max() == theirs["deletion_time"].max()
    assert ours["creation_time"].max() <= theirs["creation_time"].max()
    # Most pods are created in the last ~5 weeks; a few long-lived ones much earlier.
    for frame in (ours, theirs):
        q05 = frame["creation_time"].quantile(0.05)
        assert q05 is not None and q05 > 0.75 * theirs["deletion_time"].max()  # type: ignore[operator]
    # Median lifetime per phase; Succeeded has only ~190 pods, hence the wider tolerance.
    for phase, tolerance in (("Running", 0.15), ("Failed", 0.2), ("Pending", 0.2), ("Succeeded", 0.5)):
        life = [f.filter(pl.col("pod_phase") == phase)
                .select(pl.col("deletion_time") - pl.col("creation_time")).to_series().median()
                for f in (ours, theirs)]
        assert life[0] == pytest.approx(life[1], rel=tolerance), phase


@needs_real
@pytest.mark.parametrize(("name", "measure", "tolerance"), [
    ("openb_pod_list_gpushare40.csv", "sharing_request", 0.005),
    ("openb_pod_list_multigpu50.csv", "multi_request", 0.01),
    ("openb_pod_list_gpuspec25.csv", "spec_of_gpu_pods", 0.005),
    ("openb_pod_list_cpu050.csv", "cpu_only_pods", 0.003),
])
def test_variants_have_their_family_signature(name: str, measure: str, tolerance: float,
                                              tables: dict[str, pl.DataFrame],
                                              real: dict[str, pl.DataFrame]) -> None:
    ours, theirs = _family_shares(tables[name]), _family_shares(real[name])
    assert ours[measure] == pytest.approx(theirs[measure], abs=tolerance)
    assert len(tables[name]) == pytest.approx(len(real[name]), rel=0.03)


def test_variants_are_resampled_from_the_default_list(tables: dict[str, pl.DataFrame]) -> None:
    default = tables["openb_pod_list_default.csv"].drop("name")
    gpu = default.filter(pl.col("num_gpu") > 0)
    cpu = default.filter(pl.col("num_gpu") == 0)
    # gpushare: CPU pods unchanged and in order, GPU pods drawn from the default GPU pods.
    share = tables["openb_pod_list_gpushare40.csv"].drop("name")
    assert share.filter(pl.col("num_gpu") == 0).equals(cpu)
    assert share.filter(pl.col("num_gpu") > 0).join(gpu.unique(), on=gpu.columns, how="anti",
                                                   nulls_equal=True).is_empty()
    assert len(share) == len(default)
    # multigpu: the default pods (five columns), then extra multi-GPU pods.
    multi = tables["openb_pod_list_multigpu50.csv"].drop("name")
    assert multi.head(len(default)).equals(default.select(multi.columns))
    assert (multi.tail(len(multi) - len(default))["num_gpu"] > 1).all()
    # gpuspec: the default pods with a spec on some GPU pods only.
    spec = tables["openb_pod_list_gpuspec25.csv"].drop("name")
    assert spec.drop("gpu_spec").equals(default.drop("gpu_spec"))
    assert spec.filter(pl.col("num_gpu") == 0)["gpu_spec"].null_count() == len(cpu)
    # cpu050: CPU pods drawn from the default CPU pods, then the default GPU pods in order.
    cpu_variant = tables["openb_pod_list_cpu050.csv"].drop("name")
    n_cpu = int((cpu_variant["num_gpu"] == 0).sum())
    assert (cpu_variant.head(n_cpu)["num_gpu"] == 0).all()
    assert cpu_variant.tail(len(cpu_variant) - n_cpu).equals(gpu)
    assert cpu_variant.head(n_cpu).join(cpu.unique(), on=cpu.columns, how="anti",
                                        nulls_equal=True).is_empty()
