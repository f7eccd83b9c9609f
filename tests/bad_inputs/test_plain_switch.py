"""`DDLX_PLAIN` with a value it does not know: `ddlx analyze` refuses it before it computes or writes
anything (exit 2: a mistake in how the command was called), one `Error:` line naming the variable,
the value and what it takes; the data home byte-identical and no `--out` folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddlx.datasets.ingest import ingest
from tests.conftest import assert_clean_failure, tree_digest, write_pai_release


@pytest.mark.parametrize("value", ["yes", "fast,cache", "2"])
def test_an_unknown_plain_switch_is_refused_before_anything_is_written(cli, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      value: str) -> None:
    home = tmp_path / "home"
    ingest("pai", write_pai_release(tmp_path / "release"), home)
    before = tree_digest(home)
    monkeypatch.setenv("DDLX_PLAIN", value)
    result = cli("analyze", "pai-trace", "--out", str(tmp_path / "out"), "--data-home", str(home))
    line = assert_clean_failure(result, "DDLX_PLAIN", repr(value), "expected 1, all, 0 or a comma list of fast, "
                                "lanes, kept", code=2)
    assert line.startswith("Error: DDLX_PLAIN=")
    assert tree_digest(home) == before and not (tmp_path / "out").exists()
