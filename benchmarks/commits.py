"""Benchmark: `ddlx analyze` under two checkouts of ddlx (e.g. a change and the commit before it),
alternating on one catalog in one run, so that both meet the same machine. Prints a table of wall
time, CPU time (user and system) and peak memory per run, and the median per checkout.

    git worktree add /tmp/before/ddlx HEAD~1    # a checkout's folder must be named ddlx
    python benchmarks/commits.py --before /tmp/before --after .. --data-home HOME [--trace pai] [--rounds 3]

`--before` and `--after` are folders holding a `ddlx` checkout (put first on PYTHONPATH, so the
installed ddlx's dependencies serve both). Each run is `python -m ddlx analyze dataset TRACE
--no-cache` with every module, written to a temporary folder; the catalog in `--data-home` (made by
`ddlx datasets synth` and `ingest`) is the same for both. Set `DDLX_PLAIN=1` in the environment to
compare the plain paths.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ingest_trace import measure_cpu  # noqa: E402


def _command(checkout: Path, home: Path, trace: str, out: Path) -> list[str]:
    return ["env", f"PYTHONPATH={checkout}", sys.executable, "-m", "ddlx", "analyze", "dataset", trace,
            "--data-home", str(home), "--no-cache", "--out", str(out)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="folder holding the first ddlx checkout")
    parser.add_argument("--after", type=Path, required=True, help="folder holding the second ddlx checkout")
    parser.add_argument("--data-home", type=Path, required=True, help="data home holding the trace's catalog")
    parser.add_argument("--trace", default="pai", help="the trace or dataset to analyse (default pai)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each checkout, alternating (default 3)")
    args = parser.parse_args()
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    for label, folder in checkouts.items():
        if not (folder / "ddlx" / "__init__.py").is_file():
            sys.exit(f"--{label} {folder}: expected a folder holding a ddlx checkout (ddlx/__init__.py)")
    plain = os.environ.get("DDLX_PLAIN") or "unset"
    print(f"ddlx analyze dataset {args.trace} --no-cache, every module; DDLX_PLAIN {plain}; "
          f"{os.cpu_count()} cores")
    print(f"{'round':>5}  {'checkout':8}  {'wall s':>8}  {'CPU s':>8}  {'peak MiB':>9}")
    runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in checkouts}
    with tempfile.TemporaryDirectory(prefix="ddlx-commits-") as scratch:
        for round_ in range(1, args.rounds + 1):
            for label, folder in checkouts.items():
                wall, peak_mb, cpu = measure_cpu(_command(folder, args.data_home, args.trace,
                                                          Path(scratch) / f"{label}-{round_}"))
                runs[label].append((wall, cpu, peak_mb))
                print(f"{round_:>5}  {label:8}  {wall:8.2f}  {cpu:8.2f}  {peak_mb:9.0f}", flush=True)
    print()
    print(f"{'checkout':8}  {'median wall s':>13}  {'median CPU s':>12}  {'largest peak MiB':>16}  folder")
    for label, measured in runs.items():
        print(f"{label:8}  {statistics.median(r[0] for r in measured):13.2f}  "
              f"{statistics.median(r[1] for r in measured):12.2f}  {max(r[2] for r in measured):16.0f}  "
              f"{checkouts[label]}")
    before, after = (statistics.median(r[0] for r in runs[label]) for label in ("before", "after"))
    print(f"\nafter / before, median wall time: {after / before:.2f}")


if __name__ == "__main__":
    main()
