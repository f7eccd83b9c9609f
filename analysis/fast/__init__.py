"""The speed-ups of the analysis, behind one seam, and the switch that turns them off.

Every number of the analysis is defined once, in SQL, in the module that defines it: that query
is the reference path, and reading it tells what the number is. Three kinds of speed-up give the
same numbers faster, and each can be turned off:
- **fast paths** (`fast`): the modules of this package compute the rows of a reference query in
  memory (NumPy, Polars), each below its own size threshold and where its integers cannot
  overflow; otherwise, or when fast paths are off, the caller runs the reference query. Each
  gives the reference's rows to the bit (`tests/test_fast_paths.py` checks every one on generated
  traces on both sides of every threshold):
  - `steps`: the step function of allocated GPUs (`allocation.integrable_steps_sql`), the steps
    in force at given instants (the ASOF joins of `allocation._allocation_vs_capacity_sql`), and
    a whole trace's steps read from its one cluster's;
  - `bins`: the allocation sweep's partial results per time bin (`allocation.allocation_partials_sql`);
  - `load`: the allocated GPUs at each submission (`queueing._looked_up_sql`);
  - `cdf`: the empirical CDF tables (`sql._cdf_table_sql`);
  - `sweep`: the seconds a running count spends at each level (`sweeps.level_seconds_sql`);
- **two lanes** (`lanes`): the runner's modules on two connections at once (`ddlx.analysis.runner`);
- **kept results** (`kept`): results kept between runs on the same data (`ddlx.analysis.cache`).

`DDLX_PLAIN` (read here, and only here, at every call: `speedups()`) turns them off: `1` (or
`all`) all three: every number computed by its reference query, the modules one after the other
on one connection, nothing read from or written to the cache; or a comma list of the kinds to
turn off, e.g. `fast,lanes`. Unset, empty or `0`: all on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ddlx.errors import UsageError

__all__ = ["KINDS", "PLAIN_ENV", "Speedups", "fast_paths", "speedups"]

#: The environment variable that turns the speed-ups off.
PLAIN_ENV = "DDLX_PLAIN"

#: The kinds of speed-up `DDLX_PLAIN` names, in its comma list.
KINDS: tuple[str, ...] = ("fast", "lanes", "kept")


@dataclass(frozen=True)
class Speedups:
    """Which speed-ups are on: the fast paths of this package, the runner's two lanes, the kept results."""

    fast: bool = True
    lanes: bool = True
    kept: bool = True


def speedups() -> Speedups:
    """The speed-ups `DDLX_PLAIN` leaves on; `UsageError` for a value that is not `0`, `1`, `all`
    or a comma list of `KINDS`."""
    value = os.environ.get(PLAIN_ENV, "").strip().lower()
    if value in ("", "0"):
        return Speedups()
    if value in ("1", "all"):
        return Speedups(False, False, False)
    off = {kind.strip() for kind in value.split(",")}
    unknown = sorted(off - set(KINDS))
    if unknown:
        raise UsageError(f"{PLAIN_ENV}={os.environ[PLAIN_ENV]!r}: expected 1, all, 0 or a comma list of "
                         f"{', '.join(KINDS)} (the speed-ups to turn off), not {unknown[0]!r}")
    return Speedups(**{kind: kind not in off for kind in KINDS})


def fast_paths() -> bool:
    """True when the fast paths of this package may run (`DDLX_PLAIN` leaves them on)."""
    return speedups().fast
