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

Failures:
- a timeout, a refused or dropped connection, or an HTTP 5xx is retried `retries` times (default 3)
  after waiting `backoff`, 2 x `backoff`, 4 x `backoff`, ... seconds (default 1 s); then a
  `PrometheusError` names the URL, the field, the window and the last status;
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

import json
import math
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone

import polars as pl

from ddlx.datasets.telemetry.openmetrics import SampleRows
from ddlx.errors import DdlxError, UsageError

#: Prometheus refuses a range query with more points than this per series.
MAX_POINTS = 11_000
#: Defaults: window of one range query, step between evaluation instants, seconds.
DEFAULT_CHUNK_S = 6 * 3600
DEFAULT_STEP_S = 15
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 3

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


@dataclass
class PrometheusClient:
    """Range queries against the Prometheus at `url` with a timeout, retries and backoff."""

    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = 1.0

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlparse(self.url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UsageError(f"--prometheus: {self.url!r} is not an http:// or https:// address")
        self.url = self.url.rstrip("/")

    def query_range(self, metric: str, start_s: int, end_s: int, step_s: int) -> dict:
        """The decoded `data` of a successful query_range of instants start, start + step, ... < end, and
        its warnings under `"warnings"`."""
        last = start_s + (math.ceil((end_s - start_s) / step_s) - 1) * step_s
        params = urllib.parse.urlencode({"query": metric, "start": start_s, "end": last, "step": step_s})
        address = f"{self.url}/api/v1/query_range?{params}"
        window = f"{metric} over [{_iso(start_s)}, {_iso(end_s)}) at step {step_s} s"
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                _sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(address, timeout=self.timeout_s) as response:
                    body = response.read()
            except urllib.error.HTTPError as exc:
                text = _error_text(exc)
                if exc.code >= 500:
                    failure = f"HTTP {exc.code}{': ' + text if text else ''}"
                    continue
                if any(phrase in text.lower() for phrase in _TOO_LARGE):
                    raise PrometheusError(
                        f"{self.url} refused the query for {window} as too large (HTTP {exc.code}: {text}); "
                        "use a smaller --chunk or a larger --step") from None
                raise PrometheusError(f"{self.url} refused the query for {window} "
                                      f"(HTTP {exc.code}{': ' + text if text else ''})") from None
            except (TimeoutError, socket.timeout):
                failure = f"no answer within --timeout {self.timeout_s:g} s"
                continue
            except urllib.error.URLError as exc:
                reason = exc.reason
                failure = f"no answer within --timeout {self.timeout_s:g} s" if isinstance(reason, TimeoutError) \
                    else f"connection failed ({reason})"
                continue
            except (ConnectionError, OSError) as exc:
                failure = f"connection failed ({exc})"
                continue
            return self._decode(body, window)
        raise PrometheusError(f"{self.url} did not answer the query for {window} after {self.retries + 1} "
                              f"attempts; last: {failure}")

    def _decode(self, body: bytes, window: str) -> dict:
        try:
            payload = json.loads(body)
        except ValueError:
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


def _error_text(exc: urllib.error.HTTPError) -> str:
    """Prometheus' `error` text from an HTTP error body (or the start of the body)."""
    try:
        body = exc.read()
    except OSError:
        return ""
    try:
        payload = json.loads(body)
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
