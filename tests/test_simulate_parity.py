"""Simulator options shared with the release simulator of Alibaba's 2020 GPU trace: CPU capacity beside GPUs, the
preemptive shortest-remaining-time policy, and the tie-break between equal keys. Every schedule
below is worked out by hand in the comments (job: submit s, GPUs, CPU cores, run s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.simulate import SimulationError, simulate, workload_from_arrays
from tests.conftest import assert_clean_failure


def _schedule(workload, policy: str, backfill: bool = True, tie_break: str = "submit"):
    result = simulate(workload, [policy], backfill=backfill, tie_break=tie_break).results[0]
    return result.schedule.first_start_s.tolist(), result.schedule.end_s.tolist(), result.metrics


# CPU-limited: 4 GPUs and 8 cores. A: 0, 1 GPU, 6 cores, 10 s; B: 1, 1 GPU, 4 cores, 3 s;
# C: 2, 1 GPU, 2 cores, 5 s. GPUs never run out (3 jobs, 4 GPUs); cores do.
CPU_JOBS = dict(submit_s=[0, 1, 2], gpus=[1, 1, 1], run_s=[10, 3, 5], capacity_gpus=4, job_ids=["A", "B", "C"])


def test_a_job_waits_for_cpus_while_gpus_are_free() -> None:
    workload = workload_from_arrays(**CPU_JOBS, cpus=[6, 4, 2], capacity_cpus=8)
    # Backfilling: t0 A takes 6 of 8 cores. t1 B needs 4 cores, 2 are free: waits though 3 GPUs are
    # free. t2 C (2 cores) fits: runs 2-7. t7 two cores free again, B still waits. t10 A ends: B 10-13.
    starts, ends, m = _schedule(workload, "fifo", backfill=True)
    assert starts == [0, 10, 2] and ends == [10, 13, 7]
    assert m["jct_avg_s"] == pytest.approx((10 + 12 + 5) / 3)  # 9
    assert m["queue_avg_s"] == pytest.approx((0 + 9 + 0) / 3)  # 3
    # Without backfilling C waits behind B; at t10 B takes 4 cores and C its 2 of the other 4: 10-15.
    starts, ends, m = _schedule(workload, "fifo", backfill=False)
    assert starts == [0, 10, 10] and ends == [10, 13, 15]
    assert m["jct_avg_s"] == pytest.approx((10 + 12 + 13) / 3)
    # Busy GPU-seconds stay the work: 1 x 10 + 1 x 3 + 1 x 5 = 18.
    assert m["busy_gpu_s"] == pytest.approx(18.0)
    # sjf-oracle on the same pool: B (3 s) sorts before C (5 s) but does not fit; with backfilling
    # C starts at 2 as under fifo.
    assert _schedule(workload, "sjf-oracle", backfill=True)[0] == [0, 10, 2]


def test_without_a_cpu_capacity_cpus_are_not_modelled() -> None:
    # The same jobs without CPUs: every job starts at its submission; JCT = run times 10, 3, 5.
    workload = workload_from_arrays(**CPU_JOBS)
    starts, ends, m = _schedule(workload, "fifo")
    assert starts == [0, 1, 2] and ends == [10, 4, 7]
    assert m["jct_avg_s"] == pytest.approx(6.0)
    report = simulate(workload, ["fifo"])
    assert report.to_dict()["cpus"]["modelled"] is False
    assert "larger_than_cluster_cpus" not in report.to_dict()["workload"]["excluded"]


def test_cpu_requests_missing_or_too_large() -> None:
    # 8 cores: the job asking for 9 is left out; the one without a request asks for none and starts at
    # once beside A (0, 6 cores).
    workload = workload_from_arrays([0, 1, 2], [1, 1, 1], [10, 3, 5], capacity_gpus=4, job_ids=["A", "N", "X"],
                                    cpus=[6, float("nan"), 9], capacity_cpus=8)
    assert workload.job_ids == ["A", "N"]
    assert workload.excluded["larger_than_cluster_cpus"] == 1
    assert workload.cpu_requests_missing == 1
    assert _schedule(workload, "fifo")[0] == [0, 1]
    with pytest.raises(SimulationError, match="las does not model CPUs"):
        simulate(workload, ["las"])
    with pytest.raises(SimulationError, match="above 0 cores"):
        workload_from_arrays([0], [1], [1], capacity_gpus=1, cpus=[1], capacity_cpus=0)


def test_srtf_preempts_the_long_job_which_resumes() -> None:
    # 1 GPU. L: 0, 10 s; S: 2, 3 s. t0 L starts. t2 S arrives: S has 3 s left, L 8: L is
    # preempted (ran 2 s) and S runs 2-5. t5 L resumes with its 8 s: ends 13. No preemption cost.
    workload = workload_from_arrays([0, 2], [1, 1], [10, 3], capacity_gpus=1, job_ids=["L", "S"])
    starts, ends, m = _schedule(workload, "srtf")
    assert starts == [0, 2] and ends == [13, 5]
    assert m["jct_avg_s"] == pytest.approx((13 + 3) / 2)
    assert m["preemptions"] == 1 and m["preempted_jobs"] == 1
    assert m["busy_gpu_s"] == pytest.approx(13.0)  # the work: no second lost
    # Non-preemptive sjf-oracle: L runs 0-10, S 10-13: JCT 10 and 11.
    starts, ends, m = _schedule(workload, "sjf-oracle")
    assert ends == [10, 13] and m["jct_avg_s"] == pytest.approx(10.5) and m["preemptions"] is None
    # srtf-predicted with estimates L 2 s, S 5 s: at t2 L has max(2 - 2, 0) = 0 s left by its
    # estimate, S 5: no preemption; L runs its true 10 s, S 10-13.
    guessed = workload_from_arrays([0, 2], [1, 1], [10, 3], capacity_gpus=1, job_ids=["L", "S"], estimate_s=[2, 5])
    starts, ends, m = _schedule(guessed, "srtf-predicted")
    assert ends == [10, 13] and m["preemptions"] == 0


@pytest.mark.parametrize("backfill", [False, True])
def test_srtf_with_several_sizes(backfill: bool) -> None:
    # 2 GPUs. A: 0, 2 GPUs, 10 s; B: 1, 1 GPU, 4 s; C: 3, 1 GPU, 1 s; D: 4, 2 GPUs, 20 s.
    # t0 A starts. t1 B (4 s left) before A (9 s left): B takes 1 GPU, A (2) no longer fits: preempted.
    # t3 C (1 s) before B (2 s) before A (9 s): C and B run, A waits. t4 C ends; D arrives (20 s):
    # B (1 s) keeps its GPU, A and D (2 GPUs each) do not fit. t5 B ends: A runs 5-14, D waits.
    # t14 D runs 14-34. Backfilling changes nothing: no waiting job ever fits in the GPU left.
    workload = workload_from_arrays([0, 1, 3, 4], [2, 1, 1, 2], [10, 4, 1, 20], capacity_gpus=2,
                                    job_ids=["A", "B", "C", "D"])
    starts, ends, m = _schedule(workload, "srtf", backfill=backfill)
    assert starts == [0, 1, 3, 14] and ends == [14, 5, 4, 34]
    assert m["jct_avg_s"] == pytest.approx((14 + 4 + 1 + 30) / 4)  # 12.25
    assert m["queue_avg_s"] == pytest.approx(10 / 4)
    assert m["preemptions"] == 1 and m["makespan_s"] == 34
    assert m["busy_gpu_s"] == pytest.approx(2 * 10 + 4 + 1 + 2 * 20)


# Tie-break: 2 GPUs. "10": 0, 2 GPUs, 4 s holds the pool until 4. Then three jobs of equal run
# time (2 s) wait: "100" (1, 2 GPUs), "11" (2, 1 GPU), "9" (3, 1 GPU).
TIE_SUBMIT = [0, 1, 2, 3]
TIE_GPUS = [2, 2, 1, 1]
TIE_RUN = [4, 2, 2, 2]


def test_tie_breaks_give_different_schedules() -> None:
    workload = workload_from_arrays(TIE_SUBMIT, TIE_GPUS, TIE_RUN, capacity_gpus=2, job_ids=["10", "100", "11", "9"])
    # submit: "100" (submitted first) runs 4-6, then "11" and "9" together 6-8.
    # JCT 4, 5, 6, 5 -> 5.
    starts, ends, m = _schedule(workload, "sjf-oracle", backfill=False, tie_break="submit")
    assert starts == [0, 4, 6, 6] and ends == [4, 6, 8, 8]
    assert m["jct_avg_s"] == pytest.approx(5.0)
    # job-id, all ids numbers: 9 < 11 < 100. "9" and "11" run 4-6, "100" 6-8. JCT 4, 7, 4, 3 -> 4.5.
    starts, ends, m = _schedule(workload, "sjf-oracle", backfill=False, tie_break="job-id")
    assert starts == [0, 6, 4, 4] and ends == [4, 8, 6, 6]
    assert m["jct_avg_s"] == pytest.approx(4.5)
    # One id that is not a number: ids compare as text, "100" < "11" < "9a": the submit schedule again.
    text = workload_from_arrays(TIE_SUBMIT, TIE_GPUS, TIE_RUN, capacity_gpus=2, job_ids=["10", "100", "11", "9a"])
    assert _schedule(text, "sjf-oracle", backfill=False, tie_break="job-id")[0] == [0, 4, 6, 6]


def test_fifo_ties_at_one_submission_time() -> None:
    # 1 GPU, both submitted at 0: "10" (1 s) and "9" (5 s). submit (then id as text): "10" 0-1,
    # "9" 1-6: JCT 1, 6 -> 3.5. job-id (numbers): "9" 0-5, "10" 5-6: JCT 6, 5 -> 5.5.
    workload = workload_from_arrays([0, 0], [1, 1], [1, 5], capacity_gpus=1, job_ids=["10", "9"])
    assert workload.job_ids == ["10", "9"]
    starts, ends, m = _schedule(workload, "fifo", tie_break="submit")
    assert ends == [1, 6] and m["jct_avg_s"] == pytest.approx(3.5)
    starts, ends, m = _schedule(workload, "fifo", tie_break="job-id")
    assert ends == [6, 5] and m["jct_avg_s"] == pytest.approx(5.5)
    with pytest.raises(SimulationError, match="unknown tie-break 'random'"):
        simulate(workload, ["fifo"], tie_break="random")


JOBS_CSV = """job,submit,duration,gpus,cpus
A,1000,10,1,6
B,1001,3,1,4
C,1002,5,1,2
"""


@pytest.fixture
def cpu_home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS_CSV)
    home = tmp_path / "home"
    import_dataset("cpuhand", tmp_path / "jobs.csv", home,
                   mapping="job_id=job,submit=submit,duration=duration,gpus=gpus,cpus=cpus")
    return home


def test_cli_cpus_and_tie_break(cli, cpu_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "cpu.json"
    result = cli("simulate", "--dataset", "cpuhand", "--gpus", "4", "--cpus", "8", "--compare", "fifo,srtf",
                 "--tie-break", "job-id", "--out", out, "--data-home", cpu_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    assert document["cpus"]["modelled"] is True and document["cpus"]["cores"] == 8.0
    assert document["tie_break"]["rule"] == "job-id"
    by_policy = {p["policy"]: p for p in document["policies"]}
    # fifo: the CPU-limited schedule above, JCT 10, 12, 5 -> 9.
    assert by_policy["fifo"]["jct_avg_s"] == pytest.approx(9.0)
    # srtf: t0 A (10 s, 6 cores). t1 B (3 s) before A (9 s left): B takes 4 cores, A's 6 no longer
    # fit: A is preempted (ran 1 s). t2 C (5 s): order B (2 s left), C (5 s), A (9 s): B and C run
    # (6 cores), A waits. t4 B ends: C (3 s left) keeps 2 cores, A's 6 fit in the other 6: A resumes
    # with 9 s, ends 13; C ends 7. JCT 13, 3, 5 -> 7.
    assert by_policy["srtf"]["jct_avg_s"] == pytest.approx(7.0)
    assert by_policy["srtf"]["preemptions"] == 1
    assert "cpus: 8 cores" in result.out
    # Without --cpus: CPUs not modelled, stated; every job starts at once (JCT 10, 3, 5 -> 6).
    result = cli("simulate", "--dataset", "cpuhand", "--gpus", "4", "--policy", "fifo", "--out", out,
                 "--data-home", cpu_home)
    assert result.code == 0, result.err
    document = json.loads(out.read_text())
    assert document["cpus"]["modelled"] is False and document["tie_break"]["rule"] == "submit"
    assert document["policies"][0]["jct_avg_s"] == pytest.approx(6.0)
    assert "cpus: not modelled" in result.out


def test_cli_bad_values(cli, cpu_home: Path) -> None:
    base = ("simulate", "--dataset", "cpuhand", "--gpus", "4", "--data-home", cpu_home)
    result = cli(*base, "--policy", "fifo", "--tie-break", "random")
    assert_clean_failure(result, "unknown tie-break 'random'", "submit, job-id", code=2)
    for bad in ("0", "-3", "many", "nan"):
        result = cli(*base, "--policy", "fifo", "--cpus", bad)
        assert_clean_failure(result, "--cpus", f"got '{bad}'", code=2)
    result = cli(*base, "--policy", "las", "--cpus", "8")
    assert_clean_failure(result, "las does not model CPUs")
    help_text = cli("simulate", "--help").out
    assert "--cpus" in help_text and "--tie-break" in help_text and "srtf" in help_text


def _random_jobs(seed: int, jobs: int = 400):
    import random

    rng = random.Random(seed)
    submit = sorted(rng.uniform(0, 3_000) for _ in range(jobs))
    gpus = [rng.choice([0.5, 1, 1, 2, 4]) for _ in range(jobs)]
    run = [float(rng.randint(1, 300)) for _ in range(jobs)]
    return submit, gpus, run


@pytest.mark.parametrize("backfill", [False, True])
def test_cpu_engine_matches_the_gpu_engine_when_cpus_never_bind(backfill: bool) -> None:
    # Jobs asking for no CPU on a pool with cores: the CPU-aware pass must give the GPU-only schedule.
    submit, gpus, run = _random_jobs(3)
    plain = workload_from_arrays(submit, gpus, run, capacity_gpus=8)
    with_cpus = workload_from_arrays(submit, gpus, run, capacity_gpus=8, cpus=[0] * len(run), capacity_cpus=1)
    for policy in ("fifo", "sjf-oracle"):
        for tie_break in ("submit", "job-id"):
            a = _schedule(plain, policy, backfill, tie_break)
            b = _schedule(with_cpus, policy, backfill, tie_break)
            assert a[0] == b[0] and a[1] == b[1], (policy, tie_break)


def test_srtf_conserves_gpu_seconds_on_a_random_workload() -> None:
    submit, gpus, run = _random_jobs(5)
    workload = workload_from_arrays(submit, gpus, run, capacity_gpus=6)
    starts, ends, m = _schedule(workload, "srtf")
    work = sum(g * r for g, r in zip(gpus, run))
    assert m["busy_gpu_s"] == pytest.approx(work, rel=1e-9)
    assert m["preemptions"] > 0
    # A job never ends before it has run its run time since its first start.
    assert all(e - s >= r - 1e-6 for s, e, r in zip(starts, ends, run))
    assert simulate(workload, ["srtf"]).to_json() == simulate(workload, ["srtf"]).to_json()
