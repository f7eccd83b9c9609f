"""Tests of ddlx.datasets.download against a local HTTP server on 127.0.0.1 only."""

from __future__ import annotations

import hashlib
import random
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ddlx.datasets import download as dl
from ddlx.datasets.download import download_file, download_release
from ddlx.datasets.trace_info import ReleaseFile, TraceInfo
from ddlx.errors import DownloadError, UnknownDatasetError

MIB = 1 << 20
PAYLOAD = random.Random(20200701).randbytes(3 * MIB + 517)
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()
K = MIB + 12_345  # where an interrupted transfer stops: not a multiple of the chunk size


def _corrupted(data: bytes) -> bytes:
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0xFF
    return bytes(flipped)


@dataclass
class FakeServer:
    """Serves in-memory payloads at /<name>; switches control how it misbehaves."""

    files: dict[str, bytes] = field(default_factory=dict)
    range_support: bool = True
    drop_after: int | None = None  # send full Content-Length, write this many bytes, close
    drop_times: int = 1  # how many requests (the first ones) are dropped
    stall_after: int | None = None  # write this many bytes then stop sending (first request)
    corrupt: bool = False
    status_override: int | None = None
    max_requests: int = 20
    log: list[tuple[str, str | None]] = field(default_factory=list)
    port: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _dropped: int = 0
    _stalled: bool = False

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def ranges(self) -> list[str | None]:
        return [rng for _, rng in self.log]


def _make_handler(state: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 5

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

        def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None):
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            range_header = self.headers.get("Range")
            with state.lock:
                state.log.append((self.path, range_header))
                over_limit = len(state.log) > state.max_requests
            if over_limit:
                self._reply(503, b"too many requests in this test")
                return
            if state.status_override is not None:
                self._reply(state.status_override, b"forced error")
                return
            payload = state.files.get(self.path.lstrip("/"))
            if payload is None:
                self._reply(404, b"not found")
                return
            if state.corrupt:
                payload = _corrupted(payload)

            status, body, headers = 200, payload, {}
            match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
            if state.range_support and match:
                start = int(match.group(1))
                if start >= len(payload):
                    self._reply(416, b"", {"Content-Range": f"bytes */{len(payload)}"})
                    return
                status, body = 206, payload[start:]
                headers["Content-Range"] = f"bytes {start}-{len(payload) - 1}/{len(payload)}"

            with state.lock:
                drop = state.drop_after is not None and state._dropped < state.drop_times
                state._dropped += drop
                stall = state.stall_after is not None and not state._stalled
                state._stalled |= stall
            cut = state.drop_after if drop else state.stall_after if stall else None

            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if cut is None:
                self.wfile.write(body)
                return
            self.wfile.write(body[:cut])
            if stall:
                state.release.wait(3)  # the client times out meanwhile; teardown wakes us
            self.close_connection = True

    return Handler


@pytest.fixture(autouse=True)
def _fast_and_local(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxies (only 127.0.0.1 is ever contacted) and short retry back-off."""
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "*")
    monkeypatch.setattr(dl, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(dl, "BACKOFF_MAX_S", 0.05)


@pytest.fixture
def server():
    state = FakeServer(files={"data.bin": PAYLOAD})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=2)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_fresh_download_verifies_and_renames(server: FakeServer, tmp_path: Path) -> None:
    dest = tmp_path / "data.bin"
    result = download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD))
    assert result == dest
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == PAYLOAD_SHA
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]  # no .part, nothing set aside
    assert server.log == [("/data.bin", None)]


def test_interrupted_transfer_resumes_with_range(server: FakeServer, tmp_path: Path) -> None:
    server.drop_after = K
    dest = tmp_path / "data.bin"
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD), retries=3)
    assert server.ranges == [None, f"bytes={K}-"]
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]


def test_retries_exhausted_keeps_part_and_rerun_resumes(server: FakeServer, tmp_path: Path) -> None:
    server.drop_after = K
    server.drop_times = 2
    dest = tmp_path / "data.bin"
    part = tmp_path / "data.bin.part"
    with pytest.raises(DownloadError) as excinfo:
        download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD), retries=0)
    message = str(excinfo.value)
    assert f"received {K} of {len(PAYLOAD)} bytes" in message
    assert "resumes" in message and str(part) in message
    assert "\n" not in message
    assert not dest.exists()
    assert part.read_bytes() == PAYLOAD[:K]
    assert server.ranges == [None]

    # The second run is dropped again (at K bytes of the remainder) and resumes once more.
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD), retries=1)
    assert server.ranges == [None, f"bytes={K}-", f"bytes={2 * K}-"]
    assert dest.read_bytes() == PAYLOAD
    assert not part.exists()


def test_timeout_mid_transfer_is_retried_with_resume(server: FakeServer, tmp_path: Path) -> None:
    server.stall_after = K
    dest = tmp_path / "data.bin"
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD),
                  timeout_s=0.3, retries=2)
    assert server.ranges == [None, f"bytes={K}-"]
    assert dest.read_bytes() == PAYLOAD


def test_server_without_range_support_restarts(server: FakeServer, tmp_path: Path) -> None:
    server.range_support = False
    dest = tmp_path / "data.bin"
    part = tmp_path / "data.bin.part"
    part.write_bytes(b"\x00" * 1000)  # not even a prefix of the file: must be overwritten
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD))
    assert server.ranges == ["bytes=1000-"]  # asked to resume, got a 200 with the whole file
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]


def test_corrupted_content_is_set_aside(server: FakeServer, tmp_path: Path) -> None:
    server.corrupt = True
    bad = _corrupted(PAYLOAD)
    bad_sha = hashlib.sha256(bad).hexdigest()
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError) as excinfo:
        download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD))
    message = str(excinfo.value)
    rejected = tmp_path / f"data.bin.rejected-{bad_sha[:12]}"
    assert PAYLOAD_SHA in message and bad_sha in message
    assert "data.bin" in message and str(rejected) in message
    assert not dest.exists()
    assert _leftovers(tmp_path) == [rejected.name]
    assert rejected.read_bytes() == bad
    assert len(server.log) == 1  # a checksum mismatch is not retried


def test_already_present_good_file_makes_no_request(server: FakeServer, tmp_path: Path) -> None:
    dest = tmp_path / "data.bin"
    dest.write_bytes(PAYLOAD)
    calls: list[tuple[str, int, int | None]] = []
    assert download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA,
                         progress=lambda *args: calls.append(args)) == dest
    # Without a published checksum, a matching size is enough.
    assert download_file(server.url("data.bin"), dest, sha256=None, size_bytes=len(PAYLOAD)) == dest
    assert server.log == []
    assert calls == [("data.bin", len(PAYLOAD), len(PAYLOAD))]
    assert _leftovers(tmp_path) == ["data.bin"]


def test_present_bad_file_is_set_aside_and_downloaded_again(server: FakeServer, tmp_path: Path) -> None:
    dest = tmp_path / "data.bin"
    stale = b"an older, different release of the file\n" * 100
    dest.write_bytes(stale)
    stale_sha = hashlib.sha256(stale).hexdigest()
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD))
    rejected = tmp_path / f"data.bin.rejected-{stale_sha[:12]}"
    assert rejected.read_bytes() == stale
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == sorted(["data.bin", rejected.name])
    assert server.log == [("/data.bin", None)]


def test_http_404_is_a_one_line_download_error(server: FakeServer, tmp_path: Path) -> None:
    url = server.url("missing.bin")
    with pytest.raises(DownloadError) as excinfo:
        download_file(url, tmp_path / "missing.bin", sha256=PAYLOAD_SHA)
    message = str(excinfo.value)
    assert "HTTP 404" in message and url in message
    assert "\n" not in message and "Traceback" not in message
    assert len(server.log) == 1
    assert _leftovers(tmp_path) == []


def test_http_500_is_a_download_error(server: FakeServer, tmp_path: Path) -> None:
    server.status_override = 500
    with pytest.raises(DownloadError, match=r"HTTP 500"):
        download_file(server.url("data.bin"), tmp_path / "data.bin", sha256=PAYLOAD_SHA)
    assert len(server.log) == 1


def test_connection_refused_is_a_download_error(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port that nobody listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/data.bin"
    with pytest.raises(DownloadError) as excinfo:
        download_file(url, tmp_path / "data.bin", sha256=PAYLOAD_SHA, timeout_s=2)
    assert url in str(excinfo.value) and "\n" not in str(excinfo.value)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/data.bin", "file:///etc/hostname", "data.bin"])
def test_only_http_urls_are_accepted(url: str, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="only http"):
        download_file(url, tmp_path / "data.bin", sha256=PAYLOAD_SHA)
    assert _leftovers(tmp_path) == []


def test_content_length_disagreeing_with_release_size(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as excinfo:
        download_file(server.url("data.bin"), tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                      size_bytes=len(PAYLOAD) + 1)
    assert str(len(PAYLOAD)) in str(excinfo.value) and str(len(PAYLOAD) + 1) in str(excinfo.value)
    assert not (tmp_path / "data.bin").exists()


def test_complete_part_of_unknown_size_gets_416_then_verified(server: FakeServer, tmp_path: Path) -> None:
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD)
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=None)
    assert server.ranges == [f"bytes={len(PAYLOAD)}-"]
    assert dest.read_bytes() == PAYLOAD
    assert _leftovers(tmp_path) == ["data.bin"]


def test_complete_part_of_known_size_is_verified_without_request(server: FakeServer, tmp_path: Path) -> None:
    dest = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(PAYLOAD)
    download_file(server.url("data.bin"), dest, sha256=PAYLOAD_SHA, size_bytes=len(PAYLOAD))
    assert server.log == []
    assert dest.read_bytes() == PAYLOAD


def test_progress_last_call_reports_completion(server: FakeServer, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int | None]] = []
    download_file(server.url("data.bin"), tmp_path / "data.bin", sha256=PAYLOAD_SHA,
                  progress=lambda name, done, total: calls.append((name, done, total)))
    assert calls[-1] == ("data.bin", len(PAYLOAD), len(PAYLOAD))
    assert all(name == "data.bin" and total == len(PAYLOAD) for name, _, total in calls)
    dones = [done for _, done, _ in calls]
    assert dones == sorted(dones)
    assert len(calls) <= 6  # throttled: a local 3 MiB transfer takes well under 0.5 s


def _fake_trace() -> tuple[TraceInfo, dict[str, bytes]]:
    second = random.Random(7).randbytes(200_000)
    files = {"alpha.bin": PAYLOAD[:300_000], "beta.csv": second}
    return TraceInfo(
        name="fake", title="Fake trace", description="two tiny files", source_tz="UTC",
        licence="CC0-1.0", paper="none", homepage="https://example.invalid/",
        files=tuple(
            ReleaseFile(tables=(name.split(".")[0],), filename=name,
                        url=f"https://example.invalid/releases/v1/{name}",
                        size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
            for name, data in files.items()
        ),
    ), files


def test_download_release_uses_mirror_and_table_selection(server: FakeServer, tmp_path: Path) -> None:
    trace, files = _fake_trace()
    server.files = dict(files)

    everything = tmp_path / "all" / "nested"
    paths = download_release(trace, everything, base_url=server.base_url)
    assert paths == [everything / "alpha.bin", everything / "beta.csv"]
    assert [p.read_bytes() for p in paths] == [files["alpha.bin"], files["beta.csv"]]
    assert [path for path, _ in server.log] == ["/alpha.bin", "/beta.csv"]

    server.log.clear()
    only_beta = tmp_path / "beta-only"
    assert download_release(trace, only_beta, tables=["beta"], base_url=server.base_url.rstrip("/")) \
        == [only_beta / "beta.csv"]
    assert _leftovers(only_beta) == ["beta.csv"]
    assert server.log == [("/beta.csv", None)]

    with pytest.raises(UnknownDatasetError, match="gamma"):
        download_release(trace, tmp_path / "none", tables=["alpha", "gamma"], base_url=server.base_url)
    assert server.log == [("/beta.csv", None)]


def test_first_download_sha256_is_recorded_and_enforced_when_none_is_published(
        server: FakeServer, tmp_path: Path) -> None:
    content = random.Random(11).randbytes(50_000)
    trace = TraceInfo(
        name="unpublished", title="No checksum", description="one file", source_tz="UTC",
        licence="CC0-1.0", paper="none", homepage="https://example.invalid/",
        files=(ReleaseFile(tables=("data",), filename="data.zip",
                           url="https://example.invalid/data.zip", size_bytes=None, sha256=None),),
    )
    server.files = {"data.zip": content}
    dest = tmp_path / "downloads"
    [path] = download_release(trace, dest, base_url=server.base_url)
    record = dest / "data.zip.sha256"
    expected = hashlib.sha256(content).hexdigest()
    assert record.read_text() == f"{expected}  data.zip\n"
    assert dl.read_first_seen(path) == expected

    # The owners' file changes: a new download must not silently replace what was first seen.
    path.unlink()
    server.files = {"data.zip": content[:-1] + b"x"}
    with pytest.raises(DownloadError, match=expected):
        download_release(trace, dest, base_url=server.base_url)
    assert record.read_text() == f"{expected}  data.zip\n"
    assert not path.exists()
