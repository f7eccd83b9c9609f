"""Named metric definitions: the registry where each definition used by ddlx is written down once.

Every result that ddlx writes lists the ids of the definitions it used, so a reader can tell
exactly what "queueing delay" or "failed" meant. Ids are stable; a changed meaning gets a new id.
The definitions of the canonical job model and of how a distribution is read (quantiles, CDFs)
are below; each analysis module declares its own at its top (`DEFINITIONS`), as does each trace
folder for its canonical views and its own analyses; `registry()` gathers them all, refusing an
id declared twice. How each trace derives a shared definition is written by the trace
(`DERIVATIONS`), never here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache

from ddlx.errors import DdlxError


@dataclass(frozen=True)
class Definition:
    id: str
    title: str
    unit: str
    text: str


#: Where a definition's text says `{derivations}`, the registry puts how each trace derives it:
#: "<trace label>: <derivation>; ..." from the `DERIVATIONS` its folder's `views` module declares
#: (and the importer's, for imported tables). A definition reads the same for every trace.
DERIVATIONS_MARK = "{derivations}"

#: Definitions of the canonical job model (`jobs`), shared by every module.
CORE_DEFINITIONS = (
    Definition(
        "queue_delay.submit_to_first_start", "Queueing delay", "s",
        "Seconds from job submission to the first moment any part of the job ran. {derivations}. "
        "Jobs that never started have none and are left out of quantiles.",
    ),
    Definition(
        "runtime.first_start_to_last_end", "Run time", "s",
        "Seconds from the first start of any part of the job to the job's end. {derivations}. "
        "Jobs still running or never started have none.",
    ),
    Definition(
        "gpu_request.job_total", "GPUs requested by a job", "GPUs",
        "GPUs the whole job asks for, fractions allowed. {derivations}.",
    ),
    Definition(
        "gpu_job.requests_gpu", "GPU job", "jobs",
        "A job whose GPU request (gpu_request.job_total) is above zero.",
    ),
    Definition(
        "gpu_request.fractional", "Fractional-GPU job", "jobs",
        "A GPU job in which some instance asks for a part of a GPU, so it shares a GPU with other "
        "work. {derivations}.",
    ),
    Definition(
        "gpu_time.request_x_runtime", "GPU-time", "GPU-hours",
        "GPUs requested (gpu_request.job_total) times run time (runtime.first_start_to_last_end), "
        "in GPU-hours. Jobs without a run time (still running, never started) add none, nor do jobs "
        "whose run time is negative (an end before the start, which the validation report counts).",
    ),
    Definition(
        "state.canonical", "Final state", "jobs",
        "Canonical job state; completed is the only success. {derivations}. Each trace's page in "
        "docs/traces/ gives its full mapping.",
    ),
    Definition(
        "gpu_request.bucket", "GPU-request bucket", "GPUs",
        "Jobs grouped by GPUs requested: 0 (CPU only), (0,1) a fraction of one GPU, 1, (1,2], "
        "(2,4], (4,8], >8; unknown where the trace gives no GPU count.",
    ),
)


#: How every module reads a distribution: its quantiles and its CDFs.
STATISTICS_DEFINITIONS = (
    Definition(
        "stat.quantile", "Quantile (p50, p90, p99, ...)", "the unit of the values",
        "Every quantile in a summary table or a finding, unless its definition says otherwise: with "
        "the n values sorted x_0..x_(n-1) and h = (n - 1) p, x_floor(h) + (h - floor(h)) * "
        "(x_ceil(h) - x_floor(h)), as DuckDB's quantile_cont (numpy's default 'linear'). Between two "
        "values it interpolates, so a median can be a value no job had (the median of 0 s and 30 s "
        "is 15 s); stat.cdf_step gives the values themselves.",
    ),
    Definition(
        "stat.cdf_step", "Empirical CDF", "the unit of the values",
        "Every CDF table and chart: at each probability p of a fixed grid (0 to 1 in steps of 0.01, "
        "and 0.001, 0.005, 0.995, 0.999), the smallest value x that at least a share p of the values "
        "are at or below (with the n values sorted x_0..x_(n-1): x_k for k = max(ceil(n p) - 1, 0), "
        "p taken as the decimal it is written as; DuckDB's quantile_disc and numpy's 'inverted_cdf' "
        "agree but for binary rounding of p). So every value a CDF shows is one the "
        "data holds, never one between two of them. Charts draw it as a staircase, flat at p up to "
        "the next grid point's value and rising there; between two grid points the true share lies "
        "between their probabilities.",
    ),
)


#: Where a module's heavy reduction ran (`ddlx.analysis.engines`).
ENGINE_DEFINITIONS = (
    Definition(
        "engine.reduction", "Where a reduction ran", "engine, location, partitions",
        "The part of a module that grows with the data runs as SQL written once, on an engine: "
        "embedded DuckDB on the catalog (the default) or, with --engine spark, Spark SQL over the "
        "module's input sent to it (the catalog's jobs, in the given number of partitions). Its "
        "partial results are grouped by their keys and merge exactly (whole numbers: counts, sums in "
        "microseconds and millionths of a GPU, maxima, minima), so they do not depend on the "
        "partitioning: the allocation sweep per group and time bin (utilization.allocated_gpus_binned), "
        "and the jobs per group and distinct run time, from which every run-time quantile, CDF and "
        "Kaplan-Meier figure follows exactly (durations.*). The rest runs locally on the merged "
        "tables, and both engines give the same tables. location: what was read; partitions: the "
        "most partitions the engine read an input in (1 on DuckDB). GPU telemetry: telemetry.reduction.",
    ),
    Definition(
        "engine.stored", "A reduced table stored in the catalog", "tables",
        "A table of an analysis module kept as a table of the dataset (<dataset>_<name>) by ddlx "
        "datasets reduce, exactly as the module computed it. <dataset>_reductions has one row per "
        "stored table: table, module, module_table, rows, engine, location and partitions of the "
        "reduction it came from (engine.reduction, telemetry.reduction), the definitions of its "
        "columns, the options of the run, when it was reduced (UTC) and the ddlx version. A later "
        "ingest or import of the dataset drops the stored tables; telemetry imported after the "
        "reduce is not in them (compare reduced_at).",
    ),
)


def _declared() -> tuple[tuple[Definition, ...], list[tuple[str, dict[str, str]]]]:
    """Every declared definition (core, analysis modules, trace folders, the papers of traces read
    through an import preset) and each trace's (and the importer's) derivations as (label,
    {definition id: text})."""
    from ddlx.analysis.modules import MODULES, load
    from ddlx.datasets import importers
    from ddlx.datasets.plugins import DEFINING_PARTS, format_plugins, trace_plugins

    declared = CORE_DEFINITIONS + STATISTICS_DEFINITIONS + ENGINE_DEFINITIONS
    declared += tuple(d for name in MODULES for d in load(name).DEFINITIONS)
    for part in DEFINING_PARTS:
        declared += tuple(d for plugin in trace_plugins() for d in plugin.definitions(part))
    declared += tuple(d for plugin in format_plugins() for d in plugin.definitions)  # e.g. the ITP archive's
    derivations = [(plugin.release.label or plugin.name, plugin.derivations)
                   for plugin in trace_plugins() if plugin.views is not None]
    derivations.append((importers.LABEL, importers.DERIVATIONS))
    return declared, derivations


def _with_derivations(definition: Definition, derivations: list[tuple[str, dict[str, str]]]) -> Definition:
    if DERIVATIONS_MARK not in definition.text:
        return definition
    parts = "; ".join(f"{label}: {texts[definition.id]}" for label, texts in derivations if definition.id in texts)
    return replace(definition, text=definition.text.replace(DERIVATIONS_MARK, parts or "as the trace records it"))


@lru_cache(maxsize=None)
def registry() -> dict[str, Definition]:
    """Every definition: the core ones, those each analysis module declares and those each trace
    folder declares (its canonical views' and its own analyses'), with the traces' derivations."""
    declared, derivations = _declared()
    found: dict[str, Definition] = {}
    for definition in declared:
        if definition.id in found:
            raise DdlxError(f"metric definition '{definition.id}' is declared twice")
        found[definition.id] = _with_derivations(definition, derivations)
    return found


def get_definition(definition_id: str) -> Definition:
    try:
        return registry()[definition_id]
    except KeyError:
        raise DdlxError(f"unknown metric definition '{definition_id}'") from None


def definitions_used(ids: list[str]) -> list[dict[str, str]]:
    """The full text of each definition id, for writing next to results."""
    return [asdict(get_definition(i)) for i in dict.fromkeys(ids)]
