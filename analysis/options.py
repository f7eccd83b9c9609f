"""The settings of one analysis run (`AnalysisOptions`): one typed field per option, its default,
its unit and meaning, checked in one place.

The defaults are the constants of the modules that read them (`ddlx.analysis.allocation`,
`users`, `queueing`, `failures`, `sharing`, `gpu_efficiency`, `engines`); this module only names
them. The command line and the Python API hand in loose values (`from_mapping`: a dict such as
`{"resolution_s": 600}`), results record the options that differ from their defaults (`to_dict`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ddlx.analysis.engines import DEFAULT_SPARK_MASTER, ENGINES
from ddlx.errors import UsageError, did_you_mean

# The modules' defaults, declared once here; the modules read them from this module.
#: Default step of the allocation time series, seconds (the option `resolution_s` overrides it).
DEFAULT_RESOLUTION_S = 3600
#: The values of the option `window`, naming the window allocation figures are taken over (the first is the default).
WINDOWS: tuple[str, ...] = ("trace", "active")
#: Users and VCs shown one per row in the state-mix tables; the rest go into one 'other' row. The
#: options `top_users` and `top_vcs` override it (the ones the `users` and `queueing` modules read,
#: so one setting applies to all their tables).
DEFAULT_TOP_GROUPS = 20
#: Idle thresholds: a sample of gpu_util (percent) or sm_active (ratio 0-1) below this is idle.
IDLE_GPU_UTIL_PERCENT = 5.0
IDLE_SM_ACTIVE = 0.05
#: Waiting-longer-than thresholds, seconds: 1 min, 10 min, 1 h, 6 h, 24 h.
DEFAULT_THRESHOLDS_S: tuple[float, ...] = (60.0, 600.0, 3600.0, 6 * 3600.0, 24 * 3600.0)
#: VCs shown by name per cluster (the rest are pooled as "other").
DEFAULT_TOP_VCS = 10
#: Seeds of the fill-up experiment in an analysis (`ddlx placement` runs ten by default).
DEFAULT_FILL_UP_SEEDS = 3
#: Top shares reported, in percent of the population.
DEFAULT_TOP_PERCENTS: tuple[int, ...] = (1, 10)
#: Users listed by name in the per-user summary.
DEFAULT_TOP_USERS = 20


#: The options only the Spark engine reads.
SPARK_ONLY = ("spark_master", "partitions", "spark_conf")


def _option(default: Any, doc: str) -> Any:
    """A field of `AnalysisOptions` with its `default` and `doc` (unit and meaning, for the docs table)."""
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class AnalysisOptions:
    """The settings the analysis modules read, each with its default; every value is checked when the
    options are made (`UsageError` naming the option and what it must be). Frozen: a run's modules
    read the same options on every connection."""

    resolution_s: int = _option(DEFAULT_RESOLUTION_S, "Step of the allocation and utilisation time series, "
                                "seconds (a positive whole number).")
    window: str = _option(WINDOWS[0], "Window the allocation figures are taken over: `trace` (the whole trace) "
                          "or `active` (the span holding 99 % of the submissions).")
    top_percents: tuple[int, ...] = _option(DEFAULT_TOP_PERCENTS, "Top shares of GPU-time reported (module "
                                            "users), percent of the population: whole numbers from 1 to 100.")
    top_users: int | None = _option(None, "Users by name in the per-user tables (users: top_users; failures: "
                                    f"state_mix_by_user), a count; unset: {DEFAULT_TOP_USERS} (users) and "
                                    f"{DEFAULT_TOP_GROUPS} (failures).")
    top_vcs: int | None = _option(None, "Virtual clusters by name, the rest pooled as 'other' (queueing: per "
                                  f"cluster; failures: state_mix_by_vc), a count; unset: {DEFAULT_TOP_VCS} "
                                  f"(queueing) and {DEFAULT_TOP_GROUPS} (failures).")
    queue_thresholds_s: tuple[float, ...] = _option(DEFAULT_THRESHOLDS_S, "Thresholds of the waiting-longer-than "
                                                    "shares (module queueing), seconds (numbers of 0 or more).")
    placement_seeds: int = _option(DEFAULT_FILL_UP_SEEDS, "Seeds of the fill-up placement experiment (module "
                                   "sharing), a positive count.")
    idle_gpu_util_percent: float = _option(IDLE_GPU_UTIL_PERCENT, "A gpu_util sample below this is idle (module "
                                           "gpu_efficiency), percent, above 0 and at most 100.")
    idle_sm_active: float = _option(IDLE_SM_ACTIVE, "An sm_active sample below this is idle when the telemetry "
                                    "has no gpu_util (module gpu_efficiency), a ratio above 0 and at most 1.")
    engine: str = _option(ENGINES[0], "Where the reductions that grow with the data run: `duckdb` (embedded) "
                          "or `spark` (PySpark).")
    spark_master: str | None = _option(None, "Spark master URL with engine spark (local[2], spark://host:7077, "
                                       f"yarn, ...); unset: {DEFAULT_SPARK_MASTER}.")
    partitions: int | None = _option(None, "With engine spark: partitions to read each input in, a positive "
                                     "count; unset: Spark's own split.")
    spark_conf: Mapping[str, str] | None = _option(None, "With engine spark: Spark settings, key to value "
                                                   "(recorded in results by key only).")
    samples_location: str | None = _option(None, "Parquet GPU samples (the gpu_samples columns) to reduce instead "
                                           "of the dataset's own telemetry: a folder, a glob or an s3a:// path.")

    def __post_init__(self) -> None:
        """Check every value and hold it in its one type (tuples, an int for a whole float)."""
        fix = self._hold
        fix("resolution_s", _whole(self.resolution_s, "resolution_s", "a positive whole number of seconds"))
        fix("window", _one_of(self.window, "window", WINDOWS))
        percents = _numbers(self.top_percents, "top_percents", "whole numbers from 1 to 100",
                            lambda p: float(p).is_integer() and 1 <= p <= 100)
        fix("top_percents", tuple(int(p) for p in percents))
        for name in ("top_users", "top_vcs", "partitions"):
            if getattr(self, name) is not None:
                fix(name, _whole(getattr(self, name), name, "a positive whole number"))
        fix("queue_thresholds_s", tuple(float(t) for t in _numbers(
            self.queue_thresholds_s, "queue_thresholds_s", "numbers of seconds, 0 or more",
            lambda t: math.isfinite(t) and t >= 0)))
        fix("placement_seeds", _whole(self.placement_seeds, "placement_seeds", "a positive whole number"))
        fix("idle_gpu_util_percent", _fraction(self.idle_gpu_util_percent, "idle_gpu_util_percent", 100.0,
                                               "a percent above 0 and at most 100"))
        fix("idle_sm_active", _fraction(self.idle_sm_active, "idle_sm_active", 1.0, "a ratio above 0 and at most 1"))
        fix("engine", _one_of(self.engine, "engine", ENGINES))
        for name in ("spark_master", "samples_location"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise UsageError(f"{name} must be a non-empty text, not {value!r}")
        if self.spark_conf is not None:
            if not isinstance(self.spark_conf, Mapping) or not all(
                    isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in self.spark_conf.items()):
                raise UsageError(f"spark_conf must map Spark setting names to texts, not {self.spark_conf!r}")
            fix("spark_conf", MappingProxyType(dict(self.spark_conf)) if self.spark_conf else None)
        given = [name for name in SPARK_ONLY if getattr(self, name) is not None]
        if given and self.engine != "spark":
            raise UsageError(f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} engine spark "
                             f"(--engine spark), not {self.engine}")

    def _hold(self, name: str, value: Any) -> None:
        """Hold `value` as the option `name` (the checked value, in its one type)."""
        object.__setattr__(self, name, value)

    @classmethod
    def names(cls) -> list[str]:
        """The options' names, in the order of the fields."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | AnalysisOptions | None) -> AnalysisOptions:
        """The options of a loose mapping (the command line's, the Python API's); a key given None takes
        its default. `UsageError` for a key that names no option (with the closest name) or a bad value.
        `AnalysisOptions` are returned as they are."""
        if isinstance(options, AnalysisOptions):
            return options
        options = dict(options or {})
        known = cls.names()
        for key in options:
            if key not in known:
                hint = did_you_mean(str(key), known) or f"; expected one of: {', '.join(known)}"
                raise UsageError(f"unknown analysis option {key!r}{hint}")
        return cls(**{key: value for key, value in options.items() if value is not None})

    def to_dict(self) -> dict[str, Any]:
        """The options that differ from their defaults, as JSON values (lists for tuples, a dict for
        `spark_conf`): what a result records of the run's settings."""
        changed: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            changed[f.name] = (list(value) if isinstance(value, tuple)
                               else dict(value) if isinstance(value, Mapping) else value)
        return changed

    def recorded(self) -> dict[str, Any]:
        """What a result records of the options (`AnalysisResult.options`, the tables `ddlx datasets
        reduce` stores): `to_dict`, with `spark_conf` by its keys only (`spark_conf_keys`: its values
        may be credentials)."""
        changed = self.to_dict()
        conf = changed.pop("spark_conf", None)
        if conf:
            changed["spark_conf_keys"] = sorted(conf)
        return changed

    def spark_conf_dict(self) -> dict[str, str] | None:
        """`spark_conf` as a dict (None when unset), as the Spark engine takes it."""
        return dict(self.spark_conf) if self.spark_conf else None


def options_table() -> str:
    """The options as a Markdown table (name, type, default, unit and meaning): the one in docs/analysis.md."""
    lines = ["| option | type | default | unit and meaning |", "| --- | --- | --- | --- |"]
    for f in dataclasses.fields(AnalysisOptions):
        default = "unset" if f.default is None else (
            ", ".join(_plain(v) for v in f.default) if isinstance(f.default, tuple) else _plain(f.default))
        kind = str(f.type).replace("Mapping[str, str]", "dict[str, str]").replace(" | ", " \\| ")
        lines.append(f"| `{f.name}` | `{kind}` | {default} | {f.metadata['doc']} |")
    return "\n".join(lines)


def _plain(value: Any) -> str:
    """A default as the docs table shows it: whole floats without `.0`."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _whole(value: Any, name: str, expected: str) -> int:
    """`value` as a positive whole number (an int, or a float or text of one), else `UsageError`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not number.is_integer() or number <= 0:
        raise UsageError(f"{name} must be {expected}, not {value!r}")
    return int(number)


def _fraction(value: Any, name: str, most: float, expected: str) -> float:
    """`value` as a number above 0 and at most `most`, else `UsageError`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not 0 < number <= most:
        raise UsageError(f"{name} must be {expected}, not {value!r}")
    return number


def _one_of(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """`value` when it is one of `choices`, else `UsageError`."""
    if value not in choices:
        raise UsageError(f"{name} must be {' or '.join(choices)}, not {value!r}")
    return value


def _numbers(values: Any, name: str, expected: str, fits: Any) -> list[float]:
    """`values`, a non-empty sequence of numbers each of which `fits`, else `UsageError`."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise UsageError(f"{name} must be a list of {expected}, not {values!r}")
    items = list(values)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items)
    if not items or not numeric or not all(fits(v) for v in items):
        raise UsageError(f"{name} must be a non-empty list of {expected}, not {values!r}")
    return items
