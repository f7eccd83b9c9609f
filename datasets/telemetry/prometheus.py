"""Read DCGM exporter samples from a Prometheus server's HTTP API, one bounded range query at a time.

Each field is read with `GET <url>/api/v1/query_range?query=<DCGM metric>&start=..&end=..&step=..`
over windows of `chunk` seconds (default 6 h) at `step` seconds (default 15 s). A window
[a, b) is evaluated at a, a + step, ... up to the last instant before b, so consecutive windows
share no instant. The value Prometheus returns at an instant is the latest raw sample at or before it
within its lookback (5 minutes by default): range-query samples lie on the step grid, not at the
exporter's scrape times; a step equal to the scrape interval keeps every sample once.

Bounds: Prometheus refuses a range query of more than 11,000 points per series
(`MAX_POINTS`); `check_resolution` refuses a chunk/step pair that needs more (the chunk must also
be a whole number of steps) before any query is sent, naming the largest chunk at that step.

Limits on the time of one query (the mechanism downloads use, `ddlx.datasets.pace`):
- `timeout` (default 60 s) bounds each wait for bytes: for the connection, for the answer to
  start, for each read;
- a minimum rate: once the answer has started, each stretch of `timeout` seconds must bring 16 KiB
  a second on average (`MIN_RATE_BYTES_S`), so a server that drips its answer is stopped after one
  stretch; not retried;
- a deadline for the whole answer: `deadline` seconds (default 300, `DEADLINE_ENV`) from the first
  request to the last byte of the answer, every retry and every wait before one included. Each wait
  is cut to the time left, so a dripping or stalling server is stopped at the deadline.
Either gives a `PrometheusError` naming the URL, the query's window and the limit with the option
or variable that raises it.

Failures:
- a timeout, a refused or dropped connection, or an HTTP 5xx is retried `retries` times (default 3)
  after waiting `backoff`, 2 x `backoff`, 4 x `backoff`, ... seconds (default 1 s), within the
  deadline; then a `PrometheusError` names the URL, the field, the window and the last status;
- an HTTP 4xx is not retried: a `PrometheusError` with Prometheus' own error text; where it says the
  query was too large ("exceeded maximum resolution", "too many samples"), the message says so and
  asks for a smaller `--chunk` or a larger `--step`;
- a body that is not JSON, or `"status": "error"`, or a result that is not a matrix, is a
  `PrometheusError` at once;
- `"warnings"` in a successful response (for example from a federated or remote-read store that
  answered partly) keep the data and are returned for the importer to count as partial responses.

Only the standard library's `urllib` is used; the URL may carry a path prefix
(`http://host:9090/prometheus`). Authentication is not supported.
"""

from __future__ import annotations

import http.client
import math
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone

import polars as pl

from ddlx.datasets.pace import MIN_RATE_BYTES_S, Deadline, DeadlinePassed, Pace, seconds_from_environment
from ddlx.datasets.telemetry.openmetrics import SampleRows
from ddlx.errors import DdlxError, UsageError
from ddlx.jsontext import load_json

#: Prometheus refuses a range query with more points than this per series.
MAX_POINTS = 11_000
#: Defaults: window of one range query, step between evaluation instants, seconds.
DEFAULT_CHUNK_S = 6 * 3600
DEFAULT_STEP_S = 15
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 3
#: Default deadline for the whole answer to one query (retries included), seconds; the environment
#: variable `DEADLINE_ENV` or `--deadline` changes it.
DEFAULT_DEADLINE_S = 300.0
DEADLINE_ENV = "DDLX_PROMETHEUS_DEADLINE_S"
#: Bytes asked of the socket at a time; the most of an error body read for its message.
_READ_BYTES = 1 << 16
_ERROR_BODY_BYTES = 4096

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_TOO_LARGE = ("exceeded maximum resolution", "too many samples", "would load too many")


def _sleep(seconds: float) -> None:
    """Wait between attempts (one place, so tests can skip the waiting)."""
    time.sleep(seconds)


class PrometheusError(DdlxError):
    """A Prometheus server did not answer a range query usefully; the message names the URL, the
    query window and what went wrong."""


def parse_duration(text: str, option: str) -> int:
    """Whole seconds of a Prometheus-style duration (`15s`, `6h`, `1h30m`, `2d`) or plain seconds."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise UsageError(f"{option}: {text!r} is not a duration; expected e.g. 15s, 6h, 1h30m or seconds") \
                from None
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0 or seconds != int(seconds):
        raise UsageError(f"{option}: {text!r} must be a positive whole number of seconds")
    return int(seconds)


def parse_time(text: str, option: str) -> int:
    """Whole Unix seconds of RFC 3339 text with an offset (`2024-05-01T00:00:00Z`) or Unix seconds
    (a fraction is cut to the second below)."""
    text = text.strip()
    try:
        seconds = float(text)
        if math.isfinite(seconds):
            return math.floor(seconds)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise UsageError(f"{option}: {text!r} is not a time; expected RFC 3339 with an offset "
                         "(2024-05-01T00:00:00Z) or Unix seconds")
    return math.floor(moment.timestamp())


def check_resolution(chunk_s: int, step_s: int) -> int:
    """The points per series of one range query of `chunk_s` at `step_s`; `UsageError` if Prometheus
    would refuse it (more than `MAX_POINTS`) or the chunk is not a whole number of steps."""
    if chunk_s % step_s:
        raise UsageError(f"--chunk ({chunk_s} s) must be a whole number of --step ({step_s} s), so that "
                         "consecutive queries continue the same grid of instants")
    points = chunk_s // step_s
    if points > MAX_POINTS:
        largest = MAX_POINTS * step_s
        raise UsageError(f"--chunk {chunk_s} s at --step {step_s} s is {points:,} points per series; Prometheus "
                         f"answers at most {MAX_POINTS:,}: use --chunk {largest} s or less, or a --step of at least "
                         f"{math.ceil(chunk_s / MAX_POINTS)} s")
    return points


def windows(start_s: int, end_s: int, chunk_s: int) -> list[tuple[int, int]]:
    """[start, end) cut into windows of `chunk_s` seconds from `start` (the last one may be shorter)."""
    if end_s <= start_s:
        raise UsageError(f"--end must be after --start (got {_iso(start_s)} .. {_iso(end_s)})")
    return [(a, min(a + chunk_s, end_s)) for a in range(start_s, end_s, chunk_s)]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class RangeResult:
    """One range query's samples in the stored columns, and the warnings Prometheus attached."""

    samples: pl.DataFrame
    warnings: list[str] = field(default_factory=list)


def deadline_from_environment() -> float:
    """`DDLX_PROMETHEUS_DEADLINE_S` as seconds, or `DEFAULT_DEADLINE_S` when it is unset."""
    return seconds_from_environment(DEADLINE_ENV, DEFAULT_DEADLINE_S, UsageError)


class _TooSlow(Exception):
    """An answer below the minimum rate; the message says how slow it was."""


def _opener(sockets: list[socket.socket]) -> urllib.request.OpenerDirector:
    """An opener like `urlopen`'s (proxies, redirects, HTTP errors) whose connections add their
    sockets to `sockets`, so that the wait of every read can be cut to the time a deadline leaves."""

    def keeping(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
        class Connection(base):  # type: ignore[valid-type, misc]
            def connect(self) -> None:
                super().connect()
                sockets.append(self.sock)

        return Connection

    class HTTPHandler(urllib.request.HTTPHandler):
        def http_open(self, req):  # type: ignore[no-untyped-def]
            return self.do_open(keeping(http.client.HTTPConnection), req)

    class HTTPSHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):  # type: ignore[no-untyped-def]
            return self.do_open(keeping(http.client.HTTPSConnection), req, context=ssl.create_default_context())

    return urllib.request.build_opener(HTTPHandler, HTTPSHandler)


class _Attempt:
    """One request of a query: its connections' sockets, the bytes of the answer read so far, and
    whether the latest wait was cut short by the deadline (a timeout then means the deadline)."""

    def __init__(self, deadline: Deadline, timeout_s: float):
        self.deadline = deadline
        self.timeout_s = timeout_s
        self.sockets: list[socket.socket] = []
        self.opener = _opener(self.sockets)
        self.received = 0
        self.cut = False

    def wait(self) -> float:
        """The longest the next wait for bytes may last (`timeout_s`, cut to the time left), set on
        the sockets; `DeadlinePassed` when no time is left."""
        wait = self.deadline.wait(self.timeout_s)
        self.cut = wait < self.timeout_s
        for sock in self.sockets:
            try:
                sock.settimeout(wait)
            except OSError:  # a connection already closed (one that redirected)
                pass
        return wait

    def read(self, response: http.client.HTTPResponse | urllib.error.HTTPError, pace: Pace | None,
             limit: int | None = None) -> bytes:
        """The body of `response` as it arrives (at most `limit` bytes), each read within `wait`;
        `_TooSlow` when `pace` is given and the body falls below its rate; `http.client.IncompleteRead`
        when the connection closes before the body's Content-Length."""
        parts: list[bytes] = []
        count = 0
        while limit is None or count < limit:
            self.wait()
            chunk = response.read1(_READ_BYTES if limit is None else min(_READ_BYTES, limit - count))
            if not chunk:
                break
            parts.append(chunk)
            count += len(chunk)
            self.received += len(chunk)
            if pace is not None and (slow := pace.too_slow(count)) is not None:
                raise _TooSlow(slow)
        body = b"".join(parts)
        length = response.headers.get("Content-Length")
        if limit is None and length is not None and length.strip().isdigit() and count < int(length):
            raise http.client.IncompleteRead(body, int(length) - count)
        return body


@dataclass
class PrometheusClient:
    """Range queries against the Prometheus at `url` with a timeout for each wait, a minimum rate,
    a deadline for each whole answer (`deadline_s`; None: `DDLX_PROMETHEUS_DEADLINE_S`, else
    `DEFAULT_DEADLINE_S`), retries and backoff. Seconds throughout."""

    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = 1.0
    deadline_s: float | None = None
    min_rate_bytes_s: float = MIN_RATE_BYTES_S

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlparse(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UsageError(f"--prometheus: {self.url!r} is not an http:// or https:// address")
        self.url = self.url.rstrip("/")
        if self.deadline_s is None:
            self.deadline_s = deadline_from_environment()
        if not self.deadline_s > 0 or not math.isfinite(self.deadline_s):
            raise UsageError(f"--deadline: must be a positive number of seconds, got {self.deadline_s}")

    def query_range(self, metric: str, start_s: int, end_s: int, step_s: int) -> dict:
        """The decoded `data` of a successful query_range of instants start, start + step, ... < end, and
        its warnings under `"warnings"`; complete within the deadline, or a `PrometheusError`."""
        last = start_s + (math.ceil((end_s - start_s) / step_s) - 1) * step_s
        params = urllib.parse.urlencode({"query": metric, "start": start_s, "end": last, "step": step_s})
        address = f"{self.url}/api/v1/query_range?{params}"
        window = f"{metric} over [{_iso(start_s)}, {_iso(end_s)}) at step {step_s} s"
        assert self.deadline_s is not None
        deadline = Deadline(self.deadline_s, f"--deadline or {DEADLINE_ENV}")
        failure = ""
        attempt = None
        try:
            for number in range(self.retries + 1):
                if number:
                    pause = self.backoff_s * 2 ** (number - 1)
                    if pause >= deadline.left():
                        raise DeadlinePassed
                    _sleep(pause)
                attempt = _Attempt(deadline, self.timeout_s)
                try:
                    with attempt.opener.open(address, timeout=attempt.wait()) as response:
                        body = attempt.read(response, Pace(self.timeout_s, self.min_rate_bytes_s, 0, "--timeout"))
                except urllib.error.HTTPError as exc:
                    with exc:
                        text = _error_text(exc, attempt)
                    if exc.code >= 500:
                        failure = f"HTTP {exc.code}{': ' + text if text else ''}"
                        continue
                    if any(phrase in text.lower() for phrase in _TOO_LARGE):
                        raise PrometheusError(
                            f"{self.url} refused the query for {window} as too large (HTTP {exc.code}: {text}); "
                            "use a smaller --chunk or a larger --step") from None
                    raise PrometheusError(f"{self.url} refused the query for {window} "
                                          f"(HTTP {exc.code}{': ' + text if text else ''})") from None
                except _TooSlow as exc:
                    raise PrometheusError(f"{self.url} answered the query for {window} too slowly: {exc}") from None
                except (TimeoutError, socket.timeout):
                    if attempt.cut:
                        raise DeadlinePassed from None
                    failure = f"no answer within --timeout {self.timeout_s:g} s"
                    continue
                except urllib.error.URLError as exc:
                    reason = exc.reason
                    if isinstance(reason, TimeoutError) and attempt.cut:
                        raise DeadlinePassed from None
                    failure = f"no answer within --timeout {self.timeout_s:g} s" if isinstance(reason, TimeoutError) \
                        else f"connection failed ({reason})"
                    continue
                except http.client.HTTPException as exc:
                    failure = f"the answer was cut short ({type(exc).__name__})"
                    continue
                except (ConnectionError, OSError) as exc:
                    failure = f"connection failed ({exc})"
                    continue
                return self._decode(body, window)
        except DeadlinePassed:
            received = f"; {attempt.received} bytes of the answer came" if attempt is not None and attempt.received \
                else ""
            raise PrometheusError(f"{self.url} did not complete its answer to the query for {window} within "
                                  f"{deadline.describe()}{received}{'; before: ' + failure if failure else ''}") \
                from None
        raise PrometheusError(f"{self.url} did not answer the query for {window} after {self.retries + 1} "
                              f"attempts; last: {failure}")

    def _decode(self, body: bytes, window: str) -> dict:
        try:
            payload = load_json(body.decode("utf-8"))
        except ValueError:  # a JSONDecodeError (too deep included) or a UnicodeDecodeError
            raise PrometheusError(f"{self.url} answered the query for {window} with a body that is not JSON "
                                  f"({body[:60]!r}); expected Prometheus' query_range response") from None
        if not isinstance(payload, dict):
            raise PrometheusError(f"{self.url} answered the query for {window} with JSON that is not an object")
        if payload.get("status") != "success":
            raise PrometheusError(f"{self.url} answered the query for {window} with status "
                                  f"{payload.get('status')!r}: {payload.get('errorType', '')} "
                                  f"{payload.get('error', '')}".rstrip())
        data = payload.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise PrometheusError(f"{self.url} answered the query for {window} without a matrix result "
                                  "(expected data.resultType 'matrix')")
        warnings = payload.get("warnings") or []
        return {**data, "warnings": [str(w) for w in warnings]}


def _error_text(exc: urllib.error.HTTPError, attempt: _Attempt) -> str:
    """Prometheus' `error` text from an HTTP error body (or the start of the body), read within the
    deadline."""
    try:
        body = attempt.read(exc, None, _ERROR_BODY_BYTES)
    except (OSError, http.client.HTTPException):
        return ""
    try:
        payload = load_json(body.decode("utf-8", errors="replace"))
        if isinstance(payload, dict) and payload.get("error"):
            return f"{payload.get('errorType', '')}: {payload['error']}".lstrip(": ")
    except ValueError:
        pass
    return body[:200].decode("utf-8", "replace").strip()


def read_range(client: PrometheusClient, metric: str, field_name: str, start_s: int, end_s: int, step_s: int,
               job_label: str = "hpc_job") -> RangeResult:
    """The samples of `metric` (stored under `field_name`) over [start, end) as stored columns."""
    data = client.query_range(metric, start_s, end_s, step_s)
    rows = SampleRows(job_label)
    end_us = end_s * 1_000_000
    try:
        for series in data["result"]:
            labels = {str(k): str(v) for k, v in (series.get("metric") or {}).items()}
            for stamp, text in series.get("values") or []:
                time_us = round(float(stamp) * 1_000_000)
                if time_us < end_us:
                    rows.add(field_name, labels, time_us, float(text))
    except (AttributeError, TypeError, ValueError) as exc:
        raise PrometheusError(f"{client.url} answered the query for {metric} over [{_iso(start_s)}, {_iso(end_s)}) "
                              f"with a series that is not [[time, \"value\"], ...] ({exc})") from None
    return RangeResult(rows.frame(), data["warnings"])
