"""The node and pod lists (openb CSVs, and node YAML) of Alibaba's GPU trace v2023, which the FGD
simulator (hkust-adsl/kubernetes-scheduler-simulator) loads.

- `writer.py`: `FORMAT`, canonical jobs or pods and nodes -> the openb CSVs and YAML.

The writer's `consumer` and `reference` name the tool that reads the files and the loader in its
source whose rules the writer follows (`ddlx datasets formats` lists them).
"""

from ddlx.datasets.plugins import FormatPlugin

__all__ = ["PLUGIN"]

PLUGIN = FormatPlugin(__name__, "openb", trace="pai-v2023")
