"""Progress of long work: a status line with rate and time left on a terminal, nothing on a pipe; and
the import error that names its fix."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from ddlx.progress import TerminalProgress, duration_text, status_line, step

ROOT = Path(__file__).resolve().parents[2]  # the folder holding the ddlx checkout (PYTHONPATH)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_status_line_rate_and_time_left():
    # 30 of 120 chunks in 15 s: 2 chunks/s, 90 left -> 45 s
    assert status_line("import", 30, 120, "chunks", "", 15.0) == \
        "import, 30 of 120 chunks (25%), 2.0 chunks/s, about 45s left, 15s elapsed"
    # total unknown: count and rate only
    assert status_line("read", 1_500_000, None, "samples", "dcgm.om", 60.0) == \
        "read: dcgm.om, 1,500,000 samples, 25,000 samples/s, 1m00s elapsed"
    assert duration_text(3725) == "1h02m"


def test_terminal_progress_draws_steps_on_a_terminal_only():
    clock = _Clock()
    shown = io.StringIO()
    on = TerminalProgress(shown, enabled=True, clock=clock, redraw_s=0.2)
    on.step("placement", 0, 4, "runs")
    clock.now += 10
    on.step("placement", 1, 4, "runs")  # 0.1 runs/s, 3 left -> 30 s
    clock.now += 0.05
    on.step("placement", 2, 4, "runs")  # within redraw_s: not drawn
    on("a note")
    on.close()
    text = shown.getvalue()
    assert "1 of 4 runs (25%), 0.1 runs/s, about 30s left, 10s elapsed" in text
    assert "2 of 4" not in text and "a note\n" in text
    piped = io.StringIO()
    off = TerminalProgress(piped, enabled=None)  # a StringIO is not a terminal
    off.step("placement", 1, 4, "runs")
    off("a note")
    off.close()
    assert piped.getvalue() == "a note\n"


def test_a_plain_callback_gets_phases_only():
    lines: list[str] = []
    step(lines.append, "pai", 1, 7, "tables", detail="reading a.csv")
    step(lines.append, "placement", 3, 60, "runs")
    step(None, "pai", 1)
    assert lines == ["pai: reading a.csv"]


def _import(tmp_path: Path, stderr: int) -> tuple[subprocess.Popen, Path]:
    table = tmp_path / "jobs.csv"
    table.write_text("id,submit,gpus,duration\n1,1700000000,1,100\n2,1700000600,2,200\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    args = [sys.executable, "-m", "ddlx", "datasets", "import", "mine", "--from", str(table),
            "--map", "submit=submit,gpus=gpus,duration=duration", "--data-home", str(tmp_path / "home")]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, env=env), table


def test_import_shows_progress_on_a_terminal(tmp_path):
    leader, follower = pty.openpty()
    process, _ = _import(tmp_path, follower)
    os.close(follower)
    out = process.stdout.read()
    assert process.wait(timeout=300) == 0
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal is closed once the process has ended
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    text = seen.decode()
    assert "mine: reading jobs.csv, 0 of 1 tables (0%)" in text, text
    assert "mine: validating, 1 of 1 tables (100%)" in text and "elapsed" in text, text
    assert b"catalog:" in out


def test_import_is_silent_on_a_pipe(tmp_path):
    process, _ = _import(tmp_path, subprocess.PIPE)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert err == b""
    assert b"jobs_raw" in out or b"rows" in out


def test_a_date_read_as_a_number_names_the_fix(cli, tmp_path):
    from tests.conftest import assert_clean_failure

    table = tmp_path / "jobs.csv"
    table.write_text("id,submit,gpus,duration\n1,2023-01-05 10:00:00,1,100\n")
    result = cli("datasets", "import", "mine", "--from", table, "--map", "submit=submit,gpus=gpus,duration=duration",
                 "--data-home", tmp_path / "home")
    assert_clean_failure(result, "jobs.csv, line 2, field 'submit'", "'2023-01-05 10:00:00'",
                         "use --time-unit datetime")
    fixed = cli("datasets", "import", "mine", "--from", table, "--map", "submit=submit,gpus=gpus,duration=duration",
                "--time-unit", "datetime", "--data-home", tmp_path / "home")
    assert fixed.code == 0, fixed.err
    numbers = tmp_path / "gpus.csv"  # a number column of text that is not a date: no such hint
    numbers.write_text("id,submit,gpus,duration\n1,1700000000,many,100\n")
    other = cli("datasets", "import", "other", "--from", numbers, "--map", "submit=submit,gpus=gpus,duration=duration",
                "--data-home", tmp_path / "home")
    line = assert_clean_failure(other, "field 'gpus'")
    assert "--time-unit" not in line
