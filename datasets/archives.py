"""Reading official release archives safely: one named member, and the archive's checksum.

Only the expected member is ever written, to a path the caller chooses, so nothing can land
outside the target folder whatever names the archive holds.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zlib
from pathlib import Path

from ddlx.errors import InputError

CHUNK = 1 << 20
COPY_CHUNK = 4 << 20


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
    """Write `member_name` of the gzip'd tar `archive` to `dest`; return the archive's sha256.

    Raises `InputError` when the archive is truncated or corrupt, or lacks the member.
    """
    found = False
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            while (member := tar.next()) is not None:
                if found or not member.isfile() or Path(member.name).name != member_name:
                    continue
                source = tar.extractfile(member)
                assert source is not None
                with open(dest, "wb") as out:
                    shutil.copyfileobj(source, out, COPY_CHUNK)
                found = True
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        dest.unlink(missing_ok=True)
        detail = str(exc) or type(exc).__name__
        raise InputError(
            str(archive), f"archive is truncated or corrupt ({detail}); expected a complete gzip'd tar"
        ) from None
    if not found:
        raise InputError(str(archive), f"archive has no member '{member_name}'")
    return sha256_file(archive)
