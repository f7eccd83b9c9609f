"""LAS settings (demotion, queue order, preemption) on hand-made workloads whose schedules are worked
out by hand in the comments (job: submit s, GPUs, run s), the Tiresias settings against the output of
Tiresias' own simulator, and the plain path of LAS against the heap engine on random workloads."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ddlx.datasets.importers import import_dataset
from ddlx.errors import UsageError
from ddlx.simulate import (
    LAS_DEMOTIONS,
    LAS_PREEMPTIONS,
    LAS_QUEUE_ORDERS,
    TIRESIAS_LAS,
    TIRESIAS_LAS_THRESHOLDS_GPU_S,
    SimulationError,
    las_policy,
    resolve_policies,
    simulate,
    simulate_policy,
    simulate_trace,
    workload_from_arrays,
)
from tests.conftest import assert_clean_failure


def _schedule(workload, policy, backfill: bool = True):
    result = simulate(workload, [policy], backfill=backfill).results[0]
    return result.schedule.first_start_s.tolist(), result.schedule.end_s.tolist(), result.metrics


# Demotion. 2 GPUs, one threshold at 6 GPU-seconds. X: 0, 2 GPUs, 10 s (reaches 6 GPU-s after 3 s
# of running); Y: 2, 2 GPUs, 1 s.
DEMOTION_JOBS = dict(submit_s=[0, 2], gpus=[2, 2], run_s=[10, 1], capacity_gpus=2, job_ids=["X", "Y"])


def test_demotion_at_the_instant_of_the_threshold() -> None:
    # t0 X starts (queue 0). t2 Y arrives in queue 0 and waits: X is in its queue. t3 X reaches
    # 6 GPU-s: queue 1; Y (queue 0) preempts it and runs 3-4. t4 X resumes with 7 s left: ends 11.
    starts, ends, m = _schedule(workload_from_arrays(**DEMOTION_JOBS), las_policy((6.0,), demotion="instant"))
    assert starts == [0, 3] and ends == [11, 4]
    assert m["jct_avg_s"] == pytest.approx((11 + 2) / 2)  # 6.5
    assert m["preemptions"] == 1


def test_demotion_at_the_next_event_with_tiresias_wake_up() -> None:
    # next-event: a running job moves down only at a scheduling event. After the pass at t0, X's
    # wake-up is 0 + floor((6 - 0 s run) / 2 GPUs) = 3. The event at t2 (Y arrives; X has 4 GPU-s,
    # below 6) plans it again: 2 + floor((6 - 2) / 2) = 4, a second after X reaches 6 GPU-s at t3
    # (the formula subtracts the seconds run, 2, not the GPU-seconds, 4). So X moves to queue 1 at
    # t4; Y preempts it and runs 4-5; X resumes at 5 with 10 - 4 = 6 s left: ends 11.
    policy = las_policy((6.0,), demotion="next-event")
    starts, ends, m = _schedule(workload_from_arrays(**DEMOTION_JOBS), policy)
    assert starts == [0, 4] and ends == [11, 5]
    assert m["jct_avg_s"] == pytest.approx((11 + 3) / 2)  # 7
    # Without the event at t2 the wake-up (3) is the threshold instant: Y alone at 2 s later, X alone.
    alone = workload_from_arrays([0], [2], [10], capacity_gpus=2)
    assert _schedule(alone, policy)[1] == [10]


# Queue order. 1 GPU, one threshold at 2 GPU-seconds. A: 0, 1 GPU, 6 s; B: 1, 1 GPU, 5 s.
ORDER_JOBS = dict(submit_s=[0, 1], gpus=[1, 1], run_s=[6, 5], capacity_gpus=1, job_ids=["A", "B"])


def test_queue_order_submission_keeps_a_demoted_job_running() -> None:
    # t0 A runs. t1 B waits behind A in queue 0. t2 A reaches 2 GPU-s: queue 1; B (queue 0) preempts
    # it and runs from 2. t4 B reaches 2 GPU-s: queue 1, beside A (waiting). submission: a queue's
    # running jobs come before its waiting ones, so B keeps the GPU and ends at 2 + 5 = 7; A resumes
    # with 4 s left: 7-11. JCT 11 and 6. The same with either preemption rule.
    workload = workload_from_arrays(**ORDER_JOBS)
    for preemption in LAS_PREEMPTIONS:
        starts, ends, m = _schedule(workload, las_policy((2.0,), queue_order="submission", preemption=preemption))
        assert starts == [0, 2] and ends == [11, 7], preemption
        assert m["jct_avg_s"] == pytest.approx(8.5)


def test_queue_order_queue_entry_puts_a_demoted_job_behind_the_waiting_ones() -> None:
    # queue-entry with refill (Tiresias): at t2 queue 1 is [A] (A entered it, then was preempted by B).
    # t4 B enters queue 1 behind A: [A (waiting), B (running)]. The pass hands the GPU out in that
    # order: A takes it and B is preempted. A has 4 s left: 4-8. t8 B resumes with 3 s left: 8-11.
    # JCT 8 and 10 -> 9; preemptions: A at t2, B at t4.
    workload = workload_from_arrays(**ORDER_JOBS)
    starts, ends, m = _schedule(workload, las_policy((2.0,), queue_order="queue-entry", preemption="refill"))
    assert starts == [0, 2] and ends == [8, 11]
    assert m["jct_avg_s"] == pytest.approx(9.0)
    assert m["preemptions"] == 2 and m["preempted_jobs"] == 2
    # With lowest-first preemption a waiting job takes GPUs of lower queues only, never of its own
    # queue: B keeps running as under submission order.
    assert _schedule(workload, las_policy((2.0,), queue_order="queue-entry"))[1] == [11, 7]


# Preemption. 4 GPUs, one threshold at 1 GPU-second. A: 0, 2 GPUs, 10 s; B: 1, 3 GPUs, 10 s;
# C: 2, 1 GPU, 10 s; K1 and K2: 4, 1 GPU, 1 s each (1 s of running is exactly their threshold, so they
# end in queue 0). Before t4, alike under both rules: A runs 0-1 (queue 1 at 0.5); at t1 B (queue 0)
# needs 3 GPUs, 2 are free: A is preempted; B runs from 1 (queue 1 at 1.33); C runs from 2 in the GPU
# left (queue 1 at 3). At t4 queue 1 holds A (waiting, ran 1 s), B and C (running, ran 3 s and 2 s).
PREEMPTION_JOBS = dict(submit_s=[0, 1, 2, 4, 4], gpus=[2, 3, 1, 1, 1], run_s=[10, 10, 10, 1, 1], capacity_gpus=4,
                       job_ids=["A", "B", "C", "K1", "K2"])


def test_preemption_lowest_first() -> None:
    # t4, lowest-first: K1 takes the GPU of the lowest-priority running job, C (latest submitted);
    # K2 then needs B's 3 GPUs: B is preempted, 2 GPUs stay free and A (queue 1, waiting, 2 GPUs)
    # resumes in them. t5 K1, K2 end: C (1 GPU) resumes; B (3) does not fit. A ends 5 + 9 - 1 = 13,
    # C 5 + 8 = 13; B resumes at 13 with 7 s left: 20. JCT 13, 19, 11, 1, 1 -> 9.
    starts, ends, m = _schedule(workload_from_arrays(**PREEMPTION_JOBS), las_policy((1.0,), preemption="lowest-first"))
    assert starts == [0, 1, 2, 4, 4] and ends == [13, 20, 13, 5, 5]
    assert m["jct_avg_s"] == pytest.approx(9.0)
    assert m["preemptions"] == 3  # A at t1; C and B at t4


def test_preemption_refill() -> None:
    # t4, refill: the pool is handed out anew in order: K1, K2 (queue 0) take 2 GPUs; in queue 1 the
    # running jobs in submission order: B (3) does not fit in the 2 left and is preempted, C (1) keeps
    # its GPU; A (waiting, 2) does not fit in the 1 left. t5 K1, K2 end: C keeps running, A resumes
    # (2 GPUs): A ends 5 + 9 = 14, C 5 + 7 = 12; B waits for 3 free GPUs: A's end, 14 + 7 = 21.
    # JCT 14, 20, 10, 1, 1 -> 9.2.
    starts, ends, m = _schedule(workload_from_arrays(**PREEMPTION_JOBS), las_policy((1.0,), preemption="refill"))
    assert starts == [0, 1, 2, 4, 4] and ends == [14, 21, 12, 5, 5]
    assert m["jct_avg_s"] == pytest.approx(9.2)
    assert m["preemptions"] == 2  # A at t1, B at t4
    assert m["busy_gpu_s"] == pytest.approx(2 * 10 + 3 * 10 + 10 + 1 + 1)  # the work: nothing lost


# Six jobs on one node of 8 GPUs, in Tiresias' job CSV (job_id,num_gpu,submit_time,...,duration):
#   1,2,100,...,7450  2,1,300,...,1800  3,3,1500,...,7800  4,4,2200,...,3650  5,2,2900,...,650
#   6,4,3300,...,3250
# Tiresias' simulator (SymbioticLab/Tiresias 959f9b0, Python 2.7: `run_sim.py --schedule=dlas-gpu
# --scheme=count --cluster_spec=<1,1,8,48,256>`) wrote in its job.csv, per job: start 100, 300, 1500,
# 2200, 2900, 3300; end 9775, 2100, 12225, 10800, 3550, 11525; preempted 2, 0, 2, 2, 0, 2 times.
TIRESIAS_SUBMIT = [100, 300, 1500, 2200, 2900, 3300]
TIRESIAS_GPUS = [2, 1, 3, 4, 2, 4]
TIRESIAS_RUN = [7450, 1800, 7800, 3650, 650, 3250]
TIRESIAS_START = [100, 300, 1500, 2200, 2900, 3300]
TIRESIAS_END = [9775, 2100, 12225, 10800, 3550, 11525]


def _tiresias_jobs():
    return workload_from_arrays(TIRESIAS_SUBMIT, TIRESIAS_GPUS, TIRESIAS_RUN, capacity_gpus=8,
                                job_ids=[str(i) for i in range(1, 7)])


def test_tiresias_settings_give_tiresias_own_schedule() -> None:
    policy = las_policy(**TIRESIAS_LAS)
    assert policy.thresholds_gpu_s == TIRESIAS_LAS_THRESHOLDS_GPU_S == (3250.0, 7200.0)
    starts, ends, m = _schedule(_tiresias_jobs(), policy)
    origin = TIRESIAS_SUBMIT[0]  # ddlx counts seconds from the first submission
    assert starts == [t - origin for t in TIRESIAS_START]
    assert ends == [t - origin for t in TIRESIAS_END]
    assert m["preemptions"] == 2 + 0 + 2 + 2 + 0 + 2
    # Mean JCT from Tiresias' own JCT column: 9675, 1800, 10725, 8600, 650, 8225.
    assert m["jct_avg_s"] == pytest.approx((9675 + 1800 + 10725 + 8600 + 650 + 8225) / 6)


@pytest.mark.parametrize("setting, value", [("demotion", "instant"), ("queue_order", "submission"),
                                            ("preemption", "lowest-first")])
def test_each_tiresias_setting_matters_on_these_jobs(setting: str, value: str) -> None:
    # Changing any one setting back to ddlx's default moves some job's end away from Tiresias'.
    settings = {**TIRESIAS_LAS, setting: value}
    ends = _schedule(_tiresias_jobs(), las_policy(**settings))[1]
    assert ends != [t - TIRESIAS_SUBMIT[0] for t in TIRESIAS_END]


# Stale ends (Tiresias' defect, LAS_STALE_ENDS). 1 GPU, one threshold at 2 GPU-s, the Tiresias rules.
# X: 0, 1 GPU, 3 s; Y: 1, 1 GPU, 5 s; Z: 3, 1 GPU, 1 s.
STALE_JOBS = dict(submit_s=[0, 1, 3], gpus=[1, 1, 1], run_s=[3, 5, 1], capacity_gpus=1, job_ids=["X", "Y", "Z"])


@pytest.mark.parametrize("stale_ends", [False, True])
def test_stale_ends_end_a_preempted_job_at_the_next_submission(stale_ends: bool) -> None:
    # t0 X runs; its wake-up: 0 + floor(2 / 1) = 2. t1 Y waits behind X in queue 0; X's end (3) then
    # falls on the next submission (Z at 3), and X's wake-up (2) comes first. t2 X reaches 2 GPU-s:
    # queue 1, and Y (queue 0) takes the GPU: X is preempted with 1 s left. Y's wake-up: 4.
    # Without stale ends: t3 Z waits behind Y. t4 Y moves to queue 1 behind X: Z (queue 0) runs 4-5;
    # t5 X (first in queue 1) resumes, ends 6; Y resumes with 3 s left: 6-9. JCT 6, 8, 2.
    # With stale ends: Tiresias kept X as the job ending at 3 on Z's submission, so at t3 X ends,
    # with 1 s of its run undone (1 GPU-s of work lost). t4 Z runs 4-5, then Y 5-8. JCT 3, 7, 2.
    policy = las_policy((2.0,), "next-event", "queue-entry", "refill", stale_ends=stale_ends)
    result = simulate(workload_from_arrays(**STALE_JOBS), [policy]).results[0]
    assert result.schedule.first_start_s.tolist() == [0, 2, 4]
    assert result.schedule.end_s.tolist() == ([3, 8, 5] if stale_ends else [6, 9, 5])
    assert result.metrics["jct_avg_s"] == pytest.approx(12 / 3 if stale_ends else 16 / 3)
    assert result.metrics["busy_gpu_s"] == pytest.approx(8.0 if stale_ends else 9.0)  # work: 3 + 5 + 1 = 9
    assert result.schedule.ended_early == (1 if stale_ends else 0)
    assert result.metrics.get("jobs_ended_early") == (1 if stale_ends else None)


def test_stale_ends_as_tiresias_wrote_them() -> None:
    # The jobs above at Tiresias' scale (x 1625, so that 2 GPU-s becomes its first threshold, 3250),
    # with Tiresias' thresholds 3250 and 7200: 1,1,0,...,4875  2,1,1625,...,8125  3,1,4875,...,1625,
    # one node of 1 GPU. Tiresias' job.csv: job 1 start 0 end 4875 (preempted once, yet "completed"
    # at 4875 after 3250 s of its 4875), job 2 start 3250 end 13000, job 3 start 6500 end 8125.
    workload = workload_from_arrays([0, 1625, 4875], [1, 1, 1], [4875, 8125, 1625], capacity_gpus=1,
                                    job_ids=["1", "2", "3"])
    starts, ends, m = _schedule(workload, las_policy(**TIRESIAS_LAS))
    assert starts == [0, 3250, 6500] and ends == [4875, 13000, 8125]
    assert m["jobs_ended_early"] == 1 and m["work_gpu_s"] - m["busy_gpu_s"] == pytest.approx(4875 - 3250)
    # Without the defect job 1 resumes for its last 1625 s: 8125-9750, and job 2 ends 1625 s later.
    assert _schedule(workload, las_policy(**{**TIRESIAS_LAS, "stale_ends": False}))[1] == [9750, 14625, 8125]


def _random_workload(seed: int):
    rng = random.Random(seed)
    jobs = rng.randint(2, 14)
    submit = sorted(rng.randint(0, 20) for _ in range(jobs))
    gpus = [rng.choice([0.5, 1, 2, 3, 4]) for _ in range(jobs)]
    run = [rng.choice([rng.randint(1, 30), rng.uniform(0.1, 20)]) for _ in range(jobs)]
    ids = [f"j{rng.randint(0, 99)}" for _ in range(jobs)]
    workload = workload_from_arrays(submit, gpus, run, capacity_gpus=rng.choice([4, 5]), job_ids=ids)
    return workload, rng.choice([(4.0, 12.0), (3.0,), (2.5, 7.0, 20.0)])


@pytest.mark.parametrize("seed", range(150))
def test_the_heap_engine_gives_the_plain_path_schedule(seed: int) -> None:
    # With the default settings LAS runs on the heap engine; the plain path (every queue walked at
    # every event) must give the same schedule to the last bit, with and without backfilling, under
    # both tie-breaks (busy GPU-seconds up to rounding: the engines sum them over different intervals).
    workload, thresholds = _random_workload(seed)
    policy = las_policy(thresholds)
    for backfill in (True, False):
        for tie_break in ("submit", "job-id"):
            fast = simulate_policy(workload, policy, backfill, tie_break, fast=True)
            plain = simulate_policy(workload, policy, backfill, tie_break, fast=False)
            assert np.array_equal(fast.first_start_s, plain.first_start_s)
            assert np.array_equal(fast.end_s, plain.end_s)
            assert (fast.preemptions, fast.preempted_jobs) == (plain.preemptions, plain.preempted_jobs)
            assert fast.busy_gpu_s == pytest.approx(plain.busy_gpu_s, rel=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_every_setting_conserves_work_and_capacity(seed: int) -> None:
    # Under every combination: busy GPU-seconds equal the work (sum of GPUs x run time), every job
    # ends at least its run time after its first start, and the pool is never over-full (checked by
    # sweeping the running intervals rebuilt from busy time: the mean busy GPUs stay under capacity).
    workload, thresholds = _random_workload(seed)
    work = float(np.sum(workload.gpu_units() * workload.run_s) / 1000)
    for demotion in LAS_DEMOTIONS:
        for order in LAS_QUEUE_ORDERS:
            for preemption in LAS_PREEMPTIONS:
                schedule = simulate_policy(workload, las_policy(thresholds, demotion, order, preemption), True)
                assert schedule.busy_gpu_s == pytest.approx(work)
                assert np.all(schedule.end_s - schedule.first_start_s >= workload.run_s - 1e-9)
                assert schedule.busy_gpu_s <= workload.capacity.gpus * schedule.end_s.max() + 1e-9


def test_settings_are_checked() -> None:
    with pytest.raises(SimulationError, match="unknown LAS demotion 'late'; expected one of instant, next-event"):
        las_policy(demotion="late")
    with pytest.raises(UsageError, match="unknown LAS queue order 'fifo'"):
        resolve_policies(["las"], las_queue_order="fifo")
    with pytest.raises(UsageError, match="unknown LAS preemption 'none'"):
        simulate(workload_from_arrays(**ORDER_JOBS), ["fifo"], las_preemption="none")
    assert las_policy(**TIRESIAS_LAS).las_stale_ends and not las_policy().las_stale_ends
    stale = simulate(workload_from_arrays(**STALE_JOBS), ["las"], las_thresholds_gpu_s=(2.0,),
                     las_demotion="next-event", las_queue_order="queue-entry", las_preemption="refill",
                     las_stale_ends=True)
    assert stale.result("las").schedule.end_s.tolist() == [3, 8, 5]
    # Settings named for las alone reach it when it is named, and are kept in the JSON.
    report = simulate(workload_from_arrays(**ORDER_JOBS), ["fifo", "las"], las_thresholds_gpu_s=(2.0,),
                      las_queue_order="queue-entry", las_preemption="refill")
    assert report.result("las").schedule.end_s.tolist() == [8, 11]
    assert report.result("fifo").schedule.end_s.tolist() == [6, 11]  # A 0-6, B 6-11
    document = report.to_dict()
    assert document["las_settings"]["queue_order"]["rule"] == "queue-entry"
    assert document["las_settings"]["preemption"]["rule"] == "refill"
    assert document["las_settings"]["demotion"] == {"rule": "instant", "description": LAS_DEMOTIONS["instant"]}


ORDER_CSV = """job,submit,duration,gpus
A,1000,6,1
B,1001,5,1
"""


@pytest.fixture
def order_home(tmp_path: Path) -> Path:
    (tmp_path / "jobs.csv").write_text(ORDER_CSV)
    home = tmp_path / "home"
    import_dataset("order", tmp_path / "jobs.csv", home, mapping="job_id=job,submit=submit,duration=duration,gpus=gpus")
    return home


def test_simulate_trace_takes_the_las_settings(order_home: Path) -> None:
    # The imported A, B jobs: queue-entry with refill, the schedule of the hand test (A ends 8, B 11).
    report = simulate_trace(order_home, "order", ["las"], gpus=1, las_thresholds_gpu_s=(2.0,),
                            las_queue_order="queue-entry", las_preemption="refill")
    assert report.result("las").schedule.end_s.tolist() == [8, 11]
    assert report.result("las").las_settings == {"thresholds_gpu_s": [2.0], "demotion": "instant",
                                                 "queue_order": "queue-entry", "preemption": "refill",
                                                 "stale_ends": False}


def test_cli_las_settings(cli, order_home: Path, tmp_path: Path) -> None:
    # The A, B jobs above, imported: queue-entry with refill gives JCT 8 and 10 (mean 9); the default
    # settings 11 and 6 (mean 8.5).
    out = tmp_path / "las.json"
    result = cli("simulate", "--dataset", "order", "--gpus", "1", "--policy", "las", "--las-thresholds", "2",
                 "--las-queue-order", "queue-entry", "--las-preemption", "refill", "--las-demotion", "next-event",
                 "--out", out, "--data-home", order_home)
    assert result.code == 0, result.err
    assert "las demotion next-event, queue order queue-entry, preemption refill" in result.out
    document = json.loads(out.read_text())
    assert document["policies"][0]["jct_avg_s"] == pytest.approx(9.0)
    settings = document["las_settings"]
    assert {key: settings[key]["rule"] for key in ("demotion", "queue_order", "preemption")} == {
        "demotion": "next-event", "queue_order": "queue-entry", "preemption": "refill"}
    assert settings["stale_ends"]["on"] is False
    assert "jobs_ended_early" not in document["policies"][0]
    result = cli("simulate", "--dataset", "order", "--gpus", "1", "--policy", "las", "--las-thresholds", "2",
                 "--out", out, "--data-home", order_home)
    assert result.code == 0, result.err
    assert json.loads(out.read_text())["policies"][0]["jct_avg_s"] == pytest.approx(8.5)
    assert "las demotion instant, queue order submission, preemption lowest-first" in result.out


def test_cli_stale_ends(cli, tmp_path: Path) -> None:
    # The X, Y, Z jobs of the stale-ends test, imported: with --las-stale-ends X ends at 3 with 1 s of
    # its run undone: JCT 3, 7, 2 (mean 4), 1 job ended early, busy 8 of 9 GPU-seconds of work.
    (tmp_path / "jobs.csv").write_text("job,submit,duration,gpus\nX,1000,3,1\nY,1001,5,1\nZ,1003,1,1\n")
    home = tmp_path / "home"
    import_dataset("stale", tmp_path / "jobs.csv", home, mapping="job_id=job,submit=submit,duration=duration,gpus=gpus")
    out = tmp_path / "las.json"
    result = cli("simulate", "--dataset", "stale", "--gpus", "1", "--policy", "las", "--las-thresholds", "2",
                 "--las-demotion", "next-event", "--las-queue-order", "queue-entry", "--las-preemption", "refill",
                 "--las-stale-ends", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert "1 job ended before their run time was done" in result.out
    document = json.loads(out.read_text())
    las = document["policies"][0]
    assert las["jct_avg_s"] == pytest.approx(4.0) and las["jobs_ended_early"] == 1
    assert (las["busy_gpu_s"], las["work_gpu_s"]) == (pytest.approx(8.0), pytest.approx(9.0))
    assert document["las_settings"]["stale_ends"]["on"] is True


def test_cli_unknown_las_setting_is_a_usage_error(cli, order_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "las.json"
    result = cli("simulate", "--dataset", "order", "--gpus", "1", "--policy", "las", "--las-preemption", "none",
                 "--out", out, "--data-home", order_home)
    assert_clean_failure(result, "unknown LAS preemption 'none'", "lowest-first, refill", code=2)
    assert not out.exists()


def test_stale_ends_alone_take_the_rounds_which_keep_them() -> None:
    """`las_policy(stale_ends=True)` with every other setting at its default: the fast path (which
    has no stale ends to keep) must not take it, so fast and plain give one schedule."""
    rng = random.Random(7)
    policy = las_policy((2.0,), stale_ends=True)
    for _ in range(150):
        n = rng.randint(2, 8)
        workload = workload_from_arrays([rng.randint(0, 6) for _ in range(n)], [rng.choice([1, 2]) for _ in range(n)],
                                        [rng.randint(1, 6) for _ in range(n)], capacity_gpus=2)
        fast, plain = simulate_policy(workload, policy), simulate_policy(workload, policy, fast=False)
        assert (fast.end_s.tolist(), fast.first_start_s.tolist(), fast.ended_early) == (
            plain.end_s.tolist(), plain.first_start_s.tolist(), plain.ended_early)
