"""Profile `acme-nsdi24` on a hand-written Acme release: every figure's value worked out by hand
from the rows below (not from the profile's code), with the verdicts that follow."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlx.analysis.definitions import get_definition
from ddlx.analysis.reproduce import reproduce
from ddlx.analysis.reproduce.model import DIFFERS, MATCHES, NOT_HERE
from ddlx.analysis.reproduce.run import get_profile
from ddlx.datasets.ingest import ingest
from tests.test_acme_ingest import KALOS_HEADER, SEREN_HEADER, write_release

# Seren (times +08:00). GPU time below is the gpu_time column (= duration x gpu_num in every row).
#   201 Eval      COMPLETED  1 GPU  x 1200 s =  1200      206 Pretrain CANCELLED 8 GPUs x 8300 s = 66400
#   202 SFT       COMPLETED  4 GPUs x 5000 s = 20000      207 Eval     CANCELLED in the queue (start = end): 0
#   203 Eval      FAILED     2 GPUs x 1200 s =  2400      208 Debug    COMPLETED CPU job (gpu_num 0)
#   204 Other     TIMEOUT    1 GPU  x 4000 s =  4000      209 Other    FAILED    CPU job (gpu_num 0)
#   205 MLLM      NODE_FAIL  2 GPUs x 3000 s =  6000
# -> 9 jobs, 7 GPU jobs (201-207): completed 2, cancelled 2, failed 3 (FAILED, TIMEOUT, NODE_FAIL);
#    GPU time completed 1200 + 20000 = 21200, cancelled 66400 + 0 = 66400, failed 2400 + 4000 + 6000
#    = 12400, in all 100000 -> 21.2 / 66.4 / 12.4 %, exactly the published shares.
#    Eval: 201, 203, 207 = 3 of the 7 GPU jobs (all six types are in Seren's treemap);
#    Pretrain GPU time 66400 of 100000.
SEREN_ROWS = [
    "201,u1,1,1,16,Eval,COMPLETED,2023-03-01 08:00:00+08:00,2023-03-01 08:00:10+08:00,"
    "2023-03-01 08:20:10+08:00,1200,10,1200.0",
    "202,u1,1,4,64,SFT,COMPLETED,2023-03-01 09:00:00+08:00,2023-03-01 09:00:00+08:00,"
    "2023-03-01 10:23:20+08:00,5000,0,20000.0",
    "203,u2,1,2,32,Eval,FAILED,2023-03-02 10:00:00+08:00,2023-03-02 10:00:05+08:00,"
    "2023-03-02 10:20:05+08:00,1200,5,2400.0",
    "204,u2,1,1,16,Other,TIMEOUT,2023-03-02 11:00:00+08:00,2023-03-02 11:00:00+08:00,"
    "2023-03-02 12:06:40+08:00,4000,0,4000.0",
    "205,u3,1,2,32,MLLM,NODE_FAIL,2023-03-03 00:00:00+08:00,2023-03-03 00:00:00+08:00,"
    "2023-03-03 00:50:00+08:00,3000,0,6000.0",
    "206,u3,1,8,128,Pretrain,CANCELLED,2023-03-04 00:00:00+08:00,2023-03-04 00:00:00+08:00,"
    "2023-03-04 02:18:20+08:00,8300,0,66400.0",
    "207,u1,1,1,16,Eval,CANCELLED,2023-03-05 08:00:00+08:00,2023-03-05 08:01:00+08:00,"
    "2023-03-05 08:01:00+08:00,0,60,0.0",
    "208,u4,1,0,4,Debug,COMPLETED,2023-03-05 09:00:00+08:00,2023-03-05 09:00:00+08:00,"
    "2023-03-05 09:10:00+08:00,600,0,0.0",
    "209,u4,1,0,4,Other,FAILED,2023-03-05 10:00:00+08:00,2023-03-05 10:00:00+08:00,"
    "2023-03-05 10:00:30+08:00,30,0,0.0",
]
# Kalos (times +00:00):
#   dlcp01 Pretrain COMPLETED 2 GPUs x 14325 s = 28650
#   dlce01 Eval     FAILED   64 GPUs; as in the README example duration 18 = end - submit (the job ran
#          8 s), gpu_time 1152 = 18 x 64 (64 x 8 = 512 from the times: not what the owners sum)
#   dlce02 Eval     COMPLETED 1 GPU x 198 s = 198
#   dlce03 Eval     CANCELLED in the queue: no start, end, duration or gpu_time (counts 0)
#   dlcs01 SFT      CANCELLED 8 GPUs x 100 s = 800 (SFT is not in Kalos's treemap)
#   dlcc01 Other    COMPLETED CPU job (gpu_num 0)
# -> 6 jobs, 5 GPU jobs: completed 2 (dlcp01, dlce02), cancelled 2 (dlce03, dlcs01), failed 1 (dlce01)
#    = 40 / 40 / 20 %; GPU time completed 28650 + 198 = 28848, cancelled 800, failed 1152, in all 30800.
#    Treemap jobs (Eval, Pretrain, Debug, Other with GPUs): dlcp01, dlce01-03 = 4, Eval 3 -> 75 %;
#    their GPU time 28650 + 1152 + 198 + 0 = 30000, Pretrain 28650 -> 95.5 %, the published share
#    (with SFT's 800 it would be 93.0 %, with 512 for dlce01 97.6 %).
KALOS_ROWS = [
    "dlcp01,uk1,1,2,32,500,50.0,Pretrain,COMPLETED,2023-06-01 00:00:00+00:00,2023-06-01 00:00:00+00:00,"
    "2023-06-01 03:58:45+00:00,,,14325,0.0,28650.0",
    "dlce01,uk2,8,64,960,1000,100.0,Eval,FAILED,2023-06-02 11:00:58+00:00,2023-06-02 11:01:08+00:00,"
    "2023-06-02 11:01:16+00:00,2023-06-02 11:01:16+00:00,,18,10.0,1152.0",
    "dlce02,uk2,1,1,16,200,20.0,Eval,COMPLETED,2023-06-03 00:00:00+00:00,2023-06-03 00:00:02+00:00,"
    "2023-06-03 00:03:20+00:00,,,198,2.0,198.0",
    "dlce03,uk3,1,1,16,200,20.0,Eval,CANCELLED,2023-06-04 00:00:00+00:00,,,,2023-06-04 00:10:00+00:00,,,",
    "dlcs01,uk3,1,8,120,1000,100.0,SFT,CANCELLED,2023-06-05 00:00:00+00:00,2023-06-05 00:00:00+00:00,"
    "2023-06-05 00:01:40+00:00,,2023-06-05 00:01:40+00:00,100,0.0,800.0",
    "dlcc01,uk4,1,0,8,16,1.0,Other,COMPLETED,2023-06-06 00:00:00+00:00,2023-06-06 00:00:00+00:00,"
    "2023-06-06 00:00:50+00:00,,,50,0.0,0.0",
]

# Figure id -> (value worked out above, verdict against the published value).
EXPECTED: dict[str, tuple[float, str]] = {
    "jobs_readme": (9 + 6, DIFFERS),  # 880,740
    "jobs_summary": (9 + 6, DIFFERS),  # 1,093,963
    "gpu_jobs_readme": (7 + 5, DIFFERS),  # 470,497
    "gpu_jobs_summary": (7 + 5, DIFFERS),  # 683,720
    "seren_jobs": (9, DIFFERS),
    "seren_gpu_jobs": (7, DIFFERS),
    "kalos_jobs": (6, DIFFERS),
    "kalos_gpu_jobs": (5, DIFFERS),
    "seren_completed_share": (100 * 2 / 7, DIFFERS),  # 28.6 vs 49.7
    "seren_cancelled_share": (100 * 2 / 7, DIFFERS),  # 28.6 vs 7.5
    "seren_failed_share": (100 * 3 / 7, MATCHES),  # 42.857... rounds to 42.9
    "seren_completed_gpu_time": (21200, DIFFERS),
    "seren_cancelled_gpu_time": (66400, DIFFERS),
    "seren_failed_gpu_time": (12400, DIFFERS),
    "seren_completed_gpu_time_share": (21.2, MATCHES),
    "seren_cancelled_gpu_time_share": (66.4, MATCHES),
    "seren_failed_gpu_time_share": (12.4, MATCHES),
    "kalos_completed_share": (40.0, DIFFERS),  # vs 54.1
    "kalos_cancelled_share": (40.0, DIFFERS),  # vs 6.2
    "kalos_failed_share": (20.0, DIFFERS),  # vs 39.7
    "kalos_completed_gpu_time": (28848, DIFFERS),
    "kalos_cancelled_gpu_time": (800, DIFFERS),
    "kalos_failed_gpu_time": (1152, DIFFERS),
    "kalos_completed_gpu_time_share": (100 * 28848 / 30800, DIFFERS),  # 93.7 vs 31.3
    "kalos_cancelled_gpu_time_share": (100 * 800 / 30800, DIFFERS),  # 2.6 vs 60.7
    "kalos_failed_gpu_time_share": (100 * 1152 / 30800, DIFFERS),  # 3.7 vs 8.0
    "seren_eval_job_share": (100 * 3 / 7, DIFFERS),  # 42.9 vs 64.9
    "seren_pretrain_gpu_time_share": (66.4, DIFFERS),  # vs 69.5
    "kalos_eval_job_share": (75.0, DIFFERS),  # vs 92.8
    "kalos_pretrain_gpu_time_share": (95.5, MATCHES),
}


def _text(header: str, rows: list[str]) -> str:
    return "\n".join([header, *rows]) + "\n"


def _release(folder: Path, clusters: tuple[str, ...] = ("seren", "kalos")) -> Path:
    return write_release(folder, seren=_text(SEREN_HEADER, SEREN_ROWS), kalos=_text(KALOS_HEADER, KALOS_ROWS),
                         clusters=clusters)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("acme-reproduce")
    ingest("acme", _release(root / "release"), root / "home")
    reproduction = reproduce(root / "home", "acme-nsdi24")
    assert not reproduction.synthetic and reproduction.dataset == "acme"
    return {r.figure.id: r for r in reproduction.results}


def test_every_figure_has_the_hand_derived_value_and_verdict(results: dict) -> None:
    assert set(results) == set(EXPECTED)
    for figure_id, (value, verdict) in EXPECTED.items():
        result = results[figure_id]
        assert result.value == pytest.approx(value, rel=1e-12), figure_id
        assert result.verdict == verdict, (figure_id, result.value, result.figure.published)


def test_published_values_and_tolerances(results: dict) -> None:
    published = {figure_id: r.figure.published for figure_id, r in results.items()}
    assert (published["jobs_readme"], published["jobs_summary"]) == (880740, 1031550 + 62413)
    assert (published["gpu_jobs_readme"], published["gpu_jobs_summary"]) == (470497, 663813 + 19907)
    assert [published[f"seren_{k}_share"] for k in ("completed", "cancelled", "failed")] == [49.7, 7.5, 42.9]
    assert [published[f"kalos_{k}_share"] for k in ("completed", "cancelled", "failed")] == [54.1, 6.2, 39.7]
    assert (published["seren_cancelled_gpu_time_share"], published["kalos_cancelled_gpu_time_share"]) == (66.4, 60.7)
    assert (published["seren_pretrain_gpu_time_share"], published["kalos_pretrain_gpu_time_share"]) == (69.5, 95.5)
    assert (published["seren_eval_job_share"], published["kalos_eval_job_share"]) == (64.9, 92.8)
    for figure_id, result in results.items():
        tolerance = result.figure.tolerance
        if result.figure.unit == "%":
            assert (tolerance.kind, tolerance.amount) == ("rounded", 1), figure_id
        elif result.figure.unit == "jobs":
            assert tolerance.kind == "exact", figure_id


def test_conflicting_job_counts_name_each_other(results: dict) -> None:
    pairs = {"jobs_readme": "jobs_summary", "gpu_jobs_readme": "gpu_jobs_summary"}
    for readme, summary in pairs.items():
        assert results[readme].figure.conflicts == (summary,)
        assert results[summary].figure.conflicts == (readme,)
        assert results[readme].to_dict(False)["conflicts"] == [summary]
        assert "README" in results[readme].figure.source and "cluster_summary.csv" in results[summary].figure.source
    others = [r.figure.id for r in results.values() if r.figure.conflicts]
    assert sorted(others) == sorted([*pairs, *pairs.values()])


def test_definitions_are_the_papers_and_registered() -> None:
    profile = get_profile("acme-nsdi24")
    ids = {d.id for d in profile.definitions}
    assert ids and all(i.startswith("paper.acme_nsdi24.") for i in ids)
    assert {f.definition for f in profile.figures} == ids
    for definition_id in ids:
        assert get_definition(definition_id).text
    assert "ddlx datasets download acme" in profile.get_data and "ingest acme --from" in profile.get_data


def test_one_cluster_leaves_the_other_and_the_totals_not_computable(tmp_path: Path) -> None:
    ingest("acme", _release(tmp_path / "release", clusters=("seren",)), tmp_path / "home")
    results = {r.figure.id: r for r in reproduce(tmp_path / "home", "acme-nsdi24").results}
    for figure_id, (value, verdict) in EXPECTED.items():
        result = results[figure_id]
        if figure_id.startswith("seren_"):
            assert (result.value, result.verdict) == (pytest.approx(value, rel=1e-12), verdict), figure_id
        else:
            assert (result.value, result.verdict) == (None, NOT_HERE), figure_id
            assert "trace_kalos.csv" in result.reason, figure_id
