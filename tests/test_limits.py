"""The limits that keep a hostile or broken source from filling the disk or holding a download for
ever: archive members may not expand past a size or a ratio (real tar.gz and zip bombs built here),
only regular files are extracted, and a download must keep a minimum pace (a local server on
127.0.0.1 that drips bytes). See docs/guarantees.md."""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import os
import random
import re
import shutil
import stat
import subprocess
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ddlx.datasets import archives
from ddlx.datasets.archives import ExpansionLimits, extract_members
from ddlx.datasets.download import download_file
from ddlx.errors import DownloadError, InputError, StorageError
from tests.conftest import assert_clean_failure
from tests.test_download import _fast_and_local  # noqa: F401  (autouse: no proxies, loopback only)
from tests.test_helios_ingest import release_files, write_zip

MIB = 1 << 20
BOMB_BYTES = 50 * MIB  # zeros: about 50 KiB once gzip'd or deflated
LOW_LIMIT = "10M"  # DDLX_MAX_MEMBER_BYTES in most tests, so that a small bomb is over it


def _tree_digest(root: Path) -> dict[str, str]:
    """Every file (by its sha256) and folder under `root`, by relative path."""
    return {p.relative_to(root).as_posix(): _sha256(p) if p.is_file() else "dir" for p in sorted(root.rglob("*"))}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_tar_gz(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _file_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def _zeros_tar_gz(path: Path, member: str, size: int = BOMB_BYTES) -> Path:
    return _write_tar_gz(path, [(_file_info(member, size), bytes(size))])


def _sparse_tar_gz(path: Path, member: str, real_size: int) -> Path:
    """A GNU sparse member whose header's size field says 512 stored bytes, while its sparse map
    makes it `real_size` bytes long once expanded: a 100-byte archive that unpacks to `real_size`."""
    info = _file_info(member, 512)
    info.type = tarfile.GNUTYPE_SPARSE
    header = bytearray(info.tobuf(tarfile.GNU_FORMAT))
    header[386:410] = b"%011o\0%011o\0" % (0, 512)  # one data run: 512 bytes at offset 0
    header[483:495] = b"%011o\0" % real_size  # the expanded size
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)  # the header checksum, as tar computes it
    path.write_bytes(gzip.compress(bytes(header) + b"x" * 512 + bytes(2 * tarfile.BLOCKSIZE)))
    return path


@pytest.fixture
def pai_home(cli, pai_release: Path, home: Path) -> Path:
    """A data home holding a good PAI ingest."""
    assert cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home).code == 0
    return home


def _ingest_pai_refused(cli, pai_release: Path, home: Path, *needles: str) -> str:
    """Ingest the (altered) release into `home`: it must fail cleanly and leave `home` as it was."""
    before = _tree_digest(home)
    line = assert_clean_failure(cli("datasets", "ingest", "pai", "--from", pai_release, "--data-home", home),
                                *needles)
    assert _tree_digest(home) == before
    return line


# -- archive members past the limits, through `ddlx datasets ingest` -------------------------------

def test_tar_gz_bomb_over_the_member_limit(cli, pai_release: Path, pai_home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = _zeros_tar_gz(pai_release / "pai_job_table.tar.gz", "pai_job_table.csv")
    assert bomb.stat().st_size < MIB
    monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", LOW_LIMIT)
    _ingest_pai_refused(cli, pai_release, pai_home, "pai_job_table.tar.gz", "member 'pai_job_table.csv'",
                        f"expands to {BOMB_BYTES:,} bytes", "over the limit of 10,485,760 bytes",
                        "DDLX_MAX_MEMBER_BYTES=")


def test_zip_bomb_over_the_member_limit(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    release = write_zip(tmp_path / "good" / "data.zip", release_files())
    assert cli("datasets", "ingest", "helios", "--from", release, "--data-home", home).code == 0
    files = release_files()
    files["Venus/cluster_log.csv"] = bytes(BOMB_BYTES)
    bomb = write_zip(tmp_path / "bomb" / "data.zip", files)
    assert bomb.stat().st_size < MIB
    monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", LOW_LIMIT)
    before = _tree_digest(home)
    result = cli("datasets", "ingest", "helios", "--from", bomb, "--data-home", home)
    assert_clean_failure(result, "data.zip", "member 'data/Venus/cluster_log.csv'", f"{BOMB_BYTES:,} bytes",
                         "10,485,760", "DDLX_MAX_MEMBER_BYTES=")
    assert _tree_digest(home) == before


def test_absurd_ratio_is_refused_while_streaming(cli, pai_release: Path, pai_home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Under the default size limit: the ratio, measured as the gzip stream is read, stops it.
    _zeros_tar_gz(pai_release / "pai_task_table.tar.gz", "pai_task_table.csv")
    monkeypatch.setenv("DDLX_MAX_EXPANSION_RATIO", "20")
    line = _ingest_pai_refused(cli, pai_release, pai_home, "pai_task_table.tar.gz", "'pai_task_table.csv'",
                               "more than 20 times its compressed size", "DDLX_MAX_EXPANSION_RATIO=")
    written = int(re.search(r"size \(([\d,]+) bytes from", line).group(1).replace(",", ""))
    assert written < BOMB_BYTES // 2  # stopped early, not after the whole member


@pytest.mark.parametrize("limit, needle", [
    (LOW_LIMIT, "expands to 62,914,560 bytes, over the limit of 10,485,760 bytes"),
    (None, "times its compressed size"),  # the default limits catch it too, by its ratio
])
def test_tar_header_lying_about_its_size(cli, pai_release: Path, pai_home: Path, monkeypatch: pytest.MonkeyPatch,
                                         limit: str | None, needle: str) -> None:
    bomb = _sparse_tar_gz(pai_release / "pai_job_table.tar.gz", "pai_job_table.csv", 60 * MIB)
    assert bomb.stat().st_size < 1024
    if limit is not None:
        monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", limit)
    _ingest_pai_refused(cli, pai_release, pai_home, "pai_job_table.tar.gz", "'pai_job_table.csv'", needle)


def test_declared_ratio_of_a_zip_member_is_refused_before_writing(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf, zf.open("jobs.csv", "w") as out:
        for _ in range(100):
            out.write(bytes(MIB))
    dest = tmp_path / "out" / "jobs.csv"
    dest.parent.mkdir()
    with pytest.raises(InputError, match=r"'jobs.csv' expands more than 200 times .*104,857,600 bytes"):
        extract_members(archive, {"jobs.csv": dest})
    assert list(dest.parent.iterdir()) == []


def test_bytes_are_counted_whatever_the_header_declared(tmp_path: Path) -> None:
    """A reader that yields more than its header declared is still stopped at the limit."""
    limits = ExpansionLimits(max_member_bytes=3 * MIB)
    meter = archives._MemberMeter(tmp_path / "a.tar.gz", "m.csv", limits, position=lambda: 8 * MIB, start=0)
    with pytest.raises(InputError, match=r"'m.csv' expands to more than 3,145,728 bytes"):
        archives._copy_member(io.BytesIO(bytes(8 * MIB)), tmp_path / "m.csv", meter)
    assert meter.written <= archives.COPY_CHUNK + 3 * MIB
    assert (tmp_path / "m.csv").stat().st_size <= 3 * MIB  # the chunk past the limit was never written


def test_import_listing_refuses_a_declared_oversize_member(cli, pai_home: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = _zeros_tar_gz(tmp_path / "export.tar.gz", "jobs.csv")
    monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", LOW_LIMIT)
    before = _tree_digest(pai_home)
    result = cli("datasets", "import", "mine", "--from", bomb, "--map", "submit=a,duration=b,gpus=c",
                 "--data-home", pai_home)
    assert_clean_failure(result, "export.tar.gz", "member 'jobs.csv'", "10,485,760", "DDLX_MAX_MEMBER_BYTES=")
    assert _tree_digest(pai_home) == before


def test_malformed_limit_is_a_clean_error(cli, pai_release: Path, pai_home: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A changed input (else ingest has nothing to do), so that extraction reads the limits.
    _zeros_tar_gz(pai_release / "pai_job_table.tar.gz", "pai_job_table.csv", size=10)
    monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", "lots")
    _ingest_pai_refused(cli, pai_release, pai_home, "DDLX_MAX_MEMBER_BYTES", "'lots'", "positive whole number")
    monkeypatch.setenv("DDLX_MAX_MEMBER_BYTES", "64G")
    assert ExpansionLimits.from_environment().max_member_bytes == 64 << 30


# -- member types and names ------------------------------------------------------------------------

def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, b""


def test_only_regular_members_are_extracted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    tar = _write_tar_gz(tmp_path / "links.tar.gz", [
        _special("jobs.csv", tarfile.SYMTYPE, "/etc/passwd"),
        _special("a/jobs.csv", tarfile.LNKTYPE, "../b"),
        _special("b/jobs.csv", tarfile.FIFOTYPE),
        _special("c/jobs.csv", tarfile.CHRTYPE),
        _special("d/jobs.csv", tarfile.BLKTYPE),
        _special("e/jobs.csv", tarfile.DIRTYPE),
    ])
    zipped = tmp_path / "links.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        for name, mode in [("jobs.csv", stat.S_IFLNK | 0o777), ("f/jobs.csv", stat.S_IFIFO | 0o644)]:
            entry = zipfile.ZipInfo(name)
            entry.create_system = 3  # Unix: the high bits of external_attr are the file mode
            entry.external_attr = mode << 16
            zf.writestr(entry, "/etc/passwd")
        zf.writestr("g/jobs.csv/", "")
    assert archives.archive_member_names(zipped) == []
    for archive in (tar, zipped):
        with pytest.raises(InputError, match="member 'jobs.csv' is a symbolic link; expected a regular file"):
            extract_members(archive, {"jobs.csv": out / "jobs.csv"})
        assert list(out.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["links.tar.gz", "links.zip", "out"]


def test_zip_member_names_cannot_escape(tmp_path: Path) -> None:
    archive = tmp_path / "inner" / "names.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../escaped.csv", "a\n")
        zf.writestr("/tmp/absolute-ddlx-limits-test.csv", "b\n")
    out = tmp_path / "inner" / "out"
    out.mkdir()
    wanted = {"escaped.csv": out / "0.csv", "absolute-ddlx-limits-test.csv": out / "1.csv"}
    with pytest.raises(InputError, match="member name '../escaped.csv' climbs out of the archive"):
        extract_members(archive, wanted)
    absolute = archive.with_name("absolute.zip")
    with zipfile.ZipFile(absolute, "w") as zf:
        zf.writestr("/tmp/absolute-ddlx-limits-test.csv", "b\n")
    with pytest.raises(InputError, match="is an absolute path"):
        extract_members(absolute, {"absolute-ddlx-limits-test.csv": out / "1.csv"})
    with pytest.raises(InputError, match="is an absolute path"):
        archives.archive_member_names(absolute)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["absolute.zip", "inner", "names.zip", "out"]
    assert not Path("/tmp/absolute-ddlx-limits-test.csv").exists()


# -- the download deadline -------------------------------------------------------------------------

PAYLOAD = random.Random(42).randbytes(200_000)
DRIP_INTERVAL_S = 0.5
DRIP_MAX_BYTES = 40  # a dripping reply gives up after 20 s whatever the client does


@dataclass
class DripServer:
    """Serves PAYLOAD at /data.bin (with ranges); while `drip`, one byte per DRIP_INTERVAL_S."""

    drip: bool = True
    port: int = 0
    ranges: list[str | None] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/data.bin"


def _drip_handler(state: DripServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            asked = self.headers.get("Range")
            state.ranges.append(asked)
            start = int(asked.removeprefix("bytes=").rstrip("-")) if asked else 0
            body = PAYLOAD[start:]
            self.send_response(206 if asked else 200)
            if asked:
                self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not state.drip:
                self.wfile.write(body)
                return
            self.close_connection = True
            try:
                for offset in range(min(DRIP_MAX_BYTES, len(body))):
                    if state.stop.wait(DRIP_INTERVAL_S):
                        return
                    self.wfile.write(body[offset:offset + 1])
                    self.wfile.flush()
            except OSError:  # the client gave up
                pass

    return Handler


@pytest.fixture
def drip_server() -> Iterator[DripServer]:
    state = DripServer()
    with ThreadingHTTPServer(("127.0.0.1", 0), _drip_handler(state)) as httpd:
        state.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        try:
            yield state
        finally:
            state.stop.set()
            httpd.shutdown()


def test_dripping_server_meets_the_deadline_then_resume_completes(
        drip_server: DripServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_DOWNLOAD_DEADLINE_S", "2")
    dest, part = tmp_path / "data.bin", tmp_path / "data.bin.part"
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    started = time.monotonic()
    with pytest.raises(DownloadError) as excinfo:
        download_file(drip_server.url, dest, sha256=sha, size_bytes=len(PAYLOAD), timeout_s=5)
    assert time.monotonic() - started < 6
    message = str(excinfo.value)
    received = part.stat().st_size
    assert 1 <= received < DRIP_MAX_BYTES and part.read_bytes() == PAYLOAD[:received]
    for needle in (drip_server.url, f"after receiving {received} of {len(PAYLOAD)} bytes", "every 2 s",
                   "16 KiB/s", "DDLX_DOWNLOAD_DEADLINE_S", str(part), "resumes"):
        assert needle in message, (needle, message)
    assert "\n" not in message and not dest.exists()
    assert drip_server.ranges == [None]  # a stall is not retried

    drip_server.drip = False
    assert download_file(drip_server.url, dest, sha256=sha, size_bytes=len(PAYLOAD)) == dest
    assert drip_server.ranges == [None, f"bytes={received}-"]
    assert dest.read_bytes() == PAYLOAD and not part.exists()


def test_malformed_deadline_is_a_download_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDLX_DOWNLOAD_DEADLINE_S", "soon")
    with pytest.raises(DownloadError, match="DDLX_DOWNLOAD_DEADLINE_S='soon' is not a positive number"):
        download_file("http://127.0.0.1:9/data.bin", tmp_path / "data.bin", sha256=None)
    assert list(tmp_path.iterdir()) == []


def test_an_encrypted_zip_member_is_refused(tmp_path: Path) -> None:
    """Python can write no encrypted zip, so the entry's encryption flag is set on a plain one."""
    archive = tmp_path / "locked.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("jobs.csv", "a,b\n1,2\n")
    data = bytearray(archive.read_bytes())
    for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers
        at = data.index(signature)
        data[at + flag_offset] |= 0x1
    archive.write_bytes(bytes(data))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InputError, match="member 'jobs.csv' is an encrypted file"):
        extract_members(archive, {"jobs.csv": out / "jobs.csv"})
    with pytest.raises(InputError, match="member 'jobs.csv' is an encrypted file"):
        archives.archive_member_names(archive, wanted=lambda name: name.endswith(".csv"))
    assert list(out.iterdir()) == []


def test_members_extract_whole_and_hash_the_archive_as_read(tmp_path: Path) -> None:
    """Members larger than one copy piece arrive byte for byte, in space reserved for them, and the
    sha256 returned is the archive file's own."""
    data = random.Random(7).randbytes(3 * archives.COPY_CHUNK + 12_345)
    archive = _write_tar_gz(tmp_path / "t.tar.gz", [(_file_info("a.csv", len(data)), data),
                                                    (_file_info("b.csv", 5), b"1,2\n\n")])
    dest = tmp_path / "out"
    dest.mkdir()
    sha = extract_members(archive, {"a.csv": dest / "a", "b.csv": dest / "b"})
    assert (dest / "a").read_bytes() == data and (dest / "b").read_bytes() == b"1,2\n\n"
    assert sha == _sha256(archive)


def test_members_after_long_names_skipped_members_and_padding_come_out_whole(tmp_path: Path) -> None:
    """The tar walk reads members forward from the decompressed stream: a member with a name too
    long for the old header (PAX, and GNU long-name records), unwanted members of odd sizes between
    wanted ones, an empty member, and the trailing padding all leave every wanted member byte for byte."""
    rng = random.Random(11)
    long_folder = "trace-data/" + "x" * 150
    members = {
        f"{long_folder}/skipped.bin": rng.randbytes(archives.COPY_CHUNK + 1),
        "trace-data/cluster_gpu_util": rng.randbytes(2 * archives.COPY_CHUNK + 511),
        "trace-data/unwanted": rng.randbytes(777),
        "trace-data/empty": b"",
        f"{long_folder}/cluster_cpu_util": b"a,b\n" * 1000 + b"\x00",
    }
    wanted = {"cluster_gpu_util": "gpu", "empty": "empty", "cluster_cpu_util": "cpu"}
    for tar_format in (tarfile.PAX_FORMAT, tarfile.GNU_FORMAT):
        archive = tmp_path / f"t{tar_format}.tar.gz"
        with tarfile.open(archive, "w:gz", format=tar_format) as tar:
            for name, data in members.items():
                tar.addfile(_file_info(name, len(data)), io.BytesIO(data))
        dest = tmp_path / f"out{tar_format}"
        dest.mkdir()
        nul: dict[str, bool] = {}
        sha = extract_members(archive, {m: dest / d for m, d in wanted.items()},
                              lambda member, holds_nul: nul.__setitem__(member, holds_nul))
        assert sha == _sha256(archive)
        for member, name in wanted.items():
            source = next(data for path, data in members.items() if path.endswith("/" + member))
            assert (dest / name).read_bytes() == source
        assert nul == {"cluster_gpu_util": b"\0" in members["trace-data/cluster_gpu_util"], "empty": False,
                       "cluster_cpu_util": True}


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs a tar program to write a sparse member")
def test_a_sparse_member_comes_out_with_its_holes(tmp_path: Path) -> None:
    """A GNU sparse member (data blocks and holes) is put together by tarfile, not copied as stored."""
    folder = tmp_path / "in"
    folder.mkdir()
    sparse = folder / "cluster_mem_util"
    with open(sparse, "wb") as handle:
        handle.write(b"head\n")
        handle.seek(3 * MIB)
        handle.write(b"tail\n")
    (folder / "cluster_job_log").write_bytes(b"[]\n")
    archive = tmp_path / "sparse.tar.gz"
    subprocess.run(["tar", "-C", str(folder), "--sparse", "--format=gnu", "-czf", str(archive),
                    "cluster_mem_util", "cluster_job_log"], check=True)
    with tarfile.open(archive) as tar:
        assert tar.getmember("cluster_mem_util").issparse()
    dest = tmp_path / "out"
    dest.mkdir()
    extract_members(archive, {"cluster_mem_util": dest / "mem", "cluster_job_log": dest / "jobs"})
    assert (dest / "mem").read_bytes() == sparse.read_bytes()
    assert (dest / "jobs").read_bytes() == b"[]\n"


def test_a_stream_ending_inside_a_member_is_a_corrupt_archive(tmp_path: Path) -> None:
    """A gzip stream cut in the middle of a member's bytes is refused, and nothing is left behind."""
    data = random.Random(5).randbytes(3 * archives.COPY_CHUNK)
    whole = tmp_path / "whole.tar"
    with tarfile.open(whole, "w") as tar:
        tar.addfile(_file_info("a.csv", len(data)), io.BytesIO(data))
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip.compress(whole.read_bytes()[:512 + 2 * archives.COPY_CHUNK]))
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(InputError, match="archive is truncated or corrupt"):
        extract_members(cut, {"a.csv": dest / "a"})
    assert list(dest.iterdir()) == []


def test_a_disk_without_room_for_a_member_fails_before_writing_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def no_room(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    archive = _write_tar_gz(tmp_path / "t.tar.gz", [(_file_info("a.csv", 1000), b"x" * 1000)])
    dest = tmp_path / "out"
    dest.mkdir()
    monkeypatch.setattr(os, "posix_fallocate", no_room)
    with pytest.raises(StorageError, match="No space left|no space"):
        extract_members(archive, {"a.csv": dest / "a"})
    assert list(dest.iterdir()) == []

    def unsupported(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)  # a file system that cannot reserve: written anyway
    extract_members(archive, {"a.csv": dest / "a"})
    assert (dest / "a").read_bytes() == b"x" * 1000


def test_a_genuine_compressible_member_is_not_taken_for_a_bomb(tmp_path: Path) -> None:
    """A member of 65 MB that compresses about 65:1 (1 MB) follows a small one: its ratio is judged on
    the compressed bytes it really took, not on what the reader had fetched before it began (a
    reader that fetched megabytes ahead counted about none and refused it)."""
    rng = random.Random(3)
    block = b"Terminated,worker,job\n" * 180
    text = b"".join(block + rng.randbytes(40).hex().encode() + b"\n" for _ in range(16_000))
    archive = _write_tar_gz(tmp_path / "t.tar.gz", [(_file_info("a.csv", 4), b"1,2\n"),
                                                    (_file_info("b.csv", len(text)), text)])
    assert len(text) > 200 * archives.RATIO_ALLOWANCE_BYTES  # large enough for its ratio to be judged
    assert len(text) / archive.stat().st_size < archives.MAX_EXPANSION_RATIO  # and genuinely below it
    dest = tmp_path / "out"
    dest.mkdir()
    extract_members(archive, {"a.csv": dest / "a", "b.csv": dest / "b"})
    assert (dest / "b").stat().st_size == len(text)


def test_extraction_tells_which_members_hold_a_nul_byte(tmp_path: Path) -> None:
    """Each member's NUL bytes are looked for in its own bytes only: the tar headers, padded with
    NULs, do not count; a NUL past the first copy piece is found. Zip members likewise."""
    late_nul = b"a,b\n" * archives.COPY_CHUNK + b"x\x00y\n"
    members = {"clean.csv": b"1,2\n3,4\n", "late.csv": late_nul, "early.csv": b"\x00,1\n"}
    archive = _write_tar_gz(tmp_path / "t.tar.gz", [(_file_info(n, len(d)), d) for n, d in members.items()])
    zipped = tmp_path / "t.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    for source in (archive, zipped):
        seen: dict[str, bool] = {}
        dest = tmp_path / source.suffix.lstrip(".")
        dest.mkdir()
        extract_members(source, {name: dest / name for name in members}, seen.__setitem__)
        assert seen == {"clean.csv": False, "late.csv": True, "early.csv": True}, source


def test_hash_and_scan_gives_the_sha256_and_finds_a_nul_in_any_chunk(tmp_path: Path) -> None:
    clean, late = tmp_path / "clean", tmp_path / "late"
    clean.write_bytes(b"x" * (3 * archives.CHUNK + 7))
    late.write_bytes(b"y" * (2 * archives.CHUNK) + b"\x00")
    assert archives.hash_and_scan(clean) == (_sha256(clean), False)
    assert archives.hash_and_scan(late) == (_sha256(late), True)


def _zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_zip_members_come_out_byte_for_byte_deflated_or_stored(tmp_path: Path) -> None:
    """Deflated members (inflated by ISA-L) and stored ones (read by zipfile) of many copy pieces."""
    rng = random.Random(11)
    text = b"".join(b"job%d,%s,Terminated\n" % (i, rng.randbytes(6).hex().encode()) for i in range(200_000))
    assert len(text) > 8 * archives.COPY_CHUNK
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED):
        archive = _zip(tmp_path / f"{method}.zip", {"a/x.csv": text, "b.csv": b"1,2\n"}, method)
        dest = tmp_path / f"out-{method}"
        dest.mkdir()
        sha = extract_members(archive, {"x.csv": dest / "x", "b.csv": dest / "b"})
        assert (dest / "x").read_bytes() == text and (dest / "b").read_bytes() == b"1,2\n"
        assert sha == _sha256(archive)


def test_a_zip_member_whose_bytes_do_not_match_its_crc_is_refused(tmp_path: Path) -> None:
    """The CRC-32 the zip's directory gives is checked once the member is inflated."""
    archive = _zip(tmp_path / "t.zip", {"x.csv": b"a,b\n" * 50_000})
    data = bytearray(archive.read_bytes())
    central = data.rindex(b"PK\x01\x02")  # the member's entry in the central directory; its CRC-32 at +16
    data[central + 16:central + 20] = bytes(4)
    archive.write_bytes(bytes(data))
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(InputError, match="truncated or corrupt.*CRC"):
        extract_members(archive, {"x.csv": dest / "x"})
    assert list(dest.iterdir()) == []
