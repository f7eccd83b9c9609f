"""Shanghai AI Lab Acme: the release facts, declared once (files, sizes, addresses, sha256, licence,
paper, time zone). Its reader and its generator both take them from here."""

from __future__ import annotations

from ddlx.datasets.trace_info import ReleaseFile, TraceInfo

RELEASE = TraceInfo(
    name="acme",
    title="Shanghai AI Lab Acme trace",
    label="Acme",
    description=(
        "Jobs of two GPU clusters used for LLM development (Seren and Kalos, 2023), with the "
        "workload type of each job (pretraining, fine-tuning, evaluation, ...)."
    ),
    source_tz="Asia/Shanghai",
    licence="CC-BY-4.0 (InternLM/AcmeTrace)",
    paper=(
        "Hu et al., \"Characterization of Large Language Model Development in the Datacenter\", "
        "NSDI 2024"
    ),
    homepage="https://github.com/InternLM/AcmeTrace",
    files=tuple(
        ReleaseFile(
            tables=("acme_job_trace",),
            filename=name,
            url=f"https://huggingface.co/datasets/Qinghao/AcmeTrace/resolve/main/data/job_trace/{name}",
            size_bytes=None,
            sha256=None,
        )
        for name in ("trace_seren.csv", "trace_kalos.csv")
    ),
)
