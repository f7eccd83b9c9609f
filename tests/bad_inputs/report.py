"""The table of failing corpus cases, grouped by cause, from the log the corpus writes.

    DDLX_BAD_INPUTS_LOG=/tmp/bad.jsonl python -m pytest -q tests/bad_inputs -p no:randomly
    python -m tests.bad_inputs.report /tmp/bad.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict

#: (pattern on the case id, pattern on the cause) -> the group a failing case is listed under.
GROUPS: list[tuple[str, str, str]] = [
    (r"archive-(cut|last)", r"accepted", "truncated archive accepted"),
    (r"archive-member-(traversal|absolute)", r"accepted", "archive member with ../ or absolute name used"),
    (r"archive-member-(symlink|hardlink)", r"accepted",
     "symlink or hard-link member silently skipped (file treated as absent)"),
    (r"archive-member", r"lacks", "archive member refusal does not name the member"),
    (r"os-(directory|fifo)", r"accepted", "directory or FIFO in place of a file silently skipped"),
    (r"header-only", r"accepted", "header-only file accepted as zero rows"),
    (r"nul-byte", r"accepted", "NUL byte in a text field accepted"),
    (r"year-|AllocTRES", r"accepted", "implausible date or unreadable TRES accepted"),
    (r".", r"expected a counted finding", "documented finding now refused (docs and value ranges disagree)"),
    (r"archive-cut", r"lacks", "truncated archive reported as an OS error in the data home"),
    (r".", r"lacks \[.*(line|field)", "Error line lacks the line or field"),
    (r".", r"lacks", "Error line lacks the file or problem"),
    (r".", r"traceback", "traceback"),
    (r".", r"changed", "refused but the data home changed"),
    (r".", r"", "other"),
]


def group_of(record: dict) -> str:
    for id_pattern, cause_pattern, label in GROUPS:
        if re.search(id_pattern, record["id"]) and re.search(cause_pattern, record["cause"] or ""):
            return label
    return "other"


def trim(text: str) -> str:
    text = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/[^/ ]+/", "…/", text)
    return (text[:150]).replace("|", "\\|")


def main(path: str) -> None:
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    records = [r for r in lines if "target" in r]
    family_table([r for r in lines if "family" in r])
    if not records:
        return
    print(f"{len(records)} cases run, {sum(r['passed'] for r in records)} passed, "
          f"{sum(not r['passed'] for r in records)} failed\n")
    print("| target | cases run | failed |\n|---|---|---|")
    per_target = Counter(r["target"] for r in records)
    failed = Counter(r["target"] for r in records if not r["passed"])
    for target, count in per_target.items():
        print(f"| {target} | {count} | {failed[target]} |")
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if not record["passed"]:
            groups[group_of(record)].append(record)
    for label, members in groups.items():
        print(f"\n### {label} ({len(members)})\n")
        print("| case | exit | last stderr line |\n|---|---|---|")
        for r in members:
            print(f"| {r['id']} | {r['code']} | {trim(r['last'])} |")


def family_table(records: list[dict]) -> None:
    """Per family of `tests/bad_inputs/test_<family>.py`: cases, passed, refused (the last command
    exited non-zero) and accepted (exit 0), then the failing cases."""
    if not records:
        return
    print("| family | cases | passed | refused (exit 1 or 2) | accepted (exit 0) | no command |")
    print("|---|---|---|---|---|---|")
    for family in sorted({r["family"] for r in records}):
        mine = [r for r in records if r["family"] == family]
        codes = Counter("none" if r["code"] is None else ("accepted" if r["code"] == 0 else "refused") for r in mine)
        print(f"| {family} | {len(mine)} | {sum(r['passed'] for r in mine)} | {codes['refused']} | "
              f"{codes['accepted']} | {codes['none']} |")
    for r in records:
        if not r["passed"]:
            print(f"failed: {r['family']}: {r['id']}")
    print()


if __name__ == "__main__":
    main(sys.argv[1])
