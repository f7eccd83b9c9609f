"""Benchmark: `ddlx predict train` on a SYNTHETIC PAI trace of scale 1 (about 1.26 M jobs), the
feature query on a scale-1 Helios trace (3.4 M jobs), and `apply` on PAI. Prints a table of wall
time and peak memory per step.

    python benchmarks/predict.py [--pai-home DIR] [--helios-home DIR] [--workdir DIR] [--reuse]
                                 [--helios-train] [--max-fit-rows N]

Targets: train on about 1 M jobs in under 60 s (features, three models, card) on this machine.
Each step runs in its own Python process (so its peak RSS is its own) that reports its inner
timings as JSON. Without --pai-home / --helios-home the traces are generated with
`ddlx datasets synth` into --workdir and ingested there (as benchmarks/analyze.py does).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
from analyze import ensure_helios, ensure_pai  # noqa: E402
from ingest_trace import measure_output  # noqa: E402

TRAIN = r'''
import json, sys, time
from pathlib import Path
from ddlx.predict.models import TrainSettings
from ddlx.predict.training import train
home, name, out, rows = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
result = train(home, name, out, TrainSettings(max_fit_rows=rows or None))
card = result.card
print(json.dumps({"seconds": result.seconds, "jobs": card["target"]["jobs"],
                  "train_jobs": card["split"]["windows"]["train"]["jobs"], "fit_rows": card["models"]["fit_rows"],
                  "iterations": {k: v["iterations"] for k, v in card["models"]["estimators"].items()}}))
'''

FEATURES = r'''
import json, sys, time
from pathlib import Path
from ddlx.analysis.context import open_trace
from ddlx.predict.features import trace_features
home, name = Path(sys.argv[1]), sys.argv[2]
started = time.perf_counter()
with open_trace(home, name) as ctx:
    frame = trace_features(ctx.con, ctx.jobs, ctx.local_tz if ctx.has_wall_clock else None, name)
print(json.dumps({"seconds": {"features": time.perf_counter() - started}, "jobs": frame.height}))
'''

APPLY = r'''
import json, sys, time
from pathlib import Path
from ddlx.predict import load_predictor
home, name, model = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
started = time.perf_counter()
table = load_predictor(model).predict_catalog(home, name)
print(json.dumps({"seconds": {"apply": time.perf_counter() - started}, "jobs": table.height}))
'''


def run(script: str, *args: str) -> tuple[float, float, dict]:
    """Run `script` in a new Python; (wall seconds, peak RSS MiB, the JSON it printed)."""
    elapsed, peak_mb, printed = measure_output([sys.executable, "-c", script, *args])
    return elapsed, peak_mb, json.loads(printed.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pai-home", type=Path, default=None, help="data home with the PAI trace ingested")
    parser.add_argument("--helios-home", type=Path, default=None, help="data home with the Helios trace ingested")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true", help="reuse data a previous run left in --workdir")
    parser.add_argument("--helios-train", action="store_true", help="also train on Helios (3.4 M jobs)")
    parser.add_argument("--skip-helios", action="store_true")
    parser.add_argument("--max-fit-rows", type=int, default=300_000, help="0: fit on the whole train window")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ddlx-bench-predict-"))
    setup: list = []
    rows: list[tuple[str, float, float | None]] = []

    pai_home = args.pai_home or ensure_pai(workdir, 1.0, args.reuse, setup)[1]
    model = workdir / "model-pai"
    wall, rss, inner = run(TRAIN, str(pai_home), "pai", str(model), str(args.max_fit_rows))
    s = inner["seconds"]
    label = f"PAI train ({inner['jobs']:,} jobs, {inner['train_jobs']:,} in train, fit on {inner['fit_rows']:,})"
    rows.append((label, wall, rss))
    rows.append(("  features (SQL, every job)", s["features"], None))
    for name in ("mean", "p50", "p90"):
        rows.append((f"  fit {name} ({inner['iterations'][name]} iterations)", s[f"fit_{name}"], None))
    rows.append(("  write model folder", s["write"], None))
    wall, rss, inner = run(APPLY, str(pai_home), "pai", str(model))
    rows.append((f"PAI apply ({inner['jobs']:,} jobs: features + 3 models)", wall, rss))

    if not args.skip_helios:
        helios_home = args.helios_home or ensure_helios(workdir, args.reuse, setup)
        wall, rss, inner = run(FEATURES, str(helios_home), "helios")
        rows.append((f"Helios features ({inner['jobs']:,} jobs)", wall, rss))
        rows.append(("  of which the feature query", inner["seconds"]["features"], None))
        if args.helios_train:
            wall, rss, inner = run(TRAIN, str(helios_home), "helios", str(workdir / "model-helios"),
                                   str(args.max_fit_rows))
            rows.append((f"Helios train ({inner['jobs']:,} jobs, fit on {inner['fit_rows']:,})", wall, rss))
            for name in ("mean", "p50", "p90"):
                rows.append((f"  fit {name} ({inner['iterations'][name]} iterations)",
                             inner["seconds"][f"fit_{name}"], None))

    print(f"SYNTHETIC traces; {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
          f"load average {psutil.getloadavg()[0]:.1f}")
    print(f"{'step':<66} {'seconds':>9} {'peak RSS MiB':>12}")
    for name, seconds, peak in rows:
        print(f"{name:<66} {seconds:>9.1f} {'' if peak is None else f'{peak:.0f}':>12}")


if __name__ == "__main__":
    main()
