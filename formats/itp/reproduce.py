"""Published figures of traces read through an import preset (profile `itp-elasticflow`: the
Microsoft ITP traces released with ElasticFlow, imported with `--preset itp`).

The figures read the canonical jobs of the imported dataset (`<name>_jobs`), named `itp` unless
`ddlx reproduce --dataset` says otherwise. All three are release counts: counted from the released
archive itself, not published by the paper.
"""

from __future__ import annotations

from ddlx.analysis.context import TraceContext
from ddlx.analysis.definitions import Definition
from ddlx.analysis.reproduce.model import EXACT, RELEASE_COUNT, Profile, PublishedFigure, require_jobs, rounded

_SOURCE = "release file raw-traces.tar.gz (microsoft/elasticflow-traces), its ten clusterNN.csv files"

DEFINITIONS: tuple[Definition, ...] = (
    Definition(
        "paper.itp_elasticflow.jobs", "Jobs and GPU-hours of the ITP traces (ElasticFlow)", "jobs, clusters, GPU-hours",
        "Rows of the ten clusterNN.csv files of raw-traces.tar.gz (job_id,submission_time,duration,"
        "num_gpu), each file one cluster; GPU-hours are the sum over the jobs of num_gpu times "
        "duration (seconds), divided by 3,600. Imported with the itp preset, a row is a job, its "
        "cluster the file name, num_gpus = num_gpu and run_s = duration.",
    ),
)


def _jobs(ctx: TraceContext, select: str) -> float | None:
    require_jobs(ctx)
    return ctx.one_row(f"SELECT {select} AS v FROM {ctx.jobs}")["v"]


PROFILES: tuple[Profile, ...] = (
    Profile(
        name="itp-elasticflow",
        paper=("Gu et al., \"ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep "
               "Learning\", ASPLOS 2023 (Microsoft ITP traces)"),
        dataset="itp",
        description="The ten Microsoft ITP cluster traces released with ElasticFlow.",
        get_data="Import the archive: ddlx datasets import itp --preset itp --from raw-traces.tar.gz.",
        figures=(
            PublishedFigure("jobs", "jobs", _SOURCE, 69351, "jobs", "paper.itp_elasticflow.jobs", EXACT,
                            lambda ctx: _jobs(ctx, "count(*)"), source_kind=RELEASE_COUNT),
            PublishedFigure("clusters", "clusters", _SOURCE, 10, "clusters", "paper.itp_elasticflow.jobs", EXACT,
                            lambda ctx: _jobs(ctx, "count(DISTINCT cluster)"), source_kind=RELEASE_COUNT),
            PublishedFigure("gpu_hours", "GPU-hours", _SOURCE, 1632719.7, "GPU-hours", "paper.itp_elasticflow.jobs",
                            rounded(1), lambda ctx: _jobs(ctx, "sum(num_gpus * run_s) / 3600.0"),
                            source_kind=RELEASE_COUNT),
        ),
        definitions=DEFINITIONS,
    ),
)
