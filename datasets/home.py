"""Where ddlx keeps downloads, Parquet files and the catalog (the data home).

The data home is `--data-home` when given, else `$DDLX_HOME`, else a per-user data folder
(`$XDG_DATA_HOME/ddlx` or `~/.local/share/ddlx` on Linux, `~/Library/Application Support/ddlx`
on macOS, `%LOCALAPPDATA%\\ddlx` on Windows). Layout:

    <home>/catalog.duckdb          DuckDB views over the Parquet files (open it with plain duckdb)
    <home>/store/<trace>/<version>/ one folder per ingest: <table>.parquet and manifest.json
    <home>/downloads/<trace>/       official release files fetched by `ddlx datasets download`
    <home>/samples/                 small synthetic catalogs built when no real data is ingested

Intermediate results an analysis keeps for the next run on the same data are not data: they go to
the cache folder (`default_cache_dir`), never into the data home.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def default_data_home() -> Path:
    """The data home when no `--data-home` is given: `$DDLX_HOME`, else the per-user data folder."""
    configured = os.environ.get("DDLX_HOME")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "ddlx"


def default_cache_dir() -> Path:
    """Where ddlx keeps what it can always compute again (`ddlx.analysis.cache`): `$DDLX_CACHE_DIR`,
    else the per-user cache folder (`$XDG_CACHE_HOME/ddlx` or `~/.cache/ddlx` on Linux,
    `~/Library/Caches/ddlx` on macOS, `%LOCALAPPDATA%\\ddlx\\Cache` on Windows)."""
    configured = os.environ.get("DDLX_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "ddlx" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "ddlx"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ddlx"


def resolve_data_home(data_home: Path | str | None = None) -> Path:
    """The data home to use: the given folder, else `default_data_home()`; made absolute."""
    home = Path(data_home).expanduser() if data_home else default_data_home()
    return home.resolve()


def downloads_dir(home: Path, trace: str) -> Path:
    return home / "downloads" / trace


def store_dir(home: Path, trace: str) -> Path:
    return home / "store" / trace


def samples_home(home: Path, trace: str) -> Path:
    """A separate data home holding the synthetic sample of `trace`, apart from real data."""
    return home / "samples" / f"{trace}-synthetic"
