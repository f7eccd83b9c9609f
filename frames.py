"""The frames ddlx's Python API returns: polars DataFrames whose `.to_pandas()` says in one line how
to get pandas when it is not installed (ddlx itself does not need it)."""

from __future__ import annotations

from typing import Any

import polars as pl

from ddlx.errors import DdlxError

#: What to run for `.to_pandas()` (pandas is not a dependency of ddlx).
PANDAS_REMEDY = 'pip install pandas (or pip install "ddlx[pandas]")'


class MissingPackageError(DdlxError, ModuleNotFoundError):
    """An optional package a call needs is not installed; the message says what to install."""


class Frame(pl.DataFrame):
    """A polars DataFrame (every polars method works, and returns plain polars frames)."""

    def to_pandas(self, *args: Any, **kwargs: Any) -> Any:
        """The frame as a pandas DataFrame (polars' own conversion); needs pandas installed."""
        try:
            import pandas  # noqa: F401
        except ModuleNotFoundError:
            raise MissingPackageError(f".to_pandas() needs pandas, which is not installed: {PANDAS_REMEDY}",
                                      name="pandas") from None
        return super().to_pandas(*args, **kwargs)


def frame(data: pl.DataFrame) -> Frame:
    """`data` as a `Frame` (the same columns and rows; no copy of the data)."""
    return data if isinstance(data, Frame) else Frame(data)
