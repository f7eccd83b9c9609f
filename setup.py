"""Package discovery for setuptools: the repository root is the `ddlx` package, and every folder
under it with an `__init__.py` (tests, benchmarks and docs aside) installs as `ddlx.<folder>`, so a
new trace or format folder needs no line in pyproject.toml."""

from setuptools import find_packages, setup

setup(packages=["ddlx", *(f"ddlx.{name}" for name in find_packages(".", exclude=["tests*", "benchmarks*", "docs*",
                                                                                 "build*", "*.egg-info"]))])
