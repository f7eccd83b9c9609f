"""Public faces of ddlx's packages: names a package offers, imported from their modules on first use.

A package's `__init__.py` declares `{name: "module"}` (or `"module:name"` where the name differs in
its module) and hands it to `lazy_exports`; importing the package then stays cheap (the command line
starts without loading every library), and `from ddlx.datasets import query` still works. A package
cannot offer a name that is also one of its modules: importing the module would replace it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """`(__all__, __getattr__)` for `package`: each name of `exports` is read from its module
    (a path relative to ddlx, e.g. `datasets.catalog`) when first asked for."""

    def attribute(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, source_name = exports[name].partition(":")
        return getattr(importlib.import_module(f"ddlx.{module}"), source_name or name)

    return sorted(exports), attribute
