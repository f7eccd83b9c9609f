"""The `philly-atc19` profile: every figure on a hand-made job log (values worked out by hand from the
rows below), and the machine-list figures on the real cluster_machine_list (golden), where the job
figures are not computable and name the table they lack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlx.analysis.reproduce import reproduce
from ddlx.analysis.reproduce.model import DIFFERS, MATCHES, NOT_HERE
from ddlx.analysis.reproduce.run import get_profile
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, real_file
from tests.test_philly_ingest import write_philly_release


def _attempt(start: str | None, end: str | None, gpus: dict[str, int]) -> dict:
    return {"start_time": start, "end_time": end,
            "detail": [{"ip": ip, "gpus": [f"gpu{i}" for i in range(n)]} for ip, n in gpus.items()]}


def _job(jobid: str, status: str, attempts: list[dict]) -> dict:
    return {"status": status, "vc": "vcA", "jobid": jobid, "user": "u1",
            "submitted_time": "2017-10-10 09:00:00", "attempts": attempts}


# Seven jobs on 2017-10-10 (Pacific daylight time all day, so wall-clock differences are seconds):
#   j1 Pass:   one attempt, 2 GPUs, 10:00 -> 11:00 (3,600 s).
#   j2 Killed: attempt 1 with 1 GPU 10:00 -> 10:30 (1,800 s); attempt 2 with 2 GPUs (1 + 1 on two
#              machines) 11:00 -> 12:00 (3,600 s); 30 min gap between them.
#   j3 Failed: no attempt.
#   j4 Failed: attempt 1 without start or end and no GPU; attempt 2 with 4 GPUs 10:00 -> 10:15 (900 s).
#   j5 Pass:   one attempt, 1 GPU, from 10:00, no end ("None": running at the trace end).
#   j6 Killed: one attempt listing no GPU, 10:00 -> 10:10.
#   j7 Failed: one attempt, 1 GPU, no start (null), ends 10:20.
JOBS = [
    _job("j1", "Pass", [_attempt("2017-10-10 10:00:00", "2017-10-10 11:00:00", {"m8a": 2})]),
    _job("j2", "Killed", [_attempt("2017-10-10 10:00:00", "2017-10-10 10:30:00", {"m2a": 1}),
                          _attempt("2017-10-10 11:00:00", "2017-10-10 12:00:00", {"m2a": 1, "m2b": 1})]),
    _job("j3", "Failed", []),
    _job("j4", "Failed", [_attempt(None, "", {}),
                          _attempt("2017-10-10 10:00:00", "2017-10-10 10:15:00", {"m8a": 4})]),
    _job("j5", "Pass", [_attempt("2017-10-10 10:00:00", "None", {"m8a": 1})]),
    _job("j6", "Killed", [_attempt("2017-10-10 10:00:00", "2017-10-10 10:10:00", {})]),
    _job("j7", "Failed", [_attempt(None, "2017-10-10 10:20:00", {"m2b": 1})]),
]

# By hand:
#   jobs 7; without an attempt 1 (j3); attempts 1 + 2 + 0 + 2 + 1 + 1 + 1 = 8, without a start 2
#   (j4's first, j7's), without an end 2 (j4's first, j5's).
#   GPU jobs (a GPU in an attempt): j1, j2, j4, j5, j7 = 5 (j3 has no attempt, j6 lists no GPU).
#   Status of the GPU jobs: Pass j1, j5 = 2/5 = 40 %; Killed j2 = 1/5 = 20 %; Failed j4, j7 = 40 %.
#   Per job, GPUs of the largest attempt x first start to last end (jobs with both):
#     j1 2 x 3,600 = 7,200; j2 2 x (10:00 -> 12:00 = 7,200) = 14,400; j4 4 x 900 = 3,600;
#     j5 has no end and j7 no start: left out. Pass 7,200, Killed 14,400, Failed 3,600, all 25,200
#     -> 28.571 %, 57.143 %, 14.286 %.
#   Per attempt with start and end, GPUs x duration, by the job's status:
#     Pass j1 7,200; Killed j2 1 x 1,800 + 2 x 3,600 = 9,000 (+ j6 0 x 600); Failed j4 4 x 900 = 3,600;
#     all 19,800 -> 36.364 %, 45.455 %, 18.182 %.
#   Machine list of the tiny release (tests/test_philly_ingest.py): m2a 2, m2b 2, m8a 8, m8b 2 ->
#   4 machines, 14 GPUs.
HAND = {
    "jobs": 7, "jobs_without_attempt": 1, "attempts_without_start": 2, "attempts_without_end": 2,
    "gpu_jobs": 5, "gpu_jobs_pass": 40.0, "gpu_jobs_killed": 20.0, "gpu_jobs_failed": 40.0,
    "gpu_time_pass_job_span": 100 * 7200 / 25200, "gpu_time_killed_job_span": 100 * 14400 / 25200,
    "gpu_time_failed_job_span": 100 * 3600 / 25200,
    "gpu_seconds_pass_job_span": 7200, "gpu_seconds_killed_job_span": 14400, "gpu_seconds_failed_job_span": 3600,
    "gpu_time_pass_attempts": 100 * 7200 / 19800, "gpu_time_killed_attempts": 100 * 9000 / 19800,
    "gpu_time_failed_attempts": 100 * 3600 / 19800,
    "machines": 4, "machine_list_gpus": 14,
}


@pytest.fixture(scope="module")
def tiny_reproduction(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("philly_repro")
    release = write_philly_release(base / "release", overrides={"cluster_job_log": json.dumps(JOBS).encode()})
    ingest("philly", release, base / "home")
    return reproduce(base / "home", "philly-atc19")


def test_profile_declares_every_figure_once_with_symmetric_conflicts() -> None:
    profile = get_profile("philly-atc19")
    ids = [f.id for f in profile.figures]
    assert sorted(ids) == sorted(HAND) and len(set(ids)) == len(ids)
    assert profile.dataset == "philly" and "ddlx datasets download philly" in profile.get_data
    for figure in profile.figures:
        assert figure.definition.startswith("paper.philly_atc19.")
        for other in figure.conflicts:
            assert figure.id in profile.figure(other).conflicts
    # Each GPU-time share of one processing names its counterpart of the other.
    for status in ("pass", "killed", "failed"):
        assert profile.figure(f"gpu_time_{status}_job_span").conflicts == (f"gpu_time_{status}_attempts",)


def test_hand_made_release_every_figure_hand_derived(tiny_reproduction) -> None:
    assert not tiny_reproduction.synthetic
    results = {r.figure.id: r for r in tiny_reproduction.results}
    assert set(results) == set(HAND)
    for figure_id, expected in HAND.items():
        result = results[figure_id]
        assert result.value == pytest.approx(expected, abs=1e-9), figure_id
        # None of these tiny values is the published one (117,325 jobs, 60.4 %, ...).
        assert result.verdict == DIFFERS, figure_id
    # Rounded as the tolerance reads them (one decimal, halves up).
    assert round(results["gpu_time_killed_attempts"].value, 1) == 45.5
    assert round(results["gpu_time_pass_job_span"].value, 1) == 28.6


def _real_machine_list() -> tuple[int, int]:
    """(machines, GPUs) of the real list, read with plain Python: rows after the header, their
    second field summed."""
    lines = real_file("philly/cluster_machine_list").read_text().splitlines()
    rows = [line.split(",") for line in lines[1:] if line.strip()]
    return len(rows), sum(int(row[1].strip()) for row in rows)


def test_golden_real_machine_list_only(tmp_path: Path) -> None:
    """The real list matches the published counts; its excerpt (a fresh clone) is counted in full
    and differs from them."""
    real = real_file("philly/cluster_machine_list")
    release = tmp_path / "release"
    release.mkdir()
    (release / "cluster_machine_list").symlink_to(real)
    ingest("philly", release, tmp_path / "home", tables=["philly_machine_list"])
    results = {r.figure.id: r for r in reproduce(tmp_path / "home", "philly-atc19").results}

    machines, gpus = _real_machine_list()
    verdict = MATCHES if FULL_TRACES else DIFFERS
    assert (results["machines"].value, results["machines"].verdict) == (machines, verdict)
    assert (results["machine_list_gpus"].value, results["machine_list_gpus"].verdict) == (gpus, verdict)

    needs = {"jobs": "philly_job_log", "jobs_without_attempt": "philly_job_log",
             "attempts_without_start": "philly_attempts", "attempts_without_end": "philly_attempts"}
    needs.update({f: "philly_jobs" for f in HAND if f.startswith(("gpu_jobs", "gpu_seconds")) or f.endswith("span")})
    needs.update({f: "philly_job_log" for f in HAND if f.endswith("_attempts") and f.startswith("gpu_time")})
    assert set(needs) | {"machines", "machine_list_gpus"} == set(HAND)
    for figure_id, table in needs.items():
        result = results[figure_id]
        assert (result.value, result.verdict) == (None, NOT_HERE), figure_id
        assert table in result.reason, (figure_id, result.reason)
