"""Reading the Philly job log (`cluster_job_log`, a JSON array of jobs with attempts) as the import
preset `philly-json`: through the Philly ingest's own parser (`ddlx.traces.philly.reader.raw_job_log`),
so the preset and the ingest refuse the same shapes; the writer is `writer.py` beside this file.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ddlx.datasets.importers.presets import Preset
from ddlx.datasets.sqltext import copy_to_parquet, quote_identifier
from ddlx.errors import InputError
from ddlx.traces.philly.reader import (
    check_times,
    detail_gpus_sql,
    detail_machines_sql,
    missing_time_sql,
    raw_job_log,
    wall_clock_sql,
)

#: Columns of the table the converter writes, with their DuckDB types.
CONVERTED_COLUMNS: dict[str, str] = {
    "job_id": "VARCHAR", "user": "VARCHAR", "vc": "VARCHAR", "status": "VARCHAR", "submit": "VARCHAR",
    "start": "VARCHAR", "end": "VARCHAR", "gpus": "BIGINT", "instances": "BIGINT", "attempts": "BIGINT"}
_EXPECTED_TIME = "'YYYY-MM-DD HH:MM:SS', or null, \"\" or \"None\" when missing"


def converted_sql(raw: str) -> str:
    """The converted table (`CONVERTED_COLUMNS`, one row per job) of the job-log table `raw` that
    `reader.raw_job_log` read: start = the text of the earliest start of any attempt, end = the
    last attempt's end, gpus and instances of the attempt with most GPUs (the earliest on a tie),
    counted by the ingest's own expressions (`detail_gpus_sql`, `detail_machines_sql`)."""
    def time(value: str) -> str:
        return f"CASE WHEN {missing_time_sql(value)} THEN NULL ELSE {value} END"

    attempts = "coalesce(attempts, [])"
    gpus = f"[{detail_gpus_sql('a.detail')} FOR a IN {attempts}]"
    machines = f"[{detail_machines_sql('a.detail')} FOR a IN {attempts}]"
    starts = (f"[struct_pack(at := {wall_clock_sql('a.start_time')}, text := a.start_time) FOR a IN {attempts} "
              f"IF NOT {missing_time_sql('a.start_time')}]")
    return f"""
SELECT jobid AS job_id, "user", vc, status, {time('submitted_time')} AS submit,
       list_sort(starts)[1].text AS "start",
       {time(f'{attempts}[len({attempts})].end_time')} AS "end",
       CAST(coalesce(list_max(gpus), 0) AS BIGINT) AS gpus,
       CAST(coalesce(machines[list_position(gpus, list_max(gpus))], 0) AS BIGINT) AS instances,
       CAST(len({attempts}) AS BIGINT) AS attempts
FROM (SELECT *, {gpus} AS gpus, {machines} AS machines, {starts} AS starts FROM {raw})
"""


def convert_job_log(source: Path, display: str, out: Path) -> None:
    """Read a Philly-format job log (JSON array) `source` (named `display` in messages) through the
    Philly reader's parser (`reader.raw_job_log`, the ingest's) and write one row per job to the
    Parquet file `out` (columns `CONVERTED_COLUMNS`); `InputError` for bad input, naming the job,
    attempt and key. Statuses are left to the importer's state words; times must be
    `YYYY-MM-DD HH:MM:SS` (read in the import's `--tz`; the importer checks their range)."""
    con = duckdb.connect()
    try:
        with raw_job_log(con, Path(source), display) as raw:
            if not con.execute(f"SELECT count(*) FROM {raw}").fetchall()[0][0]:
                raise InputError(display, "holds an empty JSON array; expected at least one job object")
            check_times(con, raw, display, _EXPECTED_TIME)
            out.parent.mkdir(parents=True, exist_ok=True)
            typed = ", ".join(f"CAST({quote_identifier(name)} AS {kind}) AS {quote_identifier(name)}"
                              for name, kind in CONVERTED_COLUMNS.items())
            copy_to_parquet(con, f"SELECT {typed} FROM ({converted_sql(raw)})", out)
    finally:
        con.close()


PRESET = Preset(
    name="philly-json",
    description="Philly cluster_job_log: a JSON array of {status, vc, jobid, user, submitted_time, attempts: "
                "[{start_time, end_time, detail: [{ip, gpus}]}]}; times 'YYYY-MM-DD HH:MM:SS' read in --tz "
                "(Philly's own file: --tz America/Los_Angeles; a ddlx export: the zone its sidecar names)",
    mapping={"job_id": "job_id", "user": "user", "vc": "vc", "state": "status", "submit": "submit",
             "start": "start", "end": "end", "gpus": "gpus", "instances": "instances"},
    time_unit="datetime",
    convert=convert_job_log,
    suffixes=(".json", ""),
)
