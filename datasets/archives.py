"""Reading official release archives (gzip'd tar, zip) safely: named members, and checksums.

Only the expected members are ever written, to paths the caller chooses, so nothing can land
outside the target folder whatever names the archive holds. Only regular files are extracted
(never links, devices or FIFOs), and no member may expand past the limits below: the size its
header declares is checked before a byte is written, and the bytes actually produced are counted
while they are copied, so a header that lies does not help.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from isal import isal_zlib
from isal.isal_zlib import error as IsalError

from ddlx.errors import InputError, storage_error

CHUNK = 1 << 20
#: Bytes an extracted member is copied in at a time: small enough that what was just decompressed
#: is still in the processor's cache when it is written (4 MiB pieces made writing the file two to
#: three times slower).
COPY_CHUNK = 256 << 10

MAX_MEMBER_BYTES = 16 << 30
"""Default limit on the uncompressed size of one extracted archive member: 16 GiB.

The largest member of any official release ddlx reads is a GPU utilisation log of ~2.9 GB (of
a 6.6 GB unpacked archive); 16 GiB leaves more than five times that. Raise it
with the environment variable `DDLX_MAX_MEMBER_BYTES` (bytes, or with a K/M/G/T suffix).
"""

MAX_EXPANSION_RATIO = 200
"""Default limit on how many times its compressed size one member may expand to.

Official releases expand 3 to 10 times (e.g. 1.06 GB -> 6.6 GB, 36.4 MB -> 343 MB);
deflate reaches about 1030 times only on runs of one byte, the stuff of decompression bombs.
Raise it with the environment variable `DDLX_MAX_EXPANSION_RATIO`.
"""

RATIO_ALLOWANCE_BYTES = 256 << 10
"""Compressed bytes credited to every member before its ratio is judged.

It absorbs the decompressor's read-ahead (which blurs where a member starts in a gzip stream)
and means no member smaller than `MAX_EXPANSION_RATIO * RATIO_ALLOWANCE_BYTES` (50 MiB by
default) is ever refused for its ratio.
"""

MEMBER_BYTES_ENV = "DDLX_MAX_MEMBER_BYTES"
EXPANSION_RATIO_ENV = "DDLX_MAX_EXPANSION_RATIO"

_AMOUNT = re.compile(r"(\d+)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _env_amount(name: str, default: int) -> int:
    """The positive whole number in environment variable `name` (K/M/G/T = powers of 1024)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    match = _AMOUNT.fullmatch(text)
    value = int(match.group(1)) * _UNITS[match.group(2).upper()] if match else 0
    if value <= 0:
        raise InputError(name, f"{text!r} is not a positive whole number; expected e.g. {default} "
                               "(a K, M, G or T suffix multiplies by powers of 1024)")
    return value


@dataclass(frozen=True)
class ExpansionLimits:
    """How far one archive member may expand: in bytes, and in times its compressed size."""

    max_member_bytes: int = MAX_MEMBER_BYTES
    max_ratio: int = MAX_EXPANSION_RATIO

    @classmethod
    def from_environment(cls) -> ExpansionLimits:
        """The defaults, raised or lowered by `DDLX_MAX_MEMBER_BYTES` and `DDLX_MAX_EXPANSION_RATIO`."""
        return cls(_env_amount(MEMBER_BYTES_ENV, MAX_MEMBER_BYTES),
                   _env_amount(EXPANSION_RATIO_ENV, MAX_EXPANSION_RATIO))

    def check_size(self, archive: Path, member: str, size: int, *, counted: bool = False) -> None:
        """`InputError` when `size` (declared, or `counted` so far) is over the member limit."""
        if size > self.max_member_bytes:
            amount = f"more than {self.max_member_bytes:,}" if counted else f"{size:,}"
            raise InputError(str(archive), (
                f"member {member!r} expands to {amount} bytes, over the limit of "
                f"{self.max_member_bytes:,} bytes for one archive member; if the archive is "
                f"genuine, raise the limit with {MEMBER_BYTES_ENV}=<bytes> (e.g. 64G)"))

    def check_ratio(self, archive: Path, member: str, size: int, compressed: int) -> None:
        """`InputError` when `size` bytes from `compressed` bytes is an absurd expansion."""
        if size > self.max_ratio * (compressed + RATIO_ALLOWANCE_BYTES):
            raise InputError(str(archive), (
                f"member {member!r} expands more than {self.max_ratio:,} times its compressed "
                f"size ({size:,} bytes from about {compressed:,} compressed), as decompression "
                f"bombs do; if the archive is genuine, raise the limit with {EXPANSION_RATIO_ENV}=<ratio>"))


def hash_file(path: Path, hasher: "hashlib._Hash | None" = None) -> "hashlib._Hash":
    """Feed the content of `path` into `hasher` (a new SHA-256 if None), in chunks; return it."""
    hasher = hasher if hasher is not None else hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            hasher.update(chunk)
    return hasher


def hash_and_scan(path: Path) -> tuple[str, bool]:
    """The hex SHA-256 of the file at `path`, and whether it holds a NUL byte, in one read.

    A text field can hold a NUL character only where its file holds the byte, so a file without
    one needs no search for NULs in its stored values (`csvload.check_values`)."""
    hasher, holds_nul = hashlib.sha256(), False
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            hasher.update(chunk)
            holds_nul = holds_nul or b"\0" in chunk
    return hasher.hexdigest(), holds_nul


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of the file at `path`."""
    return hash_file(path).hexdigest()


class _HashingReader(io.RawIOBase):
    """A file read forward once, hashed (SHA-256) as it is read; `tell` is how far it has got."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.hasher, self.position = raw, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self.raw.readinto(buffer) or 0  # type: ignore[attr-defined]
        self.hasher.update(memoryview(buffer)[:count])
        self.position += count
        return count

    def tell(self) -> int:
        return self.position

    def hexdigest_of_all(self) -> str:
        """The SHA-256 of the whole file: what was not read yet is read and hashed first."""
        while chunk := self.raw.read(CHUNK):
            self.hasher.update(chunk)
        return self.hasher.hexdigest()


def member_matches(name: str, wanted: str) -> bool:
    """Whether archive member `name` is the file `wanted` (equal, or `wanted` under some folder)."""
    name = name.replace("\\", "/").lstrip("/")
    while name.startswith("./"):
        name = name[2:]
    return name == wanted or name.endswith("/" + wanted)


#: Called with a member's name, and whether it holds a NUL byte, as each one is extracted.
OnExtracted = Callable[[str, bool], None]


def extract_members(archive: Path, wanted: dict[str, Path], on_extracted: OnExtracted | None = None) -> str:
    """Write each member `wanted` names (member -> destination) of the gzip'd tar or zip `archive`
    to its destination, in one pass; call `on_extracted(member, holds_nul)` as each one is complete.

    Returns the archive's sha256. Raises `InputError` when the archive is truncated or corrupt,
    lacks a wanted member (only regular files count), or a member expands past the
    `ExpansionLimits` of the environment; no destination is left behind then. Only the wanted
    members are written, to the given paths.
    """
    limits = ExpansionLimits.from_environment()
    done: set[str] = set()
    try:
        if archive.name.endswith(".zip"):
            _extract_zip(archive, wanted, done, on_extracted, limits)
            sha256 = sha256_file(archive)
        else:
            sha256 = _extract_tar(archive, wanted, done, on_extracted, limits)
    except BaseException as exc:
        for dest in wanted.values():
            dest.unlink(missing_ok=True)
        if not isinstance(exc, (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError, IsalError)):
            raise
        detail = str(exc) or type(exc).__name__
        kind = "zip" if archive.name.endswith(".zip") else "gzip'd tar"
        raise InputError(
            str(archive), f"archive is truncated or corrupt ({detail}); expected a complete {kind}"
        ) from None
    missing = [m for m in wanted if m not in done]
    if missing:
        raise InputError(str(archive), "archive has no member " + ", ".join(repr(m) for m in missing))
    return sha256


def check_member(archive: Path, name: str, kind: str | None, wanted: bool) -> None:
    """Refuse (`InputError`) an archive whose member `name` is absolute or climbs out with `..`
    (no official release has one: such an archive is damaged or hostile), and a `wanted` member
    that is not a regular file (`kind` names what it is instead; None for a regular file)."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        problem = "is an absolute path"
    elif ".." in parts:
        problem = "climbs out of the archive with '..'"
    elif wanted and kind is not None:
        raise InputError(str(archive), f"member {name!r} is {kind}; expected a regular file")
    else:
        return
    raise InputError(str(archive), f"member name {name!r} {problem}; expected names relative to the archive "
                                   "(refusing the whole archive)")


def tar_member_kind(member: tarfile.TarInfo) -> str | None:
    """What a tar member is when it is not a regular file ("a symbolic link", ...); None if it is."""
    if member.isfile():
        return None
    return ("a symbolic link" if member.issym() else "a hard link" if member.islnk()
            else "a folder" if member.isdir() else "a device or FIFO")


def zip_member_kind(info: zipfile.ZipInfo) -> str | None:
    """What a zip entry is when it is not a plain regular file; None if it is."""
    file_type = stat.S_IFMT(info.external_attr >> 16)
    if not info.is_dir() and file_type in (0, stat.S_IFREG):
        return "an encrypted file (ddlx reads no passwords)" if info.flag_bits & 0x1 else None
    return ("a folder" if info.is_dir() or file_type == stat.S_IFDIR
            else "a symbolic link" if file_type == stat.S_IFLNK else "a device or FIFO")


def read_to_the_end(stream: BinaryIO) -> None:
    """Read what follows the last tar member, so a gzip stream cut short (or with a wrong
    checksum in its trailer) raises instead of passing for complete."""
    while stream.read(COPY_CHUNK):
        pass


def _wanted_member(name: str, wanted: dict[str, Path], done: set[str]) -> str | None:
    return next((m for m in wanted if m not in done and member_matches(name, m)), None)


def _copy_member(source: BinaryIO, dest: Path, meter: _MemberMeter, size: int = 0) -> None:
    """Copy `source` to `dest`, counting each chunk against the limits before writing it. The file
    is given its declared `size` first where the file system allows: a full disk shows at once,
    and writing into reserved space is faster. Chunks are read into one reused buffer
    (`readinto`): a new bytes object per chunk made unpacking a 6.6 GB release archive take about
    a quarter longer."""
    doing = "extracting an archive member"
    try:
        out = open(dest, "wb", buffering=0)
    except OSError as exc:
        raise storage_error(exc, dest.parent, doing) from None
    buffer = bytearray(COPY_CHUNK)
    view = memoryview(buffer)
    try:
        if size > 0:
            _reserve(out, size, dest, doing)
        while count := source.readinto(view):  # type: ignore[attr-defined]
            meter.count(buffer, count)
            try:
                _write_all(out, view[:count])
            except OSError as exc:  # the disk, not the archive: name where it was written
                raise storage_error(exc, dest.parent, doing) from None
        try:
            out.truncate()  # to what was written, should the member hold less than it declared
            out.close()
        except OSError as exc:
            raise storage_error(exc, dest.parent, doing) from None
    finally:
        with contextlib.suppress(OSError):
            out.close()


def _write_all(out: BinaryIO, data: memoryview) -> None:
    """Write all of `data` to the unbuffered file `out` (a raw write may take only part of it)."""
    while data:
        data = data[out.write(data) or 0:]


def _reserve(out: BinaryIO, size: int, dest: Path, doing: str) -> None:
    """Reserve `size` bytes for the file `out` (posix_fallocate); a file system that cannot is
    left to grow the file as it is written."""
    try:
        os.posix_fallocate(out.fileno(), 0, size)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise storage_error(exc, dest.parent, doing) from None
    except AttributeError:  # no posix_fallocate on this system
        pass


@dataclass
class _MemberMeter:
    """Counts the bytes one member expands to; `position` reads how far into the archive file
    the decompressor has got, `start` is where the member's compressed bytes begin."""

    archive: Path
    member: str
    limits: ExpansionLimits
    position: Callable[[], int]
    start: int
    written: int = 0
    holds_nul: bool = False

    def count(self, buffer: bytearray, count: int) -> None:
        """Count the first `count` bytes of `buffer`, the next bytes of the member, and note whether
        they hold a NUL byte."""
        self.written += count
        self.holds_nul = self.holds_nul or buffer.find(b"\0", 0, count) >= 0
        self.limits.check_size(self.archive, self.member, self.written, counted=True)
        self.limits.check_ratio(self.archive, self.member, self.written, self.position() - self.start)


def _finished(target: str, done: set[str], on_extracted: OnExtracted | None, meter: _MemberMeter) -> None:
    done.add(target)
    if on_extracted is not None:
        on_extracted(target, meter.holds_nul)


#: Compressed bytes the gzip reader reads ahead of what it has decompressed. It must stay within
#: `RATIO_ALLOWANCE_BYTES`, or a member's compressed size is undercounted by what was read before
#: it started (a reader decompressing in a thread of its own read megabytes ahead, and refused a
#: genuine 52 MB member of a full-size release archive as a decompression bomb).
GZIP_READ_AHEAD = 128 << 10


def open_gzip(raw: BinaryIO) -> BinaryIO:
    """The decompressed bytes of the gzip stream `raw`, read forward: ISA-L's igzip (python-isal),
    several times faster than zlib, reading `raw` `GZIP_READ_AHEAD` bytes at a time."""
    from isal import igzip

    reader = getattr(igzip, "_IGzipReader", None)
    if reader is None:  # a python-isal without it: its public reader, which reads 512 KiB ahead
        return igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return io.BufferedReader(reader(raw, GZIP_READ_AHEAD), buffer_size=COPY_CHUNK)  # type: ignore[return-value]


class _ForwardStream(io.RawIOBase):
    """A decompressed stream as the seekable file `tarfile` reads members from (mode "r:"), read
    forward only: a forward seek reads past the bytes, a backward one is refused.

    Python's stream mode ("r|") passes every byte through two more buffers (joined and sliced per
    read), which took as long as inflating them; here a member's bytes go straight from the
    decompressor into the caller's buffer (`_TarMemberData`)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream, self.position = stream, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer: Any) -> int:
        count = self.stream.readinto(buffer) or 0  # type: ignore[attr-defined]
        self.position += count
        return count

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset + (self.position if whence == io.SEEK_CUR else 0)
        if whence == io.SEEK_END or target < self.position:
            raise io.UnsupportedOperation("a compressed tar stream is read forward only")
        while self.position < target:
            skipped = self.stream.read(min(COPY_CHUNK, target - self.position))
            if not skipped:
                break
            self.position += len(skipped)
        return self.position


class _TarMemberData(io.RawIOBase):
    """The `size` bytes of one (non-sparse) tar member, read from `stream` where they start;
    `readinto` gives at most what is left of the member. A stream ending early raises."""

    def __init__(self, stream: _ForwardStream, name: str, size: int) -> None:
        self.stream, self.name, self.left = stream, name, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            return 0
        view = memoryview(buffer)
        count = self.stream.readinto(view[:min(len(view), self.left)])
        if not count:
            raise tarfile.ReadError(f"unexpected end of data in member {self.name!r}")
        self.left -= count
        return count


def _extract_tar(archive: Path, wanted: dict[str, Path], done: set[str],
                 on_extracted: OnExtracted | None, limits: ExpansionLimits) -> str:
    """Extract as `extract_members` says; returns the archive's SHA-256, hashed as it is read."""
    with open(archive, "rb", buffering=0) as file, _HashingReader(file) as raw, open_gzip(raw) as stream:
        forward = _ForwardStream(stream)
        with tarfile.open(fileobj=forward, mode="r:") as tar:  # type: ignore[call-overload]
            while (member := tar.next()) is not None:
                # only regular (also sparse) files are written; a wanted link, device or FIFO is refused
                target = _wanted_member(member.name, wanted, done)
                kind = tar_member_kind(member)
                check_member(archive, member.name, kind, target is not None)
                if target is None or kind is not None:
                    continue
                limits.check_size(archive, member.name, member.size)
                meter = _MemberMeter(archive, member.name, limits, raw.tell, raw.tell())
                if member.issparse():  # its data blocks are not its bytes: tarfile puts them together
                    source = tar.extractfile(member)
                    assert source is not None
                else:
                    forward.seek(member.offset_data)
                    source = _TarMemberData(forward, member.name, member.size)  # type: ignore[assignment]
                with source:
                    _copy_member(source, wanted[target], meter, member.size)  # type: ignore[arg-type]
                _finished(target, done, on_extracted, meter)
        read_to_the_end(stream)
        return raw.hexdigest_of_all()


_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip local file header's signature, then (past 22 bytes) the lengths of the name and extra field
that come between the 30-byte header and the member's data."""


class _InflatedMember(io.RawIOBase):
    """The bytes of one deflated zip member, inflated by ISA-L (several times faster than zlib, which
    Python's zipfile uses), `read(size)` giving at most `size` bytes; its CRC-32 is checked at the end.

    `raw` is the open zip file; `info` the member's entry in the zip's central directory, which
    gives where it starts and its compressed size (also when a data descriptor follows it)."""

    def __init__(self, raw: BinaryIO, info: zipfile.ZipInfo) -> None:
        raw.seek(info.header_offset)
        signature, name_length, extra_length = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
        if signature != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"no local header where member {info.filename!r} should start")
        raw.seek(name_length + extra_length, os.SEEK_CUR)
        self.raw, self.info, self.left, self.crc = raw, info, info.compress_size, 0
        self.inflater = isal_zlib.decompressobj(-15)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        size = size if size > 0 else COPY_CHUNK
        while not self.inflater.eof:
            if self.inflater.unconsumed_tail:
                data = self.inflater.decompress(self.inflater.unconsumed_tail, size)
            elif self.left > 0:
                chunk = self.raw.read(min(CHUNK, self.left))
                if not chunk:
                    raise EOFError(f"member {self.info.filename!r} ends early")
                self.left -= len(chunk)
                data = self.inflater.decompress(chunk, size)
            else:
                data = self.inflater.decompress(b"", size)  # what the inflater holds of input already read
                if not data and not self.inflater.eof:
                    raise EOFError(f"member {self.info.filename!r} ends early")
            if data:
                self.crc = isal_zlib.crc32(data, self.crc)
                return data
        if self.crc != self.info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for member {self.info.filename!r}")
        return b""

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        memoryview(buffer)[:len(data)] = data
        return len(data)


def _open_zip_member(raw: BinaryIO, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryIO:
    """The bytes of member `info`: deflated ones inflated by ISA-L, others (stored...) by zipfile."""
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return _InflatedMember(raw, info)  # type: ignore[return-value]
    return zf.open(info)  # type: ignore[return-value]


def _extract_zip(archive: Path, wanted: dict[str, Path], done: set[str],
                 on_extracted: OnExtracted | None, limits: ExpansionLimits) -> None:
    with open(archive, "rb") as raw, zipfile.ZipFile(raw) as zf:
        for info in zf.infolist():
            name = info.filename
            target = _wanted_member(name, wanted, done)
            kind = zip_member_kind(info)
            check_member(archive, name, kind, target is not None and not info.is_dir())
            if target is None or kind is not None:
                continue
            limits.check_size(archive, name, info.file_size)
            limits.check_ratio(archive, name, info.file_size, info.compress_size)
            meter = _MemberMeter(archive, name, limits, raw.tell, info.header_offset)
            with _open_zip_member(raw, zf, info) as source:
                _copy_member(source, wanted[target], meter, info.file_size)
            _finished(target, done, on_extracted, meter)


def archive_member_names(archive: Path, wanted: Callable[[str], bool] = lambda name: False) -> list[str]:
    """The regular-file members of a zip (cheap: its directory) or a gzip'd tar (read once, whole).

    Every member name is checked (`check_member`); a member for which `wanted(name)` holds must
    also be a regular file within the member size limit, else `InputError`."""
    limits = ExpansionLimits.from_environment()
    names = []
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                members = [(info.filename, zip_member_kind(info), info.file_size) for info in zf.infolist()]
        else:
            with tarfile.open(archive, mode="r:gz") as tar:
                members = [(m.name, tar_member_kind(m), m.size) for m in iter(tar.next, None)]
                read_to_the_end(tar.fileobj)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        kind = "zip" if archive.name.endswith(".zip") else "gzip'd tar"
        raise InputError(str(archive), f"archive is truncated or corrupt ({exc or type(exc).__name__}); "
                                       f"expected a complete {kind}") from None
    for name, kind, size in members:
        is_wanted = wanted(name) and kind != "a folder"
        check_member(archive, name, kind, is_wanted)
        if is_wanted:
            limits.check_size(archive, name, size)
        if kind is None:
            names.append(name)
    return names
