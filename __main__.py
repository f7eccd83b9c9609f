"""`python -m ddlx` runs the command-line interface."""

from ddlx.cli.main import run

run()
