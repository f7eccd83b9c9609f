"""Import from a real Prometheus server: a generated OpenMetrics file is turned into TSDB blocks with
`promtool tsdb create-blocks-from openmetrics`, served by `prometheus`, and read back with range
queries; the imported samples must equal the generated ones exactly.

Skipped where `prometheus`/`promtool` are missing, unless DDLX_REQUIRE_PROMETHEUS is set (`.ci/run`
sets it and installs Debian's prometheus package), where it fails instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest

from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.telemetry import store
from ddlx.datasets.telemetry.generator import ClusterSpec, write_synthetic_cluster
from ddlx.datasets.telemetry.importer import import_metrics
from tests.bad_inputs.telemetry_home import register

pytestmark = pytest.mark.prometheus

HOSTS = ("node-a", "node-b")
GPUS = (0, 1)
INTERVAL_S = 60
HOURS = 3
FIELDS = {"DCGM_FI_DEV_GPU_UTIL": "gpu_util", "DCGM_FI_DEV_FB_USED": "fb_used_mib"}


def _binaries() -> tuple[str, str]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus and promtool:
        return prometheus, promtool
    if os.environ.get("DDLX_REQUIRE_PROMETHEUS"):
        pytest.fail("DDLX_REQUIRE_PROMETHEUS is set but prometheus/promtool are not on PATH")
    pytest.skip("prometheus and promtool are not installed (Debian: apt-get install prometheus); "
                "set DDLX_REQUIRE_PROMETHEUS=1 to fail instead of skipping")


def value(metric: str, host: int, gpu: int, k: int) -> float:
    """The seeded formula of the generated samples (k: index of the sample in time)."""
    if metric == "DCGM_FI_DEV_GPU_UTIL":
        return float((host * 7 + gpu * 13 + k * 3) % 101)
    return float(1000 + (k * 17 + gpu * 5 + host * 11) % 4000)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(promtool: str, prometheus: str, source: Path, tmp_path: Path) -> Iterator[str]:
    """A real Prometheus serving the samples of the OpenMetrics file `source` (turned into TSDB blocks by
    promtool) on a free local port; yields its URL and stops it afterwards."""
    data = tmp_path / "tsdb"
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True, timeout=300)
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "prometheus.log", "wb")
    server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={data}",
                               f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()
            assert time.monotonic() < deadline, "prometheus did not become ready in 60 s"
            time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_import_from_real_prometheus(tmp_path: Path) -> None:
    prometheus, promtool = _binaries()
    # start two days ago at a whole hour: within retention, and old enough to be in blocks only
    now = int(time.time())
    t0 = (now - 2 * 86400) // 3600 * 3600
    steps = HOURS * 3600 // INTERVAL_S
    lines = []
    for metric in FIELDS:
        lines.append(f"# TYPE {metric} gauge")
        for h, host in enumerate(HOSTS):
            for gpu in GPUS:
                labels = f'Hostname="{host}",UUID="GPU-{h}-{gpu}",gpu="{gpu}",hpc_job="{100 + h}",modelName="A100"'
                for k in range(steps):
                    lines.append(f"{metric}{{{labels}}} {value(metric, h, gpu, k):g} {t0 + k * INTERVAL_S}.000")
    lines.append("# EOF")
    source = tmp_path / "generated.om"
    source.write_text("\n".join(lines) + "\n")
    home = tmp_path / "home"
    register(home, "cluster")  # the dataset the samples go beside
    with serving(promtool, prometheus, source, tmp_path) as url:
        result = import_metrics(home, "cluster", url, start=t0, end=t0 + HOURS * 3600, step=INTERVAL_S,
                                chunk="1h", fields=list(FIELDS.values()), timeout=30, retries=1, backoff=0.1)

    expected_count = len(FIELDS) * len(HOSTS) * len(GPUS) * steps  # 2 x 2 x 2 x 180 = 1440
    assert expected_count == 1440
    assert result.samples == expected_count
    assert result.chunks_written == len(FIELDS) * HOURS and result.chunks_skipped == 0
    assert result.quality["duplicates"] == 0 and result.quality["missing_labels"] == 0
    got = pl.read_parquet(store.samples_folder(home, "cluster") / "day=*" / "*.parquet")
    assert got.height == expected_count
    rows = []
    for metric, name in FIELDS.items():
        for h, host in enumerate(HOSTS):
            for gpu in GPUS:
                for k in range(steps):
                    rows.append((host, gpu, name, t0 + k * INTERVAL_S, value(metric, h, gpu, k), f"{100 + h}"))
    want = pl.DataFrame(rows, schema={"host": pl.String, "gpu": pl.Int32, "field": pl.String, "t": pl.Int64,
                                      "value": pl.Float64, "hpc_job": pl.String}, orient="row")
    got_rows = got.select("host", "gpu", "field", pl.col("time").dt.epoch("s").alias("t"), "value", "hpc_job")
    key = ["host", "gpu", "field", "t"]
    assert got_rows.sort(key).equals(want.sort(key))
    # per-GPU sums of gpu_util, from the formula: node-a/gpu0 = sum((3k) % 101 for k < 180)
    sums = got.filter(pl.col("field") == "gpu_util").group_by("host", "gpu").agg(pl.col("value").sum())
    a0 = sums.filter((pl.col("host") == "node-a") & (pl.col("gpu") == 0))["value"][0]
    assert a0 == sum((3 * k) % 101 for k in range(180))
    assert got["uuid"].n_unique() == 4 and set(got["model"].unique()) == {"A100"}
    assert datetime.fromtimestamp(t0, timezone.utc).date().isoformat() in result.days[0]


def test_a_synthetic_cluster_through_prometheus_matches_its_plan(tmp_path: Path) -> None:
    """The generator's cluster, served by a real Prometheus and read over HTTP, gives every job the
    allocated and idle GPU-seconds of the generator's own plan. The samples carry no job label here:
    backfilled blocks hold no staleness markers, so a series that ends (a job label that changes) would
    still answer range queries for Prometheus' 5-minute lookback; attribution comes from the accounting."""
    prometheus, promtool = _binaries()
    spec = ClusterSpec(gpus=16, days=1, step=60, seed=11, job_label=False)
    write_synthetic_cluster(spec, tmp_path / "gen")
    plan = json.loads((tmp_path / "gen" / "plan.json").read_text())
    home = tmp_path / "home"
    import_dataset("lab", tmp_path / "gen" / "sacct.txt", home, preset="slurm", tz=spec.tz)
    start = datetime.fromisoformat(plan["window"]["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(plan["window"]["end"].replace("Z", "+00:00"))
    with serving(promtool, prometheus, tmp_path / "gen" / "dcgm.om", tmp_path) as url:
        result = import_metrics(home, "lab", url, start=start, end=end, step=spec.step, chunk="6h",
                                fields=["gpu_util", "sm_active"], timeout=60, retries=1, backoff=0.1)
    assert result.samples == 2 * spec.gpus * 86400 // spec.step and result.quality["duplicates"] == 0
    analysis = run_analysis(home, "lab", ["gpu_efficiency"])
    (module,) = [m for m in analysis.modules if m.module == "gpu_efficiency"]
    (jobs,) = [t.frame for t in module.tables if t.name == "jobs"]
    got = {row["job_id"]: (round(row["allocated_gpu_hours"] * 3600), round((row["idle_gpu_hours"] or 0) * 3600))
           for row in jobs.iter_rows(named=True)}
    want = {job["job_id"]: (job["alloc_gpu_s"], job["idle_gpu_s"]) for job in plan["jobs"] if job["alloc_gpu_s"] > 0}
    assert len(want) > 10 and got == want
