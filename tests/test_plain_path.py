"""Both paths through the analysis: every SYNTHETIC sample analysed with its speed-ups (fast paths,
two connections, kept results: computed and kept, then read back) and with `DDLX_PLAIN=1` (every
number by its reference query, one connection, nothing kept) gives the same tables, to the bit, and
the same findings and reproduced figures.

DuckDB runs on one thread in both (`duckdb_on_one_thread`): its parallel sums of DOUBLEs differ in
the last bit from run to run, so only then do two runs differ where their code does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlx.analysis.fast import PLAIN_ENV
from ddlx.analysis.model import AnalysisResult
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.plugins import TRACES
from ddlx.datasets.synthetic import ensure_sample
from tests.test_analysis_cache import _outputs as tables_and_findings

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("duckdb_on_one_thread")]


@pytest.fixture(scope="module")
def samples_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("plain-path") / "home"


def _outputs(result: AnalysisResult) -> tuple[int, int]:
    """How many tables and findings `result` holds."""
    return (sum(len(m.tables) for m in result.modules), sum(len(m.findings) for m in result.modules))


def _figures(result: AnalysisResult) -> list[tuple[str, list[tuple[object, object]]]]:
    return [(r.profile.name, [(f.value, f.verdict) for f in r.results]) for r in result.reproductions]


@pytest.mark.parametrize("trace", list(TRACES))
def test_the_plain_path_gives_every_table_and_finding_of_the_fast_one(
        trace: str, samples_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = ensure_sample(samples_home, trace)
    monkeypatch.delenv(PLAIN_ENV, raising=False)
    computed = run_analysis(home, trace)
    kept = run_analysis(home, trace)
    assert computed.provenance["kept_results"]["kept"] > 0
    assert kept.provenance["kept_results"]["read"] == computed.provenance["kept_results"]["kept"]
    monkeypatch.setenv(PLAIN_ENV, "1")
    plain = run_analysis(home, trace)
    assert plain.provenance["kept_results"] == {"folder": None, "read": 0, "refused": 0, "kept": 0}
    tables, findings = _outputs(plain)
    assert tables >= 30 and findings >= 30  # every module of a sample has its tables and headlines
    plain_tables, plain_findings = tables_and_findings(plain)
    for fast in (computed, kept):
        assert _outputs(fast) == (tables, findings)
        fast_tables, fast_findings = tables_and_findings(fast)
        assert fast_tables.keys() == plain_tables.keys()
        for name, frame in fast_tables.items():
            assert frame.schema == plain_tables[name].schema and frame.equals(plain_tables[name]), name
        assert fast_findings == plain_findings
        assert _figures(fast) == _figures(plain)
