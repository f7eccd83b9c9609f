"""Spill folders of DuckDB in the data home: one per run, removed after it, and those a killed run
left behind removed by the next."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from ddlx.datasets.catalog import spill_folder


def _gone_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_run_spills_into_its_own_folder_and_removes_it(tmp_path: Path) -> None:
    with spill_folder(tmp_path) as folder:
        assert folder.parent == tmp_path / ".spill" and folder.is_dir()
        assert folder.name.startswith(f"{socket.gethostname()}.{os.getpid()}.")
        (folder / "spilled.tmp").write_bytes(b"x" * 1024)
    assert not folder.exists() and not (tmp_path / ".spill").exists()


def test_folders_left_by_killed_runs_of_this_host_are_removed(tmp_path: Path) -> None:
    host = socket.gethostname()
    parent = tmp_path / ".spill"
    killed = parent / f"{host}.{_gone_pid()}.abc123"
    running = parent / f"{host}.{os.getpid()}.def456"
    other_host = parent / f"not-{host}.{_gone_pid()}.0a0b0c"
    for folder in (killed, running, other_host):
        folder.mkdir(parents=True)
        (folder / "spilled.tmp").write_bytes(b"x")
    with spill_folder(tmp_path) as folder:
        assert not killed.exists()
        assert running.exists() and other_host.exists() and folder.exists()
    assert sorted(p.name for p in parent.iterdir()) == sorted([running.name, other_host.name])
