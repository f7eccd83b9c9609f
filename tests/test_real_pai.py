"""Real Alibaba PAI files from ../shared/traces: checksums, headers, and machine counts (the machine
counts also on the excerpt of tests/data/real where ../shared/traces is absent)."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from ddlx.datasets import catalog
from ddlx.datasets.ingest import ingest
from ddlx.traces.pai import schema as pai_schema
from ddlx.traces.pai.release import RELEASE as PAI
from tests.conftest import FULL_TRACES, SHARED, SHARED_TRACES, needs_shared_traces, real_file

PAI_DIR = SHARED_TRACES / "alibaba-pai-v2020"


def _published_sha256(table: str) -> str:
    """The tar.gz sha256 that TRACES.md publishes for `table` (read from its table row)."""
    text = (SHARED / "TRACES.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {table} |"))
    return re.findall(r"\b[0-9a-f]{64}\b", row)[0]


@needs_shared_traces
def test_machine_spec_archive_matches_published_checksum() -> None:
    digest = hashlib.sha256((PAI_DIR / "pai_machine_spec.tar.gz").read_bytes()).hexdigest()
    assert digest == _published_sha256("pai_machine_spec")
    assert PAI.file_for("pai_machine_spec").sha256 == digest


def test_real_machine_spec_ingest_counts(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    if FULL_TRACES:  # the official archive
        (release / "pai_machine_spec.tar.gz").symlink_to(PAI_DIR / "pai_machine_spec.tar.gz")
        with tarfile.open(PAI_DIR / "pai_machine_spec.tar.gz") as tar:
            text = tar.extractfile("pai_machine_spec.csv").read().decode()
    else:  # the excerpt, as the extracted headerless CSV
        text = real_file("alibaba-pai-v2020/pai_machine_spec.csv").read_text()
        (release / "pai_machine_spec.csv").write_text(text)
    rows = list(csv.reader(io.StringIO(text)))
    machines = Counter(r[1] for r in rows)
    gpus: Counter[str] = Counter()
    for r in rows:
        gpus[r[1]] += int(r[4])

    home = tmp_path / "home"
    result = ingest("pai", release, home, tables=["pai_machine_spec"])
    assert result.tables == {"pai_machine_spec": len(rows)}
    found = catalog.query(home, """
        SELECT gpu_type, count(*) AS machines, CAST(sum(cap_gpu) AS BIGINT) AS gpus
        FROM pai_machine_spec GROUP BY gpu_type""").to_dicts()
    assert {r["gpu_type"]: r["machines"] for r in found} == dict(machines)
    assert {r["gpu_type"]: r["gpus"] for r in found} == dict(gpus)
    entry = catalog.read_registrations(home)["pai"].manifest["inputs"]["pai_machine_spec"]
    assert [f["matches_official_release"] for f in entry["files"]] == [FULL_TRACES]


@needs_shared_traces
@pytest.mark.parametrize("table", pai_schema.TABLES)
def test_official_headers_equal_declared_columns(table: str) -> None:
    header = (PAI_DIR / f"{table}.header").read_text().strip().split(",")
    assert header == list(pai_schema.COLUMNS[table])
