"""Reading official release archives safely: one named member, hashed as it streams.

Only the expected member is ever written, to a path the caller chooses, so nothing can land
outside the target folder whatever names the archive holds.
"""

from __future__ import annotations

import hashlib
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO

from ddlx.errors import InputError

CHUNK = 1 << 20


class _HashingReader:
    """A read-only file wrapper that feeds every byte read into a sha256."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self.sha256 = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.sha256.update(data)
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass


def hash_file(path: Path, hasher: "hashlib._Hash | None" = None) -> "hashlib._Hash":
    """Feed the content of `path` into `hasher` (a new SHA-256 if None), in chunks; return it."""
    hasher = hasher if hasher is not None else hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            hasher.update(chunk)
    return hasher


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of the file at `path`."""
    return hash_file(path).hexdigest()


def extract_member(archive: Path, member_name: str, dest: Path) -> str:
    """Stream `member_name` out of the gzip'd tar `archive` into `dest`; return the archive's sha256.

    Raises `InputError` when the archive is truncated or corrupt, or lacks the member.
    """
    found = False
    try:
        with open(archive, "rb") as raw:
            reader = _HashingReader(raw)
            with tarfile.open(fileobj=reader, mode="r|gz") as tar:  # type: ignore[call-overload]
                for member in tar:
                    if Path(member.name).name != member_name or not member.isfile() or found:
                        continue
                    source = tar.extractfile(member)
                    assert source is not None
                    with open(dest, "wb") as out:
                        while chunk := source.read(CHUNK):
                            out.write(chunk)
                    found = True
            reader.drain()
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        dest.unlink(missing_ok=True)
        detail = str(exc) or type(exc).__name__
        raise InputError(
            str(archive), f"archive is truncated or corrupt ({detail}); expected a complete gzip'd tar"
        ) from None
    if not found:
        raise InputError(str(archive), f"archive has no member '{member_name}'")
    return reader.sha256.hexdigest()
