"""Results an analysis run does not compute twice (`KeptResults`): those computed once per run and
shared by its connections (`OnceResults`), and those kept between runs on the same store version
(`ddlx.analysis.cache.ResultCache`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ddlx.analysis.cache import ResultCache

T = TypeVar("T")


class OnceResults:
    """Results computed once per run (`KeptResults.once`), shared by the run's connections: a
    result another thread is computing is waited for, never computed twice at once. Should that
    thread fail, a waiting one computes it itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[str, Any] = {}
        self._computing: dict[str, threading.Event] = {}

    def get(self, key: str, compute: Callable[[], T]) -> T:
        """The result under `key`, from `compute()` at the first call."""
        while True:
            with self._lock:
                if key in self._results:
                    return self._results[key]
                computing = self._computing.get(key)
                if computing is None:
                    computing = self._computing[key] = threading.Event()
                    break
            computing.wait()
        try:
            value = compute()
            with self._lock:
                self._results[key] = value
            return value
        finally:
            with self._lock:
                del self._computing[key]
            computing.set()

    def clear(self) -> None:
        """Let go of every result held (a run that ended)."""
        with self._lock:
            self._results.clear()

    def holds(self, key: str) -> bool:
        """True when a result is held under `key`."""
        with self._lock:
            return key in self._results

    def offer(self, key: str, value: Any) -> None:
        """Hold `value` under `key` unless a result is held or being computed there (one pass that
        computes two results offers the second)."""
        with self._lock:
            if key not in self._results and key not in self._computing:
                self._results[key] = value


class KeptResults:
    """The results of one run that are computed once: `this_run` holds those read by several parts
    (and the rows of the run's products, `ddlx.analysis.connection.CatalogConnection.product`),
    `cache` those kept between runs (none when `cache` is not given). One object serves every
    connection of the run."""

    def __init__(self, cache: ResultCache | None = None) -> None:
        self.cache = cache if cache is not None else ResultCache(None)
        self.this_run = OnceResults()

    def once(self, key: str, compute: Callable[[], T], keep: bool = False) -> T:
        """`compute()`, run at the first call with `key` in this run and kept for the later ones:
        for a result several parts read (a paper's figures taken from one table), on any of the
        run's connections (one computing it, the others wait). The key must name everything the
        result depends on beyond the catalog and ddlx's code (e.g. which records are held open, an
        option). With `keep`, the result (a DataFrame or a tuple of them) is also kept between runs
        (`ddlx.analysis.cache`)."""
        if keep:
            return self.this_run.get(key, lambda: self.cache.frames(key, [key], compute))  # type: ignore[arg-type]
        return self.this_run.get(key, compute)

    def commit(self) -> None:
        """Keep the results computed for later runs (the run succeeded: `ResultCache.commit`)."""
        self.cache.commit()

    def end_run(self) -> None:
        """Let go of the results held for this run (the products' rows among them)."""
        self.this_run.clear()
