"""The `users` and `time_patterns` analysis modules: GPU-time concentration, Lorenz curves and
per-user summaries, submissions by local hour of week and per day, recurring-job groups, on
hand-built tables whose answers are derived by hand below; the real Philly-derived table checked
against numbers computed here from the raw CSV with plain Python; the 5-job PAI fixture for
the recurring-job tag; Alibaba v2023 (no wall clock) skipped cleanly."""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import date, datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis import time_patterns, users
from ddlx.analysis.context import TraceContext, open_trace
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from tests.conftest import FULL_TRACES, real_file, row_where, write_pai_release

POLLUX = real_file("philly/pollux_philly_jobs.csv")
V2023_DIR = real_file("alibaba-gpu-v2023")

# Users table, Unix seconds. GPU-hours = gpus x (end - start) / 3600; queue = start - submit.
#   u1: j1 1 GPU x 3600 s = 1 h (queue 10), j2 2 x 7200 = 4 h (queue 20), j3 4 x 3600 = 4 h FAILED
#       (queue 60) -> 9 h, 3 jobs, failed 1/3, queue p50 20
#   u2: j4 1 x 3600 = 1 h (queue 0), j5 CPU job (queue 5) -> 1 h, 2 jobs, 1 GPU job, queue p50 2.5
#   u3: j6 8 x 9000 = 20 h (queue 100), j9 2 GPUs still RUNNING (no end: 0 h, queue 300) -> 20 h,
#       queue p50 200
#   u4: j7 CPU job only (queue 0): a user, but not a GPU user
#   no user: j8 1 x 3600 = 1 h
# GPU jobs: [0, 1, 1, 1, 4, 4, 20] (7, total 31 h). GPU users: [1, 9, 20] (3, total 30 h).
USERS_CSV = """\
job_id,user,gpus,state,submit,start,end
j1,u1,1,COMPLETED,0,10,3610
j2,u1,2,COMPLETED,100,120,7320
j3,u1,4,FAILED,200,260,3860
j4,u2,1,COMPLETED,300,300,3900
j5,u2,0,COMPLETED,400,405,505
j6,u3,8,COMPLETED,500,600,9600
j9,u3,2,RUNNING,600,900,
j7,u4,0,COMPLETED,700,700,750
j8,,1,COMPLETED,800,800,4400
"""
USERS_MAP = "job_id=job_id,user=user,gpus=gpus,state=state,submit=submit,start=start,end=end"


def _unix(*args: int) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp())


# Submissions in UTC, read in America/Los_Angeles (PST, UTC-8, in January):
#   s1 c1 2024-01-01 07:30 UTC = Sun 2023-12-31 23:30 PST -> hour of week 6 x 24 + 23 = 167
#   s2 c1 2024-01-01 08:30 UTC = Mon 00:30 PST -> 0;  s3 c1 08:45 UTC -> 0
#   s4 c1 2024-01-06 20:00 UTC = Sat 12:00 PST -> 5 x 24 + 12 = 132
#   s5 c2 2024-01-02 16:00 UTC = Tue 08:00 -> 32;  s6 c2 17:00 UTC -> 33
#   s7 c2 2024-01-03 03:00 UTC = Tue 2024-01-02 19:00 PST -> 43
# GPUs and GPU-hours: s1 1 GPU 1 h, s2 2 x 1 h = 2 h, s3 4 x 0.5 h = 2 h, s4 1 x 2 h, s5 8 x 0.5 h
# = 4 h, s6 0 GPUs, s7 1 x 1 h -> 12 h in all.
# Groups: g1 = s1, s2, s3 (3 jobs, 5 h); g2 = s4 (1 job, 2 h); g3 = s5, s6 (2 jobs, 4 h); s7 none.
TIMES_ROWS = [
    ("s1", "c1", 1, _unix(2024, 1, 1, 7, 30), 3600, "g1"),
    ("s2", "c1", 2, _unix(2024, 1, 1, 8, 30), 3600, "g1"),
    ("s3", "c1", 4, _unix(2024, 1, 1, 8, 45), 1800, "g1"),
    ("s4", "c1", 1, _unix(2024, 1, 6, 20, 0), 7200, "g2"),
    ("s5", "c2", 8, _unix(2024, 1, 2, 16, 0), 1800, "g3"),
    ("s6", "c2", 0, _unix(2024, 1, 2, 17, 0), 600, "g3"),
    ("s7", "c2", 1, _unix(2024, 1, 3, 3, 0), 3600, ""),
]
TIMES_MAP = "job_id=job_id,cluster=cluster,gpus=gpus,submit=submit,duration=duration,job_group=job_group"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("users_time")
    (root / "users.csv").write_text(USERS_CSV)
    lines = ["job_id,cluster,gpus,submit,duration,job_group"]
    lines += [",".join(str(v) for v in row) for row in TIMES_ROWS]
    (root / "times.csv").write_text("\n".join(lines) + "\n")
    home = root / "home"
    import_dataset("people", root / "users.csv", home, mapping=USERS_MAP, time_unit="s", tz="UTC")
    import_dataset("times", root / "times.csv", home, mapping=TIMES_MAP, time_unit="s", tz="America/Los_Angeles")
    return home


@pytest.fixture
def people(home: Path) -> Iterator[TraceContext]:
    with open_trace(home, "people") as ctx:
        yield ctx


# -- users -----------------------------------------------------------------------------------

def test_top_shares_of_jobs_and_users(people: TraceContext) -> None:
    shares = users.top_shares(people, top_percents=(1, 10, 50))
    # Jobs (7): top 1 % and 10 % = ceil(0.07), ceil(0.7) = 1 job (20 h); top 50 % = ceil(3.5) = 4
    # jobs: 20 + 4 + 4 + 1 = 29 h; of 31 h.
    for pct, top_members, top_hours in ((1, 1, 20.0), (10, 1, 20.0), (50, 4, 29.0)):
        row = row_where(shares, population="jobs", top_percent=pct)
        assert (row["members"], row["top_members"]) == (7, top_members)
        assert row["gpu_hours"] == pytest.approx(31.0)
        assert row["top_gpu_hours_share"] == pytest.approx(top_hours / 31)
    # Users with a GPU job (3): top 1 % = 1 user (u3, 20 h of 30); top 50 % = ceil(1.5) = 2 (29 h).
    assert row_where(shares, population="users", top_percent=1)["top_gpu_hours_share"] == pytest.approx(20 / 30)
    half = row_where(shares, population="users", top_percent=50)
    assert (half["members"], half["top_members"], half["top_gpu_hours_share"]) == (3, 2, pytest.approx(29 / 30))


def test_lorenz_curves(people: TraceContext) -> None:
    curves = users.lorenz_curves(people)
    assert curves.filter(pl.col("population") == "jobs").height == 101
    jobs = curves.filter(pl.col("population") == "jobs")
    # Sorted job GPU-hours [0, 1, 1, 1, 4, 4, 20]; at share p the floor(7p) smallest count.
    expected = {0.0: (0, 0.0), 0.14: (0, 0.0), 0.15: (1, 0.0), 0.29: (2, 1.0), 0.5: (3, 2.0), 1.0: (7, 31.0)}
    for share, (members, hours) in expected.items():
        row = row_where(jobs, population_share=share)
        assert (row["members"], row["gpu_hours"]) == (members, pytest.approx(hours)), share
        assert row["gpu_hours_share"] == pytest.approx(hours / 31)
    people_curve = curves.filter(pl.col("population") == "users")
    # Users [1, 9, 20]: at 0.66 floor(1.98) = 1 user (1 h); at 0.67 floor(2.01) = 2 users (10 h).
    assert row_where(people_curve, population_share=0.66)["gpu_hours_share"] == pytest.approx(1 / 30)
    assert row_where(people_curve, population_share=0.67)["gpu_hours_share"] == pytest.approx(10 / 30)
    # The top-q share is 1 minus the curve at 1 - q.
    assert 1 - row_where(people_curve, population_share=0.67)["gpu_hours_share"] == pytest.approx(20 / 30)


def test_top_users_summary(people: TraceContext) -> None:
    table = users.top_users(people)
    assert table["user"].to_list() == ["u3", "u1", "u2", "u4"]  # by GPU-hours: 20, 9, 1, 0
    u3 = row_where(table, user="u3")
    assert (u3["rank"], u3["jobs"], u3["gpu_jobs"]) == (1, 2, 2)
    assert (u3["gpu_hours"], u3["gpu_hours_share"]) == pytest.approx((20.0, 20 / 30))
    assert (u3["queue_p50_s"], u3["failed_share"]) == (200.0, 0.0)  # queues 100, 300; no failure
    u1 = row_where(table, user="u1")
    assert (u1["jobs"], u1["queue_p50_s"], u1["failed_share"]) == (3, 20.0, pytest.approx(1 / 3))
    u2 = row_where(table, user="u2")
    assert (u2["gpu_jobs"], u2["queue_p50_s"]) == (1, 2.5)
    assert users.top_users(people, limit=2).height == 2


def test_users_module_findings(home: Path) -> None:
    result = run_analysis(home, "people", ["users"]).module("users")
    assert result.finding("users").value == 4 and result.finding("gpu_users").value == 3
    assert result.finding("top_1pct_jobs_gpu_time_share").value == pytest.approx(20 / 31)
    assert result.finding("top_10pct_users_gpu_time_share").value == pytest.approx(20 / 30)
    assert result.not_applicable == []
    # A table without users: the job concentration stays, the user parts are skipped.
    other = run_analysis(home, "times", ["users"]).module("users")
    assert {t.name for t in other.tables} == {"gpu_time_top_shares", "lorenz_curves"}
    assert [n.what for n in other.not_applicable] == ["users: concentration over users and per-user summary"]
    assert other.table("gpu_time_top_shares")["population"].to_list() == ["jobs", "jobs"]


# -- time patterns ---------------------------------------------------------------------------

def test_hour_of_week_across_local_midnight_and_week(home: Path) -> None:
    with open_trace(home, "times") as ctx:
        week = time_patterns.submissions_by_hour_of_week(ctx)
    assert week.height == 2 * 168
    c1 = week.filter((pl.col("cluster") == "c1") & (pl.col("jobs") > 0))
    assert dict(zip(c1["hour_of_week"], c1["jobs"])) == {0: 2, 132: 1, 167: 1}
    sunday = row_where(c1, hour_of_week=167)
    assert (sunday["weekday"], sunday["hour"], sunday["gpus_requested"]) == ("Sun", 23, 1.0)
    monday = row_where(c1, hour_of_week=0)
    assert (monday["weekday"], monday["gpus_requested"], monday["job_share"]) == ("Mon", 6.0, 0.5)
    c2 = week.filter((pl.col("cluster") == "c2") & (pl.col("jobs") > 0))
    assert dict(zip(c2["hour_of_week"], c2["gpus_requested"])) == {32: 8.0, 33: 0.0, 43: 1.0}


def test_submissions_per_day_and_recurring_jobs(home: Path) -> None:
    result = run_analysis(home, "times", ["time_patterns"]).module("time_patterns")
    days = result.table("submissions_per_day")
    c1 = days.filter(pl.col("cluster") == "c1")
    # Local days: s1 on Dec 31, s2 and s3 on Jan 1, s4 on Jan 6; empty days in between are zeros.
    assert c1["day"].to_list() == [date(2023, 12, 31)] + [date(2024, 1, d) for d in range(1, 7)]
    assert c1["jobs"].to_list() == [1, 2, 0, 0, 0, 0, 1]
    assert c1["day_index"].to_list() == list(range(7))
    c2 = days.filter(pl.col("cluster") == "c2")  # s5, s6, s7 all on Tue Jan 2, local time
    assert (c2["day"].to_list(), c2["jobs"].to_list(), c2["day_index"].to_list()) == ([date(2024, 1, 2)], [3], [2])
    # Jobs per day over both clusters, Dec 31 - Jan 6: 1, 2, 3, 0, 0, 0, 1 -> median 1.
    assert result.finding("submissions_per_day_p50").value == 1
    assert result.finding("weekend_submission_share").value == pytest.approx(2 / 7)  # s1 (Sun), s4 (Sat)
    assert result.finding("busiest_submit_hour").value == 0  # s2, s3 at 00:xx local

    sizes = result.table("recurring_group_sizes")
    # g2 has 1 job (2 h), g3 2 jobs (4 h), g1 3 jobs (5 h) in the 3-4 bin; of 7 jobs and 12 GPU-hours.
    assert sizes.select("size_low", "size_high", "groups", "jobs").rows() == [(1, 1, 1, 1), (2, 2, 1, 2), (3, 4, 1, 3)]
    assert sizes["gpu_hours"].to_list() == pytest.approx([2.0, 4.0, 5.0])
    assert sizes["job_share"].to_list() == pytest.approx([1 / 7, 2 / 7, 3 / 7])
    assert sizes["gpu_hours_share"].to_list() == pytest.approx([2 / 12, 4 / 12, 5 / 12])
    assert result.finding("recurring_job_share").value == pytest.approx(5 / 7)
    assert result.finding("recurring_gpu_time_share").value == pytest.approx(9 / 12)
    assert result.finding("recurring_groups").value == 2
    assert result.not_applicable == []


def test_recurring_jobs_on_the_pai_fixture_and_skips(tmp_path: Path, home: Path) -> None:
    pai_home = tmp_path / "pai"
    ingest("pai", write_pai_release(tmp_path / "release"), pai_home)
    result = run_analysis(pai_home, "pai", ["time_patterns"]).module("time_patterns")
    # Group tags: inst1 and inst2 (j1, j2) in g1; inst9 has no job. GPU-hours: j1 1 GPU x 3990 s,
    # j2 4 x 500 s, j5 CPU: recurring share of GPU-time = (3990 + 2000) / (3990 + 2000) = 1.
    assert result.finding("recurring_job_share").value == pytest.approx(2 / 5)
    assert result.finding("recurring_gpu_time_share").value == pytest.approx(1.0)
    assert result.table("recurring_group_sizes").select("size_low", "groups", "jobs").rows() == [(2, 1, 2)]
    # A table without a group tag: the recurring part is skipped. Its times (seconds from 0, no
    # origin) are offsets from an undisclosed start, so hours of the week are skipped too.
    people = run_analysis(home, "people", ["time_patterns"]).module("time_patterns")
    assert [n.what for n in people.not_applicable] == ["submissions by hour of week", "recurring jobs"]


def test_v2023_has_no_wall_clock(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest("pai-v2023", V2023_DIR, home, tables=["pai_v2023_pods"])
    analysis = run_analysis(home, "pai-v2023", ["time_patterns", "users"])
    patterns = analysis.module("time_patterns")
    assert {n.what for n in patterns.not_applicable} == {"submissions by hour of week", "recurring jobs"}
    days = patterns.table("submissions_per_day")
    with open(V2023_DIR / "openb_pod_list_default.csv", newline="") as handle:
        per_day = Counter(int(row["creation_time"]) // 86400 for row in csv.DictReader(handle))
    # Days since the trace start (the offsets' origin), zeros included.
    assert days["day_index"].to_list() == list(range(max(per_day) + 1))
    assert days["jobs"].to_list() == [per_day.get(d, 0) for d in range(max(per_day) + 1)]
    assert [n.what for n in analysis.module("users").not_applicable] == [
        "users: concentration over users and per-user summary"]


# -- the real Philly-derived table -----------------------------------------------------------

@pytest.mark.slow
def test_real_pollux_table(tmp_path: Path) -> None:
    with open(POLLUX, newline="") as handle:
        rows = list(csv.DictReader(handle))
    job_hours = [float(r["num_gpus"]) * float(r["duration"]) / 3600 for r in rows if float(r["num_gpus"]) > 0]
    per_vc_hours: dict[str, float] = defaultdict(float)
    per_vc_jobs: Counter[str] = Counter()
    for r in rows:
        per_vc_hours[r["cluster"]] += float(r["num_gpus"]) * float(r["duration"]) / 3600
        per_vc_jobs[r["cluster"]] += 1
    # Hour of week and day from the wall clock as written (it is the Pacific local time).
    stamps = [datetime.fromisoformat(r["timestamp"]) for r in rows]
    per_hour = Counter(s.weekday() * 24 + s.hour for s in stamps)
    per_day = Counter(s.date() for s in stamps)

    home = tmp_path / "home"
    # The VC column stands in for the user too, so the per-user tables can be checked per VC.
    import_dataset("philly-pollux", POLLUX, home,
                   mapping="submit=timestamp,duration=duration,gpus=num_gpus,vc=cluster,user=cluster",
                   time_unit="datetime", tz="America/Los_Angeles")
    analysis = run_analysis(home, "philly-pollux", ["users", "time_patterns"])
    people = analysis.module("users")

    total = sum(job_hours)
    ordered = sorted(job_hours, reverse=True)
    for pct in (1, 10):
        top = math.ceil(pct * len(ordered) / 100)
        row = row_where(people.table("gpu_time_top_shares"), population="jobs", top_percent=pct)
        assert (row["members"], row["top_members"]) == (len(ordered), top)
        assert row["top_gpu_hours_share"] == pytest.approx(sum(ordered[:top]) / total, rel=1e-9)
    vc_ordered = sorted(per_vc_hours.values(), reverse=True)
    row = row_where(people.table("gpu_time_top_shares"), population="users", top_percent=10)
    top_vcs = math.ceil(len(per_vc_hours) / 10)  # 15 VCs -> ceil(1.5) = 2; the excerpt's 10 -> 1
    assert (row["members"], row["top_members"]) == (len(per_vc_hours), top_vcs)
    assert len(per_vc_hours) == (15 if FULL_TRACES else 10)
    assert row["top_gpu_hours_share"] == pytest.approx(sum(vc_ordered[:top_vcs]) / total, rel=1e-9)
    curve = people.table("lorenz_curves").filter(pl.col("population") == "jobs")
    ascending = sorted(job_hours)
    for share in (0.25, 0.5, 0.9):
        members = int(round(share * 100)) * len(ascending) // 100
        assert row_where(curve, population_share=share)["gpu_hours_share"] == pytest.approx(
            sum(ascending[:members]) / total, rel=1e-9)

    top_users = people.table("top_users")
    assert top_users.height == len(per_vc_hours)  # fewer users than the default 20
    for vc, hours in per_vc_hours.items():
        row = row_where(top_users, user=vc)
        assert row["jobs"] == per_vc_jobs[vc]
        assert row["gpu_hours"] == pytest.approx(hours, rel=1e-9)
        assert row["gpu_hours_share"] == pytest.approx(hours / total, rel=1e-9)
        assert row["failed_share"] is None  # no state column
    assert top_users["user"][0] == max(per_vc_hours, key=per_vc_hours.get)
    assert people.finding("users").value == len(per_vc_hours)

    patterns = analysis.module("time_patterns")
    week = patterns.table("submissions_by_hour_of_week")
    assert week["jobs"].sum() == len(rows)
    assert dict(zip(week["hour_of_week"], week["jobs"])) == {h: per_hour.get(h, 0) for h in range(168)}
    days = patterns.table("submissions_per_day")
    assert {d: n for d, n in zip(days["day"], days["jobs"])} == {
        d: per_day.get(d, 0) for d in days["day"]}
    assert days["day"].min() == min(per_day) and days["day"].max() == max(per_day)
    weekend = sum(n for h, n in per_hour.items() if h >= 120)
    assert patterns.finding("weekend_submission_share").value == pytest.approx(weekend / len(rows))
    assert [n.what for n in patterns.not_applicable] == ["recurring jobs"]
