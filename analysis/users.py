"""Users: how concentrated GPU-time is over jobs and users (top-share figures and Lorenz curves),
and a summary of the users with most GPU-time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager

import polars as pl

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.model import ModuleResult
from ddlx.analysis.options import DEFAULT_TOP_PERCENTS, DEFAULT_TOP_USERS
from ddlx.analysis.sql import GPU_HOURS_SQL

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "users.user", "User", "users",
        "A distinct non-empty jobs.user value of the trace (the same name in two clusters of a "
        "trace is one user). Jobs without a user belong to none.",
    ),
    Definition(
        "users.gpu_time_top_share", "GPU-time used by the top of a population", "fraction",
        "Share of the population's GPU-time (gpu_time.request_x_runtime) used by its top p %: the "
        "ceil(p / 100 x N) members of N with most GPU-time. Populations: jobs = every GPU job "
        "(gpu_job.requests_gpu), a job without a run time counting 0 GPU-hours; users = every "
        "user (users.user) with at least one GPU job, GPU-time summed over all the user's jobs; "
        "jobs without a user are left out of the users' population.",
    ),
    Definition(
        "users.lorenz_curve", "Lorenz curve of GPU-time", "fraction",
        "For population shares p = 0, 0.01, ..., 1: the share of the population's GPU-time used by "
        "its floor(p x N) members with least GPU-time (populations as in users.gpu_time_top_share). "
        "The top-q share is 1 minus the curve at 1 - q.",
    ),
    Definition(
        "users.failed_share", "Failed share of a user's jobs", "fraction",
        "A user's jobs whose canonical state (state.canonical) is failed, over the user's jobs "
        "with a known state (still running and pending jobs included).",
    ),
)

#: Points of the Lorenz curve: population shares 0, 1/LORENZ_STEPS, ..., 1.
LORENZ_STEPS = 100
POPULATIONS = ("jobs", "users")


def _members_sql(ctx: TraceContext, population: str) -> str:
    """A FROM item: one row per member of `population` with its `gpu_hours`."""
    if population == "jobs":
        return f"(SELECT {GPU_HOURS_SQL} AS gpu_hours FROM {ctx.jobs} WHERE num_gpus > 0)"
    return f"""(SELECT sum({GPU_HOURS_SQL}) AS gpu_hours FROM {ctx.jobs}
               WHERE "user" IS NOT NULL GROUP BY "user" HAVING count(*) FILTER (WHERE num_gpus > 0) > 0)"""


def _ranked_sql(members: str) -> str:
    """Members ranked by GPU-hours ascending: `k` (1..n), `cum_gpu_hours` of the k smallest,
    `n` members and `total_gpu_hours`."""
    return f"""(
        SELECT row_number() OVER w AS k, sum(gpu_hours) OVER w AS cum_gpu_hours,
               count(*) OVER () AS n, sum(gpu_hours) OVER () AS total_gpu_hours
        FROM {members} WINDOW w AS (ORDER BY gpu_hours ROWS UNBOUNDED PRECEDING))"""


@contextmanager
def ranked_members(ctx: TraceContext) -> Iterator[dict[str, str]]:
    """Each population's members ranked by GPU-hours (`_ranked_sql`) as a temporary table for the
    duration of the block, ranked once for the top shares and the Lorenz curves: population ->
    table name."""
    with ExitStack() as stack:
        yield {population: stack.enter_context(ctx.materialized(
                   f"SELECT * FROM {_ranked_sql(_members_sql(ctx, population))}", f"ddlx_users_ranked_{population}"))
               for population in POPULATIONS}


def top_shares(ctx: TraceContext, top_percents: Sequence[int] = DEFAULT_TOP_PERCENTS,
               ranked: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Per population and top percent: members, members in the top, their GPU-hours and share of
    the population's GPU-hours (definition `users.gpu_time_top_share`). `ranked`: the tables of
    `ranked_members`, made here when not given."""
    if ranked is None:
        with ranked_members(ctx) as tables:
            return top_shares(ctx, top_percents, tables)
    percents = ", ".join(str(int(p)) for p in top_percents)
    parts = [f"""
        SELECT '{population}' AS population, pct AS top_percent, r.n AS members,
               (pct * r.n + 99) // 100 AS top_members, r.total_gpu_hours AS gpu_hours,
               r.total_gpu_hours - coalesce(below.cum_gpu_hours, 0) AS top_gpu_hours
        FROM (SELECT DISTINCT n, total_gpu_hours FROM {ranked[population]}) r
        CROSS JOIN (SELECT unnest([{percents}]) AS pct) p
        LEFT JOIN {ranked[population]} below ON below.k = r.n - (pct * r.n + 99) // 100"""
             for population in POPULATIONS]
    return ctx.query(f"""
        SELECT *, top_gpu_hours / nullif(gpu_hours, 0) AS top_gpu_hours_share
        FROM ({' UNION ALL '.join(parts)}) ORDER BY population, top_percent""")


def lorenz_curves(ctx: TraceContext, steps: int = LORENZ_STEPS,
                  ranked: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Per population, at population shares 0, 1/steps, ..., 1: the members counted (those with
    least GPU-time) and their share of the population's GPU-hours (definition `users.lorenz_curve`).
    `ranked`: the tables of `ranked_members`, made here when not given."""
    if ranked is None:
        with ranked_members(ctx) as tables:
            return lorenz_curves(ctx, steps, tables)
    parts = [f"""
        SELECT '{population}' AS population, i / {steps} AS population_share,
               (i * r.n) // {steps} AS members, coalesce(c.cum_gpu_hours, 0) AS gpu_hours,
               coalesce(c.cum_gpu_hours, 0) / nullif(r.total_gpu_hours, 0) AS gpu_hours_share
        FROM (SELECT DISTINCT n, total_gpu_hours FROM {ranked[population]}) r
        CROSS JOIN (SELECT range AS i FROM range({steps + 1})) points
        LEFT JOIN {ranked[population]} c ON c.k = (i * r.n) // {steps}"""
             for population in POPULATIONS]
    return ctx.query(f"{' UNION ALL '.join(parts)} ORDER BY population, population_share")


def top_users(ctx: TraceContext, limit: int = DEFAULT_TOP_USERS) -> pl.DataFrame:
    """The `limit` users with most GPU-hours: jobs, GPU jobs, GPU-hours and share of the
    GPU-hours of all jobs with a user, median queueing delay (s) and failed share."""
    return ctx.query(f"""
        WITH per_user AS (
            SELECT "user", count(*) AS jobs, count(*) FILTER (WHERE num_gpus > 0) AS gpu_jobs,
                   sum({GPU_HOURS_SQL}) AS gpu_hours, quantile_cont(queue_s, 0.5) AS queue_p50_s,
                   count(*) FILTER (WHERE state = 'failed') / nullif(count(state), 0) AS failed_share
            FROM {ctx.jobs} WHERE "user" IS NOT NULL GROUP BY "user")
        SELECT row_number() OVER (ORDER BY gpu_hours DESC, jobs DESC, "user") AS rank, "user", jobs, gpu_jobs,
               gpu_hours, gpu_hours / nullif(sum(gpu_hours) OVER (), 0) AS gpu_hours_share,
               queue_p50_s, failed_share
        FROM per_user ORDER BY rank LIMIT {int(limit)}""")


def analyze(ctx: TraceContext) -> ModuleResult:
    result = ModuleResult("users")
    top_percents = ctx.options.top_percents
    limit = ctx.options.top_users or DEFAULT_TOP_USERS
    c = ctx.one_row(f"""SELECT count(*) FILTER (WHERE num_gpus > 0) AS gpu_jobs, count(DISTINCT "user") AS users,
                               count(DISTINCT "user") FILTER (WHERE num_gpus > 0) AS gpu_users
                        FROM {ctx.jobs}""")
    if not c["gpu_jobs"]:
        result.skip("GPU-time concentration", "no job of the trace requests a GPU")
    else:
        with ranked_members(ctx) as ranked:
            shares = result.add("gpu_time_top_shares", top_shares(ctx, top_percents, ranked),
                                ("users.gpu_time_top_share", "gpu_time.request_x_runtime", "gpu_job.requests_gpu"),
                                "a population (GPU jobs or users with GPU jobs) and a top percent")
            result.add("lorenz_curves", lorenz_curves(ctx, ranked=ranked),
                       ("users.lorenz_curve", "gpu_time.request_x_runtime", "gpu_job.requests_gpu"),
                       "a population and a share of it (members with least GPU-time first)")
        for row in shares.iter_rows(named=True):
            if row["population"] == "users" and not c["gpu_users"]:
                continue
            who = "GPU jobs" if row["population"] == "jobs" else "users"
            result.add_finding(f"top_{row['top_percent']}pct_{row['population']}_gpu_time_share",
                               f"share of GPU-time used by the top {row['top_percent']} % of {who}",
                               row["top_gpu_hours_share"], "fraction", "users.gpu_time_top_share",
                               f"{row['members']:,} {who}", basis=row["members"])
    if not c["users"]:
        result.skip("users: concentration over users and per-user summary", "the trace records no user")
        return result
    result.add("top_users", top_users(ctx, limit),
               ("users.user", "gpu_time.request_x_runtime", "queue_delay.submit_to_first_start",
                "users.failed_share", "state.canonical"),
               f"a user among the {limit} with most GPU-hours")
    result.add_finding("users", "users", c["users"], "users", "users.user", "all jobs with a user")
    result.add_finding("gpu_users", "users with at least one GPU job", c["gpu_users"], "users", "users.user",
                       "all jobs with a user")
    return result
