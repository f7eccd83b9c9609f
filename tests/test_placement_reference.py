"""Parity with the FGD owners' own fill-up results (../shared/reference/fgd-owners, Apache-2.0).

ddlx's fill-up of the real v2023 cluster (GPU nodes, filled to 1.3 x capacity, ties to a seeded random
node, the owners' bin-mean reading) on three pod lists, three seeds each: at 90, 95, 100, 110, 120 and
130 % arrived workload, ddlx's mean unallocated and fragmented GPU shares over its seeds lie within the
owners' [min, max] over their ten seeds, and FGD's cut against the best other policy at 100 % is within
2 points of theirs. Both bounds are for a mean over ten seeds; for three they are scaled by
`reference.widening` (the extra spread of a mean over fewer seeds). Every bound is read from the
owners' files here; benchmarks/placement.py runs all 17 lists with ten seeds, the bounds unscaled.

The ranges are checked for the five scored policies, whose ties, scores and GPU choices these
settings are about; `random` has none of them, and its seeds spread the widest against the owners'
range (on gpuspec33 at 120 %, a standard deviation of 0.32 points over ddlx's seeds 0-19 against
the owners' 0.17 over theirs), so three seeds of it cannot be held to that range. It runs here for
the cut (it is gpuspec33's best other policy at 100 %), and the benchmark holds it to the range at
ten seeds. The cut is checked on the default and gpuspec33 lists: on the multi-GPU lists the
owners' own cut varies by 1.6 points (bootstrap standard error over their ten seeds, multigpu50),
more than three seeds can resolve within the bound.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.placement_inputs import read_inputs
from ddlx.datasets.ingest import ingest
from ddlx.errors import InputError
from ddlx.placement import POLICIES, summary_at
from ddlx.placement.experiment import PlacementExperiment, cuts_of, run_placement
from ddlx.placement.reference import (
    ALLOCATED_FILE,
    COMPARED_LEVELS,
    FRAGMENTED_FILE,
    beside_owners,
    owners_summary,
    read_owners_file,
    read_owners_results,
    widening,
)
from tests.conftest import SHARED, SHARED_TRACES

REFERENCE = SHARED / "reference" / "fgd-owners"
V2023 = SHARED_TRACES / "alibaba-gpu-v2023"
needs_reference = pytest.mark.skipif(
    not (REFERENCE / ALLOCATED_FILE).is_file() or not V2023.is_dir(),
    reason="the FGD owners' results (../shared/reference/fgd-owners) or the v2023 trace (../shared/traces) "
           "are not beside the repo")

#: The real workload, one GPU-type-constrained list and one multi-GPU list, each with a few seeds.
LISTS = ("default", "gpuspec33", "multigpu50")
SEEDS = 3
#: The policies whose range is checked: every one that scores nodes.
SCORED = tuple(policy for policy in POLICIES if policy != "random")
#: How far ddlx's cut may be from the owners', in percentage points.
CUT_POINTS = 2.0


@pytest.fixture(scope="module")
def owners() -> pl.DataFrame:
    return read_owners_results(REFERENCE)


@pytest.fixture(scope="module")
def experiments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PlacementExperiment]:
    home = tmp_path_factory.mktemp("v2023") / "home"
    ingest("pai-v2023", V2023, home)
    return {name: run_placement(read_inputs(home, "pai-v2023", name, "gpu"), None, SEEDS, workers=2)
            for name in LISTS}


@needs_reference
def test_the_owners_files_are_read_as_written(owners: pl.DataFrame) -> None:
    with open(REFERENCE / ALLOCATED_FILE, newline="") as handle:
        rows = list(csv.DictReader(handle))
    # 17 lists x 6 policies x 10 seeds, each with the percents 0..130
    assert len(rows) == 1020 and owners.height == len(rows) * 131
    row = next(r for r in rows if r["workload"] == "openb_pod_list_default" and r["sc_policy"] == "06-FGD"
               and r["seed"] == "42")
    found = owners.filter((pl.col("task_list") == "default") & (pl.col("policy") == "fgd") & (pl.col("seed") == 42)
                          & (pl.col("percent") == 100))
    assert found["unallocated_share"].item() == pytest.approx(1 - float(row["100"]) / 100)
    with open(REFERENCE / FRAGMENTED_FILE, newline="") as handle:
        frag = next(r for r in csv.DictReader(handle) if r["workload"] == "openb_pod_list_gpuspec33"
                    and r["sc_policy"] == "05-BestFit" and r["seed"] == "51")
    found = owners.filter((pl.col("task_list") == "gpuspec33") & (pl.col("policy") == "best-fit")
                          & (pl.col("seed") == 51) & (pl.col("percent") == 130))
    assert found["fragmented_share"].item() == pytest.approx(float(frag["130"]) / 100)


@needs_reference
@pytest.mark.parametrize("task_list", LISTS)
@pytest.mark.parametrize("column", ["unallocated_share", "fragmented_share"])
def test_ddlx_mean_lies_within_the_owners_seed_range(experiments: dict[str, PlacementExperiment],
                                                     owners: pl.DataFrame, task_list: str, column: str) -> None:
    ours = summary_at(experiments[task_list].steps, COMPARED_LEVELS, column)
    beside = beside_owners(ours, owners_summary(owners, task_list, column)).filter(pl.col("policy").is_in(SCORED))
    assert beside.height == len(SCORED) * len(COMPARED_LEVELS) and set(beside["ddlx_seeds"]) == {SEEDS}
    outside = beside.filter(~pl.col("inside"))
    assert outside.is_empty(), outside.to_dicts()


@needs_reference
@pytest.mark.parametrize("task_list", ["default", "gpuspec33"])
def test_fgd_cut_against_the_best_other_policy_matches_the_owners(experiments: dict[str, PlacementExperiment],
                                                                  owners: pl.DataFrame, task_list: str) -> None:
    owners_seeds = owners.filter(pl.col("task_list") == task_list)["seed"].n_unique()
    ours = cuts_of(experiments[task_list].summary, "mean").filter(pl.col("level") == 1.0).row(0, named=True)
    theirs = cuts_of(owners_summary(owners, task_list), "mean").filter(pl.col("level") == 1.0).row(0, named=True)
    assert abs(ours["cut"] - theirs["cut"]) * 100 <= CUT_POINTS * widening(SEEDS, owners_seeds), (ours, theirs)
    assert ours["best_other"] == theirs["best_other"]


def test_the_owners_range_is_scaled_for_another_number_of_seeds() -> None:
    # sqrt((10 / n + 1) / 2): 1 for ten seeds, sqrt(13/6) for three, sqrt(5/8) for forty
    assert (widening(10, 10), widening(3, 10), widening(40, 10)) == pytest.approx((1.0, 1.4719601, 0.7905694))
    ours = pl.DataFrame({"policy": ["fgd", "fgd"], "level": [1.0, 1.3], "mean": [0.113, 0.113],
                         "min": [0.1, 0.1], "max": [0.12, 0.12], "seeds": [3, 10]})
    theirs = pl.DataFrame({"policy": ["fgd", "fgd"], "level": [1.0, 1.3], "mean": [0.10, 0.10],
                           "min": [0.08, 0.08], "max": [0.11, 0.11], "seeds": [10, 10]})
    beside = beside_owners(ours, theirs)
    # three seeds: 0.10 - 0.02 x 1.47196 .. 0.10 + 0.01 x 1.47196 holds 0.113; ten: [0.08, 0.11] does not
    assert beside["band_min"].to_list() == pytest.approx([0.0705608, 0.08])
    assert beside["band_max"].to_list() == pytest.approx([0.1147196, 0.11])
    assert beside["inside"].to_list() == [True, False]


def test_a_file_that_is_not_the_owners_results_is_refused(tmp_path: Path) -> None:
    header = "workload,sc_policy,tune,seed,total_gpus,0,1\n"
    missing = tmp_path / "missing.csv"
    missing.write_text("workload,policy,seed,0\n")
    with pytest.raises(InputError, match=r"missing\.csv, line 1: expected the owners' columns .* missing sc_policy"):
        read_owners_file(missing, "allocated_share")
    unknown = tmp_path / "unknown.csv"
    unknown.write_text(header + "openb_pod_list_default,06-FGD,1.3,42,6212,0.25,0.99\n"
                                "openb_pod_list_default,07-Tetris,1.3,42,6212,0.25,0.99\n")
    with pytest.raises(InputError, match=r"unknown\.csv, line 3, field 'sc_policy': unknown policy '07-Tetris'"):
        read_owners_file(unknown, "allocated_share")
    text = tmp_path / "text.csv"
    text.write_text(header + "openb_pod_list_default,06-FGD,1.3,42,6212,0.25,many\n")
    with pytest.raises(InputError, match=r"text\.csv: not the owners' discrete results"):
        read_owners_file(text, "allocated_share")
    with pytest.raises(InputError, match="cannot read"):
        read_owners_file(tmp_path / "absent.csv", "allocated_share")
