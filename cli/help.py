"""How `ddlx --help` reads: commands in workflow order, plain value names, hidden aliases left out.

`click_command(app)` turns the Typer application into the click command that `ddlx` runs, after
`readable` has named each option's value (`--out PATH`, `--seeds N`, `--policy POLICY`) where Typer would
print a type tag (`<str>`, `<int range>`, `<list[str]>`), and dropped hidden arguments from the usage line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperGroup

#: The order `ddlx --help` lists the commands in: the order of the work (get data, analyse it, report,
#: check against the papers, query, predict, simulate, place).
WORKFLOW_ORDER = ("datasets", "analyze", "report", "reproduce", "sql", "predict", "simulate", "placement")

#: Longest option-derived value name; a longer option's value is named VALUE.
_NAME_LIMIT = 10


class WorkflowGroup(TyperGroup):
    """A command group listing the top-level commands in `WORKFLOW_ORDER`, the others after them in the
    order they were added."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        names = super().list_commands(ctx)
        return [n for n in WORKFLOW_ORDER if n in names] + [n for n in names if n not in WORKFLOW_ORDER]


def value_name(param: Any) -> str:
    """The name of a parameter's value in help: PATH for a path, N for a whole number, NUMBER for a
    real one, else the option's own name in capitals (POLICY for `--policy`), or VALUE when that is long;
    an argument's value is its name in capitals."""
    kind = param.type_descriptor.annotation
    if get_origin(kind) in (list, tuple):
        kind = get_args(kind)[0]
    if isinstance(param, TyperArgument):
        return (param.name or "value").upper()
    if kind is Path:
        return "PATH"
    if kind is int:
        return "N"
    if kind is float:
        return "NUMBER"
    longest = max((o for o in param.opts if o.startswith("--")), key=len, default=param.opts[0])
    name = longest.lstrip("-").replace("-", "_").upper()
    return name if len(name) <= _NAME_LIMIT else "VALUE"


def readable(command: Any) -> Any:
    """Name the values of `command` and of every sub-command (`value_name`, unless a metavar is set) and
    write arguments in the usage line as click does (NAME, [NAME]...), hidden ones not at all; returns
    `command`."""
    for param in command.params:
        flag = not isinstance(param, TyperArgument) and (param.is_flag or param.count)
        if param.metavar is None and not flag:
            param.metavar = value_name(param)
        if isinstance(param, TyperArgument):
            param.display_type_rich = _no_type  # the Arguments section shows NAME, not NAME <str>
            param.get_usage_pieces = _no_usage if param.hidden else _usage_of(param)
    for sub in getattr(command, "commands", {}).values():
        readable(sub)
    return command


def _no_usage(ctx: typer.Context) -> list[str]:
    return []


def _no_type(ctx: typer.Context) -> None:
    return None


def _usage_of(param: TyperArgument) -> Any:
    """An argument in the usage line as click writes it: NAME when required, [NAME] when not, then ...
    when it takes several values; a metavar set on the argument is written as it is."""
    name = param.metavar or (param.name or "").upper()
    text = (name if param.required or name.startswith("[") else f"[{name}]") + ("..." if param.nargs != 1 else "")
    return lambda ctx: [text]


def click_command(app: typer.Typer) -> Any:
    """The click command of `app` as `ddlx` runs it and `docs/cli.md` shows it (`readable`)."""
    return readable(typer.main.get_command(app))


def walk(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every visible command under `command` with its path of names, the command itself first, each group
    before its sub-commands, in the order `--help` lists them."""
    found: list[tuple[tuple[str, ...], Any]] = [(path, command)]
    if isinstance(command, TyperGroup):
        ctx = typer.Context(command, info_name=path[-1] if path else "ddlx")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found.extend(walk(sub, (*path, name)))
    return found


def help_text(command: Any, path: tuple[str, ...], width: int = 80) -> str:
    """The `--help` text of the command at `path` (names under `ddlx`), wrapped at `width` columns."""
    parent: typer.Context | None = None
    ctx = typer.Context(command, info_name="ddlx", terminal_width=width, max_content_width=width)
    current = command
    for name in path:
        parent = ctx
        assert isinstance(current, TyperGroup)
        sub = current.get_command(ctx, name)
        assert sub is not None, path
        current = sub
        ctx = typer.Context(current, info_name=name, parent=parent, terminal_width=width, max_content_width=width)
    return current.get_help(ctx)
