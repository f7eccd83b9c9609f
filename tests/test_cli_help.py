"""`ddlx --help` at 80 columns: workflow order, whole-sentence summaries, plain value names, whole option
names, hidden aliases that work, and docs/cli.md in step with the commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddlx.cli.help import click_command, help_text, walk
from ddlx.cli.main import app

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


@pytest.fixture(scope="module")
def helps() -> dict[tuple[str, ...], str]:
    command = click_command(app)
    return {path: help_text(command, path, 80) for path, _ in walk(command)}


def _commands_section(text: str) -> list[tuple[str, str]]:
    body = text.split("\nCommands:\n", 1)[1]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^  (\S+)\s+(.*)$", body, re.M)]


def test_top_level_commands_in_workflow_order(helps):
    names = [name for name, _ in _commands_section(helps[()])]
    assert names == ["datasets", "analyze", "report", "reproduce", "sql", "predict", "simulate", "placement"]


def test_every_summary_is_a_whole_sentence(helps):
    groups = [path for path, text in helps.items() if "\nCommands:\n" in text]
    assert len(groups) == 4  # ddlx, datasets, report, predict
    for path in groups:
        for name, summary in _commands_section(helps[path]):
            assert summary.endswith(".") and not summary.endswith("..."), (path, name, summary)
            assert summary[0].isupper(), (path, name, summary)


def test_no_line_wider_than_80_and_no_type_tags(helps):
    tags = re.compile(r"<(str|int|bool|float|path|list\[[a-z]+\]|int range|float range)>|\b(TEXT|INTEGER|FLOAT)\b")
    for path, text in helps.items():
        for line in text.splitlines():
            assert len(line) <= 80, (path, line)
            assert not tags.search(line), (path, line)


def test_option_names_are_whole(helps):
    """Each option the command declares appears whole in its help (none cut, as `--max-rejected-…`)."""
    command = click_command(app)
    for path, sub in walk(command):
        text = helps[path]
        assert "…" not in text, path
        for param in sub.params:
            if getattr(param, "hidden", False) or not getattr(param, "opts", None):
                continue
            for opt in [*param.opts, *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-") and param.param_type_name == "option":
                    assert re.search(rf"(^|[\s,/]){re.escape(opt)}([\s,=]|$)", text, re.M), (path, opt)


def test_hidden_aliases_are_not_in_help(helps):
    for path, text in helps.items():
        assert "--json" not in text, path
        assert "--trace " not in text and "--trace/" not in text, path
        assert "LEGACY" not in text and "NAMES..." not in text, path
    assert "dataset" not in [n for n, _ in _commands_section(helps[()])]


def test_docs_cli_md_is_generated_from_the_commands():
    from ddlx.cli.reference import reference

    assert DOCS.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md differs from the commands' help; regenerate it with "
        "`PYTHONPATH=.. python -m ddlx.cli.reference > docs/cli.md`")


def test_analyze_spellings():
    from ddlx.cli.main import _analyzed

    assert _analyzed("pai", []) == ("pai", True)
    assert _analyzed("mine", []) == ("mine", False)
    assert _analyzed(None, ["pai-trace"]) == ("pai", True)
    assert _analyzed(None, ["dataset", "pai"]) == ("pai", False)


def test_analyze_without_data_is_a_usage_error(cli):
    result = cli("analyze")
    assert result.code == 2 and "--dataset NAME" in result.err
    result = cli("analyze", "nosuch-trace")
    assert result.code == 2 and "--dataset NAME" in result.err


def _tiny_import(cli, tmp_path: Path) -> Path:
    table = tmp_path / "jobs.csv"
    table.write_text("id,submit,gpus,duration\n1,1700000000,1,100\n2,1700000600,2,200\n3,1700001200,4,50\n")
    home = tmp_path / "home"
    result = cli("datasets", "import", "mine", "--from", table, "--map", "submit=submit,gpus=gpus,duration=duration",
                 "--data-home", home)
    assert result.code == 0, result.err
    return home


def test_old_spellings_give_the_same_answer(cli, tmp_path):
    home = _tiny_import(cli, tmp_path)
    chosen = cli("datasets", "info", "--dataset", "mine", "--format", "json", "--data-home", home)
    assert chosen.code == 0, chosen.err
    assert '"rows": 3' in chosen.out
    for old in (("datasets", "info", "mine", "--format", "json"), ("datasets", "info", "mine", "--json"),
                ("datasets", "info", "--dataset", "mine", "--json")):
        again = cli(*old, "--data-home", home)
        assert again.code == 0, (old, again.err)
        assert again.out == chosen.out, old
    listed = cli("datasets", "status", "--format", "json", "--data-home", home)
    assert listed.code == 0 and '"mine"' in listed.out
    assert cli("datasets", "status", "--json", "--data-home", home).out == listed.out
    assert cli("datasets", "list", "--json").out == cli("datasets", "list", "--format", "json").out
    text = cli("datasets", "info", "--dataset", "mine", "--data-home", home)
    assert text.code == 0 and "validation:" in text.out


def test_dataset_named_twice_or_bad_format_is_a_usage_error(cli, tmp_path):
    both = cli("datasets", "info", "mine", "--dataset", "mine", "--data-home", tmp_path / "home")
    assert both.code == 2 and "--dataset NAME" in both.err
    bad = cli("datasets", "list", "--format", "yaml")
    assert bad.code == 2 and "expected text or json" in bad.err
