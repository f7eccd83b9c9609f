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
