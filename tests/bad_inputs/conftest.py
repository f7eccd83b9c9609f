"""The families of `tests/bad_inputs/` beside the corpus (`test_<family>.py`): with
DDLX_BAD_INPUTS_LOG=FILE set, each case of a family appends one JSON line (family, case, whether it
passed, and the exit code of the last `ddlx` command it ran: non-zero for a refusal), which
`python -m tests.bad_inputs.report FILE` counts per family beside the corpus's targets."""

from __future__ import annotations

import json
import os

import pytest

#: The corpus logs its cases itself, with their targets (`test_corpus.py`).
_CORPUS = "test_corpus"


@pytest.fixture
def cli(cli, request: pytest.FixtureRequest):
    """The `cli` of `tests/conftest.py`, remembering the exit code of the last command a case ran."""

    def invoke(*args: object):
        result = cli(*args)
        request.node.ddlx_last_code = result.code
        return result

    return invoke


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    path = os.environ.get("DDLX_BAD_INPUTS_LOG")
    family = item.path.stem.removeprefix("test_")
    if not path or item.path.stem == _CORPUS or report.when != "call":
        return
    record = {"family": family, "id": item.nodeid.split("::", 1)[-1], "passed": report.passed,
              "code": getattr(item, "ddlx_last_code", None)}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
