"""Benchmark: how time and memory grow with the trace. For each scale, a SYNTHETIC PAI release is
generated into a temporary folder, ingested from its official archives, and analysed with every
module (`ddlx analyze pai-trace`), first with every result computed, then again reading the
intermediate results the first run kept (`ddlx.analysis.cache`, in a cache folder of the run); the
folder is removed before the next scale. Prints one row per scale: wall time and peak RSS of ingest
and analysis, their CPU seconds (user and system), and how fast both grow against the data.

    python benchmarks/scaling.py [--scales 1,3,10] [--repeat 3] [--workdir DIR] [--trace pai]

Growth k between two scales is log(t2 / t1) / log(d2 / d1), d the archive bytes: k = 1 is time in
proportion to the data, k < 1 slower growth than the data (fixed costs weighing less), k > 1
faster. Targets: peak RSS under 2 GB (1,907 MiB) at every scale for ingest and analysis; k at most
1. A run of the smallest scale lasts seconds, and a busy moment of a shared machine can slow it by a
fifth, which moves k from it by 0.08: with `--repeat N` every scale but the largest is ingested and
analysed N times from its one generated release (a new data home and an empty cache each time) and
the median run kept; the largest runs once, its minutes averaging the machine's moments out. The
last line gives k from the smallest scale to the largest.
The CPU seconds' k tells computing from waiting: CPU growing as the wall time does is more work per
row (joins and aggregates outgrowing DuckDB's memory), wall time growing faster than CPU is waiting.

Scale 10 takes about 16 GB of archives, about 25 GB more while it is ingested (the catalog, and
the unpacked members of the largest archive and of two other tables at a time), and `--workdir`
chooses the disk (default: the system's temporary folder). Its instance table unpacks to 20.6 GB,
past ddlx's 16 GiB limit on one archive member, so the run raises that limit
(`DDLX_MAX_MEMBER_BYTES`) as a user would.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from ingest_trace import data_bytes, measure, measure_cpu  # noqa: E402

from ddlx.datasets import catalog  # noqa: E402

COLUMNS = ("scale", "archives MiB", "generate s", "ingest s", "ingest CPU s", "ingest peak MiB", "ingest k",
           "ingest CPU k", "analyze s", "analyze CPU s", "analyze peak MiB", "analyze k", "analyze CPU k",
           "again s", "again peak MiB")


def run_scale(trace: str, scale: float, workdir: Path, repeat: int = 1) -> dict[str, Any]:
    """Generate one scale in a folder of its own, ingest and analyse it `repeat` times (the median
    run of each kept), analyse it once more reading what an analysis kept; the folder is removed."""
    folder = Path(tempfile.mkdtemp(prefix=f"scale-{scale:g}-", dir=workdir))
    ddlx = [sys.executable, "-m", "ddlx"]
    release = folder / "release"
    try:
        generate_s, _ = measure([*ddlx, "datasets", "synth", trace, "--scale", str(scale), "--seed", "0",
                                 "--out", str(release)])
        size = data_bytes(release)
        os.environ.setdefault("DDLX_MAX_MEMBER_BYTES", "64G")  # scale 10 has a 20.6 GB member
        ingests = []
        for run in range(repeat):
            home = folder / f"home-{run}"
            seconds, peak, cpu = measure_cpu([*ddlx, "datasets", "ingest", trace, "--from", str(release),
                                              "--data-home", str(home)])
            steps = catalog.read_registrations(home)[trace].manifest.get("step_seconds", {})
            ingests.append((seconds, peak, cpu, steps))
            if run < repeat - 1:
                shutil.rmtree(home)
        shutil.rmtree(release)  # the catalog alone from here: the disk holds one copy at a time
        ingest_s, ingest_mb, ingest_cpu, steps = _median(ingests)
        cache = folder / "cache"
        os.environ["DDLX_CACHE_DIR"] = str(cache)  # kept results of this scale only
        analyze = [*ddlx, "analyze", f"{trace}-trace", "--data-home", str(home), "--out", str(folder / "results")]
        analyses = []
        for _ in range(repeat):
            shutil.rmtree(cache, ignore_errors=True)  # every result computed
            analyses.append(measure_cpu(analyze))
        analyze_s, analyze_mb, analyze_cpu = _median(analyses)
        again_s, again_mb = measure(analyze)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"scale": scale, "bytes": size, "generate s": generate_s, "ingest s": ingest_s,
            "ingest CPU s": ingest_cpu, "ingest peak MiB": ingest_mb, "analyze s": analyze_s,
            "analyze CPU s": analyze_cpu, "analyze peak MiB": analyze_mb,
            "again s": again_s, "again peak MiB": again_mb, "steps": steps, "runs": repeat,
            "ingest runs s": [run[0] for run in ingests], "analyze runs s": [run[0] for run in analyses]}


def _median(runs: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The run of median wall time (the first element) among `runs`; the lower one of an even count."""
    return sorted(runs, key=lambda run: run[0])[(len(runs) - 1) // 2]


def growth(rows: list[dict[str, Any]], index: int, column: str) -> str:
    """k of `column` between row `index` and the one before it (blank for the first)."""
    if index == 0:
        return ""
    before, now = rows[index - 1], rows[index]
    return k_text(before[column], now[column], before["bytes"], now["bytes"])


def k_text(t1: float, t2: float, d1: float, d2: float) -> str:
    """Growth k = log(t2/t1) / log(d2/d1), two decimals (blank when a time is 0)."""
    return f"{math.log(t2 / t1) / math.log(d2 / d1):.2f}" if t1 > 0 and t2 > 0 else ""


def print_ingest_steps(rows: list[dict[str, Any]]) -> None:
    """Each ingest step's seconds at every scale (the manifest's `step_seconds`: a table's from
    asking for its inputs, unpacking included, to its stored file), and k from the first scale to
    the last: which steps grow faster than the data."""
    names = list(dict.fromkeys(name for row in rows for name in row["steps"]))
    first, last = rows[0], rows[-1]
    span = f"k {first['scale']:g} to {last['scale']:g}"
    print()
    print("| ingest step | " + " | ".join(f"scale {row['scale']:g} s" for row in rows) + f" | {span} |")
    print("|---|" + "---|" * (len(rows) + 1))
    for name in names:
        times = [row["steps"].get(name) for row in rows]
        cells = [f"{t:.1f}" if t is not None else "" for t in times]
        k = (k_text(times[0], times[-1], first["bytes"], last["bytes"])
             if len(rows) > 1 and times[0] is not None and times[-1] is not None else "")
        print(f"| {name} | " + " | ".join(cells) + f" | {k} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,3,10", help="comma-separated scales, smallest first")
    parser.add_argument("--trace", default="pai")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=1,
                        help="ingest and analyse every scale but the largest this many times; the median is kept")
    args = parser.parse_args()
    scales = sorted(float(s) for s in args.scales.split(","))
    workdir = args.workdir or Path(tempfile.gettempdir())
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for scale in scales:
        rows.append(run_scale(args.trace, scale, workdir, args.repeat if scale < scales[-1] else 1))
        row = rows[-1]
        runs = (f" (median of {row['runs']}: ingest " + ", ".join(f"{t:.1f}" for t in row["ingest runs s"])
                + "; analyze " + ", ".join(f"{t:.1f}" for t in row["analyze runs s"]) + ")") if row["runs"] > 1 else ""
        print(f"scale {scale:g} done: {row['bytes'] / 2**20:,.0f} MiB archives; ingest {row['ingest s']:.1f} s, "
              f"peak {row['ingest peak MiB']:,.0f} MiB; analyze {row['analyze s']:.1f} s, "
              f"peak {row['analyze peak MiB']:,.0f} MiB; again {row['again s']:.1f} s{runs}",
              file=sys.stderr, flush=True)
    print(f"SYNTHETIC {args.trace} releases (seed 0), ingested from their archives and analysed with every "
          f"module; {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB"
          + (f"; every scale but the largest: the median of {args.repeat} runs" if args.repeat > 1 else ""))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for index, row in enumerate(rows):
        cells = [f"{row['scale']:g}", f"{row['bytes'] / 2**20:,.0f}", f"{row['generate s']:.1f}",
                 f"{row['ingest s']:.1f}", f"{row['ingest CPU s']:.1f}", f"{row['ingest peak MiB']:,.0f}",
                 growth(rows, index, "ingest s"), growth(rows, index, "ingest CPU s"),
                 f"{row['analyze s']:.1f}", f"{row['analyze CPU s']:.1f}", f"{row['analyze peak MiB']:,.0f}",
                 growth(rows, index, "analyze s"), growth(rows, index, "analyze CPU s"),
                 f"{row['again s']:.1f}", f"{row['again peak MiB']:,.0f}"]
        print("| " + " | ".join(cells) + " |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ks = [f"{name} {k_text(first[column], last[column], first['bytes'], last['bytes'])}"
              for name, column in (("ingest", "ingest s"), ("ingest CPU", "ingest CPU s"),
                                   ("analyze", "analyze s"), ("analyze CPU", "analyze CPU s"))]
        print(f"\nk from scale {first['scale']:g} to {last['scale']:g}: " + ", ".join(ks))
    print_ingest_steps(rows)


if __name__ == "__main__":
    main()
