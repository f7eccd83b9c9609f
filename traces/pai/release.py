"""Alibaba PAI cluster-trace-gpu-v2020: the release facts, declared once (files, sizes, addresses, sha256, licence,
paper, time zone). Its reader and its generator both take them from here."""

from __future__ import annotations

from ddlx.datasets.trace_info import ReleaseFile, TraceInfo


def _pai_file(table: str, size: int, sha256: str, csv_sha256: str) -> ReleaseFile:
    return ReleaseFile(
        tables=(table,),
        filename=f"{table}.tar.gz",
        url=f"https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/{table}.tar.gz",
        size_bytes=size,
        sha256=sha256,
        member=f"{table}.csv",
        member_sha256=csv_sha256,
    )


RELEASE = TraceInfo(
    name="pai",
    title="Alibaba PAI cluster-trace-gpu-v2020",
    label="PAI",
    records_gpu_fractions=True,
    description=(
        "Two months (July-August 2020) of jobs, tasks and instances on a production cluster of "
        "about 6,500 GPUs on 1,897 machines, with per-instance resource sensors."
    ),
    source_tz="Asia/Shanghai",
    licence="CC-BY-4.0",
    paper=(
        "Weng et al., \"MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale "
        "Heterogeneous GPU Clusters\", NSDI 2022"
    ),
    homepage="https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020",
    # Running jobs and instances without an end: their ends were not logged (the Running jobs ask
    # for several times the cluster's GPUs; their instances would make every machine run ~138 at once).
    unlogged_ends=("job", "instance"),
    # Seconds from an undisclosed origin: read in Asia/Shanghai, hours and weekdays hold, dates do not.
    calendar_dates=False,
    files=(
        _pai_file("pai_job_table", 62_065_432,
                  "5aad7f7caac501136d14ed6a48e40546f825d7b0617a3a4f337e2348fe0a6cb0",
                  "379ecb3becaba347f44a53bf7eb53e54b185221b2a0338a3f828828d269ba96c"),
        _pai_file("pai_task_table", 35_514_117,
                  "cd1d6dc3215d2a8607ccf6b6dd952b5db776df86926c73259fea7c1499ac40e5",
                  "6954802b457305f8a9e480ef97c40060baee59649fd3adc62c5a1e048aa058de"),
        _pai_file("pai_instance_table", 694_839_139,
                  "1bf1e423a7ce3f8d086699801c362fd56a7182abdb234139e5ebbed97995ca06",
                  "b179f7d7e0927a6663d719b728c92640447c5a0fc3c6e4edff31e7207ab9dd17"),
        _pai_file("pai_sensor_table", 406_119_947,
                  "9a0b82e8bdf3949281e4ba1423d9b4b34847e52799eecb138966de46da69c7a0",
                  "12dd9929b70f3efe18d1279d9873e3a519c64f431613b23b059ed8c46a376dd7"),
        _pai_file("pai_group_tag_table", 55_064_781,
                  "722fef30b7fb7aa50dabd79155614b5423a9d65cf45a9b26c590d57725423a14",
                  "d23fcb56d88b2976fda4a62708d77b2a8c98635c4b443f100ed5553d4cd07fbe"),
        _pai_file("pai_machine_spec", 30_449,
                  "cc0d38a4045af1b1af8179de8b1b54b1ddd995e6160d6d061a6b1000f1276c2d",
                  "251e9e33649155a6a935fdc1dc0e90cd4698206936b60bd8fce60ff2ccd51439"),
        _pai_file("pai_machine_metric", 206_596_175,
                  "53ad917193d3b1dd0f3055e723148b1f36c2f81789b014ea2930a7875892eef5",
                  "8b6592daab0373ef7fec730198b4df5891b1722c2ab4c7016249166e131402d3"),
    ),
)
