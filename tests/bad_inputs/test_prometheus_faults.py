"""A Prometheus that answers too slowly: `ddlx datasets import-metrics --prometheus` bounds every
query by a deadline for the whole answer (`--deadline`, `DDLX_PROMETHEUS_DEADLINE_S`) and a minimum
rate (16 KiB/s over every stretch of `--timeout` seconds). A dripping or stalling server (a real
HTTP server on 127.0.0.1, in a thread) is refused within the limit, measured here, with one `Error:`
line naming the server, the query's time range and the limit; nothing is stored for that chunk, the
data home (a dataset with telemetry) is byte-identical when no chunk came, and a later run resumes,
storing exactly the samples the good server serves (counted here as they are sent)."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from tests.bad_inputs.telemetry_home import T0, home_with_telemetry
from tests.conftest import assert_clean_failure, tree_digest

#: The queried window: the day after the home's own telemetry, one hour in two chunks of 30 min.
START = T0 + 86400
WINDOW = ("--start", str(START), "--end", str(START + 3600), "--chunk", "30m", "--step", "15s", "--fields", "gpu_util")
FIRST_RANGE = "DCGM_FI_DEV_GPU_UTIL over [2024-05-02T12:00:00Z, 2024-05-02T12:30:00Z)"
SECOND_RANGE = "DCGM_FI_DEV_GPU_UTIL over [2024-05-02T12:30:00Z, 2024-05-02T13:00:00Z)"
#: How far from its limit a refusal may come: the limit starts when the query is prepared, a little
#: before the server sees the request; the import's own work and a loaded machine add a little after.
MARGIN_S = 1.5
#: A dripping answer sends one byte each this many seconds, and gives up after `DRIP_MAX_BYTES`.
DRIP_INTERVAL_S = 1.0
DRIP_MAX_BYTES = 30


class Prometheus:
    """A query_range endpoint in a thread. `script` gives the behaviour of each request in turn (the
    last repeats): "good" (the whole answer at once), "drip" (a 200 with the answer's length, then one
    byte every `drip_interval_s`), "stall" (a 200, then nothing), "silent" (no answer at all), "cut"
    (half the answer, then the connection closes). `served` counts the samples of each good answer."""

    def __init__(self, script: list[str], drip_interval_s: float = DRIP_INTERVAL_S, port: int = 0) -> None:
        self.script = script
        self.drip_interval_s = drip_interval_s
        self.requests: list[dict[str, str]] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.served: list[int] = []
        self.stop = threading.Event()
        state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(self.path).query))
                state.requests.append(query)
                state.arrivals.append(time.monotonic())
                what = state.script[min(len(state.requests), len(state.script)) - 1]
                body = state.answer(query, count=what == "good")
                self.close_connection = True
                try:
                    if what == "silent":
                        state.stop.wait(30)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if what == "good":
                        self.wfile.write(body)
                    elif what == "cut":
                        self.wfile.write(body[:len(body) // 2])
                    elif what == "stall":
                        self.wfile.flush()
                        state.stop.wait(30)
                    elif what == "drip":
                        for offset in range(DRIP_MAX_BYTES):
                            if state.stop.wait(state.drip_interval_s):
                                return
                            self.wfile.write(body[offset:offset + 1])
                            self.wfile.flush()
                except OSError:  # the client gave up
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, query: dict[str, str], count: bool) -> bytes:
        """The answer to a range query: two GPUs, a value at every step from start to end."""
        start, end, step = int(query["start"]), int(query["end"]), int(query["step"])
        result = [{"metric": {"__name__": query["query"], "Hostname": "n9", "gpu": str(gpu)},
                   "values": [[t, str((gpu + t // step) % 100)] for t in range(start, end + 1, step)]}
                  for gpu in (0, 1)]
        if count:
            self.served.append(sum(len(series["values"]) for series in result))
        return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()

    def __enter__(self) -> Prometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return home_with_telemetry(tmp_path)[0]


def _run(cli, home: Path, url: str, *extra: str):
    """`ddlx datasets import-metrics cl --prometheus url` over `WINDOW`; the result and when it ended
    (`time.monotonic()`)."""
    result = cli("datasets", "import-metrics", "cl", "--prometheus", url, *WINDOW, *extra, "--data-home", home)
    return result, time.monotonic()


def _stored_from(home: Path, host: str) -> int:
    frame = pl.read_parquet(home / "telemetry" / "cl" / "gpu_samples" / "day=*" / "*.parquet")
    return frame.filter(pl.col("host") == host).height


def test_a_dripping_server_is_refused_at_the_deadline(home: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_PROMETHEUS_DEADLINE_S", "2")
    before = tree_digest(home)
    with Prometheus(["drip"]) as server:
        result, ended = _run(cli, home, server.url)
    seconds = ended - server.arrivals[0]  # from the query's request to the refusal
    assert_clean_failure(result, server.url, FIRST_RANGE, "within the deadline of 2 s",
                         "--deadline or DDLX_PROMETHEUS_DEADLINE_S raises it", "bytes of the answer came")
    assert 2 - MARGIN_S < seconds < 2 + MARGIN_S, seconds
    assert len(server.requests) == 1  # the deadline covers the retries: none is left
    assert tree_digest(home) == before


@pytest.mark.parametrize("behaviour", ["stall", "silent"])
def test_a_stalling_server_is_refused_at_the_deadline(behaviour: str, home: Path, cli) -> None:
    """Headers and then nothing, or no answer at all: --timeout (60 s) would wait longer, the
    deadline (--deadline 2) cuts every wait to the time left."""
    before = tree_digest(home)
    with Prometheus([behaviour]) as server:
        result, ended = _run(cli, home, server.url, "--deadline", "2")
    seconds = ended - server.arrivals[0]
    assert_clean_failure(result, server.url, FIRST_RANGE, "within the deadline of 2 s", "--deadline")
    assert 2 - MARGIN_S < seconds < 2 + MARGIN_S, seconds
    assert tree_digest(home) == before


def test_an_answer_below_the_minimum_rate_is_refused_after_one_stretch(home: Path, cli) -> None:
    before = tree_digest(home)
    with Prometheus(["drip"], drip_interval_s=0.2) as server:
        result, ended = _run(cli, home, server.url, "--timeout", "1", "--deadline", "30")
    seconds = ended - server.arrivals[0]
    assert_clean_failure(result, server.url, FIRST_RANGE, "too slowly", "16 KiB/s on average over every 1 s",
                         "--timeout sets the seconds")
    assert 1 - MARGIN_S / 2 < seconds < 1 + MARGIN_S, seconds
    assert len(server.requests) == 1  # a too slow answer is not retried
    assert tree_digest(home) == before


def test_a_later_run_resumes_after_a_dripping_chunk(home: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first chunk comes whole, the second drips: refused at the deadline with the first kept;
    run again against a good server, only the second is asked for, and the samples stored are
    exactly those served."""
    monkeypatch.setenv("DDLX_PROMETHEUS_DEADLINE_S", "2")
    with Prometheus(["good", "drip"]) as server:
        result, ended = _run(cli, home, server.url)
    seconds = ended - server.arrivals[1]
    assert_clean_failure(result, server.url, SECOND_RANGE, "within the deadline of 2 s",
                         "stored before it (1) are kept", "run the same import again to resume")
    assert seconds < 2 + MARGIN_S, seconds
    (first,) = server.served
    assert first == 2 * 120  # two GPUs, 30 minutes at 15 s
    assert _stored_from(home, "n9") == first
    port = int(server.url.rsplit(":", 1)[1])
    with Prometheus(["good"], port=port) as server:  # the same server, answering well
        result, _ = _run(cli, home, server.url)
    assert result.code == 0, result.err
    assert [(r["start"], r["end"]) for r in server.requests] == [(str(START + 1800), str(START + 3585))]
    (second,) = server.served
    assert f"{second:,} samples in 1 chunks written, 1 chunks already stored (skipped)" in result.out
    assert _stored_from(home, "n9") == first + second == 2 * 240


def test_an_answer_cut_short_is_retried(home: Path, cli) -> None:
    with Prometheus(["cut", "good"]) as server:
        result, _ = _run(cli, home, server.url)
    assert result.code == 0, result.err
    assert len(server.requests) == 3 and _stored_from(home, "n9") == sum(server.served) == 2 * 240


def test_a_malformed_deadline_is_refused(home: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    before = tree_digest(home)
    monkeypatch.setenv("DDLX_PROMETHEUS_DEADLINE_S", "soon")
    result, _ = _run(cli, home, "http://127.0.0.1:9")
    assert_clean_failure(result, "DDLX_PROMETHEUS_DEADLINE_S='soon' is not a positive number of seconds", code=2)
    monkeypatch.delenv("DDLX_PROMETHEUS_DEADLINE_S")
    result, _ = _run(cli, home, "http://127.0.0.1:9", "--deadline", "0")
    assert_clean_failure(result, "--deadline: must be a positive number of seconds", code=2)
    assert tree_digest(home) == before
