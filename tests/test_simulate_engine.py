"""The simulator's engine on hand-made workloads whose schedules are worked out by hand below, and
invariants (GPU-seconds conserved, capacity never exceeded, determinism) checked independently on a
random workload."""

from __future__ import annotations

import math
import random

import numpy as np
import polars as pl
import pytest

from ddlx.simulate import (
    Capacity,
    SimulationError,
    build_workload,
    estimates_from_predictor,
    las_policy,
    resolve_policies,
    simulate,
    workload_from_arrays,
)

# The four-job workload used by most tests, on a 4-GPU cluster (job: submit s, GPUs, run s):
#   A: 0, 2, 10    B: 1, 4, 2    C: 2, 2, 3    D: 3, 1, 1
# Work = 2*10 + 4*2 + 2*3 + 1*1 = 35 GPU-seconds under every policy.
SUBMIT = [0.0, 1.0, 2.0, 3.0]
GPUS = [2.0, 4.0, 2.0, 1.0]
RUN = [10.0, 2.0, 3.0, 1.0]
IDS = ["A", "B", "C", "D"]
WORK = 35.0


def _four_jobs(estimates: list[float] | None = None):
    return workload_from_arrays(SUBMIT, GPUS, RUN, capacity_gpus=4, job_ids=IDS, estimate_s=estimates)


def _run(policy, backfill: bool, estimates: list[float] | None = None):
    report = simulate(_four_jobs(estimates), [policy], backfill=backfill)
    result = report.results[0]
    return result.schedule.first_start_s.tolist(), result.schedule.end_s.tolist(), result.metrics


def test_fifo_without_backfilling_blocks_behind_the_head() -> None:
    # t0 A starts (2 GPUs free). t1 B needs 4: waits; C (t2) and D (t3) wait behind it.
    # t10 A ends: B starts (4 GPUs), ends 12. t12: C (2) and D (1) start; C ends 15, D ends 13.
    starts, ends, m = _run("fifo", backfill=False)
    assert starts == [0, 10, 12, 12]
    assert ends == [10, 12, 15, 13]
    # JCT = end - submit: 10, 11, 13, 10 -> mean 11; sorted 10, 10, 11, 13: median 10.5,
    # p95 at position 0.95 * 3 = 2.85: 11 + 0.85 * (13 - 11) = 12.7.
    assert m["jct_avg_s"] == pytest.approx(11.0)
    assert m["jct_p50_s"] == pytest.approx(10.5)
    assert m["jct_p95_s"] == pytest.approx(12.7)
    # Queueing = start - submit: 0, 9, 10, 9 -> mean 7; sorted 0, 9, 9, 10: median 9, p95 9 + 0.85 * 1.
    assert m["queue_avg_s"] == pytest.approx(7.0)
    assert m["queue_p50_s"] == pytest.approx(9.0)
    assert m["queue_p95_s"] == pytest.approx(9.85)
    # Makespan 15 s; utilisation = 35 GPU-s / (4 GPUs x 15 s).
    assert m["makespan_s"] == 15
    assert m["busy_gpu_s"] == pytest.approx(WORK)
    assert m["gpu_utilization"] == pytest.approx(35 / 60)
    assert m["preemptions"] is None


def test_fifo_with_backfilling_starts_later_jobs_that_fit() -> None:
    # t0 A starts. t1 B (4) does not fit. t2 C (2) fits in the 2 free GPUs: runs 2-5.
    # t3 D: no GPU free. t5 C ends: B still does not fit, D (1) does: runs 5-6. t10 A ends: B runs 10-12.
    starts, ends, m = _run("fifo", backfill=True)
    assert starts == [0, 10, 2, 5]
    assert ends == [10, 12, 5, 6]
    # JCT 10, 11, 3, 3 -> mean 6.75; queueing 0, 9, 0, 2 -> mean 2.75; makespan 12.
    assert m["jct_avg_s"] == pytest.approx(6.75)
    assert m["queue_avg_s"] == pytest.approx(2.75)
    assert m["makespan_s"] == 12
    assert m["gpu_utilization"] == pytest.approx(35 / 48)


def test_sjf_oracle_orders_by_true_run_time() -> None:
    # Without backfilling. t0 A starts. t1 B waits (4 GPUs). t2 C (3 s) sorts after B (2 s): waits.
    # t3 D (1 s) sorts first and fits (2 free): runs 3-4; then B does not fit: stop.
    # t10 A ends: B (before C) runs 10-12; t12 C runs 12-15.
    starts, ends, m = _run("sjf-oracle", backfill=False)
    assert starts == [0, 10, 12, 3]
    assert ends == [10, 12, 15, 4]
    assert m["jct_avg_s"] == pytest.approx((10 + 11 + 13 + 1) / 4)  # 8.75
    # With backfilling: at t2 C fits while B does not (2-5); at t3 nothing is free; at t5 D (1 GPU)
    # fits: 5-6; B waits for A (10-12): the same schedule as fifo with backfilling.
    starts, ends, m = _run("sjf-oracle", backfill=True)
    assert starts == [0, 10, 2, 5]
    assert m["jct_avg_s"] == pytest.approx(6.75)


def test_sjf_predicted_orders_by_the_estimates() -> None:
    # Estimates A 1, B 100, C 50, D 200 (true run times 10, 2, 3, 1), no backfilling.
    # t0 A starts. t1 B waits. t2 C (50) sorts before B (100) and fits: runs 2-5.
    # t3 D (200) sorts after B: waits. t5 B does not fit, D waits behind it. t10 B runs 10-12.
    # t12 D runs 12-13. JCT 10, 11, 3, 10 -> mean 8.5.
    starts, ends, m = _run("sjf-predicted", backfill=False, estimates=[1, 100, 50, 200])
    assert starts == [0, 10, 2, 12]
    assert ends == [10, 12, 5, 13]
    assert m["jct_avg_s"] == pytest.approx(8.5)


def test_sjf_predicted_without_estimates_is_refused() -> None:
    with pytest.raises(SimulationError, match="estimates"):
        simulate(_four_jobs(), ["sjf-predicted"])
    with pytest.raises(SimulationError, match="1 of 4 are missing"):
        _four_jobs(estimates=[1.0, float("nan"), 2.0, 3.0])


@pytest.mark.parametrize("backfill", [False, True])
def test_las_preempts_jobs_of_lower_priority_queues(backfill: bool) -> None:
    # Two queues split at 4 attained GPU-seconds (attained = GPUs x seconds run).
    # t0 A starts (queue 0); with 2 GPUs it reaches 4 GPU-s at t2.
    # t1 B (queue 0, 4 GPUs): 2 free GPUs, no running job of a lower queue: waits.
    # t2 A moves to queue 1. B needs 4 = 2 free + A's 2: A is preempted (ran 2 s), B starts;
    #    C (t2, queue 0) then waits: 0 free, B is in its own queue.
    # t3 B reaches 4 GPU-s after 1 s: queue 1. C needs 2: B is preempted (ran 1 s), C starts,
    #    and D (queue 0, 1 GPU) fits in the 2 GPUs left: starts too. 1 GPU free.
    # t4 D ends (1 s). 2 free: A (queue 1, before B) resumes with 8 s left.
    # t5 C reaches 4 GPU-s: queue 1 (it stays: nothing waits in queue 0). t6 C ends.
    # t12 A ends; B resumes with 1 s left: ends 13.
    # Backfilling changes nothing here: whenever B (4 GPUs) waits, no other waiting job fits.
    report = simulate(_four_jobs(), [las_policy((4.0,))], backfill=backfill)
    result = report.results[0]
    assert result.schedule.first_start_s.tolist() == [0, 2, 3, 3]
    assert result.schedule.end_s.tolist() == [12, 13, 6, 4]
    m = result.metrics
    assert m["jct_avg_s"] == pytest.approx((12 + 12 + 4 + 1) / 4)  # 7.25
    assert m["queue_avg_s"] == pytest.approx((0 + 1 + 1 + 0) / 4)  # first start - submit
    assert m["preemptions"] == 2 and m["preempted_jobs"] == 2
    # Busy GPUs: [0,2) 2, [2,3) 4, [3,4) 3, [4,6) 4, [6,12) 2, [12,13) 4 -> 4+4+3+8+12+4 = 35 = the work.
    assert m["busy_gpu_s"] == pytest.approx(WORK)
    assert m["makespan_s"] == 13


def test_greedy_backfilling_can_delay_the_blocked_job() -> None:
    # 4 GPUs. A: 0, 2 GPUs, 10 s; B: 1, 4 GPUs, 1 s; C: 2, 2 GPUs, 20 s.
    # No backfilling: B starts when A ends (10), C after B (11-31).
    # Backfilling: C fits at t2 and runs 2-22; when A ends at 10 only 2 GPUs are free, so B waits for C: 22.
    workload = workload_from_arrays([0, 1, 2], [2, 4, 2], [10, 1, 20], capacity_gpus=4)
    plain = simulate(workload, ["fifo"], backfill=False).results[0].schedule
    greedy = simulate(workload, ["fifo"], backfill=True).results[0].schedule
    assert plain.first_start_s.tolist() == [0, 10, 11]
    assert greedy.first_start_s.tolist() == [0, 22, 2]


def test_fractional_requests_share_a_gpu() -> None:
    # One GPU; at t0 X (0.5 GPU, 4 s), Y (0.5 GPU, 2 s), Z (0.25 GPU, 1 s). X and Y fill the GPU;
    # Z waits for Y (t2) and runs 2-3. Busy: [0,2) 1.0, [2,3) 0.75, [3,4) 0.5 -> 3.25 GPU-s.
    workload = workload_from_arrays([0, 0, 0], [0.5, 0.5, 0.25], [4, 2, 1], capacity_gpus=1, job_ids=["X", "Y", "Z"])
    result = simulate(workload, ["fifo"], backfill=False).results[0]
    assert result.schedule.first_start_s.tolist() == [0, 0, 2]
    assert result.metrics["busy_gpu_s"] == pytest.approx(3.25)
    # Thirds of a GPU are counted as 0.333 GPU: three of them fit on one GPU at once.
    thirds = workload_from_arrays([0, 0, 0], [1 / 3] * 3, [5, 5, 5], capacity_gpus=1)
    assert simulate(thirds, ["fifo"]).results[0].schedule.first_start_s.tolist() == [0, 0, 0]


def test_ties_are_broken_by_submission_then_job_id() -> None:
    # Same submission: "a" before "b", whatever the input order. One GPU: a runs 0-5, b 5-10.
    workload = workload_from_arrays([0, 0], [1, 1], [5, 5], capacity_gpus=1, job_ids=["b", "a"])
    assert workload.job_ids == ["a", "b"]
    for policy in ("fifo", "sjf-oracle", "las"):
        assert simulate(workload, [policy]).results[0].schedule.end_s.tolist() == [5, 10]


def test_excluded_jobs_are_counted_by_reason() -> None:
    # 4 GPUs. Job 0 and 5 are simulated; 1 asks for 5 GPUs; 2 for none; 3 ran 0 s; 4 has no run
    # time; 6 no submission. Times count from job 0's submission (100 s): job 5 at 5 s.
    workload = workload_from_arrays(
        [100, 101, 102, 103, 104, 105, math.nan], [1, 5, 0, 1, 1, 2, 1], [10, 10, 10, 0, math.nan, 5, 3],
        capacity_gpus=4)
    assert workload.job_ids == ["0", "5"]
    assert workload.submit_s.tolist() == [0, 5]
    assert workload.jobs_considered == 7
    assert workload.excluded == {"no_submit_time": 1, "no_run_time": 1, "zero_run_time": 1, "no_gpu_count": 0,
                                 "cpu_only": 1, "larger_than_cluster": 1, "after_limit": 0,
                                 "before_window": 0}
    limited = workload_from_arrays([3, 1, 2], [1, 1, 1], [1, 1, 1], capacity_gpus=1, limit=2)
    assert limited.job_ids == ["1", "2"] and limited.excluded["after_limit"] == 1
    with pytest.raises(SimulationError, match="no job to simulate"):
        workload_from_arrays([0], [8], [1], capacity_gpus=4)


def test_policy_names_and_thresholds_are_checked() -> None:
    with pytest.raises(SimulationError, match="unknown policy 'lifo'"):
        resolve_policies(["fifo", "lifo"])
    assert [p.name for p in resolve_policies(["FIFO", "las", "fifo"])] == ["fifo", "las"]
    with pytest.raises(SimulationError, match="increasing"):
        las_policy((100.0, 50.0))


def _random_workload(seed: int, jobs: int = 1500, capacity: int = 24, estimates: bool = True):
    rng = random.Random(seed)
    submit = sorted(rng.uniform(0, 20_000) for _ in range(jobs))
    gpus = [rng.choice([0.25, 0.5, 1, 1, 2, 4, 8, 16]) for _ in range(jobs)]
    run = [float(rng.randint(1, 900)) for _ in range(jobs)]
    guess = [r * rng.uniform(0.5, 2) for r in run] if estimates else None
    return workload_from_arrays(submit, gpus, run, capacity_gpus=capacity, estimate_s=guess), submit, gpus, run


def _peak_gpus(starts: list[float], ends: list[float], gpus: list[float]) -> float:
    """Most GPUs held at once by jobs running over [start, end) (an end frees GPUs before a start)."""
    changes = sorted([(e, 0, -g) for e, g in zip(ends, gpus)] + [(s, 1, g) for s, g in zip(starts, gpus)])
    held = peak = 0.0
    for _, _, delta in changes:
        held += delta
        peak = max(peak, held)
    return peak


@pytest.mark.parametrize("backfill", [False, True])
def test_gpu_seconds_are_conserved_and_capacity_respected(backfill: bool) -> None:
    workload, submit, gpus, run = _random_workload(seed=7)
    work = sum(g * r for g, r in zip(gpus, run))  # every request is a whole number of thousandths
    policies = ["fifo", "sjf-oracle", "sjf-predicted", las_policy((200.0, 2000.0))]
    report = simulate(workload, policies, backfill=backfill)
    for result in report.results:
        schedule = result.schedule
        starts, ends = schedule.first_start_s.tolist(), schedule.end_s.tolist()
        # The engine integrates busy GPUs over time; the sum of GPUs x run time is computed here.
        assert schedule.busy_gpu_s == pytest.approx(work, rel=1e-9), result.policy
        assert all(s >= t for s, t in zip(starts, workload.submit_s.tolist()))
        if result.policy == "las":
            assert schedule.preemptions > 0  # the cluster is overloaded: preemption happens
            assert all(e - s >= r - 1e-6 for s, e, r in zip(starts, ends, workload.run_s.tolist()))
        else:
            assert all(e - s == pytest.approx(r) for s, e, r in zip(starts, ends, workload.run_s.tolist()))
            assert _peak_gpus(starts, ends, workload.gpus.tolist()) <= 24 + 1e-9
    if not backfill:
        # Strict FIFO: starts follow the submission order.
        fifo = report.result("fifo").schedule.first_start_s.tolist()
        assert fifo == sorted(fifo)


def test_same_input_same_output() -> None:
    workload, *_ = _random_workload(seed=11, jobs=800)
    policies = ["fifo", "sjf-oracle", "sjf-predicted", las_policy((100.0, 1000.0))]
    first = simulate(workload, policies, backfill=True)
    second = simulate(workload, policies, backfill=True)
    assert first.to_json() == second.to_json()
    for a, b in zip(first.results, second.results):
        assert np.array_equal(a.schedule.end_s, b.schedule.end_s)
        assert np.array_equal(a.schedule.first_start_s, b.schedule.first_start_s)


class _FakePredictor:
    """Predicts 1000 s minus the job's position in the user name, returning rows in reverse order."""

    def predict(self, jobs: pl.DataFrame) -> pl.DataFrame:
        out = jobs.select("job_id", (1000.0 - pl.col("user").str.len_chars()).alias("pred_s"),
                          pl.lit("fake-1").alias("model_id"))
        return out.reverse()


def test_estimates_from_a_predictor_are_matched_by_job_id() -> None:
    frame = pl.DataFrame({"job_id": ["x", "y", "z"], "submit_s": [10.0, 0.0, 5.0], "run_s": [1.0, 2.0, 3.0],
                          "num_gpus": [1.0, 1.0, 1.0], "user": ["a", "bbb", "cc"]})
    workload = build_workload(frame, Capacity(1.0, "given", "test"), keep_canonical=True)
    assert workload.job_ids == ["y", "z", "x"]  # by submission
    estimates, described = estimates_from_predictor(_FakePredictor(), workload)
    # y: 1000 - 3, z: 1000 - 2, x: 1000 - 1, in the workload's order despite the reversed output.
    assert estimates.tolist() == [997.0, 998.0, 999.0]
    assert described["model_ids"] == ["fake-1"]
