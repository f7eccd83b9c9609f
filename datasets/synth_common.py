"""Building blocks shared by ddlx's synthetic-trace generators.

Random streams, vectorised draws and id columns, and byte-reproducible archives (gzip'd tar
like `tar czf` with `gzip -n`, and zip with fixed timestamps), so that the same seed always gives
the same bytes.
"""

from __future__ import annotations

import math
import os
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa

from ddlx.atomic import atomic_file

#: Default gzip level of generated archives (fast; the format is the same at every level).
GZIP_LEVEL = 1
#: Permissions of generated files (temp files are created 0o600).
ARCHIVE_FILE_MODE = 0o644
TAR_MEMBER_MODE = 0o644
COPY_BLOCK = 8 << 20

_HEX_PAIRS = np.frombuffer(b"".join(b"%02x" % i for i in range(256)), dtype=np.uint16)


def check_scale_and_seed(scale: float, seed: int) -> int:
    """`ValueError` unless `scale` is a finite number above 0 and `seed` a non-negative int;
    returns the seed as an int."""
    if isinstance(scale, bool) or not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be > 0, got {scale!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def stream_rng(seed: int, stream: int, *keys: int) -> np.random.Generator:
    """An independent random generator for one stream (and chunk) of one seed."""
    return np.random.default_rng(np.random.SeedSequence([seed, stream, *keys]))


def hex_ids(rng: np.random.Generator, n: int, n_chars: int) -> pl.Series:
    """`n` random lowercase hex strings of `n_chars` (even) characters, from random bytes."""
    raw = np.frombuffer(rng.bytes(n * n_chars // 2), dtype=np.uint8)
    text = np.ascontiguousarray(_HEX_PAIRS[raw])
    arrow = pa.FixedSizeBinaryArray.from_buffers(pa.binary(n_chars), n, [None, pa.py_buffer(text)])
    return pl.from_arrow(arrow).cast(pl.Binary).cast(pl.String)  # type: ignore[union-attr]


def choice_from(rng: np.random.Generator, spec: tuple[np.ndarray, np.ndarray], n: int) -> np.ndarray:
    """`n` draws from a discrete (values, shares) distribution."""
    values, shares = spec
    return values[rng.choice(len(values), size=n, p=shares / shares.sum())]


def lognormal(rng: np.random.Generator, median: float, sigma: float, n: int) -> np.ndarray:
    """`n` lognormal draws with the given median and log-sigma."""
    return rng.lognormal(np.log(median), sigma, n)


def group_offsets(counts: np.ndarray) -> np.ndarray:
    """Start offset of each group when groups of `counts` rows are laid end to end."""
    out = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def position_in_group(counts: np.ndarray) -> np.ndarray:
    """0-based position of each row inside its group, for groups of `counts` consecutive rows."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(group_offsets(counts), counts)


def float_series(name: str, values: np.ndarray) -> pl.Series:
    """Float column with NaN written as an empty field."""
    return pl.Series(name, values.astype(np.float64), dtype=pl.Float64, nan_to_null=True)


def gather_names(names: pl.Series, codes: np.ndarray, name: str) -> pl.Series:
    """Strings `names[codes]`, with a negative code giving an empty (null) field."""
    padded = pl.concat([names, pl.Series([None], dtype=pl.String)])
    index = np.where(codes < 0, len(names), codes).astype(np.int64)
    return padded.gather(index).alias(name)


def temp_path_in(out_dir: Path, name: str) -> Path:
    """A fresh hidden temp file in `out_dir` (same file system, so os.replace is atomic)."""
    handle, path = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
    os.close(handle)
    return Path(path)


def publish(temps: dict[str, Path], out_dir: Path) -> list[Path]:
    """Give the finished temp files their final names `out_dir/<name>` (mode 0o644); return them."""
    written = []
    for name, temp in temps.items():
        os.chmod(temp, ARCHIVE_FILE_MODE)
        os.replace(temp, out_dir / name)
        written.append(out_dir / name)
    return written


def tar_header(member: str, size: int, mtime: int) -> bytes:
    """A GNU tar header for one regular file with fixed metadata."""
    info = tarfile.TarInfo(member)
    info.size = size
    info.mtime = mtime
    info.mode = TAR_MEMBER_MODE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info.tobuf(tarfile.GNU_FORMAT)


class GzipStream:
    """A single gzip member written like `gzip -n`: no file name, mtime 0, OS byte Unix (3)."""

    def __init__(self, raw: BinaryIO, level: int = GZIP_LEVEL):
        self.raw = raw
        self.crc = 0
        self.size = 0
        self.deflate = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        extra_flags = {1: 4, 9: 2}.get(level, 0)
        raw.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + bytes([extra_flags, 3]))

    def write(self, data: bytes) -> None:
        """Compress `data` (zlib releases the GIL on large blocks)."""
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        self.raw.write(self.deflate.compress(data))

    def close(self) -> None:
        """Flush the deflate stream and write the CRC-32 / size trailer."""
        self.raw.write(self.deflate.flush())
        self.raw.write(struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


def pack_tar_gz(members: Sequence[tuple[Path, str]], archive: Path, mtime: int,
                level: int = GZIP_LEVEL) -> None:
    """Write the files `members` ((path, name in archive) pairs) as gzip'd tar `archive`, atomically.

    GNU tar format padded to 10,240-byte records, fixed metadata, so the bytes depend only on
    the contents. The source files are left in place.
    """
    with atomic_file(archive, mode=ARCHIVE_FILE_MODE, durable=False) as temp, open(temp, "wb") as raw:
        gz = GzipStream(raw, level)
        written = 0
        for path, name in members:
            size = path.stat().st_size
            gz.write(tar_header(name, size, mtime))
            with open(path, "rb") as source:
                while block := source.read(COPY_BLOCK):
                    gz.write(block)
            padding = (-size) % tarfile.BLOCKSIZE
            gz.write(b"\0" * padding)
            written += tarfile.BLOCKSIZE + size + padding
        end = written + 2 * tarfile.BLOCKSIZE
        end += (-end) % tarfile.RECORDSIZE
        gz.write(b"\0" * (end - written))
        gz.close()


def pack_zip(members: Sequence[tuple[Path, str]], archive: Path, date_time: tuple[int, ...],
             level: int = GZIP_LEVEL) -> None:
    """Write the files `members` ((path, name in archive) pairs) as deflated zip `archive`, atomically.

    Every entry carries `date_time` (year, month, day, hour, minute, second) and mode 0o644, so
    the bytes depend only on the contents. The source files are left in place.
    """
    with atomic_file(archive, mode=ARCHIVE_FILE_MODE, durable=False) as temp, \
            zipfile.ZipFile(temp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for path, name in members:
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | TAR_MEMBER_MODE) << 16
            with open(path, "rb") as source, zf.open(info, "w", force_zip64=True) as target:
                while block := source.read(COPY_BLOCK):
                    target.write(block)
