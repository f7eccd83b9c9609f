"""The supported traces: one folder each, a plugin (`ddlx.datasets.plugins.TracePlugin`).

Each folder's `__init__.py` exports `PLUGIN` (release facts, sample scale, list position, the
formats published with it) and lists the folder's files; `ddlx.datasets.plugins` finds the folders
by package discovery. Adding a trace is adding a folder: docs/adding-a-trace.md.
"""
