"""A real kill (SIGKILL) in the middle of an ingest leaves the previous catalog usable and unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from ddlx.datasets.synthetic import write_synthetic_release

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")]


def test_sigkill_during_ingest_keeps_previous_catalog(tmp_path: Path) -> None:
    release, home = tmp_path / "release", tmp_path / "home"
    write_synthetic_release("pai", release, scale=0.05, seed=3)
    ingest("pai", release, home)
    jobs_before = catalog.query(home, "SELECT count(*) FROM jobs").item()
    catalog_before = (home / "catalog.duckdb").read_bytes()
    versions_before = sorted(p.name for p in (home / "store" / "pai").iterdir())
    for archive in release.glob("*.tar.gz"):
        os.utime(archive, ns=(5, 5))  # look changed, so the next ingest does real work

    process = subprocess.Popen(
        [sys.executable, "-m", "ddlx", "datasets", "ingest", "pai", "--from", str(release),
         "--data-home", str(home)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    staging = home / "store" / "pai"
    while time.monotonic() < deadline:
        # kill once the new ingest is writing its tables
        if any(p.name.startswith(".staging-") and any(p.glob("*.parquet")) for p in staging.iterdir()):
            break
        time.sleep(0.01)
    else:
        process.kill()
        pytest.fail("ingest never started writing")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    assert (home / "catalog.duckdb").read_bytes() == catalog_before
    assert catalog.query(home, "SELECT count(*) FROM jobs").item() == jobs_before
    # The next ingest clears what the killed one left and completes.
    result = ingest("pai", release, home)
    assert not result.skipped
    assert sorted(p.name for p in (home / "store" / "pai").iterdir()) == [result.store_dir.name]
    assert result.store_dir.name not in versions_before
    assert catalog.query(home, "SELECT count(*) FROM jobs").item() == jobs_before
