"""End-to-end command flows a user runs: download from a mirror, ingest, info, sql, analyze."""

from __future__ import annotations

import csv
import functools
import hashlib
import http.server
import io
import json
import re
import shutil
import threading
from pathlib import Path

import polars as pl
import pytest

from ddlx.datasets.home import samples_home
from tests.conftest import SHARED_TRACES, assert_clean_failure, needs_shared_traces, real_file

REAL_SPEC = SHARED_TRACES / "alibaba-pai-v2020" / "pai_machine_spec.tar.gz"


@pytest.fixture
def mirror(tmp_path: Path):
    """A local HTTP server on 127.0.0.1 serving the files of a folder; yields (folder, base url)."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None  # type: ignore[assignment]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@needs_shared_traces
def test_download_verify_then_ingest_the_real_machine_spec(cli, mirror, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    folder, url = mirror
    shutil.copy(REAL_SPEC, folder / "pai_machine_spec.tar.gz")
    home = tmp_path / "home"
    result = cli("datasets", "download", "pai", "--table", "pai_machine_spec", "--mirror", url, "--data-home", home)
    assert result.code == 0, result.err
    downloaded = home / "downloads" / "pai" / "pai_machine_spec.tar.gz"
    assert hashlib.sha256(downloaded.read_bytes()).hexdigest() == hashlib.sha256(REAL_SPEC.read_bytes()).hexdigest()
    assert f"verified {downloaded}" in result.out
    result = cli("datasets", "ingest", "pai", "--from", downloaded.parent, "--table", "pai_machine_spec",
                 "--data-home", home)
    assert result.code == 0, result.err
    csv_out = cli("sql", "SELECT count(*) AS machines, sum(cap_gpu) AS gpus FROM pai_machine_spec",
                  "--format", "csv", "--data-home", home)
    import tarfile

    with tarfile.open(REAL_SPEC) as tar:
        rows = list(csv.reader(io.StringIO(tar.extractfile("pai_machine_spec.csv").read().decode())))
    assert csv_out.out.splitlines() == ["machines,gpus", f"{len(rows)},{sum(int(r[4]) for r in rows)}"]


def test_ingest_and_sql_on_the_real_machine_spec_rows(cli, tmp_path: Path) -> None:
    """The real machine spec (the full headerless CSV, or its excerpt in a fresh clone) ingested
    from a folder through the CLI: machines and GPUs as the csv module counts them. The download
    and its checksum, which need the official archive, are the test above."""
    source = real_file("alibaba-pai-v2020/pai_machine_spec.csv")
    folder = tmp_path / "release"
    folder.mkdir()
    shutil.copy(source, folder / "pai_machine_spec.csv")
    home = tmp_path / "home"
    result = cli("datasets", "ingest", "pai", "--from", folder, "--table", "pai_machine_spec", "--data-home", home)
    assert result.code == 0, result.err
    with open(source, newline="") as handle:
        rows = list(csv.reader(handle))
    csv_out = cli("sql", "SELECT count(*) AS machines, sum(cap_gpu) AS gpus FROM pai_machine_spec",
                  "--format", "csv", "--data-home", home)
    assert csv_out.out.splitlines() == ["machines,gpus", f"{len(rows)},{sum(int(r[4]) for r in rows)}"]


def test_download_of_a_corrupted_file_is_refused(cli, mirror, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("no_proxy", "*")
    folder, url = mirror
    (folder / "pai_machine_spec.tar.gz").write_bytes(b"x" * 30_449)  # right size, wrong bytes
    home = tmp_path / "home"
    result = cli("datasets", "download", "pai", "--table", "pai_machine_spec", "--mirror", url, "--data-home", home)
    assert result.code == 1
    assert result.err.strip().splitlines()[-1].startswith("Error: ")
    assert "Traceback" not in result.err
    kept = list((home / "downloads" / "pai").iterdir())
    assert [p.name.startswith("pai_machine_spec.tar.gz.rejected-") for p in kept] == [True]


def test_ingest_info_sql_and_analyze_on_the_hand_built_release(cli, pai_release: Path, home: Path,
                                                              tmp_path: Path) -> None:
    assert cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home).code == 0
    info = cli("datasets", "info", "pai", "--data-home", home)
    assert info.code == 0 and "SYNTHETIC" not in info.out
    assert "orphan: instance without task" in info.out
    as_json = json.loads(cli("datasets", "info", "pai", "--json", "--data-home", home).out)
    assert as_json["rows"]["pai_jobs"] == 5
    listed = json.loads(cli("sql", "SELECT job_id, state FROM jobs ORDER BY job_id", "--format", "json",
                            "--data-home", home).out)
    assert [r["state"] for r in listed] == ["completed", "failed", "running", "pending", "completed"]
    out = tmp_path / "results"
    result = cli("analyze", "pai-trace", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert "SYNTHETIC" not in result.out
    assert re.search(r"^\s+GPU jobs\s+4 jobs\s+\[gpu_job.requests_gpu\]$", result.out, re.M), result.out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["synthetic"] is False and "label" not in summary
    used = {d["id"] for d in summary["definitions"]}
    assert {"queue_delay.submit_to_first_start", "runtime.first_start_to_last_end",
            "gpu_request.fractional"} <= used
    metrics = pl.read_parquet(out / "summary.parquet")
    assert dict(zip(metrics["name"], metrics["value"]))["gpu_jobs"] == 4
    states = pl.read_parquet(out / "overview" / "state_mix.parquet")
    assert states.filter(pl.col("state") == "completed")["jobs"].item() == 2


@pytest.mark.slow
def test_main_job_without_data_uses_a_labelled_synthetic_sample(cli, tmp_path: Path) -> None:
    home, out = tmp_path / "empty-home", tmp_path / "results"
    result = cli("analyze", "pai-trace", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert "SYNTHETIC" in result.err and result.out.count("SYNTHETIC") >= 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["label"] == "SYNTHETIC" and summary["synthetic"] is True
    written = sorted(out.rglob("*.parquet"))
    assert out / "overview" / "state_mix.parquet" in written
    for path in written:
        assert pl.read_parquet(path)["synthetic"].all(), path
    # The sample lives apart from real data: the user's catalog stays empty.
    assert not (home / "catalog.duckdb").exists()
    # Its numbers are the catalog's numbers, recomputed here with plain SQL.
    import duckdb

    con = duckdb.connect(str(home / "samples" / "pai-synthetic" / "catalog.duckdb"), read_only=True)
    jobs, gpu_jobs = con.sql("SELECT count(*), count(*) FILTER (WHERE num_gpus > 0) FROM jobs").fetchall()[0]
    con.close()
    value = {f["name"]: f["value"] for f in summary["modules"]["overview"]["findings"]}
    assert (value["jobs"], value["gpu_jobs"]) == (jobs, gpu_jobs)
    # A second run reuses the sample instead of generating it again.
    again = cli("analyze", "pai-trace", "--out", out, "--data-home", home)
    assert again.code == 0 and "nothing to do" in again.err


def _jobs_in_release(trace: str, release: Path) -> int:
    """Jobs of a generated release, counted from its files with the csv, json, tarfile and zipfile modules."""
    import tarfile
    import zipfile

    def csv_rows(handle: io.TextIOBase) -> int:
        return sum(1 for _ in csv.reader(handle)) - 1  # minus the header

    if trace == "helios":
        with zipfile.ZipFile(release / "data.zip") as zf:
            return sum(csv_rows(io.TextIOWrapper(zf.open(name), encoding="utf-8"))
                       for name in zf.namelist() if name.endswith("cluster_log.csv"))
    if trace == "acme":
        return sum(csv_rows(open(path, encoding="utf-8")) for path in release.glob("trace_*.csv"))
    if trace == "pai-v2023":
        return csv_rows(open(release / "openb_pod_list_default.csv", encoding="utf-8"))
    with tarfile.open(release / "trace-data.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("cluster_job_log"))
        return len(json.load(tar.extractfile(member)))


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["philly", "helios", "pai-v2023", "acme"])
def test_every_trace_has_a_labelled_synthetic_sample(cli, tmp_path: Path, trace: str) -> None:
    home, out = tmp_path / "empty-home", tmp_path / "results"
    result = cli("analyze", f"{trace}-trace", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert result.out.count("SYNTHETIC") >= 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["label"] == "SYNTHETIC" and summary["trace"] == trace
    value = {f["name"]: f["value"] for f in summary["modules"]["overview"]["findings"]}
    release = home / "samples" / f"{trace}-synthetic" / "release"
    assert value["jobs"] == _jobs_in_release(trace, release)
    assert not (home / "catalog.duckdb").exists()


@pytest.mark.slow
def test_predict_and_simulate_without_data_use_the_synthetic_sample(cli, tmp_path: Path) -> None:
    home, model, out = tmp_path / "empty-home", tmp_path / "model", tmp_path / "sim.json"
    trained = cli("predict", "train", "--trace", "pai", "--out", model, "--data-home", home)
    assert trained.code == 0, trained.err
    assert "SYNTHETIC sample" in trained.err and "SYNTHETIC" in trained.out
    card = json.loads((model / "model_card.json").read_text())
    assert card["synthetic"] is True
    result = cli("simulate", "--trace", "pai", "--compare", "fifo,sjf-oracle,sjf-predicted", "--predictor", model,
                 "--test-window", "--out", out, "--data-home", home)
    assert result.code == 0, result.err
    assert result.out.count("SYNTHETIC") >= 1
    document = json.loads(out.read_text())
    assert document["synthetic"] is True
    assert not (home / "catalog.duckdb").exists()
    # The jobs simulated, counted with plain SQL on the sample's catalog: submitted in the test
    # window, with GPUs (at most the machine list's total) and a run time above 0.
    import duckdb

    con = duckdb.connect(str(home / "samples" / "pai-synthetic" / "catalog.duckdb"), read_only=True)
    gpus = con.sql("SELECT sum(cap_gpu) FROM pai_machine_spec").fetchall()[0][0]
    expected = con.sql("SELECT count(*) FROM jobs WHERE submit_time >= "
                       f"""'{card["split"]["test_from_utc"]}'::TIMESTAMPTZ
        AND num_gpus > 0 AND num_gpus <= {gpus} AND run_s > 0""").fetchall()[0][0]
    con.close()
    assert document["capacity"]["gpus"] == gpus
    assert document["workload"]["jobs_simulated"] == expected > 0
    # Predictions and their exports carry the label too.
    predictions = tmp_path / "pred.parquet"
    applied = cli("predict", "apply", "--model", model, "--trace", "pai", "--out", predictions, "--data-home", home)
    assert applied.code == 0, applied.err
    assert "*** SYNTHETIC DATA" in applied.out and "(SYNTHETIC: column synthetic is true)" in applied.out
    assert pl.read_parquet(predictions).get_column("synthetic").all()
    as_csv = tmp_path / "pred.csv"
    assert cli("predict", "apply", "--model", model, "--trace", "pai", "--out", as_csv, "--data-home", home).code == 0
    for table in (predictions, as_csv):
        exported = cli("predict", "export", "--predictions", table, "--format", "estimate-csv",
                       "--out", tmp_path / "estimates.csv")
        assert exported.code == 0 and "SYNTHETIC DATA" in exported.err and "keep it with the file" in exported.err


def test_the_python_snippet_of_the_docs_runs_as_written_after_the_main_command(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """After the README's main command, the snippet of docs/analysis.md runs unchanged: it reads
    `$DDLX_HOME` and the SYNTHETIC sample that command made, and says so."""
    monkeypatch.setenv("DDLX_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert cli("analyze", "pai-trace", "--module", "queueing").code == 0
    doc = (Path(__file__).resolve().parents[1] / "docs" / "analysis.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", doc, flags=re.S)
    assert snippet and "analyze(" in snippet.group(1)
    capsys.readouterr()
    exec(compile(snippet.group(1), "docs/analysis.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("SYNTHETIC sample") and "gpu_bucket" in printed
    assert samples_home(tmp_path / "home", "pai").is_dir()  # the sample lives in $DDLX_HOME


def test_status_lists_the_data_home_and_names_get_a_suggestion(cli, tmp_path: Path, pai_release: Path) -> None:
    """`datasets status` shows each ingested trace and imported dataset with its jobs; a mistyped
    name is answered with the closest known one."""
    home = tmp_path / "home"
    assert cli("datasets", "status", "--data-home", home).out.splitlines()[1].startswith("nothing ingested yet")
    assert cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home).code == 0
    (tmp_path / "lab.csv").write_text("submit,duration,gpus\n0,60,1\n10,120,2\n")
    assert cli("datasets", "import", "lab", "--from", tmp_path / "lab.csv", "--data-home", home,
               "--map", "submit=submit,duration=duration,gpus=gpus").code == 0
    rows = json.loads(cli("datasets", "status", "--json", "--data-home", home).out)
    assert [(r["name"], r["kind"], r["synthetic"], r["jobs"]) for r in rows] == [
        ("lab", "imported", False, 2), ("pai", "trace", False, 5)]
    assert_clean_failure(cli("datasets", "info", "pia", "--data-home", home), "did you mean 'pai'?")
    assert_clean_failure(cli("analyze", "dataset", "labb", "--data-home", home), "did you mean 'lab'?")
    assert_clean_failure(cli("datasets", "ingest", "phily", "--from", tmp_path, "--data-home", home),
                         "did you mean 'philly'?", code=2)


def test_window_option_reaches_the_results(cli, tmp_path: Path) -> None:
    (tmp_path / "w.csv").write_text("id,submit,start,end,gpus\na,0,0,50,1\nb,100,100,150,1\nc,200,200,1000,1\n")
    home = tmp_path / "home"
    assert cli("datasets", "import", "w", "--from", tmp_path / "w.csv", "--data-home", home,
               "--map", "job_id=id,submit=submit,start=start,end=end,gpus=gpus").code == 0
    out = tmp_path / "out"
    result = cli("analyze", "dataset", "w", "--window", "active", "-m", "utilization", "--out", out,
                 "--data-home", home)
    assert result.code == 0, result.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["options"] == {"window": "active"}
    assert "over the active window" in summary["modules"]["utilization"]["findings"][0]["population"]
    bad = cli("analyze", "dataset", "w", "--window", "busy", "--data-home", home)
    assert bad.code == 2 and "window must be trace or active, not 'busy'" in bad.err and "Traceback" not in bad.err
