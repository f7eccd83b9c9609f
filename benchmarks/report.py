"""Benchmark: the HTML report of a scale-1 PAI trace, its size, the time to write it, the time a
headless Chromium takes to load it, and memory. Prints a table.

    python benchmarks/report.py --data-home DATA_HOME [--trace pai] [--repeat 5] [--out DIR]
    python benchmarks/report.py --scale 1 [--workdir DIR]    # generate and ingest a SYNTHETIC trace first

Steps:
- the analysis (every module) on the trace of `--data-home`, in this process;
- the results folder and the report written into `--out` (report write time: building the
  report object and writing report.html, report.md and report.json);
- the page opened `--repeat` times in headless Chromium ($DDLX_CHROMIUM, else `chromium` on PATH) from file://, each in
  a fresh browser context: load time = navigation start to the later of the load event and the
  moment every chart is drawn (the page's own `ddlxChartsDoneAt`); median, min and max shown.

Peak RSS: of this process while the report is built and written (sampled every 10 ms; the
analysis before it is reported apart), and the browser page's JS heap after load.
Targets: report.html under 15 MB; page load under 3 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

CHROMIUM = os.environ.get("DDLX_CHROMIUM") or shutil.which("chromium") or "chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TARGET_MB = 15.0
TARGET_LOAD_S = 3.0


class PeakRss:
    """The largest RSS of this process seen while the block runs (sampled every 10 ms)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._process = psutil.Process()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            self._stop.wait(0.01)

    def __enter__(self) -> "PeakRss":
        self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)


def generated_home(workdir: Path, trace: str, scale: float) -> Path:
    """A data home with a SYNTHETIC `trace` at `scale`, generated and ingested in `workdir`
    (reused when a previous run left it)."""
    from ddlx.datasets.catalog import read_registrations
    from ddlx.datasets.ingest import ingest
    from ddlx.datasets.synthetic import write_synthetic_release

    home = workdir / "home"
    if trace in read_registrations(home):
        return home
    release = workdir / "release"
    write_synthetic_release(trace, release, scale, seed=0, progress=print)
    ingest(trace, release, home, progress=print)
    return home


def page_loads(path: Path, repeat: int) -> tuple[list[float], float, int]:
    """Load times (s) of the page, its JS heap after the last load (MB) and the charts drawn."""
    from playwright.sync_api import sync_playwright

    times, heap, drawn = [], 0.0, 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(repeat):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                page = context.new_page()
                session = context.new_cdp_session(page)
                session.send("Performance.enable")
                page.goto(path.resolve().as_uri(), wait_until="load", timeout=120_000)
                page.wait_for_function("window.ddlxChartsDone === true", timeout=120_000)
                page.wait_for_function("performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
                done = page.evaluate("""() => Math.max(performance.getEntriesByType('navigation')[0].loadEventEnd,
                                                       window.ddlxChartsDoneAt)""")
                times.append(done / 1000)
                metrics = {m["name"]: m["value"] for m in session.send("Performance.getMetrics")["metrics"]}
                heap = metrics.get("JSHeapUsedSize", 0) / 2**20
                drawn = int(page.locator("body").get_attribute("data-charts-drawn") or 0)
                context.close()
        finally:
            browser.close()
    return times, heap, drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, help="a data home with the trace ingested")
    parser.add_argument("--trace", default="pai")
    parser.add_argument("--scale", type=float, default=1.0, help="without --data-home: scale to generate")
    parser.add_argument("--workdir", type=Path, help="without --data-home: where to generate (reused)")
    parser.add_argument("--out", type=Path, help="results folder (default: a temporary one)")
    parser.add_argument("--repeat", type=int, default=5, help="page loads (median shown)")
    args = parser.parse_args()

    from ddlx.analysis.runner import run_analysis
    from ddlx.reports.render import write_report
    from ddlx.reports.report import build_report
    from ddlx.reports.results import write_results

    scratch = tempfile.TemporaryDirectory(prefix="ddlx-report-bench-")
    home = args.data_home or generated_home(args.workdir or Path(scratch.name) / "data", args.trace, args.scale)
    out = args.out or Path(scratch.name) / "results"

    started = time.perf_counter()
    result = run_analysis(home, args.trace)
    analysis_s = time.perf_counter() - started
    analysis_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    write_results(result, out)

    with PeakRss() as rss:
        started = time.perf_counter()
        path = write_report(result, out)
        write_s = time.perf_counter() - started
    report = build_report(result)
    size_mb = path.stat().st_size / 2**20
    others = {name: (out / name).stat().st_size / 2**20 for name in ("report.md", "report.json")}
    loads, heap_mb, drawn = page_loads(path, args.repeat)

    label = " (SYNTHETIC)" if result.synthetic else ""
    print(f"\n{args.trace}{label}: {home}; {len(report.charts)} charts, "
          f"{sum(c.points_drawn for c in report.charts):,} points drawn; report: {path}"
          + ("" if args.out else " (a temporary folder, removed at exit: keep it with --out)"))
    print(f"{'measure':<44}{'value':>12}  {'target':<10}")
    rows = [
        ("analysis, every module (s)", f"{analysis_s:.1f}", ""),
        ("peak RSS of the analysis (MiB)", f"{analysis_rss:.0f}", ""),
        ("report write time: html + md + json (s)", f"{write_s:.2f}", ""),
        ("peak RSS while writing the report (MiB)", f"{rss.peak / 2**20:.0f}", ""),
        ("report.html size (MB)", f"{size_mb:.2f}", f"< {TARGET_MB:g}"),
        ("report.md / report.json size (MB)", f"{others['report.md']:.2f} / {others['report.json']:.2f}", ""),
        (f"page load, median of {len(loads)} (s)", f"{statistics.median(loads):.2f}", f"< {TARGET_LOAD_S:g}"),
        ("page load, min / max (s)", f"{min(loads):.2f} / {max(loads):.2f}", ""),
        ("charts drawn in the page", f"{drawn}", f"= {len(report.charts)}"),
        ("browser JS heap after load (MB)", f"{heap_mb:.0f}", ""),
    ]
    for name, value, target in rows:
        print(f"{name:<44}{value:>12}  {target:<10}")
    met = size_mb < TARGET_MB and statistics.median(loads) < TARGET_LOAD_S and drawn == len(report.charts)
    print("targets met" if met else "TARGETS NOT MET")
    scratch.cleanup()
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
