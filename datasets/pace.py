"""Bounds on a network read, shared by downloads (`download.py`) and Prometheus queries
(`telemetry/prometheus.py`), besides the timeout of each read:

- `Pace`: a minimum rate. Each successive stretch of a transfer must bring `min_rate` bytes a
  second on average, so a server that drips a byte now and then is stopped instead of holding the
  transfer for ever, while a slow but steady link is never cut off;
- `Deadline`: a deadline for a whole answer, from the first request to its last byte, retries and
  waits included. `Deadline.wait` cuts every wait (a connection, a read, a pause before a retry) to
  the time left, so an answer that is not complete by then is stopped at the deadline, not later;
- `seconds_from_environment`: a number of seconds set by an environment variable.

Both are checked as bytes arrive; the messages name the setting that changes the limit.
"""

from __future__ import annotations

import math
import os
import time

from ddlx.errors import DdlxError

#: The slowest average transfer accepted over a stretch: 16 KiB/s (about 130 kbit/s).
MIN_RATE_BYTES_S = 16 << 10

#: The shortest wait `Deadline.wait` gives a socket (a timeout of 0 would make it non-blocking).
_SHORTEST_WAIT_S = 0.001


def seconds_from_environment(variable: str, default: float, error: type[DdlxError]) -> float:
    """The positive, finite number of seconds in the environment variable `variable`, or `default`
    when it is unset or blank; `error` (a `DdlxError` type) naming the variable for any other text."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or not math.isfinite(seconds):
        raise error(f"{variable}={text!r} is not a positive number of seconds")
    return seconds


class Pace:
    """The minimum rate of a transfer: each stretch of `stretch_s` seconds must bring `min_rate`
    bytes a second on average. `done` is the byte count when the transfer starts; `setting` names
    what sets the stretch (an environment variable or an option), for the message."""

    def __init__(self, stretch_s: float, min_rate: float, done: int, setting: str):
        self.stretch_s = stretch_s
        self.min_rate = min_rate
        self.setting = setting
        self.since = time.monotonic()
        self.done_then = done

    def too_slow(self, done: int) -> str | None:
        """Why the transfer is too slow once a stretch has passed (`done`: bytes so far); None while
        it keeps pace."""
        now = time.monotonic()
        elapsed = now - self.since
        if elapsed < self.stretch_s:
            return None
        brought = done - self.done_then
        if brought < self.min_rate * elapsed:
            return (f"only {brought} bytes came in the last {elapsed:.1f} s, below the deadline of "
                    f"{self.min_rate / 1024:g} KiB/s on average over every {self.stretch_s:g} s "
                    f"({self.setting} sets the seconds)")
        self.since, self.done_then = now, done
        return None


class DeadlinePassed(Exception):
    """The time of a `Deadline` is up (raised by `Deadline.wait`; callers turn it into their error)."""


class Deadline:
    """A deadline `seconds` from now for a whole answer; `setting` names what raises it (an option
    or an environment variable), for the message."""

    def __init__(self, seconds: float, setting: str):
        self.seconds = seconds
        self.setting = setting
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds until the deadline (0 or less once it has passed)."""
        return self.ends - time.monotonic()

    def wait(self, longest: float) -> float:
        """How long the next wait may last: `longest`, cut to the time left; `DeadlinePassed` when
        no time is left."""
        left = self.left()
        if left <= 0:
            raise DeadlinePassed
        return max(min(longest, left), _SHORTEST_WAIT_S)

    def describe(self) -> str:
        """The limit, for a message: `the deadline of 300 s (--deadline ... raises it)`."""
        return f"the deadline of {self.seconds:g} s ({self.setting} raises it)"
