"""What a GPU sample is: the DCGM exporter fields ddlx reads, and the canonical `gpu_samples` row.

A sample is one value of one field of one GPU at one instant, as the NVIDIA DCGM exporter exposes
it to Prometheus: metric `DCGM_FI_...`, labels `Hostname` (the node), `gpu` (index on the node),
`UUID`, `modelName`, and on Kubernetes `pod`, `namespace`, `container` (or an HPC job-id label of
the site's choosing). ddlx stores every sample under the field's short name with its unit below;
the labels it does not name go to `labels` as JSON text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """A DCGM exporter field: its metric name, the short name ddlx stores, its unit and meaning."""

    metric: str
    name: str
    unit: str
    description: str


#: The DCGM fields ddlx reads, by metric name.
FIELDS: dict[str, Field] = {f.metric: f for f in (
    Field("DCGM_FI_DEV_GPU_UTIL", "gpu_util", "percent",
          "share of the sample period in which a kernel ran on the GPU (coarse: any kernel counts)"),
    Field("DCGM_FI_PROF_SM_ACTIVE", "sm_active", "ratio 0-1",
          "share of the period in which at least one warp was resident on a streaming multiprocessor, "
          "averaged over the SMs"),
    Field("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", "ratio 0-1",
          "share of the period in which the tensor (matrix) pipes were busy"),
    Field("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gr_engine_active", "ratio 0-1",
          "share of the period in which the graphics or compute engine was active"),
    Field("DCGM_FI_DEV_FB_USED", "fb_used_mib", "MiB", "device (frame buffer) memory in use"),
    Field("DCGM_FI_DEV_POWER_USAGE", "power_w", "W", "power draw"),
)}
#: Short name -> field.
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS.values()}

#: Labels with a column of their own: exporter label -> gpu_samples column.
LABEL_COLUMNS: dict[str, str] = {
    "Hostname": "host", "gpu": "gpu", "UUID": "uuid", "modelName": "model",
    "pod": "pod", "namespace": "namespace", "container": "container",
}
#: Labels a scrape adds that say nothing about the GPU (left out of `labels`).
SCRAPE_LABELS: frozenset[str] = frozenset({"__name__", "instance", "job", "exported_job", "service", "endpoint"})
