"""benchmarks/placement.py without Go and without the real trace: its help, the reasons it gives for
not timing the owners' simulator, and its reading of the owners' log (a hand-written excerpt in the
log's own line format, pkg/simulator/analysis.go), checked against values worked out by hand."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ddlx.errors import InputError

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "placement.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("placement_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _alloc(used: int, total: int, arrived: int) -> str:
    return (f'time="2026-12-02T04:17:56Z" level=info msg="[Alloc]; Used nodes: 1; Used GPUs: 2; '
            f'Used GPU Milli: {used}; Total GPUs: {total}; Arrived GPU Milli: {arrived}\\n"\n')


def test_help_names_the_owners_checkout():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    assert "--owners-repo DIR" in done.stdout
    assert "kubernetes-scheduler-" in done.stdout


def test_skips_without_go(bench, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    run, why = bench.owners_run(tmp_path)
    assert run is None
    assert why.startswith("skipped: no Go toolchain on PATH")


def test_skips_without_a_checkout(bench, monkeypatch, tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    go = tools / "go"
    go.write_text("#!/bin/sh\nexit 1\n")
    go.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    assert bench.owners_run(None) == (None, "skipped: name a checkout of hkust-adsl/kubernetes-scheduler-simulator "
                                            "(with its vendor/ folder) with --owners-repo DIR")
    (tmp_path / "repo" / "vendor").mkdir(parents=True)
    run, why = bench.owners_run(tmp_path / "repo")
    assert run is None
    assert why == (f"skipped: {tmp_path / 'repo'} is not a checkout of the owners' simulator: no cmd, "
                   "scripts/generate_config_and_run.py, data/pod_csv_to_yaml.py, "
                   "data/node_yaml/openb_node_list_gpu_node.yaml")


def test_reads_the_owners_log(bench, tmp_path):
    # 2 GPUs = 2,000 milli-GPU; arrived 1,990 and 2,010 are 99.5 % and 100.5 %, both read as 100 %
    # (half to even), so the value at 100 % is the mean of 1 - 1800/2000 and 1 - 1900/2000 = 0.075.
    log = tmp_path / "simon.log"
    log.write_text('time="x" level=info msg="[10] attempt to create pod(paib-gpu/openb-pod-1599)\\n"\n'
                   + _alloc(500, 2, 500) + _alloc(1000, 2, 1000) + _alloc(1500, 2, 1500)
                   + "I1202 04:21:32.344310 trace.go:205] Trace[379074337]: \"Scheduling\"\n"
                   + _alloc(1800, 2, 1990) + _alloc(1900, 2, 2010) + _alloc(1900, 2, 2600))
    arrivals = bench.read_owners_log(log)
    assert arrivals["arrived_percent"].to_list() == [25, 50, 75, 100, 100, 130]
    assert arrivals["step"].to_list() == [1, 2, 3, 4, 5, 6]
    assert arrivals["unallocated_share"].to_list() == pytest.approx([0.75, 0.5, 0.25, 0.1, 0.05, 0.05])
    owners = pl.DataFrame({"task_list": ["default", "default", "default"], "policy": ["fgd", "fgd", "best-fit"],
                           "seed": [42, 43, 42], "percent": [100, 100, 100],
                           "unallocated_share": [0.07, 0.08, 0.2]})
    run = bench.OwnersRun(1.0, 2.0, "go1.19.8", arrivals)
    assert bench.owners_run_check(run, owners) == (
        "its unallocated GPU share at 100% arrived workload 7.50% (their published seed 42: 7.00%; "
        "inside their range [7.00%, 8.00%] over 2 seeds)")


def test_one_cluster_size_per_log(bench, tmp_path):
    log = tmp_path / "simon.log"
    log.write_text(_alloc(500, 2, 500) + _alloc(500, 3, 1000))
    with pytest.raises(InputError, match=r"simon\.log, line 2: expected the same Total GPUs"):
        bench.read_owners_log(log)
