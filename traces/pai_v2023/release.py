"""Alibaba GPU cluster trace v2023: the release facts, declared once (files, sizes, addresses, sha256, licence,
paper, time zone). Its reader and its generator both take them from here."""

from __future__ import annotations

from ddlx.datasets.trace_info import ReleaseFile, TraceInfo

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

RELEASE = TraceInfo(
    name="pai-v2023",
    title="Alibaba GPU cluster trace v2023 (openb)",
    label="Alibaba v2023",
    records_gpu_fractions=True,
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
