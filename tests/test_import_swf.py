"""Reading the Standard Workload Format back (`ddlx datasets import NAME --preset swf`).

The converter is tested directly on `tests/data/swf/excerpt.swf` (a hand-made log in the SWF 2.2
format) and on small inline logs; the import through the preset is tested end to end (skipped
while the importer does not know the preset). Every expected value is worked out by hand below from
the lines of the file, independently of the converter.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from ddlx.errors import InputError
from ddlx.formats.swf.reader import FIELDS, PRESET, convert
from tests.conftest import assert_clean_failure

EXCERPT = Path(__file__).parent / "data" / "swf" / "excerpt.swf"
T = 1_104_537_600  # the excerpt's UnixStartTime: 2005-01-01 00:00:00 UTC
T0 = 1_700_000_000  # the round trip's first submission (as in tests/test_export.py)

# What ddlx reads from each job of the excerpt, by hand from its lines (times: T + submit, + wait,
# + run; the two partial-execution lines of job 8, status 2 and 3, are dropped: its own line holds it).
#   job_id submit    start     end         state        gpus  user  queue exe   mem_gb
EXCERPT_JOBS = [
    ("1",  T + 0,    T + 12,   T + 3612,   "completed", 16,   "3",  "1",  "5",  None),
    ("2",  T + 45,   None,     None,       "cancelled", 8,    "7",  "2",  None, None),   # never ran: procs requested
    ("3",  T + 60,   T + 60,   T + 60,     "failed",    4,    "3",  "1",  "6",  None),   # zero run time
    ("4",  T + 130,  T + 160,  T + 1960.5, "completed", 32,   "11", "3",  None, None),   # run 1800.5
    ("5",  T + 300,  None,     None,       "completed", 8,    "7",  "2",  "5",  None),   # wait -1: no start
    ("6",  T + 420,  T + 425,  None,       "failed",    2,    "12", "1",  None, None),   # run -1.00
    ("7",  T + 500,  T + 600,  T + 7800,   "completed", 64,   "3",  "1",  "5",  0.125),  # 2048 KB x 64 procs
    ("8",  T + 800,  T + 800,  T + 20800,  "completed", 16,   "11", "3",  "8",  None),   # checkpointed job
    ("9",  T + 1000, T + 1015, T + 1315,   None,        1,    "12", "1",  None, None),   # status -1
    ("10", T + 1500, None,     None,       "cancelled", 2,    "7",  "2",  None, None),
    ("11", T + 3599, T + 7200, T + 93600,  "completed", 128,  "3",  "3",  "9",  None),
    ("12", T + 7200, T + 7202, T + 7292,   "completed", None, "3",  "1",  "5",  None),   # procs -1 and -1
]
#: Integer SWF fields (BIGINT columns); the others hold times or memory (DOUBLE).
WHOLE = {"job", "allocated_procs", "requested_procs", "status", "user", "group", "executable", "queue",
         "partition", "preceding_job"}


def parse_like_the_format(path: Path) -> list[list[float]]:
    """The SWF definition's reading rule in a few lines: skip `;` comments and blank lines, split
    every other line on whitespace into 18 numbers."""
    rows = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(";"):
            fields = line.split()
            assert len(fields) == 18
            rows.append([float(v) for v in fields])
    return rows


def _convert(tmp_path: Path, text: str, name: str = "log.swf") -> pl.DataFrame:
    source = tmp_path / name
    source.write_text(text)
    convert(source, name, tmp_path / "out.parquet")
    return pl.read_parquet(tmp_path / "out.parquet")


def _line(job: int, submit: float, wait: float, run: float, procs: int, status: int, user: int = 1) -> str:
    """A job line with the given fields, -1 elsewhere (queue 1, partition 1)."""
    return f"{job} {submit} {wait} {run} {procs} -1 -1 {procs} -1 -1 {status} {user} -1 -1 1 1 -1 -1\n"


# -- the converter ---------------------------------------------------------------------------

def test_the_excerpt_becomes_one_row_per_job_with_typed_fields(tmp_path: Path) -> None:
    out = tmp_path / "excerpt.parquet"
    convert(EXCERPT, "excerpt.swf", out)
    table = pl.read_parquet(out)
    assert table.columns[:18] == list(FIELDS)
    assert table.columns[18:] == ["job_id", "submit_unix", "start", "end", "state", "procs", "no_gpus", "mem_gb",
                                  "user_name", "group_name", "executable_name", "queue_name", "partition_name",
                                  "time_zone"]  # no cluster column: neither an id map nor a sidecar is beside it
    assert {f: table.schema[f] for f in FIELDS} == {f: pl.Int64 if f in WHOLE else pl.Float64 for f in FIELDS}
    # the 18 fields as written: 14 records read by the definition's rule, less job 8's two partial records
    records = parse_like_the_format(EXCERPT)
    assert len(records) == 14 and [int(r[10]) for r in records if r[0] == 8] == [1, 2, 3]
    kept = [r for r in records if r[10] not in (2, 3, 4)]
    assert table.select(FIELDS).rows() == [tuple(v for v in r) for r in kept]
    assert table.row(3, named=True)["run"] == 1800.5 and table.row(5, named=True)["run"] == -1
    got = table.select("job_id", "submit_unix", "start", "end", "state", "procs", "user_name", "queue_name",
                       "executable_name", "mem_gb").rows()
    assert got == EXCERPT_JOBS
    assert set(table["time_zone"]) == {"Europe/Berlin"} and set(table["no_gpus"]) == {0.0}
    assert table["group_name"].to_list()[:4] == ["1", "2", "1", "4"] and set(table["partition_name"]) == {"1"}


def test_without_unix_start_time_times_are_offsets_and_partial_records_alone_are_jobs(tmp_path: Path) -> None:
    text = ("; Version: 2.2\n; Note: a model, no UnixStartTime\n\n"
            + _line(1, 0, 10, 100, 4, 1)
            + _line(2, 50, 0, 30, 2, 2)     # a partial record whose job has no line of its own: kept, no state
            + _line(2, 50, 80, 20, 2, 4)    # its last partial record, failed
            + _line(3, 60.5, 0, 0, 1, 3)    # last partial, completed; a decimal submit time
            + _line(4, 70, -5, -1, -2, 7))  # negative values other than -1, an undefined status
    table = _convert(tmp_path, text)
    assert table["submit_unix"].to_list() == [0.0, 50.0, 50.0, 60.5, 70.0]
    assert table["start"].to_list() == [10.0, 50.0, 130.0, 60.5, None]
    assert table["end"].to_list() == [110.0, 80.0, 150.0, 60.5, None]
    assert table["state"].to_list() == ["completed", None, "failed", "completed", None]
    assert table["procs"].to_list() == [4.0, 2.0, 2.0, 1.0, None]
    assert table["job_id"].to_list() == ["1", "2", "2", "3", "4"] and table["time_zone"].to_list() == [None] * 5


def test_the_id_map_and_the_sidecar_beside_the_file_restore_ids_clusters_and_names(tmp_path: Path) -> None:
    text = _line(1, 0, 5, 60, 2, 1, user=2) + _line(2, 10, 0, 30, 1, 0, user=1) + _line(3, 20, 1, 1, 1, 5, user=3)
    (tmp_path / "log.swf.datapackage.json").write_text(json.dumps(
        {"codes": {"user": {"ann": 1, "bob": 2}, "queue": {"vc-x": 1}, "partition": {"east": 1}}}))
    named = _convert(tmp_path, text)
    assert named["user_name"].to_list() == ["bob", "ann", "3"]  # number 3 has no name: kept as text
    assert named["queue_name"].to_list() == ["vc-x"] * 3
    assert named["cluster"].to_list() == ["east"] * 3  # no id map: the partition's name
    assert named["job_id"].to_list() == ["1", "2", "3"]
    (tmp_path / "log.swf.ids.csv").write_text('job,job_id,cluster\n1,a-7,west\n2,"b,8",east\n')
    mapped = _convert(tmp_path, text)
    assert mapped["job_id"].to_list() == ["a-7", "b,8", "3"]
    assert mapped["cluster"].to_list() == ["west", "east", "east"]  # job 3 is not in the map: its partition


@pytest.mark.parametrize(("line", "field", "expected"), [
    ("1 0 10 100 4 -1 -1 4 -1 -1 1 1 -1 -1 1 1 -1", "think_time", "17 fields; expected the 18"),
    ("1 0 10 100 4 -1 -1 4 -1 -1 1 1 -1 -1 1 1 -1 -1 -1", "think_time", "19 fields"),
    ("1 0 ten 100 4 -1 -1 4 -1 -1 1 1 -1 -1 1 1 -1 -1", "wait", "'ten' is not a number"),
    ("1 0 10 nan 4 -1 -1 4 -1 -1 1 1 -1 -1 1 1 -1 -1", "run", "'nan' is not a number"),
    ("1 0 10 100 4 -1 -1 4 -1 -1 1 1_0 -1 -1 1 1 -1 -1", "user", "'1_0' is not a number"),
    ("1 0 10 100 4.5 -1 -1 4 -1 -1 1 1 -1 -1 1 1 -1 -1", "allocated_procs", "4.5 is not a whole number"),
])
def test_a_bad_job_line_names_its_line_and_field(tmp_path: Path, line: str, field: str, expected: str) -> None:
    text = "; Version: 2.2\n; UnixStartTime: 0\n\n" + _line(1, 0, 1, 1, 1, 1) + line + "\n"
    with pytest.raises(InputError) as caught:
        _convert(tmp_path, text, "bad.swf")
    assert (caught.value.path, caught.value.line, caught.value.field) == ("bad.swf", 5, field)
    assert expected in caught.value.problem
    assert not (tmp_path / "out.parquet").exists()


def test_a_bad_header_time_or_an_empty_log_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        _convert(tmp_path, "; Version: 2.2\n; UnixStartTime: yesterday\n" + _line(1, 0, 1, 1, 1, 1))
    assert (caught.value.line, caught.value.field) == (2, "UnixStartTime")
    with pytest.raises(InputError, match="holds no job line"):
        _convert(tmp_path, "; Version: 2.2\n\n")


def test_the_preset_maps_the_converted_columns() -> None:
    assert PRESET.name == "swf" and PRESET.convert is convert and PRESET.suffixes == (".swf",)
    assert PRESET.time_unit == "s" and PRESET.wall_clock is None
    assert PRESET.mapping["gpus"] == "procs" and PRESET.mapping["submit"] == "submit_unix"
    assert PRESET.optional == {"cluster": "cluster"}


# -- through the importer --------------------------------------------------------------------

def _canonical(home: Path, name: str) -> list[dict]:
    from ddlx.datasets.catalog import query

    return query(home, f"""SELECT job_id, cluster, "user", vc, job_group, epoch(submit_time) AS submit,
        epoch(start_time) AS start, epoch(end_time) AS "end", num_gpus, num_cpus, mem_gb, state
        FROM {name}_jobs ORDER BY submit_time, job_id""").to_dicts()


@pytest.fixture()
def exported(tmp_path: Path) -> tuple[Path, Path]:
    """The five jobs of tests/test_export.py imported as `lab` and exported as SWF: (home, file)."""
    from ddlx.datasets.importers import import_dataset
    from ddlx.formats.export import export_dataset
    from tests.test_export import MAPPING, ROWS

    (tmp_path / "jobs.csv").write_text(ROWS)
    home = tmp_path / "home"
    import_dataset("lab", tmp_path / "jobs.csv", home, mapping=MAPPING)
    out = tmp_path / "lab.swf"
    export_dataset(home, "lab", "swf", out)
    return home, out


def test_round_trip_restores_the_exported_jobs(exported: tuple[Path, Path]) -> None:
    from ddlx.datasets.importers import import_dataset

    home, out = exported
    import_dataset("back", out, home, preset="swf")
    back = _canonical(home, "back")
    # By hand from tests/test_export.py's ROWS: ids and the cluster from the id map, names from the
    # sidecar's codes; j-a's 0.5 GPU counts one, its end T0+605.6 comes back as T0+5 + round(600.6);
    # j-d was running: no status, so no state; j-c never ran.
    #   job_id user   vc     submit    start     end        gpus state
    expected = [
        ("j-a", "bob", "vc2", T0,       T0 + 5,   T0 + 606,  1.0, "failed"),
        ("j-b", "ann", "vc1", T0 + 10,  T0 + 70,  T0 + 3670, 2.0, "completed"),
        ("j-c", "ann", "vc2", T0 + 10,  None,     None,      0.0, "cancelled"),
        ("j-d", "cy",  None,  T0 + 100, T0 + 160, None,      8.0, None),
        ("j-e", "bob", "vc1", T0 + 200, T0 + 200, T0 + 260,  1.0, "completed"),
    ]
    assert [(r["job_id"], r["user"], r["vc"], r["submit"], r["start"], r["end"], r["num_gpus"], r["state"])
            for r in back] == expected
    assert {r["cluster"] for r in back} == {"lab"}
    # field by field against the jobs exported, within the losses the export reports
    original = {r["job_id"]: r for r in _canonical(home, "lab")}
    for job in back:
        was = original[job["job_id"]]
        assert (job["cluster"], job["user"], job["vc"]) == (was["cluster"], was["user"], was["vc"])
        for key in ("submit", "start", "end"):
            assert job[key] == (None if was[key] is None else round(was[key]))
        assert job["num_gpus"] == -(-was["num_gpus"] // 1)  # a part of a GPU counts one
        assert job["state"] == (None if was["state"] == "running" else was["state"])


def test_without_the_id_map_and_sidecar_jobs_keep_their_numbers(exported: tuple[Path, Path], tmp_path: Path) -> None:
    from ddlx.datasets.importers import import_dataset

    home, out = exported
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out, alone / "lab.swf")
    import_dataset("numbers", alone / "lab.swf", home, preset="swf")
    rows = _canonical(home, "numbers")
    assert [(r["job_id"], r["user"], r["vc"]) for r in rows] == [
        ("1", "1", "1"), ("2", "2", "2"), ("3", "2", "1"), ("4", "3", None), ("5", "1", "2")]
    assert {r["cluster"] for r in rows} == {"numbers"}  # one file: the dataset's name, as for any import


def test_the_excerpt_imports_as_canonical_jobs(tmp_path: Path) -> None:
    from ddlx.datasets.importers import import_dataset

    home = tmp_path / "home"
    import_dataset("excerpt", EXCERPT, home, preset="swf")
    rows = _canonical(home, "excerpt")
    assert [(r["job_id"], r["submit"], r["start"], r["end"], r["state"],
             None if r["num_gpus"] is None else int(r["num_gpus"]), r["user"], r["vc"], r["job_group"],
             r["mem_gb"]) for r in rows] == EXCERPT_JOBS
    assert {r["cluster"] for r in rows} == {"excerpt"} and {r["num_cpus"] for r in rows} == {None}
    cpus = tmp_path / "cpu-home"
    import_dataset("hpc", EXCERPT, cpus, preset="swf", mapping="gpus=no_gpus,cpus=procs")
    as_cpus = _canonical(cpus, "hpc")
    assert [r["num_cpus"] for r in as_cpus] == [job[5] for job in EXCERPT_JOBS]
    assert {r["num_gpus"] for r in as_cpus} == {0.0}


def test_the_command_names_the_line_and_field_of_a_bad_log(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("; UnixStartTime: 0\n" + _line(1, 0, 1, 1, 1, 1) + "2 5 x 1 1 -1 -1 1 -1 -1 1 1 -1 -1 1 1 -1 -1\n")
    done = cli("datasets", "import", "bad", "--preset", "swf", "--from", bad, "--data-home", tmp_path / "home")
    assert_clean_failure(done, "line 3, field 'wait': 'x' is not a number")
