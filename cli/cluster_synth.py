"""`ddlx datasets synth-cluster`: a SYNTHETIC cluster's accounting and GPU telemetry, consistent with each
other, and the ground truth (`plan.json`) to check an analysis against."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ddlx.cli.options import say as _say


def synth_cluster_command(
    out: Annotated[Path, typer.Option(
        "--out", help="Folder to write (created if missing; replaced whole when it is a ddlx release, refused "
                      "when it is another non-empty folder).")],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs of the cluster (a multiple of --gpus-per-node).")],
    days: Annotated[int, typer.Option("--days", help="Length of the telemetry window, days.")],
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs per node.")] = 8,
    step: Annotated[int, typer.Option(
        "--step", help="Seconds between samples (divides 86400). Six fields as OpenMetrics take about 220 bytes "
                       "per GPU and sample each: 200 GPUs x 30 days at 60 s is about 11 GB.")] = 60,
    seed: Annotated[int, typer.Option("--seed", help="Same seed and options, same bytes.")] = 0,
    scheduler: Annotated[str, typer.Option(
        "--scheduler", help="slurm (sacct.txt, hpc_job labels) or kubernetes (pods.csv, pod labels).")] = "slurm",
    start: Annotated[str, typer.Option("--start", help="First day, YYYY-MM-DD; the window starts at its "
                                                       "midnight in --tz.")] = "2024-03-01",
    tz: Annotated[str, typer.Option(
        "--tz", help="The cluster's time zone (sacct prints local times).")] = "Europe/Berlin",
    fields: Annotated[Optional[str], typer.Option(
        "--fields", help="Fields to write, comma-separated: gpu_util, sm_active, tensor_active, gr_engine_active, "
                         "fb_used_mib, power_w (or DCGM names); default all six.", show_default=False)] = None,
    output_format: Annotated[str, typer.Option(
        "--format", help="Telemetry as openmetrics (dcgm.om, as promtool tsdb dump-openmetrics writes it), "
                         "parquet (dcgm.parquet) or csv (dcgm.csv).")] = "openmetrics",
    job_label: Annotated[bool, typer.Option(
        "--job-label/--no-job-label", help="Slurm: put hpc_job=JOBID on the samples of GPUs a job holds "
                                           "(dcgm-exporter's HPC job mapping).")] = True,
) -> None:
    """Write a SYNTHETIC cluster's accounting and GPU telemetry.

    Its Slurm accounting (or Kubernetes pods) and DCGM telemetry, consistent with each other, plus
    plan.json, the ground truth of allocated and idle GPU-seconds."""
    from ddlx.datasets.synthetic import write_release_folder
    from ddlx.datasets.telemetry.generator import ClusterSpec, check_spec, parse_fields, write_synthetic_cluster

    spec = ClusterSpec(gpus=gpus, days=days, gpus_per_node=gpus_per_node, step=step, seed=seed,
                       scheduler=scheduler, start=start, tz=tz, fields=parse_fields(fields), job_label=job_label,
                       format=output_format)
    check_spec(spec)  # a bad option is refused before anything is made
    names = write_release_folder(out, lambda tmp: sorted(write_synthetic_cluster(spec, tmp, progress=_say)))
    for name in names:
        typer.echo(f"{out / name}  {(out / name).stat().st_size:,} bytes")
    typer.echo(f"SYNTHETIC cluster written to {out}; ground truth in {out / 'plan.json'}")
