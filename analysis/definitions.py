"""Named metric definitions: the registry where each definition used by ddlx is written down once.

Every result that ddlx writes lists the ids of the definitions it used, so a reader can tell
exactly what "queueing delay" or "failed" meant. Ids are stable; a changed meaning gets a new id.
The definitions of the canonical job model are below; each analysis module declares its own at
its top (`DEFINITIONS`), and `registry()` gathers them all, refusing an id declared twice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

from ddlx.errors import DdlxError


@dataclass(frozen=True)
class Definition:
    id: str
    title: str
    unit: str
    text: str


#: Definitions of the canonical job model (`jobs`), shared by every module.
CORE_DEFINITIONS = (
    Definition(
        "queue_delay.submit_to_first_start", "Queueing delay", "s",
        "Seconds from job submission to the first moment any part of the job ran. "
        "PAI: job start_time (the submission) to the earliest instance start_time; Philly: "
        "submitted_time to the first attempt's start; Helios and Acme: submit_time to start_time; "
        "Alibaba v2023: pod creation_time to scheduled_time; imported tables: the mapped submit "
        "and start columns (none when no start is mapped). Jobs that never started have none "
        "and are left out of quantiles.",
    ),
    Definition(
        "pai.queue_delay.submit_to_first_task_start", "PAI queueing delay, official notes", "s",
        "Seconds from the job's start_time (submission) to its earliest task start_time, as the "
        "PAI release notes read job wait.",
    ),
    Definition(
        "runtime.first_start_to_last_end", "Run time", "s",
        "Seconds from the first start of any part of the job to the job's end. PAI: earliest "
        "instance start_time to the job's end_time; Philly: first attempt start to last attempt "
        "end; Helios and Acme: start_time to end_time; Alibaba v2023: scheduled_time to "
        "deletion_time; imported tables: the mapped duration, or end - start. Jobs still running "
        "or never started have none.",
    ),
    Definition(
        "gpu_request.job_total", "GPUs requested by a job", "GPUs",
        "GPUs the whole job asks for, fractions allowed. PAI: sum over the job's tasks of "
        "inst_num * plan_gpu / 100 (plan_gpu is percent of one GPU per instance; empty counts as 0); "
        "Philly: GPUs listed in the detail of the job's largest attempt; Helios and Acme: gpu_num; "
        "Alibaba v2023: gpu_milli / 1000 when num_gpu is 1, else num_gpu; imported tables: the "
        "mapped gpus column.",
    ),
    Definition(
        "gpu_job.requests_gpu", "GPU job", "jobs",
        "A job whose GPU request (gpu_request.job_total) is above zero.",
    ),
    Definition(
        "gpu_request.fractional", "Fractional-GPU job", "jobs",
        "A GPU job in which some instance asks for a part of a GPU (PAI: plan_gpu not a multiple "
        "of 100), so it shares a GPU with other work.",
    ),
    Definition(
        "gpu_time.request_x_runtime", "GPU-time", "GPU-hours",
        "GPUs requested (gpu_request.job_total) times run time (runtime.first_start_to_last_end), "
        "in GPU-hours. Jobs without a run time (still running, never started) add none.",
    ),
    Definition(
        "state.canonical", "Final state", "jobs",
        "Canonical job state; completed is the only success. PAI: Terminated -> completed, "
        "Failed -> failed, Running -> running (still running at trace end), Waiting -> pending. "
        "Philly: Pass -> completed, Killed -> cancelled, Failed -> failed. Helios and Acme: "
        "COMPLETED -> completed, CANCELLED -> cancelled, FAILED, TIMEOUT and NODE_FAIL -> failed. "
        "Each trace's page in docs/traces/ gives its full mapping.",
    ),
    Definition(
        "gpu_request.bucket", "GPU-request bucket", "GPUs",
        "Jobs grouped by GPUs requested: 0 (CPU only), (0,1) a fraction of one GPU, 1, (1,2], "
        "(2,4], (4,8], >8; unknown where the trace gives no GPU count.",
    ),
)


@lru_cache(maxsize=None)
def registry() -> dict[str, Definition]:
    """Every definition: the core ones and those each analysis module declares."""
    from ddlx.analysis.modules import MODULES, load

    found: dict[str, Definition] = {}
    for definition in CORE_DEFINITIONS + tuple(d for name in MODULES for d in load(name).DEFINITIONS):
        if definition.id in found:
            raise DdlxError(f"metric definition '{definition.id}' is declared twice")
        found[definition.id] = definition
    return found


def get_definition(definition_id: str) -> Definition:
    try:
        return registry()[definition_id]
    except KeyError:
        raise DdlxError(f"unknown metric definition '{definition_id}'") from None


def definitions_used(ids: list[str]) -> list[dict[str, str]]:
    """The full text of each definition id, for writing next to results."""
    return [asdict(get_definition(i)) for i in dict.fromkeys(ids)]
