"""`ddlx datasets import`: a job table of any shape -> typed Parquet -> canonical jobs.

The importer lives in this folder like a trace: `spec.py` (what an import is told), `presets.py`
(known table shapes: ITP, Slurm) and `reader.py` (reading and rolling up).

An import is described by an `ImportSpec` (dataset name, column mapping, time unit, time zone,
time origin, delimiter, preset) and read by an `ImportAdapter` built from it at run time; the
ordinary ingest machinery does the rest, so the result joins the catalog and the `jobs` view like
any registered trace. The spec is kept in the manifest (`adapter_options`): importing unchanged
files with the same spec does nothing, a different spec imports again.

Input format
- A CSV file with a header line (delimiter `,` unless told), a Parquet file, a `.tar.gz`/`.tgz`/
  `.zip` archive of such files, or a folder of them (searched recursively, hidden files skipped).
  Each file or member is one part; its `source_cluster` label is its file name without extension.
- CSV files are read with a schema built from their header: mapped number columns (`duration`,
  `gpus`, `cpus`, `mem_gb`, `instances`, and the time columns when the time unit is numeric) are
  DOUBLE, so a bad value is reported with its line; every other column is VARCHAR. Lines may end
  with `\\n` or Windows' `\\r\\n`.
- Parquet files keep their column types, except that mapped number columns become DOUBLE and
  mapped text columns (and time columns read as `datetime`) become VARCHAR.

Units and missing values
- Times are either numbers in `s`, `ms`, `us` or `ns` counted from `origin` (default: the Unix
  epoch, 1970-01-01 00:00:00 UTC; an origin without an offset is a wall-clock time in `tz`), or
  `datetime` strings (`2023-01-05T10:00:00`, `2023-01-05 10:00:00`, a date alone) read as wall
  clock in `tz` unless they carry an offset (`+02:00`, `Z`) or a zone name. In a datetime column
  an empty value and the words Unknown, None, NULL, NA, N/A, NaN, NaT mean missing.
- `duration` is in the time unit, or in seconds when the unit is `datetime`.
- States: the first word of the value (Slurm's `CANCELLED by 123` -> CANCELLED, a trailing `+`
  dropped), compared without case, is mapped with `STATE_WORDS` (every state of sacct's job state
  codes, `SLURM_STATES`, among them); any other word is bad input.

Stored tables (`-` in the dataset name becomes `_` in table names)
- `<name>_job_table`: the columns as read, plus `source_file` (file, or `archive:member`, relative
  to the input) and `source_cluster` (the part's file name without extension).
- `<name>_jobs`: the canonical rows, rolled up as follows (`col(key)` is the mapped column):
  - trace = the dataset name; cluster = col(cluster), else `source_cluster`;
  - job_id, user, vc, job_group, job_name, workload, gpu_type = the mapped column, else NULL;
    without a job id column, each row gets a row id: `1`, `2`, ... in order of submission time,
    ties broken by the row's stored values as text (the same input gives the same ids, whatever
    order its files are read in; rows without a submission time come last);
  - submit_time = col(submit); start_time = col(start); when no start is mapped, start_time =
    submit_time (the job is assumed to start at submission) and queue_s is NULL (unknown);
  - end_time = col(end), else start_time + duration; NULL when start_time is NULL (never started);
  - queue_s = start_time - submit_time (`queue_delay.submit_to_first_start`);
  - run_s = end_time - start_time (`runtime.first_start_to_last_end`), or the duration itself
    when no end is mapped; with an end but no start it is end - submit (queueing included);
  - num_gpus = col(gpus) (or from the TRES string), num_cpus = col(cpus), mem_gb = col(mem_gb);
    num_instances = col(instances) (or TRES `node=`), else 1; num_tasks = 1;
  - fractional_gpu = num_gpus is not a whole number;
  - state = `STATE_WORDS` of the first word of col(state), raw_state = the value as written;
    both NULL when no state is mapped or the value is empty.
- Slurm TRES strings (`tres`, e.g. AllocTRES `billing=8,cpu=8,gres/gpu:a100=2,mem=64G,node=1`;
  `req_tres` is used where `tres` is empty): GPUs = the untyped `gres/gpu=N` when present, else
  the sum of the typed `gres/gpu:TYPE=N` entries, else 0; gpu_type = the typed entry with most
  GPUs; cpus from `cpu=`; memory from `mem=` with K/M/G/T/P suffixes (1024-based; no suffix is
  MB) in GB; instances from `node=`. A string is refused (`reader.tres_refused_sql`) when an
  entry is not NAME=VALUE (`cpu8`, `gres/gpu`, `cpu=`, an empty entry), a name is not a TRES
  name (`reader.TRES_NAME`), a count read is no number in digits, `mem=` is no size, a name is
  given twice, or a count read is outside its range; other entries (billing, energy, licences)
  are not read. An empty string (a pending job) is no allocation.
- Preset `slurm` drops job steps (JobID containing `.`, e.g. `123.batch`, `123.0`) from the
  canonical jobs; array tasks (`123_4`) and heterogeneous components (`123+0`) are jobs. The
  steps stay in `<name>_job_table`.
"""

from ddlx.datasets.importers.presets import PRESETS, Preset
from ddlx.datasets.importers.reader import ImportAdapter, import_dataset, import_with_spec
from ddlx.datasets.importers.spec import (
    ImportSpec,
    ImportSpecError,
    build_spec,
    check_dataset_name,
    has_wall_clock,
    parse_mapping,
    starts_recorded,
)

#: How prose names imported datasets in the derivations of the core definitions.
LABEL = "imported tables"

#: How an import derives the core definitions (see `ddlx.analysis.definitions`).
DERIVATIONS: dict[str, str] = {
    "queue_delay.submit_to_first_start": "the mapped submit and start columns (none when no start is mapped)",
    "runtime.first_start_to_last_end": "the mapped duration, or end - start",
    "gpu_request.job_total": "the mapped gpus column",
    "utilization.allocated_gpus": "the mapped start to the end; without a mapped start, the submission to "
                                  "the end: then it is GPU demand assuming no queueing, not what a scheduler placed",
    "time_patterns.recurring_job": "the mapped group column",
    "gpu_request.fractional": "a mapped gpus value that is not a whole number",
    "state.canonical": "the first word of the mapped state column, by the importer's state words",
}

__all__ = [
    "DERIVATIONS", "ImportAdapter", "ImportSpec", "ImportSpecError", "LABEL", "PRESETS",
    "Preset", "build_spec", "check_dataset_name", "has_wall_clock", "import_dataset", "import_with_spec",
    "parse_mapping", "starts_recorded",
]
