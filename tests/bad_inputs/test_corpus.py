"""Run every case of the bad-input corpus (`corpus.CASES`) through the real CLI, in-process.

For each case: copy the target's template data home (which already holds a good ingest or import,
the state to protect), write the faulty input, hash every file under the data home, run the
command, and hold the result to the case's expectation (see `corpus.py`).

Set DDLX_BAD_INPUTS_LOG=FILE to append one JSON line per case (its outcome, exit code and last
stderr line); `python -m tests.bad_inputs.report FILE` turns it into the table of failing cases.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bad_inputs.corpus import CASES, TARGETS, Base, Built, Case, build_bases, copy_tree
from tests.conftest import CliResult, assert_clean_failure

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


# -- session state: the valid inputs and the template data homes ---------------------------------


@pytest.fixture(scope="session")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Base]:
    return build_bases(tmp_path_factory.mktemp("bases"))


def _import_options(command: tuple[str, ...]) -> dict[str, str]:
    keys = {"--map": "mapping", "--preset": "preset", "--time-unit": "time_unit", "--tz": "tz"}
    rest = command[3:]
    return {keys[rest[i]]: rest[i + 1] for i in range(0, len(rest), 2)}


@dataclass(frozen=True)
class Template:
    """A data home holding the clean input (`saved`), the one path every case of the target uses
    as its data home (`work`: the catalog names its store by absolute path, so a copy elsewhere
    would read, and on success prune, the template's files), and the validation report of it."""

    saved: Path
    work: Path
    validation: list[dict]

    def fresh_home(self) -> Path:
        if self.work.exists():
            shutil.rmtree(self.work)
        copy_tree(self.saved, self.work)
        return self.work


@pytest.fixture(scope="session")
def templates(bases: dict[str, Base], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Template]:
    """target -> its `Template`. The three importers share one (so a name can clash with another
    dataset of the catalog)."""
    from ddlx.datasets.catalog import read_registrations
    from ddlx.datasets.importers import import_dataset
    from ddlx.datasets.ingest import ingest

    root = tmp_path_factory.mktemp("templates")
    keys = {name: ("imports" if base.target.is_import else name) for name, base in bases.items()}
    for name, base in bases.items():
        target = base.target
        work = root / "work" / keys[name] / "home"
        source = base.write(root / "inputs" / name)
        if target.is_import:
            import_dataset(target.command[2], source, work, **_import_options(target.command))
        else:
            ingest(name, source, work)
    templates = {}
    for name, key in keys.items():
        work, saved = root / "work" / key / "home", root / "saved" / key / "home"
        if not saved.exists():
            saved.parent.mkdir(parents=True)
            work.rename(saved)
        validation = read_registrations(saved)[bases[name].target.dataset].manifest["validation"]
        templates[name] = Template(saved, work, validation)
    return templates


# -- snapshots -------------------------------------------------------------------------------------


def snapshot(path: Path) -> dict[str, str]:
    """Every entry under `path` (or `path` itself) -> its kind and the sha256 of its bytes."""
    if not os.path.lexists(path):
        return {}
    if not path.is_dir() or path.is_symlink():
        return {".": _entry(path)}
    found = {".": "dir"}
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            full = Path(folder) / name
            found[str(full.relative_to(path))] = _entry(full)
    return found


def _entry(path: Path) -> str:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "link:" + os.readlink(path)
    if stat.S_ISDIR(mode):
        return "dir"
    if not stat.S_ISREG(mode):
        return "special"
    return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()


# -- running ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def unblocking_fifos(folder: Path) -> Iterator[None]:
    """While running, give any reader of a FIFO under `folder` an immediate end of file, so a
    reader that opens one does not hang the suite (it then reads an empty file)."""
    fifos = [Path(d) / n for d, _, fs in os.walk(folder) for n in fs if stat.S_ISFIFO((Path(d) / n).lstat().st_mode)]
    stop = threading.Event()

    def feed() -> None:
        while not stop.wait(0.05):
            for fifo in fifos:
                try:
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass

    thread = threading.Thread(target=feed, daemon=True)
    if fifos:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if fifos:
            thread.join()


def invoke(cli, capsys: pytest.CaptureFixture[str], *args: object) -> CliResult:
    """`cli(*args)`, with an exception that escapes the entry point reported as Python would
    report it from the console script: its traceback on stderr and exit code 1."""
    try:
        return cli(*args)
    except Exception:
        captured = capsys.readouterr()
        return CliResult(1, captured.out, captured.err + traceback.format_exc())


def _place(tmp_path: Path, mode: str, kind: str) -> tuple[Path, list[Path]]:
    """A data home or results folder that cannot be used, by `mode`; and the paths to protect."""
    blocker = tmp_path / f"{kind}-is-a-file"
    if mode == "file":
        blocker.write_bytes(b"a regular file, not a folder\n")
        return blocker, [blocker]
    if mode == "under-file":
        blocker.write_bytes(b"a regular file, not a folder\n")
        return blocker / kind, [blocker]
    if mode == "proc":
        return Path(f"/proc/ddlx-bad-inputs-{kind}"), []
    assert mode == "readonly"
    folder = tmp_path / f"read-only-{kind}"
    folder.mkdir()
    return folder, [folder]


def _counts(cli, capsys, home: Path, counts: dict[str, int]) -> dict[str, int]:
    query = " UNION ALL ".join(f"SELECT '{t}' AS t, count(*) AS n FROM {t}" for t in counts)
    result = invoke(cli, capsys, "sql", query, "--format", "csv", "--data-home", home)
    assert result.code == 0, result.err
    lines = result.out.strip().splitlines()[1:]
    return {t: int(n) for t, n in (line.split(",") for line in lines)}


def _check_rows(validation: list[dict], check: str) -> int | None:
    rows = [c["rows"] for c in validation if check in c["check"]]
    return sum(rows) if rows else None


class Outcome(Exception):
    """Why a case failed, in one phrase (the report groups failing cases by it)."""


def judge(case: Case, result: CliResult, built: Built, needles: tuple[str, ...], before: dict, after: dict,
          cli, capsys, home: Path, base: Base, baseline: list[dict]) -> None:
    kind = case.expect.kind
    for path in built.absent:
        assert not os.path.lexists(path), f"archive member escaped to {path}"

    def clean_failure() -> None:
        if "Traceback" in result.err:
            last = [line for line in result.err.strip().splitlines() if line.strip()][-1]
            raise Outcome(f"traceback ({last.split(':')[0][:60]})")
        if result.code == 0:
            raise Outcome("accepted (exit 0), expected a refusal")
        if result.code != case.expect.code:
            raise Outcome(f"exit code {result.code}, expected {case.expect.code}")
        try:
            assert_clean_failure(result, *needles, code=case.expect.code)
        except AssertionError as exc:
            missing = [n for n in needles if n not in result.err.strip().splitlines()[-1]]
            raise Outcome(f"Error line lacks {missing}" if missing else f"not one Error line ({exc})") from None
        if after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            raise Outcome(f"refused but changed {changed[:3]}")

    def accepted() -> None:
        if result.code != 0:
            raise Outcome(f"refused (exit {result.code}), expected acceptance with the clean row counts")
        found = _counts(cli, capsys, home, base.counts)
        if found != base.counts:
            raise Outcome(f"accepted with rows {found}, expected {base.counts}")

    def counted() -> None:
        if result.code != 0:
            raise Outcome(f"refused (exit {result.code}), expected a counted finding")
        info = invoke(cli, capsys, "datasets", "info", base.target.dataset, "--json", "--data-home", home)
        assert info.code == 0, info.err
        now = _check_rows(json.loads(info.out)["validation"], case.expect.check or "")
        was = _check_rows(baseline, case.expect.check or "") or 0
        if now is None:
            raise Outcome(f"accepted without a check '{case.expect.check}'")
        if now - was != case.expect.delta:
            raise Outcome(f"check '{case.expect.check}' counts {now - was} more rows, expected {case.expect.delta}")

    if kind == "fail":
        clean_failure()
    elif kind == "accept":
        accepted()
    elif kind == "finding":
        counted()
    elif kind == "fail_or_finding":
        counted() if result.code == 0 else clean_failure()
    elif kind == "accept_or_fail":
        accepted() if result.code == 0 else clean_failure()
    else:  # pragma: no cover
        raise AssertionError(kind)


def _log(case: Case, result: CliResult | None, cause: str | None) -> None:
    path = os.environ.get("DDLX_BAD_INPUTS_LOG")
    if not path:
        return
    lines = [line for line in (result.err if result else "").strip().splitlines() if line.strip()]
    record = {"id": case.id, "target": case.target, "expect": case.expect.kind,
              "code": None if result is None else result.code, "last": lines[-1][:1000] if lines else "",
              "passed": cause is None, "cause": cause}
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, bases: dict[str, Base], templates: dict[str, Template], cli,
                   capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if case.needs_non_root and IS_ROOT:
        pytest.skip("running as root: chmod does not deny root (the other variants of this case still run)")
    base = bases[case.target]
    target = base.target
    template = templates[case.target]
    baseline = template.validation
    home = template.fresh_home()
    built = case.build(base, tmp_path / "case")
    needles = case.expect.needles + built.needles
    protected = [home, *built.protected]
    home_arg, read_only = home, []
    if case.home == "readonly":
        read_only.append(home)
        needles += (str(home),)
    elif case.home != "template":
        home_arg, extra = _place(tmp_path, case.home, "home")
        protected += extra
        needles += (str(home_arg),)
    if case.analyze_out is not None:
        out, extra = _place(tmp_path, case.analyze_out, "results")
        protected += extra
        needles += (str(out),)
        read_only += extra if case.analyze_out == "readonly" else []
        args: tuple = ("analyze", f"{target.name}-trace", "-m", "overview", "--out", out, "--data-home", home)
    else:
        command = target.command if case.name is None else (*target.command[:2], case.name, *target.command[3:])
        args = (*command, "--from", built.source, "--data-home", home_arg)
    for key, value in case.env:
        monkeypatch.setenv(key, value)
    for path in read_only:
        path.chmod(0o555)
    before = {str(p): snapshot(p) for p in protected}
    result, cause = None, None
    try:
        with unblocking_fifos(tmp_path / "case"):
            result = invoke(cli, capsys, *args)
        after = {str(p): snapshot(p) for p in protected}
        judge(case, result, built, needles, before, after, cli, capsys, home, base, baseline)
    except Outcome as exc:
        cause = str(exc)
    except BaseException as exc:
        _log(case, result, f"{type(exc).__name__}: {exc}"[:200])
        raise
    finally:
        for path in read_only:
            path.chmod(0o755)
    _log(case, result, cause)
    if cause is not None:
        assert result is not None
        pytest.fail(f"{cause}\nexit {result.code}\nstderr:\n{result.err}", pytrace=False)


def test_the_corpus_covers_every_target() -> None:
    """Enough cases for each trace and importer, and 150+ in all."""
    per_target = {name: sum(1 for c in CASES if c.target == name) for name in TARGETS}
    assert all(n >= 20 for n in per_target.values()), per_target
    assert len(CASES) >= 150
