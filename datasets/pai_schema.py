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
