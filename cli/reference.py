"""The CLI reference, docs/cli.md: every command's `--help` at 80 columns, generated from the commands.

Regenerate with `python -m ddlx.cli.reference > docs/cli.md`; `tests/test_cli_help.py` fails when the file
differs from what this prints.
"""

from __future__ import annotations

INTRODUCTION = """\
# Command-line reference

Every `ddlx` command and sub-command, as its `--help` prints it at 80 columns. This page is generated:
`python -m ddlx.cli.reference > docs/cli.md` (a test fails when it differs from the commands).

## Conventions

- **The data is `--dataset NAME`** in every command that reads data: a dataset of the catalog (an
  ingested trace, an import) or a registered trace's name, whose SYNTHETIC sample is used when it is not
  ingested. `ddlx analyze TRACE-trace` is the short form for a registered trace, the main job (its
  results go to ./ddlx-results/TRACE-trace). Commands that make data from a trace's release take the
  trace as their argument (`ddlx datasets ingest TRACE --from DIR`), and `ddlx datasets import NAME`
  names the dataset it makes.
- **JSON is `--format json`**, in every command that prints JSON (`datasets list`, `datasets status`,
  `datasets info`, `sql`, `reproduce`).
- The earlier spellings still work and are not listed: `--json`, `--trace NAME`, a bare dataset name
  (`ddlx datasets info NAME`, `ddlx report compare NAME NAME`) and `ddlx analyze dataset NAME`.
- Long work (`datasets synth`, `datasets ingest`, `datasets import-metrics`, `report figures`,
  `placement`) shows its progress on stderr when stderr is a terminal: the count, the rate and, where the
  total is known, the time left. A pipe or a log file receives none of it.
"""


def reference(width: int = 80) -> str:
    """docs/cli.md: the introduction, then each command's help text at `width` columns."""
    from ddlx.cli.help import click_command, help_text, walk
    from ddlx.cli.main import app

    command = click_command(app)
    sections = [INTRODUCTION]
    for path, _ in walk(command):
        title = " ".join(("ddlx", *path))
        text = help_text(command, path, width).rstrip()
        sections.append(f"## `{title}`\n\n```text\n{text}\n```\n")
    return "\n".join(sections)


if __name__ == "__main__":
    import sys

    sys.stdout.write(reference())
