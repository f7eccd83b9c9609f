"""Progress of long work: the library reports steps through its `progress` callback, a terminal shows them.

A long-running library function takes `progress: Callable[[str], None] | None` and passes it two kinds of
thing: a note (a whole line a user should read, e.g. that a SYNTHETIC sample is used), by calling it with
the text, and a step of a task, through `step(progress, task, done, total, unit, detail)`.

- `TerminalProgress` (what `ddlx` commands pass) prints notes on its stream always and steps only when that
  stream is a terminal: one status line, redrawn in place, with the count, the rate (units per second) and,
  when the total is known, the time remaining at that rate.
- Any other callable gets a step as a plain line only when the step names a phase (`detail`), so a
  notebook's `print` sees "reading ...", "validating" and no count-by-count chatter.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import Protocol, TextIO, runtime_checkable

Progress = Callable[[str], None]

#: Least time between two redraws of the status line, seconds (a task's first and last step always draw).
REDRAW_S = 0.2


@runtime_checkable
class StepSink(Protocol):
    """A progress callback that also takes steps (`TerminalProgress`)."""

    def __call__(self, message: str) -> None: ...

    def step(self, task: str, done: float, total: float | None = None, unit: str = "",
             detail: str = "") -> None: ...


def step(progress: Progress | None, task: str, done: float, total: float | None = None, unit: str = "",
         detail: str = "") -> None:
    """Report that `task` has done `done` of `total` `unit`s (`total` None: not known), at phase `detail`.

    A `StepSink` draws it; a plain callback receives `"<task>: <detail>"` when `detail` is given."""
    if progress is None:
        return
    if isinstance(progress, StepSink):
        progress.step(task, done, total, unit, detail)
    elif detail:
        progress(f"{task}: {detail}")


def duration_text(seconds: float) -> str:
    """A duration as a person reads it: 42s, 3m05s, 1h02m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def count_text(value: float) -> str:
    """A count with thousands separators (a whole number when it is one)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def rate_text(per_second: float) -> str:
    """A rate: 3 significant figures at most, no exponent."""
    if per_second >= 100:
        return f"{per_second:,.0f}"
    if per_second >= 1:
        return f"{per_second:.1f}"
    return f"{per_second:.2g}"


def status_line(task: str, done: float, total: float | None, unit: str, detail: str, elapsed_s: float) -> str:
    """The status line of a step: `task: detail, done of total unit (pct %), rate unit/s, about T left`.

    The rate is `done` over the seconds since the task's first step (`elapsed_s`); the remaining time is
    `(total - done) / rate`, shown only when the total is known and the rate is above 0."""
    parts = [f"{task}: {detail}" if detail else task]
    unit_text = f" {unit}" if unit else ""
    if total:
        parts.append(f"{count_text(done)} of {count_text(total)}{unit_text} ({min(done / total, 1):.0%})")
    elif done:
        parts.append(f"{count_text(done)}{unit_text}")
    if done and elapsed_s > 0:
        rate = done / elapsed_s
        parts.append(f"{rate_text(rate)}{unit_text}/s")
        if total and done < total:
            parts.append(f"about {duration_text((total - done) / rate)} left")
    parts.append(f"{duration_text(elapsed_s)} elapsed")
    return ", ".join(parts)


class TerminalProgress:
    """A progress callback for the command line: notes as lines on `stream` (default stderr); steps as one
    status line redrawn in place, only when `stream` is a terminal (`enabled` None: `stream.isatty()`), so
    a pipe or a log file receives the notes and nothing else."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, redraw_s: float = REDRAW_S) -> None:
        self._stream = stream
        self._enabled = enabled
        self._clock = clock
        self._redraw_s = redraw_s
        self._task: str | None = None
        self._started = 0.0
        self._drawn_at: float | None = None
        self._shown = False  # a status line is on the screen, without its line break

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def enabled(self) -> bool:
        """Whether steps are drawn: the stream is a terminal (unless set at construction)."""
        if self._enabled is not None:
            return self._enabled
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # a closed stream
            return False

    def __call__(self, message: str) -> None:
        """A note: a whole line, printed whether or not the stream is a terminal."""
        self._clear()
        self.stream.write(f"{message}\n")
        self.stream.flush()

    def step(self, task: str, done: float, total: float | None = None, unit: str = "", detail: str = "") -> None:
        """Redraw the status line (at most every `redraw_s`, and always on a task's first and last step)."""
        if not self.enabled:
            return
        now = self._clock()
        if task != self._task:
            self.close()
            self._task, self._started, self._drawn_at = task, now, None
        last = total is not None and done >= total
        if self._drawn_at is not None and not last and now - self._drawn_at < self._redraw_s:
            return
        self._drawn_at = now
        line = status_line(task, done, total, unit, detail, now - self._started)
        width = shutil.get_terminal_size().columns - 1  # a line that wraps could not be redrawn in place
        self.stream.write("\r\x1b[K" + (line if len(line) <= width else line[:width - 1] + "…"))
        self._shown = True
        self.stream.flush()

    def close(self) -> None:
        """End the status line (its last state stays on the screen)."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
        self._shown = False
        self._task = None

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self._shown = False
            self._drawn_at = None
