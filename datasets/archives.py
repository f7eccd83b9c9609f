"""Reading official release archives (gzip'd tar, zip) safely: named members, and checksums.

Only the expected members are ever written, to paths the caller chooses, so nothing can land
outside the target folder whatever names the archive holds.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
import zlib
from collections.abc import Callable
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


def member_matches(name: str, wanted: str) -> bool:
    """Whether archive member `name` is the file `wanted` (equal, or `wanted` under some folder)."""
    name = name.replace("\\", "/").lstrip("/")
    while name.startswith("./"):
        name = name[2:]
    return name == wanted or name.endswith("/" + wanted)


def extract_members(archive: Path, wanted: dict[str, Path],
                    on_extracted: Callable[[str], None] | None = None) -> str:
    """Write each member `wanted` names (member -> destination) of the gzip'd tar or zip `archive`
    to its destination, in one pass; call `on_extracted(member)` as each one is complete.

    Returns the archive's sha256. Raises `InputError` when the archive is truncated or corrupt,
    or lacks a wanted member. Only the wanted members are written, to the given paths.
    """
    done: set[str] = set()
    try:
        if archive.name.endswith(".zip"):
            _extract_zip(archive, wanted, done, on_extracted)
        else:
            _extract_tar(archive, wanted, done, on_extracted)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        for dest in wanted.values():
            dest.unlink(missing_ok=True)
        detail = str(exc) or type(exc).__name__
        kind = "zip" if archive.name.endswith(".zip") else "gzip'd tar"
        raise InputError(
            str(archive), f"archive is truncated or corrupt ({detail}); expected a complete {kind}"
        ) from None
    missing = [m for m in wanted if m not in done]
    if missing:
        raise InputError(str(archive), "archive has no member " + ", ".join(repr(m) for m in missing))
    return sha256_file(archive)


def _wanted_member(name: str, wanted: dict[str, Path], done: set[str]) -> str | None:
    return next((m for m in wanted if m not in done and member_matches(name, m)), None)


def _extract_tar(archive: Path, wanted: dict[str, Path], done: set[str],
                 on_extracted: Callable[[str], None] | None) -> None:
    with tarfile.open(archive, mode="r:gz") as tar:
        while (member := tar.next()) is not None:
            target = _wanted_member(member.name, wanted, done) if member.isfile() else None
            if target is None:
                continue
            source = tar.extractfile(member)
            assert source is not None
            with open(wanted[target], "wb") as out:
                shutil.copyfileobj(source, out, COPY_CHUNK)
            done.add(target)
            if on_extracted is not None:
                on_extracted(target)


def _extract_zip(archive: Path, wanted: dict[str, Path], done: set[str],
                 on_extracted: Callable[[str], None] | None) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = _wanted_member(info.filename, wanted, done) if not info.is_dir() else None
            if target is None:
                continue
            with zf.open(info) as source, open(wanted[target], "wb") as out:
                shutil.copyfileobj(source, out, COPY_CHUNK)
            done.add(target)
            if on_extracted is not None:
                on_extracted(target)


def archive_member_names(archive: Path) -> list[str] | None:
    """The member names of a zip `archive` (cheap: its directory); None for a gzip'd tar."""
    if not archive.name.endswith(".zip"):
        return None
    try:
        with zipfile.ZipFile(archive) as zf:
            return [info.filename for info in zf.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(str(archive), f"archive is truncated or corrupt ({exc}); expected a complete zip") from None
