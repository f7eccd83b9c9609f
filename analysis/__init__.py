"""Characterization modules over the catalog. The entry point for Python users is `analyze`.

```python
from ddlx.analysis import analyze
result = analyze(trace, ["queueing"])     # the catalog of $DDLX_HOME, else the per-user data folder
result.module("queueing").table("by_gpu_bucket")
```
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddlx.analysis.model import AnalysisResult
    from ddlx.analysis.options import AnalysisOptions

__all__ = ["analyze"]


def analyze(name: str, modules: Sequence[str] | None = None, data_home: Path | str | None = None,
            synthetic: bool = False, progress: Callable[[str], None] | None = None,
            options: AnalysisOptions | Mapping[str, Any] | None = None) -> "AnalysisResult":
    """Run the analysis modules (default: all) on the trace or dataset `name`, as `ddlx analyze`
    does: in the data home `data_home`, else `$DDLX_HOME`, else the per-user data folder. A
    registered trace that is not ingested there (or with `synthetic`) is analysed on its
    SYNTHETIC sample, generated and ingested on first use (`result.synthetic` says so).
    `options` are the modules' settings (`ddlx.analysis.options.AnalysisOptions`, or a dict of them
    such as `{"resolution_s": 600}`)."""
    from ddlx.analysis.runner import run_analysis
    from ddlx.datasets.home import resolve_data_home
    from ddlx.datasets.synthetic import home_with_jobs_or_sample

    home = home_with_jobs_or_sample(resolve_data_home(data_home), name, synthetic, progress=progress)
    return run_analysis(home, name, modules, progress=progress, options=options)
