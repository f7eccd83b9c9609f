"""Download the files of a trace release, resumably and verified against published checksums.

A file is streamed to ``<dest>.part`` in the destination folder, hashed as it arrives, and renamed
to ``<dest>`` only once it has its full size and its SHA-256 matches the published one. An
interrupted transfer leaves the ``.part`` behind; the next attempt (an automatic retry, or a later
run) asks the server for the rest with ``Range: bytes=N-``. Content that does not match its
checksum is never kept as ``<dest>`` and never deleted: it is set aside as
``<dest>.rejected-<first 12 hex digits of its SHA-256>`` so a user can inspect it.

Besides the timeout on each read, a transfer has a deadline for making progress: every
`DEADLINE_S` seconds (``DDLX_DOWNLOAD_DEADLINE_S``) must bring `MIN_RATE_BYTES_S` bytes a second
on average, so a server that drips a byte now and then is stopped instead of holding the
download for ever, while a slow but steady link is never cut off whatever the file's size. The
mechanism (`ddlx.datasets.pace.Pace`) is the one Prometheus queries use too.

Every failure is a `ddlx.errors.DownloadError` with a one-line message. The module prints
nothing; callers follow a transfer through the optional ``progress`` callback.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from ddlx.atomic import write_text_atomic
from ddlx.datasets import pace
from ddlx.datasets.archives import hash_file
from ddlx.datasets.trace_info import TraceInfo
from ddlx.errors import DownloadError

__all__ = ["ProgressCallback", "download_file", "download_release"]

ProgressCallback = Callable[[str, int, int | None], None]
"""Called as ``progress(filename, bytes_done, bytes_total_or_None)``."""

CHUNK_BYTES = 1 << 20
"""Size of each read from the network and from disk."""

PROGRESS_INTERVAL_S = 0.1
"""Minimum time between two progress calls (the final call is always made)."""

BACKOFF_BASE_S = 0.25
BACKOFF_MAX_S = 2.0
"""Wait ``min(BACKOFF_BASE_S * 2**n, BACKOFF_MAX_S)`` seconds before retry number ``n + 1``."""

DEADLINE_S = 60.0
"""Default deadline: each stretch of this many seconds of a transfer must average at least
`MIN_RATE_BYTES_S`; the environment variable `DDLX_DOWNLOAD_DEADLINE_S` changes it."""

MIN_RATE_BYTES_S = pace.MIN_RATE_BYTES_S
"""Slowest average transfer accepted over a deadline stretch: 16 KiB/s (about 130 kbit/s). A link
that keeps it up is never cut off: the largest official archive (1.06 GB) would complete in one run (in 18 h)."""

DEADLINE_ENV = "DDLX_DOWNLOAD_DEADLINE_S"

USER_AGENT = "ddlx-downloader/0.1"

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(?:(\d+)-(\d+)|\*)\s*/\s*(\d+|\*)\s*$", re.IGNORECASE)


class _Interrupted(Exception):
    """A transfer stopped early in a way worth retrying (drop, incomplete read, timeout)."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def deadline_from_environment() -> float:
    """`DDLX_DOWNLOAD_DEADLINE_S` as seconds, or `DEADLINE_S` when it is unset."""
    return pace.seconds_from_environment(DEADLINE_ENV, DEADLINE_S, DownloadError)


def _set_aside(path: Path, actual_sha256: str, dest: Path | None = None) -> Path:
    """Rename `path` to `<dest name>.rejected-<12 hex>` in the same folder; return the new path.

    `dest` (default `path`) names the file the content was meant to become, so a rejected
    ``x.part`` is set aside as ``x.rejected-...``.
    """
    name = (dest if dest is not None else path).name
    rejected = path.with_name(f"{name}.rejected-{actual_sha256[:12]}")
    os.replace(path, rejected)
    return rejected


def _parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``(first byte, complete length)`` from a Content-Range header; None for unknown parts."""
    if not value:
        return None, None
    match = _CONTENT_RANGE.match(value)
    if match is None:
        return None, None
    first = int(match.group(1)) if match.group(1) is not None else None
    total = int(match.group(3)) if match.group(3) != "*" else None
    return first, total


def _content_length(response: http.client.HTTPResponse | urllib.error.HTTPError) -> int | None:
    value = response.headers.get("Content-Length")
    if value is None:
        return None
    try:
        length = int(value.strip())
    except ValueError:
        return None
    return length if length >= 0 else None


class _Progress:
    """Throttles calls to a progress callback to one per `PROGRESS_INTERVAL_S`, plus the last."""

    def __init__(self, callback: ProgressCallback | None, filename: str):
        self.callback = callback
        self.filename = filename
        self.last_call = float("-inf")
        self.total: int | None = None  # the last known total, reported or not

    def update(self, done: int, total: int | None) -> None:
        if total is not None:
            self.total = total
        if self.callback is None:
            return
        now = time.monotonic()
        if now - self.last_call >= PROGRESS_INTERVAL_S:
            self.last_call = now
            self.callback(self.filename, done, total)

    def final(self, done: int, total: int | None) -> None:
        if total is not None:
            self.total = total
        if self.callback is not None:
            self.last_call = time.monotonic()
            self.callback(self.filename, done, total)


def _check_url(url: str) -> None:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise DownloadError(f"cannot download {url!r}: only http:// and https:// URLs are supported")


def _existing_is_good(dest: Path, sha256: str | None, size_bytes: int | None) -> tuple[bool, str | None]:
    """Whether an existing `dest` is the published file; also its SHA-256 when it was computed."""
    if sha256 is not None:
        actual = hash_file(dest).hexdigest()
        return actual == sha256, actual
    if size_bytes is not None:
        return dest.stat().st_size == size_bytes, None
    # Nothing published to check against: the file that is there is the best we know.
    return True, None


def _finish(part: Path, dest: Path, url: str, actual_sha256: str, sha256: str | None,
            size_bytes: int | None) -> Path:
    """Verify a complete `.part` and rename it to `dest`, or set it aside and raise."""
    size = part.stat().st_size
    if size_bytes is not None and size != size_bytes:
        rejected = _set_aside(part, actual_sha256, dest)
        raise DownloadError(
            f"{dest.name}: downloaded {size} bytes from {url} but the release lists {size_bytes} "
            f"bytes; the file was set aside as {rejected}"
        )
    if sha256 is not None and actual_sha256 != sha256:
        rejected = _set_aside(part, actual_sha256, dest)
        raise DownloadError(
            f"{dest.name}: checksum mismatch, expected sha256 {sha256} but got {actual_sha256}; "
            f"the file was set aside as {rejected}"
        )
    os.replace(part, dest)
    return dest


def _attempt(url: str, part: Path, *, sha256: str | None, size_bytes: int | None,
             progress: _Progress, timeout_s: float, deadline_s: float, min_rate: float) -> str:
    """One request: bring `part` to its complete content and return its SHA-256 hex digest.

    Raises `_Interrupted` for a transfer worth resuming and `DownloadError` for anything else
    (a transfer slower than the deadline allows among them: it keeps `part` for a later resume).
    """
    offset = part.stat().st_size if part.exists() else 0
    if size_bytes is not None and offset > size_bytes:
        # Longer than the published file: it cannot be a prefix of it. Start over.
        part.unlink()
        offset = 0
    if offset > 0 and size_bytes is not None and offset == size_bytes:
        # Already complete (e.g. the last attempt stopped just before renaming): just verify.
        progress.final(offset, size_bytes)
        return hash_file(part).hexdigest()

    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset > 0:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers, method="GET")

    try:
        response = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        with exc:
            if exc.code == 416 and offset > 0:
                _, complete = _parse_content_range(exc.headers.get("Content-Range"))
                if complete is None or complete == offset:
                    # The server has nothing past our part: it is complete, go to verification.
                    progress.final(offset, offset)
                    return hash_file(part).hexdigest()
                # Our part does not fit the file the server has: start over next time.
                part.unlink()
                raise _Interrupted(
                    f"server rejected resume at byte {offset} of {complete}; restarting"
                ) from None
            raise DownloadError(
                f"download of {url} failed: HTTP {exc.code} {_one_line(exc.reason)}"
            ) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, ConnectionResetError, ConnectionAbortedError)):
            raise _Interrupted(_one_line(reason) or type(reason).__name__) from None
        raise DownloadError(f"download of {url} failed: {_one_line(reason)}") from None
    except (http.client.HTTPException, ConnectionResetError, ConnectionAbortedError,
            TimeoutError) as exc:
        raise _Interrupted(_one_line(exc) or type(exc).__name__) from None
    except OSError as exc:
        raise DownloadError(f"download of {url} failed: {_one_line(exc)}") from None

    with response:
        status = response.status
        length = _content_length(response)
        hasher = hashlib.sha256()
        if status == 206 and offset > 0:
            first, complete = _parse_content_range(response.headers.get("Content-Range"))
            if first is not None and first != offset:
                raise DownloadError(
                    f"download of {url} failed: asked for bytes from {offset} but the server "
                    f"sent a range starting at {first}"
                )
            total = complete if complete is not None else (
                offset + length if length is not None else size_bytes)
            hash_file(part, hasher)  # continue the hash from the bytes already on disk
            mode = "ab"
            done = offset
        elif status == 200 or status == 206:
            # No range support (or no range asked): the body is the whole file. Start over.
            total = length if length is not None else size_bytes
            mode = "wb"
            done = 0
        else:
            raise DownloadError(
                f"download of {url} failed: unexpected HTTP {status} {_one_line(response.reason)}"
            )

        if total is not None and size_bytes is not None and total != size_bytes:
            raise DownloadError(
                f"download of {url} failed: the server reports {total} bytes but the release "
                f"lists {size_bytes} bytes"
            )

        progress.update(done, total)
        stretch = pace.Pace(deadline_s, min_rate, done, DEADLINE_ENV)
        with open(part, mode) as out:
            try:
                while True:
                    wanted = CHUNK_BYTES if total is None else min(CHUNK_BYTES, total - done)
                    if wanted <= 0:
                        break
                    # read1: whatever has arrived (up to `wanted`), so a timeout or a dropped
                    # connection loses nothing that was already received.
                    chunk = response.read1(wanted)
                    if not chunk:
                        break
                    out.write(chunk)
                    hasher.update(chunk)
                    done += len(chunk)
                    progress.update(done, total)
                    if (slow := stretch.too_slow(done)) is not None:
                        raise DownloadError(
                            f"download of {url} stopped after receiving {done} of "
                            f"{total if total is not None else 'unknown'} bytes: {slow}; the "
                            f"partial file {part} is kept and re-running the download resumes it")
            except (http.client.HTTPException, OSError) as exc:
                out.flush()
                raise _Interrupted(
                    f"received {done} of {total if total is not None else 'unknown'} bytes "
                    f"({_one_line(exc) or type(exc).__name__})"
                ) from None
            out.flush()
            os.fsync(out.fileno())

    expected = total if total is not None else size_bytes
    if expected is not None and done < expected:
        raise _Interrupted(f"connection closed after {done} of {expected} bytes")
    progress.final(done, expected if expected is not None else done)
    return hasher.hexdigest()


def download_file(url: str, dest: Path, *, sha256: str | None, size_bytes: int | None = None,
                  progress: ProgressCallback | None = None, timeout_s: float = 60.0,
                  retries: int = 3, deadline_s: float | None = None,
                  min_rate_bytes_s: float = MIN_RATE_BYTES_S) -> Path:
    """Download `url` to `dest`, resuming a previous partial download, and verify it.

    Returns `dest`. Returns at once, without any request, when `dest` already holds the file
    (its SHA-256 matches `sha256`, or, when no checksum is known, its size matches
    `size_bytes`). An existing `dest` that does not match is set aside as
    ``<name>.rejected-<12 hex>`` and downloaded again.

    The transfer goes to ``<dest>.part``; a dropped connection, incomplete body or timeout keeps it
    and is retried up to `retries` times, each time resuming with a Range request. Raises
    `DownloadError` for HTTP errors, unreachable servers, size or checksum mismatches (the bad
    content is set aside, never left as `dest`), and when the retries are exhausted.

    `timeout_s` bounds each read; `deadline_s` (default `DDLX_DOWNLOAD_DEADLINE_S`, else
    `DEADLINE_S`) bounds progress: a transfer averaging less than `min_rate_bytes_s` over one of
    its successive stretches of that many seconds stops with a `DownloadError` (not retried),
    keeping the `.part`. It is checked as bytes arrive, so a server that sends nothing at all is
    stopped by `timeout_s` instead, at most `deadline_s + timeout_s` after the stretch began.
    """
    dest = Path(dest)
    sha256 = sha256.strip().lower() if sha256 else None
    _check_url(url)
    deadline_s = deadline_from_environment() if deadline_s is None else deadline_s
    if retries < 0:
        raise ValueError("retries must be >= 0")
    reporter = _Progress(progress, dest.name)

    if dest.exists():
        good, actual = _existing_is_good(dest, sha256, size_bytes)
        if good:
            size = dest.stat().st_size
            reporter.final(size, size)
            return dest
        _set_aside(dest, actual if actual is not None else hash_file(dest).hexdigest())

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    last_problem = ""
    for attempt in range(retries + 1):
        if attempt > 0:
            time.sleep(min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S))
        try:
            actual = _attempt(url, part, sha256=sha256, size_bytes=size_bytes, progress=reporter,
                              timeout_s=timeout_s, deadline_s=deadline_s, min_rate=min_rate_bytes_s)
        except _Interrupted as exc:
            last_problem = str(exc)
            continue
        return _finish(part, dest, url, actual, sha256, size_bytes)

    received = part.stat().st_size if part.exists() else 0
    known = size_bytes if size_bytes is not None else reporter.total
    total = known if known is not None else "an unknown number of"
    raise DownloadError(
        f"download of {url} interrupted after {retries + 1} attempt(s): received {received} of "
        f"{total} bytes (last problem: {last_problem}); the partial file {part} is kept and "
        f"re-running the download resumes it"
    )


def _mirror_url(official: str, base_url: str) -> str:
    """`official` with everything before its last path segment replaced by `base_url`."""
    name = urllib.parse.urlsplit(official).path.rsplit("/", 1)[-1]
    return base_url.rstrip("/") + "/" + name


def download_release(trace: TraceInfo, dest_dir: Path, *, tables: Sequence[str] | None = None,
                     base_url: str | None = None,
                     progress: ProgressCallback | None = None) -> list[Path]:
    """Download the files of `trace` (or only those of `tables`) into `dest_dir`.

    Each file goes to ``dest_dir/<filename>`` through `download_file`, verified against the
    registry's size and SHA-256. `base_url` (e.g. a mirror) replaces the part of each official
    URL before the file name. Unknown table names raise `UnknownDatasetError` before anything is
    downloaded. Returns the paths in order.

    For a file whose owners publish no checksum, the sha256 of the first download is recorded
    beside it (`<file>.sha256`) and later downloads must match it.
    """
    if tables is None:
        files = list(trace.files)
    else:
        files = []
        for table in tables:
            release_file = trace.file_for(table)
            if release_file not in files:
                files.append(release_file)
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for release_file in files:
        url = release_file.url if base_url is None else _mirror_url(release_file.url, base_url)
        dest = dest_dir / release_file.filename
        expected = release_file.sha256 or read_first_seen(dest)
        paths.append(download_file(url, dest, sha256=expected, size_bytes=release_file.size_bytes,
                                   progress=progress))
        if expected is None:
            record_first_seen(dest)
    return paths


def first_seen_path(dest: Path) -> Path:
    """Where the sha256 of the first download of `dest` is kept: `<dest>.sha256`."""
    return dest.with_name(dest.name + ".sha256")


def read_first_seen(dest: Path) -> str | None:
    """The sha256 recorded at the first download of `dest`, if any."""
    try:
        return first_seen_path(dest).read_text().split()[0].lower()
    except (OSError, IndexError):
        return None


def record_first_seen(dest: Path) -> str:
    """Record the sha256 of `dest` (sha256sum format) for a file whose owners publish no checksum.

    Later downloads must match it; `ddlx datasets info` shows it next to the ingested file.
    """
    digest = hash_file(dest).hexdigest()
    record = first_seen_path(dest)
    write_text_atomic(record, f"{digest}  {dest.name}\n")
    return digest
