"""`ddlx datasets import-metrics`: GPU telemetry (DCGM exporter samples) beside a dataset; `ddlx datasets
reduce`: the reductions that grow with the data, kept in the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ddlx.cli.options import (
    DataHome,
    Dataset,
    DatasetArgument,
    Engine,
    Partitions,
    Resolution,
    SamplesLocation,
    SparkConf,
    SparkMaster,
    Window,
    analysis_options,
    dataset_name,
    module_names,
    progress,
)
from ddlx.cli.options import data_home as _home
from ddlx.cli.options import say as _say


def import_metrics_command(
    dataset: Annotated[Optional[str], typer.Option(
        "--dataset", help="The dataset the GPU samples belong to (e.g. the Slurm import).",
        show_default=False)] = None,
    prometheus: Annotated[Optional[str], typer.Option(
        "--prometheus", help="Read from this Prometheus server (http://host:9090) with range queries.",
        show_default=False)] = None,
    source: Annotated[Optional[Path], typer.Option(
        "--from", help="Read this dump: OpenMetrics text (as `promtool tsdb dump-openmetrics` writes it), "
                       "or a .csv / .parquet file with columns time, metric, value and labels.",
        show_default=False)] = None,
    start: Annotated[Optional[str], typer.Option(
        "--start", help="First instant, RFC 3339 (2024-05-01T00:00:00Z) or Unix seconds; required with "
                        "--prometheus, optional with --from.", show_default=False)] = None,
    end: Annotated[Optional[str], typer.Option(
        "--end", help="Instant after the last one (the window is [start, end)).", show_default=False)] = None,
    step: Annotated[str, typer.Option(
        "--step", help="Prometheus: seconds between evaluation instants (15s, 1m, ...).")] = "15s",
    chunk: Annotated[str, typer.Option(
        "--chunk", help="Length of one range query (Prometheus) or of one stored chunk (files).")] = "6h",
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Prometheus: seconds to wait for bytes of an answer before retrying; an answer must also "
                          "bring 16 KiB/s on average over every stretch of that many seconds.")] = 60.0,
    deadline: Annotated[Optional[float], typer.Option(
        "--deadline", help="Prometheus: seconds within which the whole answer to one query must arrive, retries "
                           "included (default: $DDLX_PROMETHEUS_DEADLINE_S, else 300).", show_default=False)] = None,
    fields: Annotated[Optional[str], typer.Option(
        "--fields", help="Only these fields, comma-separated: gpu_util, sm_active, tensor_active, "
                         "gr_engine_active, fb_used_mib, power_w (or their DCGM names); default all.",
        show_default=False)] = None,
    job_label: Annotated[str, typer.Option(
        "--job-label", help="The sample label holding the HPC job id (dcgm-exporter's HPC job mapping).")] = "hpc_job",
    name: DatasetArgument = None,
    data_home: DataHome = None,
) -> None:
    """Import GPU telemetry (DCGM samples) beside a dataset.

    From a Prometheus server or a dump file, in bounded chunks; an import cut short resumes where it
    stopped."""
    from ddlx.datasets.telemetry.importer import QUALITY, import_metrics

    name = dataset_name(dataset, name)

    if (prometheus is None) == (source is None):
        raise typer.BadParameter("give exactly one of --prometheus URL or --from FILE",
                                 param_hint="--prometheus/--from")
    names = [n.strip() for n in (fields or "").split(",") if n.strip()] or None
    origin: str | Path = prometheus if prometheus is not None else source  # type: ignore[assignment]
    with progress() as shown:
        result = import_metrics(_home(data_home), name, origin,
                                start=start, end=end, step=step, chunk=chunk, timeout=timeout, deadline=deadline,
                                fields=names, job_label=job_label, progress=shown)
    typer.echo(f"{result.dataset}: {result.samples:,} samples in {result.chunks_written:,} chunks written, "
               f"{result.chunks_skipped:,} chunks already stored (skipped)")
    typer.echo(f"source: {result.source}")
    typer.echo(f"fields: {', '.join(result.fields)}")
    if result.days:
        typer.echo(f"days (UTC): {len(result.days)}, {result.days[0]} .. {result.days[-1]}")
    typer.echo(f"stored in: {result.folder}")
    typer.echo("data quality:")
    for key, definition in QUALITY.items():
        typer.echo(f"  {key}: {result.quality.get(key, 0):,}  ({definition})")
    typer.echo("  counter resets: not applicable (every field ddlx reads is a gauge)")
    for metric, count in list(result.unknown_metrics.items())[:10]:
        typer.echo(f"  unknown metric {metric}: {count:,} samples")
    for warning in result.warnings[:5]:
        typer.echo(f"  Prometheus warning: {warning}")
    typer.echo(f"findings recorded in: {result.quality_path}")


def reduce_command(
    dataset: Dataset = None,
    module: Annotated[Optional[list[str]], typer.Option(
        "--module", "-m", help="Reduce only these modules (repeat, or separate with commas): gpu_efficiency, "
                               "utilization, durations (default: all three).", show_default=False)] = None,
    resolution: Resolution = None,
    window: Window = None,
    engine: Engine = None,
    spark_master: SparkMaster = None,
    samples_location: SamplesLocation = None,
    partitions: Partitions = None,
    spark_conf: SparkConf = None,
    name: DatasetArgument = None,
    data_home: DataHome = None,
) -> None:
    """Compute and keep the reductions that grow with the data.

    They run on DuckDB, or Spark with --engine spark; their tables are kept in the catalog as
    <dataset>_..., with their provenance in <dataset>_reductions."""
    import polars as pl

    from ddlx.analysis.stored import reduce_into_catalog
    from ddlx.reports.text import format_table

    name = dataset_name(dataset, name)
    options = analysis_options(resolution, window, engine, spark_master, samples_location, partitions, spark_conf)
    chosen = module_names(module) if module else None
    stored = reduce_into_catalog(_home(data_home), name, chosen, options, progress=_say)
    if not stored:
        typer.echo(f"{name}: no reduction applies (no telemetry, no started job); the catalog is unchanged")
        return
    typer.echo(format_table(pl.DataFrame([{"table": s.table, "rows": s.rows, "module": s.module, "engine": s.engine,
                              "partitions": s.partitions, "location": s.location} for s in stored])))
    typer.echo(f"\nstored in the catalog with their provenance in {name}_reductions "
               f"(ddlx sql 'SELECT * FROM \"{name}_reductions\"')")
