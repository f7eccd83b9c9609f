"""The bad-input corpus: small valid inputs per trace and importer, and the table of faulty variants.

Every case starts from one valid input (`Base`): ddlx's own SYNTHETIC release of a trace (trimmed
where it is large) or a tiny hand-written file for the importer presets. A case's `build` writes a
faulty copy of it and says where it is; its `Expect` states what ddlx promises for it:

- `fail`: exit 1 (2 for a mistake in the command line, such as a dataset name ddlx cannot take),
  one `Error:` line (the last stderr line) holding every needle, no traceback, and the data home
  byte-identical to before;
- `accept`: exit 0 and every table holds exactly the rows of the clean input (benign variations:
  a UTF-8 BOM, Windows line ends, columns in another order where the docs allow it);
- `finding`: exit 0 and the named validation check of `datasets info --json` counts `delta` more
  rows than it does for the clean input (values the docs say are counted, not refused);
- `fail_or_finding`: either of those (duplicate ids of a table whose docs do not say which);
- `accept_or_fail`: accepted with the clean row counts, or a clean failure (inputs the official
  formats never hold and the docs leave open, such as a quoted field with a newline).

The numbers the cases check (line numbers, row counts) are computed here from the bytes written,
never read back from ddlx.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# -- what a case expects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    kind: str  # fail | accept | finding | fail_or_finding | accept_or_fail
    needles: tuple[str, ...] = ()
    check: str | None = None  # substring of a validation check (finding kinds)
    delta: int = 1
    code: int = 1  # the exit code of a refusal: 1 for bad input, 2 for a command-line mistake


def fail(*needles: str) -> Expect:
    return Expect("fail", needles)


def usage_error(*needles: str) -> Expect:
    """A refusal of the command line itself (a name ddlx cannot take): exit code 2, one Error line."""
    return Expect("fail", needles, code=2)


ACCEPT = Expect("accept")


def finding(check: str, delta: int = 1) -> Expect:
    return Expect("finding", check=check, delta=delta)


@dataclass(frozen=True)
class Built:
    """What a case's build wrote: the `--from` path, needles only known once the bytes are written
    (a line number), paths that must not exist afterwards (archive escapes), and further paths that
    must be unchanged (an `--out` file, a data home that is a file)."""

    source: Path
    needles: tuple[str, ...] = ()
    absent: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Case:
    id: str
    target: str
    build: Callable[["Base", Path], Built]
    expect: Expect
    env: tuple[tuple[str, str], ...] = ()
    home: str = "template"  # template | file | under-file | proc | readonly
    analyze_out: str | None = None  # file | under-file | proc | readonly: run `analyze` instead
    name: str | None = None  # dataset name for import (default: the target's)
    needs_non_root: bool = False  # chmod-based: root reads and writes anyway


# -- the inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CsvSpec:
    """One CSV file of a base: its logical name, whether it has a header, its columns."""

    file: str
    columns: tuple[str, ...]
    header: bool = True
    delimiter: str = ","
    text: str = ""  # a free-text column, for encoding damage
    number: str = ""  # a numeric column, for swapped columns
    id: str = ""  # the column of unique ids

    @property
    def shown(self) -> str:
        """The part of the file's name every message about it must hold."""
        return self.file.removeprefix("data/").removeprefix("trace-data/")


@dataclass(frozen=True)
class Slot:
    """A field that gets extreme values: `values` -> expectation (default: refused there)."""

    spec: CsvSpec
    column: str
    values: tuple[str, ...]
    overrides: tuple[tuple[str, Expect], ...] = ()


@dataclass(frozen=True)
class Target:
    name: str
    command: tuple[str, ...]  # after `ddlx`, before `--from`
    dataset: str  # the catalog name (`datasets info`)
    csv: CsvSpec  # the file the generic CSV damage is applied to
    archive: str | None = None  # archive of the packed layout holding `member`
    member: str | None = None
    header_strict: bool = True  # a reordered or extra column is refused
    dup: Expect | None = None
    slots: tuple[Slot, ...] = ()

    @property
    def is_import(self) -> bool:
        return self.command[1] == "import"


@dataclass
class Base:
    """A valid input: logical file -> bytes, how to lay it out, and the rows of each stored table."""

    target: Target
    files: dict[str, bytes]
    counts: dict[str, int] = field(default_factory=dict)

    def write(self, folder: Path, files: dict[str, bytes] | None = None, packed: bool = True) -> Path:
        """Write `files` (default: the clean ones) in the official layout; return the `--from` path."""
        return LAYOUTS[self.target.name](folder, self.files if files is None else files, packed)

    def plain_path(self, folder: Path, logical: str) -> Path:
        """Where the unpacked layout puts `logical` (the `--from` of a single-file import is it)."""
        return folder / logical


def data_rows(data: bytes, header: bool) -> int:
    """Rows of a CSV: its non-empty lines, less the header."""
    return sum(1 for line in data.split(b"\n") if line.strip(b"\r")) - int(header)


# -- layouts ------------------------------------------------------------------------------------

TAR_LEVEL = 1


def write_tar(path: Path, entries: list[tuple[str, bytes | tuple[str, str]]]) -> None:
    """A gzip'd tar of `entries`: name -> bytes, or ("symlink"|"hardlink", link target)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz", compresslevel=TAR_LEVEL) as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1_600_000_000
            if isinstance(data, tuple):
                info.type = tarfile.SYMTYPE if data[0] == "symlink" else tarfile.LNKTYPE
                info.linkname = data[1]
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def write_zip(path: Path, entries: list[tuple[str, bytes | tuple[str, str]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2021, 8, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if isinstance(data, tuple):  # zip has symlinks only: mode bits of S_IFLNK
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                info.create_system = 3
                data = data[1].encode()
            else:
                info.external_attr = (stat.S_IFREG | 0o644) << 16
            zf.writestr(info, data)


def write_plain(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _pai_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if packed:
            write_tar(folder / (name.removesuffix(".csv") + ".tar.gz"), [(name, data)])
        else:
            write_plain(folder, {name: data})
    return folder


def _philly_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if packed:
        write_tar(folder / "trace-data.tar.gz", list(files.items()))
    else:
        write_plain(folder, files)
    return folder


def _helios_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if packed:
        write_zip(folder / "data.zip", list(files.items()))
    else:
        write_plain(folder, files)
    return folder


def _folder_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_plain(folder, files)
    return folder


def _generic_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    """The generic import reads one CSV file (`--from jobs.csv`); packed, a zip holding it."""
    folder.mkdir(parents=True, exist_ok=True)
    if packed:
        write_zip(folder / "jobs.zip", list(files.items()))
        return folder / "jobs.zip"
    write_plain(folder, files)
    return folder / next(iter(files))


def _itp_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if packed:
        write_tar(folder / "raw-traces.tar.gz", list(files.items()))
        return folder / "raw-traces.tar.gz"
    write_plain(folder, files)
    return folder


def _slurm_layout(folder: Path, files: dict[str, bytes], packed: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_plain(folder, files)
    return folder / next(iter(files))


LAYOUTS: dict[str, Callable[[Path, dict[str, bytes], bool], Path]] = {
    "pai": _pai_layout, "philly": _philly_layout, "helios": _helios_layout,
    "pai-v2023": _folder_layout, "acme": _folder_layout,
    "import-generic": _generic_layout, "import-itp": _itp_layout, "import-slurm": _slurm_layout,
}

# -- the targets --------------------------------------------------------------------------------

PAI_HEADERS = {
    "pai_job_table": "job_name,inst_id,user,status,start_time,end_time",
    "pai_task_table": "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type",
    "pai_instance_table": "job_name,task_name,inst_name,worker_name,inst_id,status,start_time,end_time,machine",
    "pai_sensor_table": "job_name,task_name,worker_name,inst_id,machine,gpu_name,cpu_usage,gpu_wrk_util,avg_mem,"
                        "max_mem,avg_gpu_wrk_mem,max_gpu_wrk_mem,read,write,read_count,write_count",
    "pai_group_tag_table": "inst_id,user,gpu_type_spec,group,workload",
    "pai_machine_spec": "machine,gpu_type,cap_cpu,cap_mem,cap_gpu",
    "pai_machine_metric": "worker_name,machine,start_time,end_time,machine_cpu_iowait,machine_cpu_kernel,"
                          "machine_cpu_usr,machine_gpu,machine_load_1,machine_net_receive,machine_num_worker,"
                          "machine_cpu",
}


def _pai_spec(table: str, **kw: str) -> CsvSpec:
    return CsvSpec(f"{table}.csv", tuple(PAI_HEADERS[table].split(",")), header=False, **kw)


PAI_JOB = _pai_spec("pai_job_table", text="status", number="start_time", id="job_name")
PAI_TASK = _pai_spec("pai_task_table", text="status", number="plan_gpu")
PAI_SENSOR = _pai_spec("pai_sensor_table", text="gpu_name", number="gpu_wrk_util")
PHILLY_CPU = CsvSpec("trace-data/cluster_cpu_util", ("time", "machine_id", "cpu_util"),
                     text="machine_id", number="cpu_util")
HELIOS_LOG = CsvSpec("data/Earth/cluster_log.csv", tuple(
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue".split(",")),
    text="user", number="gpu_num", id="job_id")
V2023_PODS = CsvSpec("openb_pod_list_default.csv", tuple(
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time".split(",")), text="name", number="cpu_milli", id="name")
ACME_SEREN = CsvSpec("trace_seren.csv", tuple(
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,"
    "gpu_time".split(",")), text="user", number="gpu_num", id="job_id")
GENERIC_CSV = CsvSpec("jobs.csv", ("id", "user", "submit", "duration", "gpus", "status"),
                      text="user", number="gpus", id="id")
ITP_CSV = CsvSpec("cluster01.csv", ("job_id", "submission_time", "duration", "num_gpu"),
                  text="job_id", number="num_gpu", id="job_id")
SLURM_COLUMNS = ("JobID", "JobName", "User", "Account", "Partition", "State", "Submit", "Start", "End",
                 "AllocTRES", "ReqTRES")
SLURM_TXT = CsvSpec("sacct.txt", SLURM_COLUMNS, delimiter="|", text="User", number="Submit", id="JobID")

NUMBERS = ("1e308", "-1", "NaN", "inf", "-inf", "99999999999999999999999")
OFFSETS_AND_YEARS = ("+99:00", "1900", "2999")  # applied to a date-time by `_time_value`
GENERIC_MAP = "job_id=id,user=user,submit=submit,duration=duration,gpus=gpus,state=status"

TARGETS: dict[str, Target] = {t.name: t for t in [
    Target("pai", ("datasets", "ingest", "pai"), "pai", PAI_JOB, "pai_job_table.tar.gz", "pai_job_table.csv",
           dup=Expect("fail_or_finding", (PAI_JOB.shown,), check="duplicate"),
           slots=(Slot(PAI_JOB, "start_time", NUMBERS), Slot(PAI_TASK, "plan_gpu", NUMBERS),
                  Slot(PAI_SENSOR, "gpu_wrk_util", ("250", "1e308"),
                       (("250", finding("gpu_wrk_util above 100 %")),)))),
    Target("philly", ("datasets", "ingest", "philly"), "philly", PHILLY_CPU, "trace-data.tar.gz",
           "trace-data/cluster_job_log",
           slots=(Slot(PHILLY_CPU, "cpu_util", ("250",) + NUMBERS, (("250", finding("cpu_util above 100 %")),)),
                  Slot(PHILLY_CPU, "time", OFFSETS_AND_YEARS))),
    Target("helios", ("datasets", "ingest", "helios"), "helios", HELIOS_LOG, "data.zip",
           "data/Earth/cluster_log.csv", dup=finding("duplicate job_id within a cluster"),
           slots=(Slot(HELIOS_LOG, "gpu_num", NUMBERS), Slot(HELIOS_LOG, "submit_time", OFFSETS_AND_YEARS))),
    Target("pai-v2023", ("datasets", "ingest", "pai-v2023"), "pai-v2023", V2023_PODS,
           dup=finding("duplicate pod name within a workload"),
           slots=(Slot(V2023_PODS, "gpu_milli", ("1500",) + NUMBERS),
                  Slot(V2023_PODS, "creation_time", NUMBERS))),
    Target("acme", ("datasets", "ingest", "acme"), "acme", ACME_SEREN, header_strict=False,
           dup=finding("duplicate job"),
           slots=(Slot(ACME_SEREN, "gpu_num", NUMBERS + ("2.5",), (("2.5", finding("not a whole number")),)),
                  Slot(ACME_SEREN, "submit_time", OFFSETS_AND_YEARS))),
    Target("import-generic", ("datasets", "import", "mine", "--map", GENERIC_MAP, "--time-unit", "datetime"),
           "mine", GENERIC_CSV, "jobs.zip", "jobs.csv", header_strict=False,
           dup=finding("duplicate job_id within a cluster"),
           slots=(Slot(GENERIC_CSV, "gpus", NUMBERS),
                  Slot(GENERIC_CSV, "duration", ("-1", "NaN", "1e308")),
                  Slot(GENERIC_CSV, "submit", OFFSETS_AND_YEARS))),
    Target("import-itp", ("datasets", "import", "itp", "--preset", "itp"), "itp", ITP_CSV,
           "raw-traces.tar.gz", "cluster01.csv", header_strict=False,
           dup=finding("duplicate job_id within a cluster"),
           slots=(Slot(ITP_CSV, "num_gpu", NUMBERS),
                  Slot(ITP_CSV, "submission_time", ("1e308", "NaN", "inf", "99999999999999999999999")))),
    Target("import-slurm", ("datasets", "import", "hpc_cluster", "--preset", "slurm", "--tz", "Europe/Berlin"),
           "hpc_cluster", SLURM_TXT, header_strict=False, dup=finding("duplicate job_id within a cluster"),
           slots=(Slot(SLURM_TXT, "Submit", OFFSETS_AND_YEARS),
                  Slot(SLURM_TXT, "AllocTRES", ("cpu=8,gres/gpu=lots,mem=64G,node=1",
                                                "cpu=8,gres/gpu=1e308,mem=64G,node=1",
                                                "cpu=8,gres/gpu=2,mem=64X,node=1")),
                  Slot(SLURM_TXT, "State", ("EXPLODED",)))),
]}

# -- building the bases --------------------------------------------------------------------------

UTIL_ROWS = 300  # rows kept of each Philly utilisation file
PHILLY_JOBS = 60  # jobs kept of the Philly job log


def _generic_csv() -> bytes:
    states = ["COMPLETED", "FAILED", "CANCELLED", "COMPLETED", "RUNNING"]
    rows = ["id,user,submit,duration,gpus,status"]
    for i in range(24):
        rows.append(f"j{i:03d},user{i % 5},2024-01-{1 + i // 3:02d} {i % 24:02d}:{(7 * i) % 60:02d}:00,"
                    f"{60 * (i + 1)},{[1, 2, 4, 8, 0.5][i % 5]},{states[i % 5]}")
    return ("\n".join(rows) + "\n").encode()


def _itp_csv(cluster: int) -> bytes:
    rows = ["job_id,submission_time,duration,num_gpu"]
    for i in range(15):
        rows.append(f"c{cluster}-{i:03d},{1000 * i + 17 * cluster},{300 + 45 * i},{[1, 2, 4, 8][i % 4]}")
    return ("\n".join(rows) + "\n").encode()


def _slurm_txt() -> bytes:
    rows = ["|".join(SLURM_COLUMNS)]
    for i in range(12):
        job = 1000 + i
        submit = f"2024-03-{1 + i:02d}T09:{i:02d}:00"
        start = f"2024-03-{1 + i:02d}T09:{i + 5:02d}:00"
        end = f"2024-03-{1 + i:02d}T11:{i:02d}:00"
        tres = f"billing=8,cpu=8,gres/gpu:a100={1 + i % 4},mem=64G,node=1"
        state = ["COMPLETED", "FAILED", "CANCELLED by 123", "TIMEOUT"][i % 4]
        rows.append(f"{job}|train{i}|user{i % 3}|acct|gpu|{state}|{submit}|{start}|{end}|{tres}|{tres}")
        if i % 3 == 0:
            rows.append(f"{job}.batch|batch|||gpu|{state}|{submit}|{start}|{end}|cpu=8,mem=64G,node=1|")
    return ("\n".join(rows) + "\n").encode()


def _members(path: Path) -> dict[str, bytes]:
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            return {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def build_bases(root: Path) -> dict[str, Base]:
    """The valid input of every target, generated once (ddlx's generator at scale 0.001)."""
    from ddlx.datasets.synthetic import write_synthetic_release

    bases: dict[str, Base] = {}
    synth = root / "synth"
    for trace in ("pai", "philly", "helios", "pai-v2023", "acme"):
        write_synthetic_release(trace, synth / trace, 0.001, 7)

    pai = {}
    for table in PAI_HEADERS:
        pai.update(_members(synth / "pai" / f"{table}.tar.gz"))
    bases["pai"] = Base(TARGETS["pai"], pai, {name.removesuffix(".csv"): data_rows(data, False)
                                               for name, data in pai.items()})

    philly = {}
    for name, data in _members(synth / "philly" / "trace-data.tar.gz").items():
        base_name = name.rsplit("/", 1)[-1]
        if base_name == "cluster_job_log":
            data = json.dumps(json.loads(data)[:PHILLY_JOBS], indent=4).encode()
        elif base_name != "cluster_machine_list":
            data = b"\n".join(data.split(b"\n")[: UTIL_ROWS + 1]) + b"\n"
        philly["trace-data/" + base_name] = data
    counts = {"philly_job_log": len(json.loads(philly["trace-data/cluster_job_log"]))}
    for table in ("gpu_util", "cpu_util", "mem_util", "machine_list"):
        counts[f"philly_{table}"] = data_rows(philly[f"trace-data/cluster_{table}"], True)
    bases["philly"] = Base(TARGETS["philly"], philly, counts)

    helios = _members(synth / "helios" / "data.zip")
    log_rows = sum(data_rows(d, True) for n, d in helios.items() if n.endswith("cluster_log.csv"))
    vc_rows = sum(data_rows(d, True) * (d.split(b"\n", 1)[0].count(b",") - 1)  # VCs: less date and total
                  for n, d in helios.items() if n.endswith("cluster_gpu_number.csv"))
    bases["helios"] = Base(TARGETS["helios"], helios,
                           {"helios_cluster_log": log_rows, "helios_vc_capacity": vc_rows})

    v2023 = {p.name: p.read_bytes() for p in sorted((synth / "pai-v2023").glob("*.csv"))}
    bases["pai-v2023"] = Base(TARGETS["pai-v2023"], v2023, {
        "pai_v2023_nodes": sum(data_rows(d, True) for n, d in v2023.items() if "node_list" in n),
        "pai_v2023_pods": sum(data_rows(d, True) for n, d in v2023.items() if "pod_list" in n)})

    acme = {p.name: p.read_bytes() for p in sorted((synth / "acme").glob("trace_*.csv"))}
    bases["acme"] = Base(TARGETS["acme"], acme, {"acme_job_trace": sum(data_rows(d, True) for d in acme.values())})

    generic = {"jobs.csv": _generic_csv()}
    bases["import-generic"] = Base(TARGETS["import-generic"], generic,
                                   {"mine_job_table": data_rows(generic["jobs.csv"], True)})
    itp = {"cluster01.csv": _itp_csv(1), "cluster02.csv": _itp_csv(2)}
    bases["import-itp"] = Base(TARGETS["import-itp"], itp, {"itp_job_table": sum(data_rows(d, True)
                                                                                  for d in itp.values())})
    slurm = {"sacct.txt": _slurm_txt()}
    bases["import-slurm"] = Base(TARGETS["import-slurm"], slurm,
                                 {"hpc_cluster_job_table": data_rows(slurm["sacct.txt"], True)})
    return bases


# -- damage to CSV bytes --------------------------------------------------------------------------

NL = b"\n"
ROW = 2  # the data row (from 0) that value damage is applied to


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def line_of(spec: CsvSpec, row: int) -> int:
    """The 1-based line number of data row `row`."""
    return row + 1 + int(spec.header)


def set_field(spec: CsvSpec, data: bytes, row: int, column: str, value: bytes) -> bytes:
    lines = _lines(data)
    index = line_of(spec, row) - 1
    fields = lines[index].split(spec.delimiter.encode())
    fields[spec.columns.index(column)] = value
    lines[index] = spec.delimiter.encode().join(fields)
    return b"\n".join(lines)


def get_field(spec: CsvSpec, data: bytes, row: int, column: str) -> bytes:
    return _lines(data)[line_of(spec, row) - 1].split(spec.delimiter.encode())[spec.columns.index(column)]


def map_columns(spec: CsvSpec, data: bytes, change: Callable[[list[bytes]], list[bytes]],
                header_too: bool = True) -> bytes:
    """Apply `change` to the fields of every line (the header only when `header_too`)."""
    out = []
    for number, line in enumerate(_lines(data)):
        if not line:
            out.append(line)
            continue
        if spec.header and number == 0 and not header_too:
            out.append(line)
            continue
        out.append(spec.delimiter.encode().join(change(line.split(spec.delimiter.encode()))))
    return b"\n".join(out)


def truncated(spec: CsvSpec, data: bytes, share: float) -> tuple[bytes, int]:
    """`data` cut inside the row holding byte `share` of it, after one field and one character
    more: that row has two fields; returns the bytes and the row's line number."""
    at = int(len(data) * share)
    start = data.rindex(b"\n", 0, at) + 1
    first_delim = data.index(spec.delimiter.encode(), start)
    line = data.count(b"\n", 0, start) + 1
    if spec.header and line == 1:
        raise ValueError("cut in the header")
    return data[: first_delim + 2], line


def _time_value(original: bytes, how: str) -> bytes:
    """A date-time like `original` with an impossible offset or a year far out of range."""
    text = original.decode()
    if how == "+99:00":
        for suffix in ("+08:00", "+00:00", " PDT", " PST"):
            if text.endswith(suffix):
                return (text[: -len(suffix)] + ("+99:00" if suffix.startswith("+") else " +99:00")).encode()
        return (text + "+99:00").encode()
    return (how + text[4:]).encode()


# -- the case table ---------------------------------------------------------------------------------


def _with(base: Base, folder: Path, logical: str, data: bytes, needles: tuple[str, ...] = (),
          packed: bool = True) -> Built:
    files = dict(base.files)
    files[logical] = data
    return Built(base.write(folder / "in", files, packed), needles)


def csv_cases(t: Target) -> list[Case]:
    spec = t.csv
    shown = spec.shown
    cases: list[Case] = []

    def add(kind: str, change: Callable[[bytes], tuple[bytes, tuple[str, ...]]], expect: Expect) -> None:
        def build(base: Base, folder: Path) -> Built:
            data, needles = change(base.files[spec.file])
            return _with(base, folder, spec.file, data, needles)
        cases.append(Case(f"{t.name}-csv-{kind}", t.name, build, expect))

    for share in (0.3, 0.7):
        def cut(data: bytes, share: float = share) -> tuple[bytes, tuple[str, ...]]:
            cut_data, line = truncated(spec, data, share)
            return cut_data, (f"line {line}",)
        add(f"truncated-mid-row-{int(share * 100)}pct", cut, fail(shown))

    a, b = spec.columns.index(spec.text), spec.columns.index(spec.number)

    def swap(fields: list[bytes]) -> list[bytes]:
        fields = list(fields)
        if len(fields) > max(a, b):
            fields[a], fields[b] = fields[b], fields[a]
        return fields

    add("swapped-columns-data-only", lambda d: (map_columns(spec, d, swap, header_too=False),
                                                (f"line {line_of(spec, 0)}",)), fail(shown))
    if spec.header:
        add("swapped-columns-with-header", lambda d: (map_columns(spec, d, swap), ()),
            fail(shown, "line 1") if t.header_strict else ACCEPT)

    drop = spec.columns.index(spec.number)
    add("missing-column", lambda d: (map_columns(spec, d, lambda f: f[:drop] + f[drop + 1:]), ()),
        fail(shown, spec.number) if t.is_import else fail(shown, "line 1"))
    add("extra-column", lambda d: (map_columns(spec, d, lambda f: f + [b"extra"]), ()),
        ACCEPT if t.is_import else fail(shown, "line 1"))
    add("empty-file", lambda d: (b"", ()), fail(shown, "empty"))
    header_line = spec.delimiter.join(spec.columns).encode() + b"\n"
    add("header-only", lambda d: (header_line, ()), fail(shown) if spec.header else fail(shown, "line 1"))
    add("nul-byte", lambda d: (set_field(spec, d, ROW, spec.text, b"ab\x00cd"), (f"line {line_of(spec, ROW)}",)),
        fail(shown))
    add("non-utf8", lambda d: (set_field(spec, d, ROW, spec.text, b"ab\xff\xfecd"), (f"line {line_of(spec, ROW)}",)),
        fail(shown, "UTF-8"))
    add("utf8-bom", lambda d: (b"\xef\xbb\xbf" + d, ()), ACCEPT)
    add("crlf", lambda d: (d.replace(b"\n", b"\r\n"), ()), ACCEPT)
    add("quoted-embedded-newline", lambda d: (set_field(spec, d, ROW, spec.text, b'"ab\ncd"'), ()),
        ACCEPT if t.is_import else Expect("accept_or_fail", (shown,)))
    if t.dup is not None:
        def duplicate(d: bytes) -> tuple[bytes, tuple[str, ...]]:
            row = _lines(d)[line_of(spec, ROW) - 1]
            return d.rstrip(b"\n") + b"\n" + row + b"\n", ()
        add("duplicate-id", duplicate, t.dup)
    return cases


def slot_cases(t: Target) -> list[Case]:
    cases = []
    for slot in t.slots:
        overrides = dict(slot.overrides)
        for value in slot.values:
            def build(base: Base, folder: Path, slot: Slot = slot, value: str = value) -> Built:
                data = base.files[slot.spec.file]
                if value in OFFSETS_AND_YEARS:
                    new = _time_value(get_field(slot.spec, data, ROW, slot.column), value)
                else:
                    new = value.encode()
                bad = set_field(slot.spec, data, ROW, slot.column, new)
                return _with(base, folder, slot.spec.file, bad, (f"line {line_of(slot.spec, ROW)}",))
            expect = overrides.get(value, fail(slot.spec.shown, f"field '{slot.column}'"))
            label = value.replace("+", "offset").replace("99999999999999999999999", "huge-int")
            label = label.replace("cpu=8,gres/gpu=", "gpu-").replace(",mem=64G,node=1", "")
            label = label.replace("cpu=8,gres/gpu=2,mem=", "mem-").replace(",node=1", "")
            if value in ("1900", "2999"):
                label = f"year-{value}"
            cases.append(Case(f"{t.name}-value-{slot.spec.file.rsplit('/', 1)[-1].split('.')[0]}-"
                              f"{slot.column}-{label}", t.name, build, expect))
    return cases


BOMB_BYTES = 30 << 20
BOMB_LIMIT = "10000000"


def archive_cases(t: Target) -> list[Case]:
    if t.archive is None or t.member is None:
        return []
    archive, member = t.archive, t.member
    base_name = member.rsplit("/", 1)[-1]
    is_zip = archive.endswith(".zip")
    cases = []

    def packed_entries(base: Base) -> list[tuple[str, bytes | tuple[str, str]]]:
        if t.name == "pai":
            return [(member, base.files[member])]
        return list(base.files.items())

    def rewrite(base: Base, folder: Path, change: Callable[[str, bytes], list[tuple[str, object]]]) -> Path:
        source = base.write(folder / "in")
        path = source if source.is_file() else source / archive
        entries: list = []
        for name, data in packed_entries(base):
            entries += change(name, data) if name == member else [(name, data)]
        path.unlink()
        (write_zip if is_zip else write_tar)(path, entries)
        return source

    for share in (0.25, 0.5, 0.9, -8):
        def build(base: Base, folder: Path, share: float = share) -> Built:
            source = base.write(folder / "in")
            path = source if source.is_file() else source / archive
            data = path.read_bytes()
            path.write_bytes(data[:share] if share < 0 else data[: int(len(data) * share)])
            return Built(source)
        label = "last-8-bytes-cut" if share < 0 else f"cut-at-{int(share * 100)}pct"
        cases.append(Case(f"{t.name}-archive-{label}", t.name, build, fail(archive, "truncated")))

    def escape(kind: str) -> Callable[[Base, Path], Built]:
        def build(base: Base, folder: Path) -> Built:
            outside = folder / "outside"
            if kind == "traversal":
                name = "../" * 16 + str(outside / member).lstrip("/")
            else:
                name = str(outside / member)
            source = rewrite(base, folder, lambda n, d: [(name, d)])
            return Built(source, absent=(outside,))
        return build

    cases.append(Case(f"{t.name}-archive-member-traversal", t.name, escape("traversal"), fail(archive)))
    cases.append(Case(f"{t.name}-archive-member-absolute", t.name, escape("absolute"), fail(archive)))

    def linked(kind: str) -> Callable[[Base, Path], Built]:
        def build(base: Base, folder: Path) -> Built:
            secret = folder / "secret.csv"
            secret.parent.mkdir(parents=True, exist_ok=True)
            secret.write_bytes(base.files[member])  # valid content: only the link makes it bad
            return Built(rewrite(base, folder, lambda n, d: [(n, (kind, str(secret)))]))
        return build

    cases.append(Case(f"{t.name}-archive-member-symlink", t.name, linked("symlink"), fail(archive, base_name)))
    if not is_zip:
        cases.append(Case(f"{t.name}-archive-member-hardlink", t.name, linked("hardlink"), fail(archive, base_name)))

    def bomb(base: Base, folder: Path) -> Built:
        return Built(rewrite(base, folder, lambda n, d: [(n, bytes(BOMB_BYTES))]))

    cases.append(Case(f"{t.name}-archive-member-30MiB-of-zeros", t.name, bomb, fail(archive, base_name),
                      env=(("DDLX_MAX_MEMBER_BYTES", BOMB_LIMIT),)))
    return cases


def _plain_with(base: Base, folder: Path, make: Callable[[Path], None]) -> Built:
    """The unpacked input with the primary file replaced by what `make(path)` puts there."""
    spec = base.target.csv
    files = {k: v for k, v in base.files.items() if k != spec.file}
    source = base.write(folder / "in", files, packed=False) if files else None
    path = base.plain_path(folder / "in", spec.file)
    path.parent.mkdir(parents=True, exist_ok=True)
    make(path)
    if source is None or source.is_file() or not source.exists():  # the single-file imports
        source = path
    return Built(source)


def os_cases(t: Target) -> list[Case]:
    shown = t.csv.shown.rsplit("/", 1)[-1]

    def unreadable(path: Path) -> None:
        path.write_bytes(b"job\n")
        path.chmod(0)

    cases = [
        Case(f"{t.name}-os-unreadable-file", t.name, lambda b, f: _plain_with(b, f, unreadable), fail(shown),
             needs_non_root=True),
        Case(f"{t.name}-os-directory-for-file", t.name, lambda b, f: _plain_with(b, f, Path.mkdir), fail(shown)),
        Case(f"{t.name}-os-fifo-for-file", t.name, lambda b, f: _plain_with(b, f, os.mkfifo), fail(shown)),
        Case(f"{t.name}-os-missing-from", t.name, lambda b, f: Built(f / "no-such-input"),
             fail("no-such-input", "does not exist")),
    ]

    def odd_file(base: Base, folder: Path) -> Built:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "release.bin"
        path.write_bytes(b"\x00\x01 not a release\n")
        return Built(path)

    cases.append(Case(f"{t.name}-os-from-unknown-file", t.name, odd_file, fail("release.bin")))
    return cases


def home_cases(t: Target) -> list[Case]:
    def clean(base: Base, folder: Path) -> Built:
        return Built(base.write(folder / "in"))

    return [Case(f"{t.name}-home-{mode}", t.name, clean, fail(), home=mode, needs_non_root=mode == "readonly")
            for mode in ("file", "under-file", "proc", "readonly")]


def analyze_cases(t: Target) -> list[Case]:
    def nothing(base: Base, folder: Path) -> Built:
        return Built(folder)

    return [Case(f"{t.name}-analyze-out-{mode}", t.name, nothing, fail(), analyze_out=mode,
                 needs_non_root=mode == "readonly")
            for mode in ("file", "under-file", "proc", "readonly")]


def philly_json_cases() -> list[Case]:
    log = "trace-data/cluster_job_log"
    cases = []

    def add(label: str, change: Callable[[bytes], tuple[bytes, tuple[str, ...]]], expect: Expect) -> None:
        def build(base: Base, folder: Path) -> Built:
            data, needles = change(base.files[log])
            return _with(base, folder, log, data, needles)
        cases.append(Case(f"philly-joblog-{label}", "philly", build, expect))

    def at_line(text: bytes, old: bytes, new: bytes, offset: int | None = 0) -> tuple[bytes, tuple[str, ...]]:
        """`text` with its first `old` replaced by `new`; the needle names the line of the error,
        `offset` lines below the change (None: no line, the field is named instead)."""
        index = text.index(old)
        line = text.count(NL, 0, index) + 1
        needles = () if offset is None else (f"line {line + offset}",)
        return text[:index] + new + text[index + len(old):], needles

    def jobs_with(change: Callable[[list], None]) -> Callable[[bytes], tuple[bytes, tuple[str, ...]]]:
        def apply(text: bytes) -> tuple[bytes, tuple[str, ...]]:
            jobs = json.loads(text)
            change(jobs)
            return json.dumps(jobs, indent=4).encode(), ()
        return apply

    name = "cluster_job_log"
    add("trailing-comma", lambda d: at_line(d, b"}\n]", b"},\n]", offset=1), fail(name))
    add("single-quoted-key", lambda d: at_line(d, b'"vc":', b"'vc':"), fail(name))
    add("unquoted-key", lambda d: at_line(d, b'"vc":', b"vc:"), fail(name))
    add("data-after-array", lambda d: (d.rstrip() + b"\n{}\n", ()), fail(name))
    for share in (0.3, 0.6, 0.95):
        def cut(d: bytes, share: float = share) -> tuple[bytes, tuple[str, ...]]:
            part = d[: int(len(d) * share)]
            return part, (f"line {part.count(NL) + 1}",)
        add(f"truncated-{int(share * 100)}pct", cut, fail(name))
    add("vc-NaN", lambda d: at_line(d, b'"vc": "', b'"vc": NaN, "x": "'), fail(name))
    add("vc-Infinity", lambda d: at_line(d, b'"vc": "', b'"vc": Infinity, "x": "'), fail(name))
    add("submitted-time-minus-Infinity",
        lambda d: at_line(d, b'"submitted_time": "', b'"submitted_time": -Infinity, "y": "'), fail(name))
    add("nested-gpu-lists", lambda d: at_line(d, b'"gpus": [', b'"gpus": [[ "gpu9" ], ', None), fail(name, "gpus"))
    add("deep-nesting-open", lambda d: (b"[" * 100_000, ()), fail(name))
    add("deep-nesting-balanced", lambda d: (b"[" * 100_000 + b"]" * 100_000, ()), fail(name))
    add("object-not-array", lambda d: (b'{"jobs": ' + d + b"}", ()), fail(name))
    add("null-document", lambda d: (b"null\n", ()), fail(name))
    add("duplicate-key", lambda d: at_line(d, b'"vc": "', b'"vc": "dup", "vc": "', None), fail(name, "vc"))
    add("nul-byte-in-string", lambda d: at_line(d, b'"user": "', b'"user": "a\x00'), fail(name))
    add("non-utf8-in-string", lambda d: at_line(d, b'"user": "', b'"user": "a\xff'), fail(name, "UTF-8"))
    add("utf8-bom", lambda d: (b"\xef\xbb\xbf" + d, ()), Expect("accept_or_fail", (name,)))
    add("crlf", lambda d: (d.replace(b"\n", b"\r\n"), ()), ACCEPT)

    def dup(jobs: list) -> None:
        jobs.append(dict(jobs[ROW]))
    # the check counts jobs whose jobid appears more than once: both rows of the pair
    add("duplicate-jobid", jobs_with(dup), finding("jobid appears more than once", delta=2))

    def year(value: str) -> Callable[[list], None]:
        def change(jobs: list) -> None:
            job = next(j for j in jobs if j["attempts"] and j["attempts"][0].get("start_time"))
            job["attempts"][0]["start_time"] = value + job["attempts"][0]["start_time"][4:]
        return change
    for value in ("1900", "2999"):
        add(f"attempt-start-year-{value}", jobs_with(year(value)), fail(name, "start_time"))

    def offset(jobs: list) -> None:
        jobs[ROW]["submitted_time"] = jobs[ROW]["submitted_time"] + "+99:00"
    add("submitted-time-offset+99:00", jobs_with(offset), fail(name, "submitted_time"))
    add("jobid-is-a-number", jobs_with(lambda jobs: jobs[ROW].update(jobid=1e308)), fail(name, "jobid"))
    return cases


HOSTILE_NAMES = [
    "../x", "a;b", '"x"', "a b", "x'; DROP TABLE jobs; --", "x/y", "x\ny", "", "x.y", "Mine", "über",
    "a" * 65, "a" * 5000, "pai", "philly", "helios", "pai-v2023", "pai_v2023", "acme", "PAI",
    "hpc-cluster",  # differs from the dataset hpc_cluster of the catalog only by '-' versus '_'
]


def name_cases() -> list[Case]:
    def clean(base: Base, folder: Path) -> Built:
        return Built(base.write(folder / "in"))

    cases = []
    for number, name in enumerate(HOSTILE_NAMES):
        label = (name[:12] + f"..{len(name)}-chars") if len(name) > 20 else name
        label = "".join(c if c.isalnum() or c in "-_." else "_" for c in label) or "empty"
        cases.append(Case(f"import-generic-name{number:02d}-{label}", "import-generic", clean,
                          usage_error(repr(name)[:60]), name=name))
    return cases


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for t in TARGETS.values():
        cases += csv_cases(t) + slot_cases(t) + archive_cases(t) + os_cases(t)
        if t.name in ("pai", "acme", "import-generic"):
            cases += home_cases(t)
        if not t.is_import:
            cases += analyze_cases(t)
    cases += philly_json_cases() + name_cases()
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    return cases


CASES = all_cases()


def copy_tree(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, symlinks=True)
