"""Reading JSON a user hands ddlx (a job log, an export's sidecar, a throughputs table, a model card):
`load_json` is `json.loads` with the nesting of arrays and objects bounded by `MAX_JSON_DEPTH`.

Python's parser recurses once per level, so a document nested some thousands deep stops it with a
`RecursionError` (a traceback, not a message). `load_json` measures the depth first and refuses a
deeper document with a `json.JSONDecodeError` (`JsonTooDeepError`) at the position where it goes
past the limit: every reader that already reports malformed JSON by its line and column reports
this one the same way.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

#: The deepest nesting of arrays and objects ddlx reads (levels, the outermost counted as 1). The
#: formats ddlx reads need at most 7 (a job log of attempts: jobs, job, attempts, attempt, detail, entry,
#: gpus).
MAX_JSON_DEPTH = 100

#: A JSON string (its escapes included); brackets inside one are text, not nesting.
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonTooDeepError(json.JSONDecodeError):
    """A JSON document nested deeper than the limit; `lineno` and `colno` say where it went past it."""


def _depth_bound(text: str) -> int:
    """A bound on the nesting depth of the JSON `text`: the depth its brackets reach, brackets inside
    strings counted too (one pass in C over the text, then one over its brackets)."""
    brackets = _NOT_BRACKET.sub("", text)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_nesting(text: str, limit: int = MAX_JSON_DEPTH) -> None:
    """`JsonTooDeepError` at the first bracket of the JSON `text` that opens level `limit + 1`
    (brackets inside strings are text)."""
    if len(text) <= limit or _depth_bound(text) <= limit:
        return
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        step = _STEP.get(match.group(), 0)
        depth += step
        if depth > limit:
            raise JsonTooDeepError(f"arrays and objects nested deeper than {limit} levels, the most ddlx reads",
                                   text, match.start())


def load_json(text: str, limit: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """`json.loads(text, **options)` for a document nested at most `limit` deep; `JsonTooDeepError`
    (a `json.JSONDecodeError`) for a deeper one."""
    check_nesting(text, limit)
    return json.loads(text, **options)
