"""Package discovery for setuptools: the repository root is the `ddlx` package, and every folder
under it with an `__init__.py` (tests, benchmarks and docs aside) installs as `ddlx.<folder>`, so a
new trace or format folder needs no line in pyproject.toml. This file itself is not installed."""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """Builds every module of the packages but this file (`ddlx/setup.py` would be one)."""

    def find_package_modules(self, package, package_dir):
        found = super().find_package_modules(package, package_dir)
        return [entry for entry in found if not (package == "ddlx" and entry[1] == "setup")]


setup(packages=["ddlx", *(f"ddlx.{name}" for name in find_packages(".", exclude=["tests*", "benchmarks*", "docs*",
                                                                                 "build*"]))],
      cmdclass={"build_py": BuildPy})
