"""The `ddlx` command line: parse the arguments, call the library, render the answer.

`main.app` is the Typer application and `main.run` the entry point (`ddlx`, `python -m ddlx`): it
is the one place where ddlx's errors become an `Error: ...` line and exit code 1, and an interrupt
`Error: interrupted` and exit code 130. The other modules hold the commands of one group each.
"""

from ddlx.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {"app": "cli.main", "run": "cli.main"})
