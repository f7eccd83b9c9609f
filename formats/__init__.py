"""File formats of other tools: one folder each, a plugin (`ddlx.datasets.plugins.FormatPlugin`),
holding the format's writer (`writer.py`: what `ddlx datasets export --format` writes) and reader
(`reader.py`: what `ddlx datasets import --preset` reads), and beside them what every writer shares:
`model.py` (`ExportFormat`, `LossReport`), `jobs.py` (the canonical jobs a writer reads) and
`export.py` (`export_dataset`: the file, the files beside it and the sidecar, written together).
"""

from ddlx.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "FORMATS": "formats.export", "export_dataset": "formats.export", "get_format": "formats.export",
    "ExportFormat": "formats.model", "ExportResult": "formats.model", "LossReport": "formats.model",
})
