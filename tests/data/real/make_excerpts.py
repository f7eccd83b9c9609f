"""Write the excerpts of tests/data/real from the full real files (`../shared/traces` or
`$DDLX_SHARED_TRACES`): `python tests/data/real/make_excerpts.py`.

Each CSV excerpt is the header line (where the file has one) and every k-th data row counted from
the first (data rows 0, k, 2k, ...), copied byte for byte, line endings and the file's ending
(final newline or not, trailing blank line) kept. The fault trace keeps every event of every 6th
node in the order of the nodes' first events, written as the release writes it (4-space JSON).
"""

from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED_TRACES = Path(os.environ.get("DDLX_SHARED_TRACES") or HERE.parents[3] / "shared" / "traces")

#: (path under traces/ and under tests/data/real/, has a header line, every k-th data row).
CSV_EXCERPTS: tuple[tuple[str, bool, int], ...] = (
    ("alibaba-gpu-v2023/openb_node_list_all_node.csv", True, 5),
    ("alibaba-gpu-v2023/openb_node_list_gpu_node.csv", True, 5),
    ("alibaba-gpu-v2023/openb_pod_list_default.csv", True, 27),
    ("philly/pollux_philly_jobs.csv", True, 200),
    ("philly/cluster_machine_list", True, 3),
    ("helios/Venus/cluster_gpu_number.csv", True, 3),
    ("helios/Earth/cluster_gpu_number.csv", True, 3),
    ("alibaba-pai-v2020/pai_machine_spec.csv", False, 6),
    ("alibaba-gpu-v2025/disaggregated_DLRM_trace.csv", True, 60),
    ("alibaba-spot-v2026/node_info_df.csv", True, 10),
)

#: The ITP cluster kept, its member in `itp-elasticflow/raw-traces.tar.gz`, and every k-th row.
ITP_MEMBER, ITP_EVERY = "cluster01.csv", 5

#: Every k-th node of the fault trace (nodes in the order of their first event).
FAULT_NODE_EVERY = 6


def every_kth(data: bytes, header: bool, k: int) -> bytes:
    """The header line and data rows 0, k, 2k, ... of `data`, byte for byte. A trailing blank line
    is kept; the last row kept ends as the file's last row does (with or without a newline)."""
    lines = data.splitlines(keepends=True)
    blank_tail = []
    while lines and lines[-1].strip() == b"":
        blank_tail.insert(0, lines.pop())
    head, rows = (lines[:1], lines[1:]) if header else ([], lines)
    kept = rows[::k]
    ends_bare = not rows[-1].endswith((b"\n", b"\r"))
    newline = rows[0][len(rows[0].rstrip(b"\r\n")):]
    kept = [row if row.endswith((b"\n", b"\r")) else row + newline for row in kept]
    if ends_bare and not blank_tail:
        kept[-1] = kept[-1].rstrip(b"\r\n")
    return b"".join(head + kept + blank_tail)


def fault_excerpt(data: bytes, every: int) -> bytes:
    events = json.loads(data)
    order: list[str] = []
    for event in events:
        if event["node_id"] not in order:
            order.append(event["node_id"])
    nodes = set(order[::every])
    text = json.dumps([e for e in events if e["node_id"] in nodes], indent=4)
    assert json.dumps(events, indent=4).encode() == data  # the release's own layout
    return text.encode()


def main() -> None:
    for rel, header, k in CSV_EXCERPTS:
        out = HERE / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(every_kth((SHARED_TRACES / rel).read_bytes(), header, k))
    with tarfile.open(SHARED_TRACES / "itp-elasticflow" / "raw-traces.tar.gz") as archive:
        member = archive.extractfile(ITP_MEMBER)
        assert member is not None
        out = HERE / "itp-elasticflow" / ITP_MEMBER
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(every_kth(member.read(), True, ITP_EVERY))
    out = HERE / "stepfun-infinitehbd" / "fault_trace.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(fault_excerpt((SHARED_TRACES / "stepfun-infinitehbd" / "fault_trace.json").read_bytes(),
                                  FAULT_NODE_EVERY))


if __name__ == "__main__":
    main()
