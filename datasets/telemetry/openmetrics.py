"""Read DCGM exporter samples from OpenMetrics or Prometheus text exposition with timestamps.

Accepted input (one sample per line, as `promtool tsdb dump-openmetrics` writes it):

    DCGM_FI_DEV_GPU_UTIL{Hostname="node1",UUID="GPU-1",gpu="0",modelName="NVIDIA A100"} 87 1714564800.000
    # EOF

- A sample line is `name{label="value",...} value timestamp`. The `{...}` part may be absent, may
  end with a comma, and may carry spaces around names, `=` and commas. The name may instead be a
  `__name__` label inside the braces with no name in front (`{__name__="DCGM_FI_DEV_GPU_UTIL", gpu="0"} 87
  1714564800000`), the shape `promtool tsdb dump` writes.
- Label values are in double quotes with three escapes: `\\\\` (backslash), `\\"` (quote) and `\\n`
  (newline); any other escape is an error.
- Values are decimal floats, `NaN`, `+Inf` or `-Inf` (non-finite values are read and then dropped
  as a data-quality finding by the importer).
- The timestamp is required (a dump without timestamps cannot be placed in time). OpenMetrics gives it
  in seconds, with or without a fraction; Prometheus' text format 0.0.4 in integer milliseconds.
  Rule: a timestamp with a `.` or an exponent is seconds; an integer of 10^11 or more is
  milliseconds (10^11 seconds is the year 5138, 10^11 milliseconds is March 1973); a smaller
  integer is seconds. Sample times are kept to the microsecond.
- `# TYPE`, `# HELP`, `# UNIT` and other lines starting with `#` are read as comments; `# EOF`
  ends the input (a sample after it is an error); blank lines are skipped. The file may be
  gzip-compressed (name ending in `.gz`). An exemplar (` # {...} value`) after a sample is ignored.
- A dump that was cut short is refused, never read in part. Every line ends with a line break
  (only `# EOF` may go without one): a last line without one is cut. The format is told by the
  timestamps of the samples read: OpenMetrics writes seconds, and OpenMetrics text must end with
  `# EOF`, so a dump with a timestamp in seconds and no `# EOF` is cut. A dump whose timestamps are
  all integer milliseconds is Prometheus text (format 0.0.4, or `promtool tsdb dump`), which has no
  `# EOF`: it is complete when its last line is (a cut exactly at a line break cannot be told).
- Only the lines of the DCGM fields being imported are parsed in full; lines of other metrics are
  counted by metric name (`unknown`) and not checked further, so a whole-TSDB dump can be read.

The file is read as a stream: `read_openmetrics` yields frames of at most `batch_rows` samples in
input order, each in the stored columns (`store.SAMPLE_SCHEMA`), with a NULL `host` or `gpu` where
the sample lacks a `Hostname` label or an integer `gpu` label (the importer counts and drops those).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ddlx.datasets.telemetry.model import FIELDS, LABEL_COLUMNS, SCRAPE_LABELS
from ddlx.datasets.telemetry.store import SAMPLE_SCHEMA
from ddlx.errors import InputError

#: Integer timestamps at or above this are milliseconds (Prometheus text format), below it seconds.
MS_THRESHOLD = 10**11

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*([,}])')
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_SECONDS = re.compile(r"(-?)(\d+)(?:\.(\d*))?")


class SampleRows:
    """Accumulates labelled samples as the columns of stored samples (`store.SAMPLE_SCHEMA`)."""

    def __init__(self, job_label: str = "hpc_job"):
        self.job_label = job_label
        self.columns: dict[str, list] = {name: [] for name in SAMPLE_SCHEMA}

    def __len__(self) -> int:
        return len(self.columns["field"])

    def add(self, field: str, labels: dict[str, str], time_us: int, value: float) -> None:
        """One sample of the field with short name `field`; `labels` are the exporter's labels."""
        cols = self.columns
        own: dict[str, str | None] = {column: None for column in LABEL_COLUMNS.values()}
        rest: dict[str, str] = {}
        for key, text in labels.items():
            if text == "":  # an empty label value is an absent label (Prometheus)
                continue
            column = LABEL_COLUMNS.get(key)
            if column is not None:
                own[column] = text
            elif key != self.job_label and key not in SCRAPE_LABELS:
                rest[key] = text
        gpu = own["gpu"]
        cols["host"].append(own["host"])
        cols["gpu"].append(int(gpu) if gpu is not None and gpu.isdigit() else None)
        cols["uuid"].append(own["uuid"])
        cols["model"].append(own["model"])
        cols["time"].append(time_us)
        cols["field"].append(field)
        cols["value"].append(value)
        cols["pod"].append(own["pod"])
        cols["namespace"].append(own["namespace"])
        cols["container"].append(own["container"])
        cols["hpc_job"].append(labels.get(self.job_label) or None)
        cols["labels"].append(json.dumps(rest, sort_keys=True, ensure_ascii=False))

    def frame(self) -> pl.DataFrame:
        """The accumulated samples as a frame in the stored columns; the accumulator is emptied."""
        data = dict(self.columns)
        times = data.pop("time")
        schema = {name: dtype for name, dtype in SAMPLE_SCHEMA.items() if name != "time"}
        frame = pl.DataFrame(data, schema=schema)
        stamps = pl.Series("time", times, pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        frame = frame.with_columns(stamps)
        self.columns = {name: [] for name in SAMPLE_SCHEMA}
        return frame.select(list(SAMPLE_SCHEMA))


def timestamp_us(text: str) -> int:
    """A timestamp of the exposition (seconds, or integer milliseconds at or above `MS_THRESHOLD`) in
    microseconds since 1970-01-01 UTC; `ValueError` if it is not a finite number."""
    return _timestamp(text)[0]


def _timestamp(text: str) -> tuple[int, bool]:
    """`timestamp_us` of `text`, and whether it was written in milliseconds (Prometheus text)."""
    match = _SECONDS.fullmatch(text)
    if match:
        sign, whole, fraction = match.groups()
        milliseconds = fraction is None and int(whole) >= MS_THRESHOLD
        if milliseconds:
            micros = int(whole) * 1000
        else:
            digits = (fraction or "")[:7].ljust(7, "0")
            micros = int(whole) * 1_000_000 + (int(digits) + 5) // 10
        return -micros if sign else micros, milliseconds
    seconds = float(text)
    if not math.isfinite(seconds):
        raise ValueError(text)
    return round(seconds * 1_000_000), False


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        char = match.group(1)
        if char not in _ESCAPES:
            raise ValueError(f"unknown escape \\{char} in a label value (expected \\\\, \\\" or \\n)")
        return _ESCAPES[char]

    return _ESCAPE.sub(replace, text)


def parse_labels(line: str, pos: int) -> tuple[dict[str, str], int]:
    """The labels of `line` from the `{` at `pos`; returns them and the position after the `}`."""
    labels: dict[str, str] = {}
    pos += 1
    if line[pos:].lstrip().startswith("}"):
        return labels, line.index("}", pos) + 1
    while True:
        match = _LABEL.match(line, pos)
        if match is None:
            raise ValueError('expected label="value" pairs separated by commas and closed by }')
        name, raw, end = match.groups()
        if name in labels:
            raise ValueError(f"label {name!r} appears twice")
        labels[name] = _unescape(raw)
        pos = match.end()
        if end == "}":
            return labels, pos
        rest = line[pos:].lstrip()
        if rest.startswith("}"):  # a trailing comma
            return labels, line.index("}", pos) + 1


def metric_name(line: str) -> str | None:
    """The metric name a sample line starts with (None where the name is a `__name__` label)."""
    match = _NAME.match(line)
    return match.group(0) if match else None


def parse_sample(line: str) -> tuple[str, dict[str, str], float, int, bool]:
    """(metric, labels, value, time in microseconds, whether the time was written in milliseconds) of
    one sample line; `ValueError` naming the part."""
    name = metric_name(line)
    pos = len(name) if name else 0
    labels: dict[str, str] = {}
    if line.startswith("{", pos):
        labels, pos = parse_labels(line, pos)
    elif name is None:
        raise ValueError("expected a metric name or {")
    if name is None:
        name = labels.pop("__name__", None)
        if not name:
            raise ValueError("expected a metric name before { or a __name__ label")
    else:
        labels.pop("__name__", None)
    rest = line[pos:]
    if rest and not rest[0].isspace():
        raise ValueError("expected a space after the metric name and labels")
    parts = rest.split("#", 1)[0].split()
    if len(parts) < 2:
        raise ValueError("expected a value and a timestamp after the labels" if parts else "expected a value")
    if len(parts) > 2:
        raise ValueError(f"expected 'value timestamp', got {len(parts)} words")
    try:
        value = float(parts[0])
    except ValueError:
        raise ValueError(f"value {parts[0]!r} is not a number (expected a float, NaN, +Inf or -Inf)") from None
    try:
        time_us, milliseconds = _timestamp(parts[1])
    except ValueError:
        raise ValueError(f"timestamp {parts[1]!r} is not a number of seconds (or integer milliseconds)") from None
    return name, labels, value, time_us, milliseconds


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_openmetrics(path: Path, fields: dict[str, str], job_label: str = "hpc_job",
                     unknown: Counter[str] | None = None, batch_rows: int = 200_000) -> Iterator[pl.DataFrame]:
    """Yield the samples of `path` whose metric is a key of `fields` (DCGM metric -> short name to
    store), in input order, as frames of the stored columns of at most `batch_rows` rows. Samples
    of metrics ddlx does not read are counted by name in `unknown` (fields left out on purpose are
    not). A malformed line, and a dump cut short, are an `InputError` naming the file, the line and
    the part; the dump is known to be whole only at its end, so the last frame may be followed by
    that error."""
    path = Path(path)
    rows = SampleRows(job_label)
    ended = 0
    number = 0
    in_seconds = 0  # the first line whose timestamp is in seconds: the dump is OpenMetrics
    broken = False  # whether the latest line has no line break
    try:
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                broken = not line.endswith("\n")
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                if line.startswith("#"):
                    if line.rstrip() == "# EOF":
                        ended = number
                    continue
                if ended:
                    raise InputError(path, f"a sample after '# EOF' (line {ended}); expected nothing more",
                                     line=number)
                name = metric_name(line)
                if name is not None and name not in fields:
                    if name not in FIELDS and unknown is not None:
                        unknown[name] += 1
                    continue
                try:
                    metric, labels, value, time_us, milliseconds = parse_sample(line)
                except ValueError as exc:
                    raise InputError(path, _cut(str(exc), broken), line=number) from None
                if not milliseconds and not in_seconds:
                    in_seconds = number
                field = fields.get(metric)
                if field is None:
                    if metric not in FIELDS and unknown is not None:
                        unknown[metric] += 1
                    continue
                rows.add(field, labels, time_us, value)
                if len(rows) >= batch_rows:
                    yield rows.frame()
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start}); expected OpenMetrics text") \
            from None
    except (gzip.BadGzipFile, EOFError) as exc:
        raise InputError(path, f"not a complete gzip file ({exc}); expected gzip-compressed OpenMetrics text") \
            from None
    if broken and not ended:
        raise InputError(path, "the last line has no line break: the dump is cut short; expected a complete dump "
                         "(OpenMetrics text ends with '# EOF')", line=number)
    if in_seconds and not ended:
        raise InputError(path, f"no '# EOF' after the last line: OpenMetrics text (timestamps in seconds, as on line "
                         f"{in_seconds}) ends with a '# EOF' line, so the dump is cut short; expected the complete "
                         "dump", line=number)
    if len(rows):
        yield rows.frame()


def _cut(problem: str, broken: bool) -> str:
    """`problem` of a malformed line, saying so when it is the last line and has no line break."""
    return f"{problem} (the line has no line break: the dump is cut short)" if broken else problem
