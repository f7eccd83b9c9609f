"""The registry of traces ddlx supports: files, sizes, download addresses, checksums, licence, paper.

Every adapter declares one `TraceInfo`; `TRACES` maps the short name used on the command line
(`ddlx datasets download pai`) to it. Facts here come from the trace owners' release notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlx.errors import UnknownDatasetError


@dataclass(frozen=True)
class ReleaseFile:
    """One file of an official release.

    `tables` are the stored tables whose rows come from this file. `size_bytes` and `sha256`
    describe the file as downloaded (None when the owners publish none); `member` is the file
    inside an archive that holds a single table, with its own `member_sha256` when published.
    """

    tables: tuple[str, ...]
    filename: str
    url: str
    size_bytes: int | None
    sha256: str | None
    member: str | None = None
    member_sha256: str | None = None


@dataclass(frozen=True)
class TraceInfo:
    """A supported trace: what it is, where it comes from and how to cite it.

    `wall_clock` is False when the trace's times are offsets from an undisclosed start, so that
    they have no time of day or weekday (`source_tz` then only names the zone they are stored in).
    `open_jobs_run_to_end` is False when a job that started and has no end is a record whose end
    was not logged rather than a job running when the trace was taken (PAI: its Running jobs ask
    for several times the cluster's GPUs), so that such jobs cannot be placed in time.
    """

    name: str
    title: str
    description: str
    source_tz: str
    licence: str
    paper: str
    homepage: str
    files: tuple[ReleaseFile, ...] = field(default_factory=tuple)
    wall_clock: bool = True
    open_jobs_run_to_end: bool = True

    @property
    def tables(self) -> list[str]:
        return list(dict.fromkeys(t for f in self.files for t in f.tables))

    def file_for(self, table: str) -> ReleaseFile:
        """The release file holding `table`; `UnknownDatasetError` naming the known tables."""
        for release_file in self.files:
            if table in release_file.tables:
                return release_file
        raise UnknownDatasetError(
            f"unknown table '{table}' for trace '{self.name}'; expected one of: {', '.join(self.tables)}"
        )

    @property
    def total_bytes(self) -> int | None:
        sizes = [f.size_bytes for f in self.files]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)


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


PAI = TraceInfo(
    name="pai",
    title="Alibaba PAI cluster-trace-gpu-v2020",
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
    open_jobs_run_to_end=False,
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

PHILLY = TraceInfo(
    name="philly",
    title="Microsoft Philly trace",
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

HELIOS = TraceInfo(
    name="helios",
    title="SenseTime Helios trace",
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

#: Files of the v2023 trace: name, bytes, sha256 (at alibaba/clusterdata commit 7a6c496e4f4b).
_PAI_V2023_FILES: tuple[tuple[str, int, str], ...] = (
    ("openb_node_list_all_node.csv", 52_287, "5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15"),
    ("openb_node_list_gpu_node.csv", 42_353, "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5"),
    ("openb_pod_list_default.csv", 575_468, "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"),
    ("openb_pod_list_cpu0.csv", 499_765, "1bc3fd9ee5c1468ccd018f624d9222746e08d59f963f66b925804734271c0eaa"),
    ("openb_pod_list_cpu037.csv", 518_687, "8ed554026d041b15ff21ddc104d9a21dbd9a93c496262fa23ef7b5be27e220dc"),
    ("openb_pod_list_cpu050.csv", 525_811, "747f43247bffc2b0bb081d7f61f0705ca8d390dafc0b647e642c92f3baf3ba1e"),
    ("openb_pod_list_cpu072.csv", 537_576, "f8a2b031461b54d7b9f06d55473c2371eb3357b78a255c646bdca5e0833a8a2f"),
    ("openb_pod_list_cpu100.csv", 554_709, "bec1c33fbdde61fd463877534ec79b393aec73e1cbb22d55fab9f166ac480982"),
    ("openb_pod_list_cpu200.csv", 622_703, "b7e9d8a1a601da84d6e0b4110b19ef5001be5e4796d33e7b82f166ba95161f87"),
    ("openb_pod_list_cpu235.csv", 651_171, "87bebd4d012faa8305ce1fd82737f51cf03361aac28b75d42e34aa656d7f4ee0"),
    ("openb_pod_list_cpu250.csv", 663_708, "134c21ff96d57533df8a37b67632972884fec9396e77cd0898ddc370cc8e607d"),
    ("openb_pod_list_cpu300.csv", 710_698, "76528825f40ee662cb098b3b6e683c1efd9f87a0c8af7e628df1f32c639636d1"),
    ("openb_pod_list_gpushare20.csv", 574_603, "9be2d0efb52e242c32e23dd184cc5fcc1983478c6c9c02cbb6b4b62925c0ffcd"),
    ("openb_pod_list_gpushare40.csv", 572_662, "d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40"),
    ("openb_pod_list_gpushare60.csv", 566_361, "d31809628128a1f24491086eda4af3e23882b9213d3ef57a56ee2d1af69492fe"),
    ("openb_pod_list_gpushare80.csv", 563_740, "88b6649369ced40d0fde287d2498ea61ff4b05fccba8bdc95daf6042f2f8431e"),
    ("openb_pod_list_gpushare100.csv", 561_220, "12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d"),
    ("openb_pod_list_gpuspec05.csv", 577_176, "8f1c0ef7e4e511e982bd2818898ba22ee6d273bf5fce124b7ace285b5928cf4e"),
    ("openb_pod_list_gpuspec10.csv", 579_461, "2dc7e4cb9480484f08539720b433a9ec9ab5d76b396f3f7557c53a2ff78a7611"),
    ("openb_pod_list_gpuspec20.csv", 582_612, "6b9b89ab8913c1c074e994e98f548cf1a872fc5f76f2442ca8cd514a478b00a9"),
    ("openb_pod_list_gpuspec25.csv", 584_915, "9d030679a2ccd7e27a7ec9ff15baff34480d22a0012515691fc187e3f35ee68c"),
    ("openb_pod_list_gpuspec33.csv", 587_467, "eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652"),
    ("openb_pod_list_multigpu20.csv", 271_530, "d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01"),
    ("openb_pod_list_multigpu30.csv", 277_920, "a5e479c6444b1d83eef848159cf00c3cfa13441b2d1e2c113c391b91f1cc5b11"),
    ("openb_pod_list_multigpu40.csv", 286_202, "32c9e8731ca07ef96108aa65f2a289bb9aacb47f642ed9e3789f99b242df60eb"),
    ("openb_pod_list_multigpu50.csv", 297_219, "206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373"),
)

PAI_V2023 = TraceInfo(
    name="pai-v2023",
    title="Alibaba GPU cluster trace v2023 (openb)",
    description=(
        "The nodes of an Alibaba GPU cluster and the pods submitted to it (the real workload, plus "
        "the owners' resampled variants used in their scheduling simulations)."
    ),
    source_tz="UTC",
    wall_clock=False,
    licence="research use per alibaba/clusterdata",
    paper=(
        "Weng et al., \"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with "
        "Fragmentation Gradient Descent\", USENIX ATC 2023"
    ),
    homepage="https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023",
    files=tuple(
        ReleaseFile(
            tables=("pai_v2023_nodes",) if "node_list" in name else ("pai_v2023_pods",),
            filename=name,
            url=f"https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/csv/{name}",
            size_bytes=size,
            sha256=sha,
        )
        for name, size, sha in _PAI_V2023_FILES
    ),
)

ACME = TraceInfo(
    name="acme",
    title="Shanghai AI Lab Acme trace",
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

TRACES: dict[str, TraceInfo] = {t.name: t for t in (PAI, PHILLY, HELIOS, PAI_V2023, ACME)}


def get_trace(name: str) -> TraceInfo:
    """The registered trace called `name`; raises `UnknownDatasetError` naming the known ones."""
    try:
        return TRACES[name]
    except KeyError:
        raise UnknownDatasetError(
            f"unknown trace '{name}'; expected one of: {', '.join(sorted(TRACES))}"
        ) from None
