"""Microsoft Philly: the release facts, declared once (files, sizes, addresses, sha256, licence,
paper, time zone). Its reader and its generator both take them from here."""

from __future__ import annotations

from ddlx.datasets.trace_info import ReleaseFile, TraceInfo

RELEASE = TraceInfo(
    name="philly",
    title="Microsoft Philly trace",
    label="Philly",
    # A job whose last attempt has no end still carries its final status (Pass, Killed, Failed):
    # its end, and that attempt's, was not logged. The job keeps its status as its state; held to
    # the trace end, such jobs would take 132 % of the listed GPUs.
    unlogged_ends=("job", "attempt"),
    description=(
        "Jobs of about 15 virtual clusters on Microsoft's Philly GPU cluster (August-December 2017) "
        "with their scheduling attempts, and per-minute GPU, CPU and memory utilisation of its machines."
    ),
    source_tz="America/Los_Angeles",
    licence="CC-BY-4.0 (msr-fiddle/philly-traces)",
    paper=(
        "Jeon et al., \"Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training "
        "Workloads\", USENIX ATC 2019"
    ),
    homepage="https://github.com/msr-fiddle/philly-traces",
    files=(
        ReleaseFile(
            tables=("philly_job_log", "philly_gpu_util", "philly_cpu_util", "philly_mem_util",
                    "philly_machine_list"),
            filename="trace-data.tar.gz",
            url="https://media.githubusercontent.com/media/msr-fiddle/philly-traces/master/trace-data.tar.gz",
            size_bytes=1_055_988_361,
            sha256="2037ccf63a725a02be718b0e1aeee6142c90b7f62d0d849295120e9f6ba13d2c",
        ),
    ),
)
