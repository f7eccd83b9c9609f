"""A data home holding a dataset with GPU telemetry: the state the telemetry families of the
bad-input tests protect (`test_telemetry_dumps.py`, `test_prometheus_faults.py`). Its numbers are
counted from the lines written here."""

from __future__ import annotations

from pathlib import Path

#: 2024-05-01T12:00:00Z, the first sample of the dump written here.
T0 = 1714564800
#: Two jobs of one GPU each, as a generic job table (`ddlx datasets import --map ...`).
JOBS_CSV = ("job,start,end,gpus\n"
            "j1,2024-05-01T12:00:00Z,2024-05-01T13:00:00Z,1\n"
            "j2,2024-05-01T12:30:00Z,2024-05-01T14:00:00Z,1\n")
JOBS_MAPPING = "job_id=job,submit=start,start=start,end=end,gpus=gpus"
#: The dump: two GPUs of one node, gpu_util every 60 s for an hour.
GPUS = (0, 1)
STEPS = 60


def register(home: Path, name: str) -> None:
    """Import the two jobs of `JOBS_CSV` as the dataset `name` of `home`."""
    from ddlx.datasets.importers import import_dataset

    source = home.parent / f"{name}-jobs.csv"
    source.write_text(JOBS_CSV)
    import_dataset(name, source, home, mapping=JOBS_MAPPING, time_unit="datetime")


def sample_lines(start: int = T0) -> list[str]:
    """The OpenMetrics sample lines of the dump (no `# EOF`), seconds timestamps from `start`."""
    return [f'DCGM_FI_DEV_GPU_UTIL{{Hostname="n1",gpu="{gpu}",modelName="A100"}} {(gpu * 7 + k) % 100} '
            f"{start + 60 * k}.000" for gpu in GPUS for k in range(STEPS)]


def home_with_telemetry(folder: Path, name: str = "cl") -> tuple[Path, int]:
    """`folder/home` holding the dataset `name` and the samples of `sample_lines` imported beside it;
    returns the home and how many samples were written."""
    from ddlx.datasets.telemetry.importer import import_metrics

    folder.mkdir(parents=True, exist_ok=True)
    home = folder / "home"
    register(home, name)
    lines = sample_lines()
    dump = folder / "dcgm.om"
    dump.write_text("\n".join(["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", *lines, "# EOF"]) + "\n")
    result = import_metrics(home, name, dump)
    assert result.samples == len(lines) == len(GPUS) * STEPS
    return home, len(lines)
