"""The validation report's building blocks, on tables small enough to count by hand."""

from __future__ import annotations

import duckdb

from ddlx.datasets.validation import Check, duplicate_key_check, run_checks


def test_duplicate_key_check_counts_the_copies_beyond_the_first() -> None:
    con = duckdb.connect()
    # Keys: (a, 1) three times, (b, 1) once, (a, 2) twice, (b, NULL) twice -> 2 + 0 + 1 + 1 extra rows.
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a', 1), ('a', 1), ('a', 1), ('b', 1), ('a', 2), "
                "('a', 2), ('b', NULL), ('b', NULL)) AS v(cluster, job_id)")
    checks = [duplicate_key_check("t", ("cluster", "job_id"), "duplicate keys"),
              duplicate_key_check("t", ("cluster",), "duplicate clusters"),
              Check("t", "rows of cluster b", "cluster = 'b'")]
    report = run_checks(con, checks, {"t": 8})
    assert [(r["check"], r["rows"], r["of_rows"]) for r in report] == [
        ("duplicate keys", 4, 8), ("duplicate clusters", 8 - 2, 8), ("rows of cluster b", 3, 8)]
    assert report[0]["share"] == 4 / 8


def test_the_duplicate_screen_is_zero_only_where_every_key_is_unique() -> None:
    """The hash screen may find rows the keys do not (a collision), never the reverse: wherever it
    says 0 the exact count is 0, and wherever a key repeats it finds something; the report's count
    is the exact one either way."""
    con = duckdb.connect()
    # job_id repeats 7 times (i // 7); with part (i % 3) some repeats remain; i itself never repeats
    con.execute("CREATE TABLE t AS SELECT i, 'job-' || (i // 7) AS job_id, i % 3 AS part, "
                "CASE WHEN i = 5 THEN NULL ELSE 'c' || (i % 2) END AS cluster FROM range(2000) AS r(i)")
    exact_counts = []
    for keys in [("job_id",), ("job_id", "part"), ("cluster", "job_id", "part"), ("part",), ("i",), ("i", "cluster")]:
        check = duplicate_key_check("t", keys, "duplicates")
        distinct = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(keys)} FROM t)").fetchall()[0][0]
        exact = 2000 - distinct
        assert (con.execute(check.screen).fetchall()[0][0] == 0) == (exact == 0)
        assert run_checks(con, [check], {"t": 2000})[0]["rows"] == exact
        exact_counts.append(exact)
    assert 0 in exact_counts and any(exact_counts)  # both sides of the screen were tried
    con.execute("CREATE TABLE u AS SELECT 'job-' || i AS job_id FROM range(5000) AS r(i) UNION ALL SELECT NULL")
    check = duplicate_key_check("u", ("job_id",), "duplicates")
    assert con.execute(check.screen).fetchall()[0][0] == 0
    assert run_checks(con, [check], {"u": 5001})[0]["rows"] == 0
