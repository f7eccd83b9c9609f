"""SenseTime Helios: the release facts, declared once (files, sizes, addresses, sha256, licence,
paper, time zone). Its reader and its generator both take them from here."""

from __future__ import annotations

from ddlx.datasets.trace_info import ReleaseFile, TraceInfo

RELEASE = TraceInfo(
    name="helios",
    title="SenseTime Helios trace",
    label="Helios",
    description=(
        "Six months (April-September 2020) of jobs on four SenseTime GPU clusters (Earth, Saturn, "
        "Uranus, Venus), with the daily GPU count of every virtual cluster."
    ),
    source_tz="Asia/Shanghai",
    licence="CC-BY-4.0 (S-Lab-System-Group/HeliosData)",
    paper=(
        "Hu et al., \"Characterization and Prediction of Deep Learning Workloads in Large-Scale "
        "GPU Datacenters\", SC 2021"
    ),
    homepage="https://github.com/S-Lab-System-Group/HeliosData",
    files=(
        ReleaseFile(
            tables=("helios_cluster_log", "helios_vc_capacity"),
            filename="data.zip",
            url="https://media.githubusercontent.com/media/S-Lab-System-Group/HeliosData/main/data.zip",
            size_bytes=None,
            sha256=None,
        ),
    ),
)
