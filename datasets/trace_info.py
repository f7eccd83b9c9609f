"""What ddlx knows about a trace release, as data: `ReleaseFile` and `TraceInfo`. Each trace folder
(`ddlx.traces.<trace>.release`) declares one `TraceInfo`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddlx.errors import UnknownDatasetError


@dataclass(frozen=True)
class ReleaseFile:
    """One file of an official release.

    `tables` are the stored tables whose rows come from this file. `size_bytes` and `sha256`
    describe the file as downloaded (None when the owners publish none); `member` is the file
    inside an archive that holds a single table, with its own `member_sha256` when published.
    """

    tables: tuple[str, ...]
    filename: str
    url: str
    size_bytes: int | None
    sha256: str | None
    member: str | None = None
    member_sha256: str | None = None


@dataclass(frozen=True)
class TraceInfo:
    """A supported trace: what it is, where it comes from and how to cite it.

    `wall_clock` is False when the trace's times are offsets from an undisclosed start, so that
    they have no time of day or weekday (`source_tz` then only names the zone they are stored in).
    `calendar_dates` is False when times of day and weekdays hold but the dates do not (the origin
    of the seconds is undisclosed): time axes then count days from the trace start.
    `unlogged_ends` names the kinds of record (`job`, `instance`, `attempt`, `pod`) whose started
    records without an end are ends that were not logged rather than work running when the trace
    was taken (e.g. when such jobs together ask for several times the cluster's GPUs, or carry a
    final state): every module leaves them out (allocation, co-location, survival), and headlines
    give the value with them held to the trace end beside. Records of other kinds without an end
    are held to the trace end (censored there in survival estimates).
    `label` is how prose names the trace (a short name); `records_gpu_fractions` is True when its
    records tell a part of a GPU from a whole one even where no job asks for a part.
    """

    name: str
    title: str
    description: str
    source_tz: str
    licence: str
    paper: str
    homepage: str
    files: tuple[ReleaseFile, ...] = field(default_factory=tuple)
    label: str = ""
    wall_clock: bool = True
    calendar_dates: bool = True
    unlogged_ends: tuple[str, ...] = ()
    records_gpu_fractions: bool = False

    @property
    def tables(self) -> list[str]:
        return list(dict.fromkeys(t for f in self.files for t in f.tables))

    def file_for(self, table: str) -> ReleaseFile:
        """The release file holding `table`; `UnknownDatasetError` naming the known tables."""
        for release_file in self.files:
            if table in release_file.tables:
                return release_file
        raise UnknownDatasetError(
            f"unknown table '{table}' for trace '{self.name}'; expected one of: {', '.join(self.tables)}"
        )

    @property
    def total_bytes(self) -> int | None:
        sizes = [f.size_bytes for f in self.files]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
