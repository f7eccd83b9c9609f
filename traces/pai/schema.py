"""Alibaba PAI cluster-trace-gpu-v2020: the official file format, declared once.

Each table ships as `<table>.tar.gz` holding one headerless `<table>.csv`; the column order is
the one in the official `<table>.header` files. Types are the DuckDB types ddlx reads them with.

Units (from the release notes):
- times: seconds since an undisclosed origin; read as Unix time in Asia/Shanghai (UTC+8) they
  keep the real time of day and weekday, not the real date. 0 or empty means missing.
- plan_cpu, cpu_usage: percent of one CPU core (600 = 6 cores).
- plan_gpu, gpu_wrk_util: percent of one GPU (50 = half a GPU); plan_gpu is per instance.
- plan_mem, avg_mem, max_mem, avg_gpu_wrk_mem, max_gpu_wrk_mem: GB.
- read, write: bytes of network traffic; read_count, write_count: operations.
- cap_cpu: cores; cap_mem: GB; cap_gpu: GPUs per machine.
"""

from __future__ import annotations

from ddlx.datasets.ranges import COUNTER_LIMIT, ONE_YEAR_S, ValueRange

SOURCE_TZ = "Asia/Shanghai"

#: Column name -> DuckDB type, in official file order, for each of the seven tables.
COLUMNS: dict[str, dict[str, str]] = {
    "pai_job_table": {
        "job_name": "VARCHAR",
        "inst_id": "VARCHAR",
        "user": "VARCHAR",
        "status": "VARCHAR",
        "start_time": "DOUBLE",
        "end_time": "DOUBLE",
    },
    "pai_task_table": {
        "job_name": "VARCHAR",
        "task_name": "VARCHAR",
        "inst_num": "DOUBLE",
        "status": "VARCHAR",
        "start_time": "DOUBLE",
        "end_time": "DOUBLE",
        "plan_cpu": "DOUBLE",
        "plan_mem": "DOUBLE",
        "plan_gpu": "DOUBLE",
        "gpu_type": "VARCHAR",
    },
    "pai_instance_table": {
        "job_name": "VARCHAR",
        "task_name": "VARCHAR",
        "inst_name": "VARCHAR",
        "worker_name": "VARCHAR",
        "inst_id": "VARCHAR",
        "status": "VARCHAR",
        "start_time": "DOUBLE",
        "end_time": "DOUBLE",
        "machine": "VARCHAR",
    },
    "pai_sensor_table": {
        "job_name": "VARCHAR",
        "task_name": "VARCHAR",
        "worker_name": "VARCHAR",
        "inst_id": "VARCHAR",
        "machine": "VARCHAR",
        "gpu_name": "VARCHAR",
        "cpu_usage": "DOUBLE",
        "gpu_wrk_util": "DOUBLE",
        "avg_mem": "DOUBLE",
        "max_mem": "DOUBLE",
        "avg_gpu_wrk_mem": "DOUBLE",
        "max_gpu_wrk_mem": "DOUBLE",
        "read": "DOUBLE",
        "write": "DOUBLE",
        "read_count": "DOUBLE",
        "write_count": "DOUBLE",
    },
    "pai_group_tag_table": {
        "inst_id": "VARCHAR",
        "user": "VARCHAR",
        "gpu_type_spec": "VARCHAR",
        "group": "VARCHAR",
        "workload": "VARCHAR",
    },
    "pai_machine_spec": {
        "machine": "VARCHAR",
        "gpu_type": "VARCHAR",
        "cap_cpu": "BIGINT",
        "cap_mem": "BIGINT",
        "cap_gpu": "BIGINT",
    },
    "pai_machine_metric": {
        "worker_name": "VARCHAR",
        "machine": "VARCHAR",
        "start_time": "DOUBLE",
        "end_time": "DOUBLE",
        "machine_cpu_iowait": "DOUBLE",
        "machine_cpu_kernel": "DOUBLE",
        "machine_cpu_usr": "DOUBLE",
        "machine_gpu": "DOUBLE",
        "machine_load_1": "DOUBLE",
        "machine_net_receive": "DOUBLE",
        "machine_num_worker": "DOUBLE",
        "machine_cpu": "DOUBLE",
    },
}

TABLES: tuple[str, ...] = tuple(COLUMNS)

#: Status values of jobs, tasks and instances; only Terminated is a success.
STATUSES: tuple[str, ...] = ("Terminated", "Failed", "Running", "Waiting")

#: GPU types of machines and tasks; MISC means older generations (K40m, K80, M60).
GPU_TYPES: tuple[str, ...] = ("MISC", "P100", "T4", "V100", "V100M32")

#: Device memory in GB of the GPU types whose model is known (MISC is a mix of older models, e.g.
#: K40m, K80, M60, whose memory differs), and where each figure comes from.
GPU_MEMORY_GB: dict[str, float] = {"P100": 16.0, "T4": 16.0, "V100": 16.0, "V100M32": 32.0}
GPU_MEMORY_SOURCES: dict[str, str] = {
    "P100": "NVIDIA Tesla P100 datasheet: 16 GB HBM2; a 12 GB PCIe variant exists, which the trace "
            "does not name, so 16 GB is assumed",
    "T4": "NVIDIA T4 datasheet: 16 GB GDDR6",
    "V100": "NVIDIA Tesla V100 datasheet: 16 GB HBM2; the trace names the 32 GB model V100M32, so "
            "V100 is the 16 GB one",
    "V100M32": "NVIDIA Tesla V100 datasheet: 32 GB HBM2",
}

#: Tables whose start_time and end_time columns are times (0 or empty means missing).
TIMED_TABLES: tuple[str, ...] = (
    "pai_job_table", "pai_task_table", "pai_instance_table", "pai_machine_metric",
)

#: Times: seconds from the undisclosed origin; the release covers about two months from about
#: day 13 of it, so a year of seconds bounds them. 0 means missing (stored NULL).
_TIME_S = ValueRange(0, ONE_YEAR_S, "seconds from the trace origin, 0 when missing", missing=(0.0,))
#: Percent of one CPU core, of one GPU: an instance runs on one machine (at most 96 cores and 8
#: GPUs), so 10,000 % leaves room. Utilisation above 100 % is a documented quirk (counted).
_CPU_PERCENT = ValueRange(0, 100_000, "percent of one CPU core")
_GPU_PERCENT = ValueRange(0, 10_000, "percent of one GPU")
_MACHINE_PERCENT = ValueRange(0, 10_000, "percent")
_MEMORY_GB = ValueRange(0, 10_000, "GB")
_COUNTER = ValueRange(0, COUNTER_LIMIT, "bytes or operations")
_TIMES = {"start_time": _TIME_S, "end_time": _TIME_S}

#: Accepted range of every numeric column, per table; values outside are refused at ingest.
RANGES: dict[str, dict[str, ValueRange]] = {
    "pai_job_table": _TIMES,
    "pai_task_table": {
        "inst_num": ValueRange(0, 100_000, "instances"),
        **_TIMES,
        "plan_cpu": _CPU_PERCENT,
        "plan_mem": _MEMORY_GB,
        "plan_gpu": _GPU_PERCENT,
    },
    "pai_instance_table": _TIMES,
    "pai_sensor_table": {
        "cpu_usage": _CPU_PERCENT,
        "gpu_wrk_util": _GPU_PERCENT,
        "avg_mem": _MEMORY_GB,
        "max_mem": _MEMORY_GB,
        "avg_gpu_wrk_mem": ValueRange(0, 1_000, "GB"),
        "max_gpu_wrk_mem": ValueRange(0, 1_000, "GB"),
        "read": _COUNTER,
        "write": _COUNTER,
        "read_count": _COUNTER,
        "write_count": _COUNTER,
    },
    "pai_group_tag_table": {},
    "pai_machine_spec": {
        "cap_cpu": ValueRange(0, 1_024, "CPU cores"),
        "cap_mem": ValueRange(0, 65_536, "GB"),
        "cap_gpu": ValueRange(0, 64, "GPUs"),
    },
    "pai_machine_metric": {
        **_TIMES,
        "machine_cpu_iowait": _MACHINE_PERCENT,
        "machine_cpu_kernel": _MACHINE_PERCENT,
        "machine_cpu_usr": _MACHINE_PERCENT,
        "machine_gpu": _MACHINE_PERCENT,
        "machine_load_1": ValueRange(0, 100_000, "load average"),
        "machine_net_receive": _COUNTER,
        "machine_num_worker": ValueRange(0, 100_000, "workers"),
        "machine_cpu": _MACHINE_PERCENT,
    },
}

#: Columns unique per row, per table (counted as duplicates when repeated).
UNIQUE_KEYS: dict[str, tuple[str, ...]] = {
    "pai_job_table": ("job_name",),
    "pai_task_table": ("job_name", "task_name"),
    "pai_machine_spec": ("machine",),
}
