"""ddlx: trace analysis and workload characterization for deep-learning GPU clusters."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ddlx")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
