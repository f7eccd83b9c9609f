"""Reading the Microsoft ITP traces released with ElasticFlow (`raw-traces.tar.gz`: ten
`clusterNN.csv` files of job_id,submission_time,duration,num_gpu) as the import preset `itp`."""

from ddlx.datasets.importers.presets import Preset

PRESET = Preset(
    name="itp",
    description="Microsoft ITP (ElasticFlow raw traces): clusterNN.csv with "
                "job_id,submission_time,duration,num_gpu; seconds from the trace start",
    mapping={"job_id": "job_id", "submit": "submission_time", "duration": "duration", "gpus": "num_gpu"},
    time_unit="s",
    wall_clock=False,
)
