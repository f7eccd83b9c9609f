"""Telemetry dumps cut short or empty, and a dataset that does not exist: `ddlx datasets
import-metrics` refuses each with one `Error:` line naming the file (and the line where there is
one) and what was expected, exit code 1, and the data home (a dataset with telemetry already
imported) byte-identical. The line numbers are counted from the bytes written here.

The format rule (`datasets/telemetry/openmetrics.py`): OpenMetrics text (timestamps in seconds)
must end with `# EOF`; Prometheus text (integer milliseconds) has no `# EOF` and is whole when its
last line ends with a line break; a last line without a line break is cut, in every text format.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.bad_inputs.telemetry_home import T0, home_with_telemetry, sample_lines
from tests.conftest import assert_clean_failure, tree_digest

HEADER = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data home holding the dataset `cl` with its telemetry (refused imports must not change it)."""
    return home_with_telemetry(tmp_path_factory.mktemp("dumps"))[0]


def _day2() -> list[str]:
    """The sample lines of the next day (no overlap with what the home holds)."""
    return sample_lines(T0 + 86400)


def _ms_lines() -> list[str]:
    """The same samples as Prometheus text: integer milliseconds, no `# EOF`."""
    return [f"{line.rsplit(' ', 1)[0]} {int(float(line.rsplit(' ', 1)[1])) * 1000}" for line in _day2()]


# Each builder writes its file into the folder and returns (path, needles, extra arguments).
Builder = Callable[[Path], tuple[Path, tuple[str, ...], tuple[str, ...]]]


def cut_in_a_timestamp(folder: Path):
    text = "\n".join([HEADER, *_day2()]) + "\n"
    cut = text[:text.index("\n", len(text) // 2) - 2]  # the last line still parses: "... 87 1714651234."
    path = folder / "cut.om"
    path.write_text(cut)
    return path, (f"line {cut.count(chr(10)) + 1}", "no line break", "cut short"), ()


def cut_in_the_labels(folder: Path):
    text = "\n".join([HEADER, *_day2()]) + "\n"
    start = text.index("\n", len(text) // 2) + 1
    cut = text[:start + 25]  # in the middle of the next line's labels
    path = folder / "labels.om"
    path.write_text(cut)
    return path, (f"line {cut.count(chr(10)) + 1}", "closed by }", "cut short"), ()


def cut_at_a_line_break(folder: Path):
    lines = [HEADER, *_day2()]
    kept = lines[:len(lines) // 2]
    path = folder / "lines.om"
    path.write_text("\n".join(kept) + "\n")
    return path, (f"line {len(kept)}", "no '# EOF'", "timestamps in seconds, as on line 2", "cut short"), ()


def gzip_cut(folder: Path):
    packed = gzip.compress(("\n".join([HEADER, *_day2(), "# EOF"]) + "\n").encode())
    path = folder / "cut.om.gz"
    path.write_bytes(packed[:len(packed) // 2])
    return path, ("not a complete gzip file",), ()


def gzip_whole_text_cut(folder: Path):
    lines = [HEADER, *_day2()]
    path = folder / "lines.om.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path, (f"line {len(lines)}", "no '# EOF'", "cut short"), ()


def prometheus_text_last_line_cut(folder: Path):
    lines = _ms_lines()
    path = folder / "cut.prom"
    path.write_text("\n".join(lines))  # no line break after the last line
    return path, (f"line {len(lines)}", "no line break", "cut short"), ()


def csv_last_line_cut(folder: Path):
    rows = [f"{T0 + 86400 + 60 * k},gpu_util,{k},n1,0" for k in range(50)]
    path = folder / "cut.csv"
    path.write_text("time,metric,value,Hostname,gpu\n" + "\n".join(rows))
    return path, (f"line {len(rows) + 1}", "no line break", "cut short"), ()


def parquet_cut(folder: Path):
    whole = folder / "whole.parquet"
    pl.DataFrame({"time": [T0 + 86400], "metric": ["gpu_util"], "value": [1.0], "Hostname": ["n1"],
                  "gpu": [0]}).write_parquet(whole)
    path = folder / "cut.parquet"
    path.write_bytes(whole.read_bytes()[:-20])
    return path, ("cannot be read",), ()


def zero_bytes(name: str) -> Builder:
    def build(folder: Path):
        path = folder / name
        path.write_bytes(b"")
        return path, ("the file is empty (0 bytes)", "expected an OpenMetrics, CSV or Parquet dump"), ()

    build.__name__ = f"zero_bytes_{name}"
    return build


def no_sample(name: str, content: bytes | Callable[[Path], None], *needles: str) -> Builder:
    def build(folder: Path):
        path = folder / name
        if callable(content):
            content(path)
        else:
            path.write_bytes(content)
        return path, ("holds no sample of", *needles), ()

    build.__name__ = f"no_sample_{name}"
    return build


def _empty_parquet(path: Path) -> None:
    pl.DataFrame(schema={"time": pl.Int64, "metric": pl.String, "value": pl.Float64, "Hostname": pl.String,
                         "gpu": pl.Int64}).write_parquet(path)


def other_fields_only(folder: Path):
    path = folder / "util.om"
    path.write_text("\n".join([HEADER, *_day2(), "# EOF"]) + "\n")
    return path, ("holds no sample of power_w (DCGM_FI_DEV_POWER_USAGE)",), ("--fields", "power_w")


CASES: list[Builder] = [
    cut_in_a_timestamp, cut_in_the_labels, cut_at_a_line_break, gzip_cut, gzip_whole_text_cut,
    prometheus_text_last_line_cut, csv_last_line_cut, parquet_cut,
    zero_bytes("empty.om"), zero_bytes("empty.csv"), zero_bytes("empty.parquet"), zero_bytes("empty.csv.gz"),
    no_sample("eof.om", b"# EOF\n", "any DCGM field ddlx reads"),
    no_sample("comments.om", f"{HEADER}\n# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization\n# EOF\n".encode()),
    no_sample("nothing.om.gz", gzip.compress(b"")),
    no_sample("header.csv", b"time,metric,value,Hostname,gpu\n"),
    no_sample("rows.parquet", _empty_parquet),
    no_sample("others.om", f'node_cpu{{cpu="0"}} 1 {T0}\nnode_cpu{{cpu="1"}} 1 {T0}\nup 1 {T0}\n# EOF\n'.encode(),
              "only 3 samples of other metrics (node_cpu, up)"),
    other_fields_only,
]


@pytest.mark.parametrize("build", CASES, ids=[case.__name__ for case in CASES])
def test_a_cut_or_empty_dump_is_refused(build: Builder, protected: Path, tmp_path: Path, cli) -> None:
    path, needles, extra = build(tmp_path)
    before = tree_digest(protected)
    result = cli("datasets", "import-metrics", "cl", "--from", path, *extra, "--data-home", protected)
    assert_clean_failure(result, str(path), *needles)
    assert tree_digest(protected) == before


def test_a_dataset_that_does_not_exist_is_refused(protected: Path, tmp_path: Path, cli) -> None:
    dump = tmp_path / "day2.om"
    dump.write_text("\n".join([HEADER, *_day2(), "# EOF"]) + "\n")
    before = tree_digest(protected)
    result = cli("datasets", "import-metrics", "cll", "--from", dump, "--data-home", protected)
    assert_clean_failure(result, "no dataset 'cll'", str(protected), "(it holds: cl)", "import its jobs first",
                         "did you mean 'cl'?")
    result = cli("datasets", "import-metrics", "nosuch", "--prometheus", "http://127.0.0.1:9", "--start", str(T0),
                 "--end", str(T0 + 3600), "--data-home", protected)
    assert_clean_failure(result, "no dataset 'nosuch'")
    assert tree_digest(protected) == before
    assert not (protected / "telemetry" / "cll").exists() and not (protected / "telemetry" / "nosuch").exists()


def test_whole_dumps_in_each_text_format_are_read(tmp_path: Path, cli) -> None:
    """The other side of the rule: Prometheus text without `# EOF` whose lines are whole is read, and
    so is OpenMetrics whose `# EOF` has no line break after it; every sample is stored."""
    home, before = home_with_telemetry(tmp_path / "a")
    prom = tmp_path / "day2.prom"
    lines = _ms_lines()
    prom.write_text("\n".join(lines) + "\n")
    result = cli("datasets", "import-metrics", "cl", "--from", prom, "--data-home", home)
    assert result.code == 0, result.err
    assert f"cl: {len(lines):,} samples" in result.out
    om = tmp_path / "day3.om"
    day3 = sample_lines(T0 + 2 * 86400)
    om.write_text("\n".join([HEADER, *day3, "# EOF"]))
    result = cli("datasets", "import-metrics", "cl", "--from", om, "--data-home", home)
    assert result.code == 0, result.err
    stored = pl.read_parquet(home / "telemetry" / "cl" / "gpu_samples" / "day=*" / "*.parquet")
    assert stored.height == before + len(lines) + len(day3)
