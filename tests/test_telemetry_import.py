"""GPU telemetry intake: OpenMetrics, CSV and Parquet dumps, and the Prometheus HTTP API (a fake
server in a thread), with every data-quality finding, bad input, appending and resuming. Every
expected number below is worked out by hand from the inputs written here."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from ddlx.datasets.telemetry import store
from ddlx.datasets.telemetry.importer import import_metrics
from ddlx.datasets.telemetry.prometheus import PrometheusError, check_resolution
from ddlx.errors import InputError, UsageError
from tests.bad_inputs.telemetry_home import register
from tests.conftest import assert_clean_failure, tree_digest

T0 = 1714564800  # 2024-05-01T12:00:00Z
#: The data homes the tests import into (telemetry goes beside a dataset of the catalog: each holds `cl`).
HOMES = ("home", "other", "clean", "a", "b")


@pytest.fixture(scope="module")
def registered_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("registered") / "home"
    register(home, "cl")
    return home


@pytest.fixture(autouse=True)
def dataset_cl(registered_home: Path, tmp_path: Path) -> None:
    """Every home of `HOMES` holds the dataset `cl`: a copy of one home registered once (its catalog
    names that home's store, which no test here reads)."""
    for name in HOMES:
        shutil.copytree(registered_home, tmp_path / name)


def stored(home: Path, dataset: str = "cl") -> pl.DataFrame:
    frame = pl.read_parquet(store.samples_folder(home, dataset) / "day=*" / "*.parquet")
    return frame.with_columns(pl.col("time").dt.epoch("us").alias("us")).sort("host", "gpu", "field", "time")


# -- OpenMetrics --------------------------------------------------------------------------------

_GPU0 = ('Hostname="n1",UUID="GPU-1",gpu="0",modelName="A100",slurm_job="77",'
         'note="a \\"q\\" \\\\ b\\nc",instance="x:9400"')
OPENMETRICS = f"""# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{_GPU0}}} 50 {T0}.000
DCGM_FI_DEV_GPU_UTIL{{{_GPU0}}} 70 {T0 + 30}.5
DCGM_FI_DEV_GPU_UTIL{{{_GPU0}}} 60 {T0 + 15}.250
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0",pod="p"}} 99 {T0}
DCGM_FI_DEV_GPU_UTIL{{gpu="1"}} 10 {T0}
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="x"}} 10 {T0}
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="1",}} NaN {T0}
DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="1"}} +Inf {T0 + 15}
{{__name__="DCGM_FI_DEV_FB_USED", Hostname="n1", gpu="1", pod=""}} 2048 {(T0 + 60) * 1000}
DCGM_FI_DEV_POWER_USAGE{{Hostname="n2",gpu="3",namespace="ml",container="train"}} 2.5e2 {T0 + 3600}
node_cpu_seconds_total{{cpu="0"}} 1 {T0}
node_cpu_seconds_total{{cpu="1"}} 1 {T0}

# EOF
"""


def test_openmetrics_values_labels_and_findings(tmp_path: Path) -> None:
    source = tmp_path / "dump.om"
    source.write_text(OPENMETRICS)
    home = tmp_path / "home"
    result = import_metrics(home, "cl", source, job_label="slurm_job")
    # 13 sample lines: 2 unknown (node_cpu), 2 missing labels (no Hostname; gpu "x"), 2 non-finite,
    # 1 duplicate (n1/0 gpu_util at T0 again, pod p: the first, 50, is kept), 1 out of order
    # (T0+15.25 after T0+30.5 in the same series): stored 3 + 0 + ... = 3 gpu_util, 1 fb, 1 power.
    assert result.quality == {"missing_labels": 2, "non_finite": 2, "out_of_order": 1, "duplicates": 1,
                              "unknown_metrics": 2, "partial_responses": 0, "outside_window": 0}
    assert result.unknown_metrics == {"node_cpu_seconds_total": 2}
    assert result.samples == 5
    got = stored(home)
    assert got.height == 5
    util = got.filter(pl.col("field") == "gpu_util")
    assert util["value"].to_list() == [50.0, 60.0, 70.0]
    assert util["us"].to_list() == [T0 * 10**6, (T0 + 15) * 10**6 + 250_000, (T0 + 30) * 10**6 + 500_000]
    first = util.row(0, named=True)
    assert (first["host"], first["gpu"], first["uuid"], first["model"], first["hpc_job"]) == \
        ("n1", 0, "GPU-1", "A100", "77")
    assert json.loads(first["labels"]) == {"note": 'a "q" \\ b\nc'}  # instance is a scrape label, left out
    fb = got.filter(pl.col("field") == "fb_used_mib").row(0, named=True)
    assert (fb["value"], fb["us"], fb["pod"], fb["gpu"]) == (2048.0, (T0 + 60) * 10**6, None, 1)  # ms timestamp
    power = got.filter(pl.col("field") == "power_w").row(0, named=True)
    assert (power["host"], power["gpu"], power["value"], power["namespace"], power["container"]) == \
        ("n2", 3, 250.0, "ml", "train")
    quality = json.loads((home / "telemetry" / "cl" / "quality.json").read_text())
    assert quality["imports"][-1]["quality"]["duplicates"] == 1 and quality["imports"][-1]["completed"] is True
    # chunk bounds: first sample's second to one second after the last one's
    chunks = {c.field: c for c in store.recorded_chunks(home, "cl")}
    assert (chunks["gpu_util"].start, chunks["gpu_util"].end) == ("2024-05-01T12:00:00+00:00",
                                                                  "2024-05-01T12:00:31+00:00")
    # the same file again: every chunk is already stored
    again = import_metrics(home, "cl", source, job_label="slurm_job")
    assert (again.chunks_written, again.chunks_skipped, again.samples) == (0, 3, 0)
    assert stored(home).height == 5


def test_fields_selection_and_gzip(tmp_path: Path) -> None:
    import gzip

    source = tmp_path / "dump.om.gz"
    source.write_bytes(gzip.compress(OPENMETRICS.encode()))
    result = import_metrics(tmp_path / "home", "cl", source, fields=["power_w", "DCGM_FI_DEV_FB_USED"])
    assert result.samples == 2 and result.fields == ["fb_used_mib", "power_w"]
    assert result.quality["unknown_metrics"] == 2  # gpu_util is known, left out on purpose: not counted


@pytest.mark.parametrize(("line", "problem"), [
    ('DCGM_FI_DEV_GPU_UTIL{Hostname="n1",gpu="0"} 5', "expected a value and a timestamp"),
    (f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0"}} five {T0}', "value 'five' is not a number"),
    (f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0" 5 {T0}', "expected label=\"value\" pairs"),
    (f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n\\t1",gpu="0"}} 5 {T0}', "unknown escape \\t"),
    ('DCGM_FI_DEV_GPU_UTIL{Hostname="n1",gpu="0"} 5 noon', "timestamp 'noon'"),
    (f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",Hostname="n2"}} 5 {T0}', "label 'Hostname' appears twice"),
])
def test_bad_openmetrics_line(tmp_path: Path, cli, line: str, problem: str) -> None:
    source = tmp_path / "bad.om"
    source.write_text(f'# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0"}} 1 {T0}\n'
                      f"{line}\n# EOF\n")
    with pytest.raises(InputError) as info:
        import_metrics(tmp_path / "home", "cl", source)
    assert info.value.line == 3 and problem in str(info.value)
    result = cli("datasets", "import-metrics", "cl", "--from", source, "--data-home", tmp_path / "home")
    assert_clean_failure(result, str(source), "line 3", problem)
    assert not (tmp_path / "home" / "telemetry").exists()  # nothing half-written


def test_findings_across_many_batches_match_a_count_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shuffled samples read 7 at a time and spooled 13 at a time: out-of-order samples and
    duplicates are found across batches exactly as a sample-by-sample count in input order finds
    them, and the first read of each duplicate is the one stored."""
    import functools
    import random

    from ddlx.datasets.telemetry import importer, openmetrics

    monkeypatch.setattr(openmetrics, "read_openmetrics", functools.partial(openmetrics.read_openmetrics,
                                                                           batch_rows=7))
    monkeypatch.setattr(importer, "_SPOOL_ROWS", 13)
    rng = random.Random(7)
    samples = []  # (host, gpu, pod, seconds, value) in input order
    for host in ("n1", "n2"):
        for gpu in (0, 1):
            for k in range(30):
                samples.append((host, gpu, rng.choice(["", "p"]), T0 + 15 * k + 21600 * (k % 3), k))
    samples += [samples[i][:4] + (1000 + i,) for i in rng.sample(range(len(samples)), 15)]  # duplicates
    rng.shuffle(samples)
    lines = []
    for host, gpu, pod, seconds, value in samples:
        pod_label = f',pod="{pod}"' if pod else ""
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{host}",gpu="{gpu}"{pod_label}}} {value} {seconds}')
    source = tmp_path / "shuffled.om"
    source.write_text("\n".join(lines) + "\n# EOF\n")
    latest: dict[tuple, int] = {}
    first: dict[tuple, int] = {}
    out_of_order = duplicates = 0
    for host, gpu, pod, seconds, value in samples:
        series = (host, gpu, pod)
        out_of_order += seconds < latest.get(series, seconds)
        latest[series] = max(latest.get(series, seconds), seconds)
        if (host, gpu, seconds) in first:
            duplicates += 1
        else:
            first[(host, gpu, seconds)] = value
    home = tmp_path / "home"
    result = import_metrics(home, "cl", source)
    assert out_of_order > 0 and duplicates > 0
    assert (result.quality["out_of_order"], result.quality["duplicates"]) == (out_of_order, duplicates)
    got = stored(home)
    assert {(h, g, us // 10**6): v for h, g, us, v in got.select("host", "gpu", "us", "value").iter_rows()} == \
        {key: float(v) for key, v in first.items()}
    assert got.height == len(first) == result.samples
    for part in store.samples_folder(home, "cl").glob("day=*/*.parquet"):  # each file sorted
        frame = pl.read_parquet(part)
        assert frame.equals(frame.sort("host", "gpu", "field", "time"))


def test_sample_after_eof(tmp_path: Path) -> None:
    source = tmp_path / "bad.om"
    source.write_text(f'# EOF\nDCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="0"}} 1 {T0}\n')
    with pytest.raises(InputError, match="line 2: a sample after '# EOF' \\(line 1\\)"):
        import_metrics(tmp_path / "home", "cl", source)


# -- CSV and Parquet ----------------------------------------------------------------------------

CSV = """time,metric,value,Hostname,gpu,UUID,modelName,pod,hpc_job,rack
2024-05-01T12:00:00Z,DCGM_FI_DEV_GPU_UTIL,40,n1,0,GPU-1,A100,,9,r1
1714564815,gpu_util,45.5,n1,0,GPU-1,A100,,9,r1
2024-05-01T14:00:30+02:00,gpu_util,46,n1,0,GPU-1,A100,,9,r1
2024-05-01 12:00:00.5Z,sm_active,0.25,n1,0,GPU-1,A100,trainer-0,,
2024-05-01T12:00:00Z,sm_active,NaN,n1,1,GPU-2,A100,,,
2024-05-01T12:00:00Z,sm_active,0.5,,1,GPU-2,A100,,,
2024-05-01T12:00:00Z,gpu_util,41,n1,0,GPU-1,A100,,9,r1
2024-05-01T12:00:00Z,DCGM_FI_DEV_ECC_DBE,0,n1,0,GPU-1,A100,,,
"""


def _check_dump_result(home: Path, result) -> None:
    # 8 rows: 1 unknown (ECC), 1 missing Hostname, 1 NaN, 1 duplicate (gpu_util n1/0 at T0: 40 kept,
    # 41 dropped), and 14:00:30+02:00 = 12:00:30Z; rows after a later one of the same series: 41 at
    # T0 after T0+30 -> 1 out of order (it is then the duplicate dropped).
    assert result.quality["unknown_metrics"] == 1 and result.quality["missing_labels"] == 1
    assert result.quality["non_finite"] == 1 and result.quality["duplicates"] == 1
    assert result.quality["out_of_order"] == 1
    got = stored(home)
    util = got.filter(pl.col("field") == "gpu_util")
    assert util["value"].to_list() == [40.0, 45.5, 46.0]
    assert util["us"].to_list() == [T0 * 10**6, (T0 + 15) * 10**6, (T0 + 30) * 10**6]
    assert set(util["hpc_job"]) == {"9"} and json.loads(util["labels"][0]) == {"rack": "r1"}
    sm = got.filter(pl.col("field") == "sm_active").row(0, named=True)
    assert (sm["value"], sm["us"], sm["pod"], sm["hpc_job"], sm["labels"]) == \
        (0.25, T0 * 10**6 + 500_000, "trainer-0", None, "{}")
    assert got.height == 4


def test_csv_dump(tmp_path: Path) -> None:
    source = tmp_path / "dump.csv"
    source.write_text(CSV)
    home = tmp_path / "home"
    _check_dump_result(home, import_metrics(home, "cl", source))


def test_parquet_dump_with_timestamp_column(tmp_path: Path) -> None:
    frame = pl.read_csv(CSV.encode(), infer_schema=False)
    times = [datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc).timestamp() + s
             for s in (0, 15, 30, 0.5, 0, 0, 0, 0)]
    frame = frame.with_columns(pl.Series("time", [int(t * 10**6) for t in times]).cast(pl.Datetime("us", "UTC")),
                               pl.col("gpu").cast(pl.Int64))
    source = tmp_path / "dump.parquet"
    frame.write_parquet(source)
    home = tmp_path / "home"
    _check_dump_result(home, import_metrics(home, "cl", source))


@pytest.mark.parametrize(("row", "field", "problem"), [
    ("2024-05-01T12:00:00,gpu_util,1,n1,0", "time", "expected RFC 3339 with an offset"),
    ("yesterday,gpu_util,1,n1,0", "time", "got 'yesterday'"),
    ("1714564800,gpu_util,,n1,0", "value", "expected a number"),
    ("1714564800,gpu_util,high,n1,0", "value", "got 'high'"),
])
def test_bad_csv_cell(tmp_path: Path, cli, row: str, field: str, problem: str) -> None:
    source = tmp_path / "bad.csv"
    source.write_text(f"time,metric,value,Hostname,gpu\n1714564800,gpu_util,1,n1,0\n{row}\n")
    result = cli("datasets", "import-metrics", "cl", "--from", source, "--data-home", tmp_path / "home")
    assert_clean_failure(result, str(source), "line 3", f"field '{field}'", problem)
    assert not (tmp_path / "home" / "telemetry").exists()


def test_csv_without_required_column(tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    source.write_text("timestamp,metric,value\n1,gpu_util,1\n")
    with pytest.raises(InputError, match="no column 'time'"):
        import_metrics(tmp_path / "home", "cl", source)


# -- appending, overlapping, resuming ---------------------------------------------------------

def _day_file(path: Path, day_start: int, hosts: int = 2) -> Path:
    lines = []
    for h in range(hosts):
        for k in range(4):  # samples every 6 h: 4 per day, one in each chunk of 6 h
            lines.append(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n{h}",gpu="0"}} {h * 10 + k} {day_start + k * 21600}')
    path.write_text("\n".join(lines) + "\n# EOF\n")
    return path


def test_second_window_adds_files_and_keeps_the_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    day1 = 1714521600  # 2024-05-01T00:00:00Z
    first = import_metrics(home, "cl", _day_file(tmp_path / "d1.om", day1))
    assert (first.samples, first.chunks_written, first.days) == (8, 4, ["2024-05-01"])
    before = tree_digest(store.samples_folder(home, "cl"))
    second = import_metrics(home, "cl", _day_file(tmp_path / "d2.om", day1 + 86400))
    assert (second.samples, second.chunks_written, second.days) == (8, 4, ["2024-05-02"])
    after = tree_digest(store.samples_folder(home, "cl"))
    assert {k: after[k] for k in before} == before and len(after) == len(before) + 4
    assert stored(home).height == 16
    # the same day again under another name overlaps what is stored: refused before writing
    shutil.copy(tmp_path / "d1.om", tmp_path / "copy.om")
    with pytest.raises(UsageError, match="already imported from file .*d1.om"):
        import_metrics(home, "cl", tmp_path / "copy.om")
    assert tree_digest(store.samples_folder(home, "cl")) == after
    # --start/--end select a part of a file
    part = import_metrics(tmp_path / "other", "cl", tmp_path / "d1.om", start=day1 + 21600, end=day1 + 3 * 21600)
    assert (part.samples, part.quality["outside_window"]) == (4, 4)


def test_file_import_resumes_after_interruption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _day_file(tmp_path / "d1.om", 1714521600)
    real = store.write_chunk
    calls = []

    def dying(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "write_chunk", dying)
    home = tmp_path / "home"
    with pytest.raises(KeyboardInterrupt):
        import_metrics(home, "cl", source)
    assert len(store.recorded_chunks(home, "cl")) == 2
    monkeypatch.setattr(store, "write_chunk", real)
    resumed = import_metrics(home, "cl", source)
    assert (resumed.chunks_skipped, resumed.chunks_written, resumed.samples) == (2, 2, 4)
    assert stored(home).height == 8
    clean = tmp_path / "clean"
    import_metrics(clean, "cl", source)
    assert stored(home).drop("us").equals(stored(clean).drop("us"))
    runs = json.loads((home / "telemetry" / "cl" / "quality.json").read_text())["imports"]
    assert [r["completed"] for r in runs] == [False, True] and not list((home / "telemetry" / "cl").glob(".spool-*"))


# -- the Prometheus HTTP API against a fake server -------------------------------------------

def util(gpu: int, t: int) -> float:
    return float((gpu * 31 + t // 15) % 100)


class FakePrometheus:
    """A query_range endpoint in a thread. `script` is a list of behaviours used one per request
    (the last one repeats): "ok", "warn", 500, "slow", "bad-json", "status-error", or (code, body)."""

    def __init__(self, script: list, port: int = 0) -> None:
        self.script = script
        self.requests: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(self.path).query))
                fake.requests.append(query)
                what = fake.script[min(len(fake.requests), len(fake.script)) - 1]
                if what == "slow":
                    time.sleep(0.6)
                    what = "ok"
                if isinstance(what, tuple):
                    return self.answer(what[0], what[1])
                if what == 500:
                    return self.answer(500, b"internal error")
                if what == "bad-json":
                    return self.answer(200, b"<html>not json")
                if what == "status-error":
                    return self.answer(200, json.dumps({"status": "error", "errorType": "execution",
                                                        "error": "boom"}).encode())
                start, end, step = int(query["start"]), int(query["end"]), int(query["step"])
                result = [{"metric": {"__name__": query["query"], "Hostname": "n1", "gpu": str(g), "job": "dcgm"},
                           "values": [[t, f"{util(g, t):g}"] for t in range(start, end + 1, step)]} for g in (0, 1)]
                body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
                if what == "warn":
                    body["warnings"] = ["remote store answered partly"]
                self.answer(200, json.dumps(body).encode())

            def answer(self, code: int, body: bytes) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _import(home: Path, url: str, **options):
    settings = {"start": T0, "end": T0 + 3600, "step": 15, "chunk": 1800, "fields": ["gpu_util"],
                "timeout": 0.3, "retries": 2, "backoff": 0.01, **options}
    return import_metrics(home, "cl", url, **settings)


def test_prometheus_import_values_and_windows(tmp_path: Path) -> None:
    with FakePrometheus(["ok"]) as fake:
        result = _import(tmp_path / "home", fake.url)
    # 1 h at 15 s in 2 chunks of 30 min: instants T0 .. T0+3585, 240 per GPU, 2 GPUs
    assert (result.samples, result.chunks_written) == (480, 2)
    assert [(r["start"], r["end"], r["step"]) for r in fake.requests] == \
        [(str(T0), str(T0 + 1785), "15"), (str(T0 + 1800), str(T0 + 3585), "15")]
    got = stored(tmp_path / "home")
    assert got.height == 480 and got["us"].min() == T0 * 10**6 and got["us"].max() == (T0 + 3585) * 10**6
    gpu1 = got.filter(pl.col("gpu") == 1)
    assert gpu1["value"].sum() == sum(util(1, T0 + 15 * k) for k in range(240))
    assert result.quality["duplicates"] == 0 and result.quality["out_of_order"] == 0


def test_prometheus_5xx_then_success_is_retried(tmp_path: Path) -> None:
    with FakePrometheus([500, 500, "ok"]) as fake:
        result = _import(tmp_path / "home", fake.url)
    assert len(fake.requests) == 4 and result.samples == 480  # 2 failures + 2 chunks


def test_prometheus_timeout_retried_then_clear_error(tmp_path: Path) -> None:
    with FakePrometheus(["slow", "ok"]) as fake:
        assert _import(tmp_path / "a", fake.url).samples == 480
    with FakePrometheus(["slow"]) as fake:
        with pytest.raises(PrometheusError) as info:
            _import(tmp_path / "b", fake.url)
    message = str(info.value)
    assert fake.url in message and "after 3 attempts" in message and "no answer within --timeout 0.3 s" in message
    assert "gpu_util" not in message and "DCGM_FI_DEV_GPU_UTIL over [2024-05-01T12:00:00Z, 2024-05-01T12:30:00Z)" \
        in message


def test_prometheus_refuses_too_large(tmp_path: Path, cli) -> None:
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": "exceeded maximum resolution of "
                       "11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"}).encode()
    with FakePrometheus([(400, body)]) as fake:
        result = cli("datasets", "import-metrics", "cl", "--prometheus", fake.url, "--start", str(T0), "--end",
                     str(T0 + 3600), "--data-home", tmp_path / "home")
    assert_clean_failure(result, fake.url, "too large", "HTTP 400", "smaller --chunk or a larger --step")
    assert len(fake.requests) == 1  # a 4xx is not retried
    body = json.dumps({"status": "error", "errorType": "execution",
                       "error": "query processing would load too many samples into memory"}).encode()
    with FakePrometheus([(422, body)]) as fake, pytest.raises(PrometheusError, match="too large \\(HTTP 422"):
        _import(tmp_path / "home", fake.url)
    with FakePrometheus([(404, b"404 page not found")]) as fake, \
            pytest.raises(PrometheusError, match="refused the query .*HTTP 404: 404 page not found"):
        _import(tmp_path / "home", fake.url)


def test_resolution_is_checked_before_querying() -> None:
    assert check_resolution(6 * 3600, 15) == 1440
    with pytest.raises(UsageError, match="11,520 points per series.*--chunk 165000 s or less.*at least 16 s"):
        check_resolution(2 * 86400, 15)
    with pytest.raises(UsageError, match="whole number of --step"):
        check_resolution(3600, 7)


def test_prometheus_status_error_and_malformed_json(tmp_path: Path) -> None:
    with FakePrometheus(["status-error"]) as fake, \
            pytest.raises(PrometheusError, match="status 'error': execution boom"):
        _import(tmp_path / "home", fake.url)
    with FakePrometheus(["bad-json"]) as fake, pytest.raises(PrometheusError, match="not JSON"):
        _import(tmp_path / "home", fake.url)
    assert len(fake.requests) == 1


def test_prometheus_warnings_count_partial_responses(tmp_path: Path) -> None:
    with FakePrometheus(["warn", "ok"]) as fake:
        result = _import(tmp_path / "home", fake.url)
    assert result.quality["partial_responses"] == 1 and result.samples == 480
    assert result.warnings == ["gpu_util 2024-05-01T12:00:00+00:00: remote store answered partly"]


def test_prometheus_import_resumes_after_server_died(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import ddlx.datasets.telemetry.prometheus as prom

    waits: list[float] = []
    monkeypatch.setattr(prom, "_sleep", waits.append)
    home = tmp_path / "home"
    args = ["datasets", "import-metrics", "cl", "--start", "2024-05-01T12:00:00Z", "--end", "2024-05-01T14:00:00Z",
            "--chunk", "30m", "--step", "15s", "--fields", "gpu_util", "--timeout", "2", "--data-home", home]
    with FakePrometheus(["ok", "ok", 500]) as fake:  # dies after two answers
        failed = cli(*args, "--prometheus", fake.url)
    assert waits == [1.0, 2.0, 4.0]  # the default backoff, doubling
    assert_clean_failure(failed, fake.url, "after 4 attempts", "HTTP 500",
                         "over [2024-05-01T13:00:00Z, 2024-05-01T13:30:00Z)")
    assert len(store.recorded_chunks(home, "cl")) == 2
    port = int(fake.url.rsplit(":", 1)[1])
    with FakePrometheus(["ok"], port) as fake:  # the same server, back again
        resumed = cli(*args, "--prometheus", fake.url)
    assert resumed.code == 0, resumed.err
    assert "480 samples in 2 chunks written, 2 chunks already stored (skipped)" in resumed.out
    assert len(fake.requests) == 2
    got = stored(home)
    assert got.height == 960 and got.unique(["host", "gpu", "field", "time"]).height == 960


def test_cli_needs_one_source(tmp_path: Path, cli) -> None:
    result = cli("datasets", "import-metrics", "cl", "--data-home", tmp_path)
    assert result.code == 2
    result = cli("datasets", "import-metrics", "cl", "--prometheus", "http://127.0.0.1:1", "--data-home", tmp_path)
    assert_clean_failure(result, "--prometheus needs --start and --end", code=2)
    result = cli("datasets", "import-metrics", "cl", "--prometheus", "http://127.0.0.1:1", "--start", str(T0),
                 "--end", str(T0 + 60), "--fields", "gpu_util,temp", "--data-home", tmp_path)
    assert_clean_failure(result, "unknown field 'temp'", code=2)
