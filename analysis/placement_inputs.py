"""The inputs of a placement experiment, read from the catalog: a dataset's nodes (canonical view
`gpu_nodes`) and one of its task lists (`gpu_task_lists`, else the real workload of `gpu_tasks`).
Any dataset that publishes those views can be filled up; this module names no trace."""

from __future__ import annotations

from pathlib import Path

from ddlx.analysis.context import TraceContext, open_trace
from ddlx.datasets.sqltext import sql_string
from ddlx.errors import did_you_mean
from ddlx.placement.inputs import DEFAULT_TASK_LIST, PlacementInputError, PlacementInputs

#: Which nodes a cluster is made of: the GPU nodes (as the paper's experiment, whose cluster is the
#: owners' GPU-node list), or every node of the list, CPU-only ones included.
NODE_SETS: dict[str, str] = {"gpu": "gpus > 0", "all": "TRUE"}

_NODE_COLUMNS = "node, cpu_milli, memory_mib, gpus, gpu_model"
_TASK_COLUMNS = "task, num_gpus, gpu_milli, cpu_milli, memory_mib, gpu_models"


def default_dataset() -> str:
    """The first registered trace that publishes a node list and task lists (the canonical
    `gpu_nodes` and `gpu_task_lists` views)."""
    from ddlx.datasets.plugins import publishers

    for name in publishers("gpu_task_lists"):
        if name in publishers("gpu_nodes"):
            return name
    raise PlacementInputError("no registered trace publishes a node list with task lists; name one with --dataset")


def task_lists(ctx: TraceContext) -> list[str]:
    """The task lists `ctx`'s dataset publishes (the real workload first)."""
    if ctx.has_view("gpu_task_lists"):
        names = ctx.query("SELECT DISTINCT task_list FROM gpu_task_lists")["task_list"].to_list()
        return sorted(names, key=lambda name: (name != DEFAULT_TASK_LIST, name))
    return [DEFAULT_TASK_LIST] if ctx.has_view("gpu_tasks") else []


def inputs_from(ctx: TraceContext, task_list: str = DEFAULT_TASK_LIST, node_set: str = "gpu") -> PlacementInputs:
    """The nodes (`node_set`, one of `NODE_SETS`) and the tasks of `task_list` of the open dataset
    `ctx`; `PlacementInputError` when it publishes no node list with task requests, or no such list."""
    if node_set not in NODE_SETS:
        raise PlacementInputError(f"unknown node set '{node_set}'; expected one of: {', '.join(NODE_SETS)}")
    if not ctx.has_view("gpu_nodes") or not (ctx.has_view("gpu_task_lists") or ctx.has_view("gpu_tasks")):
        raise PlacementInputError(
            f"{ctx.trace}: no node list with per-task requests to place (the canonical gpu_nodes and "
            "gpu_task_lists views); a placement experiment needs both")
    known = task_lists(ctx)
    if task_list not in known:
        raise PlacementInputError(f"{ctx.trace}: no task list '{task_list}'; expected one of: {', '.join(known)}"
                                  f"{did_you_mean(task_list, known)}")
    if ctx.has_view("gpu_task_lists"):
        tasks = ctx.query(f"SELECT {_TASK_COLUMNS} FROM gpu_task_lists WHERE task_list = {sql_string(task_list)} "
                          "ORDER BY task")
    else:
        tasks = ctx.query(f"SELECT {_TASK_COLUMNS} FROM gpu_tasks ORDER BY task")
    nodes = ctx.query(f"SELECT {_NODE_COLUMNS} FROM gpu_nodes WHERE {NODE_SETS[node_set]} ORDER BY node")
    source = {"dataset": ctx.trace, "task_list": task_list, "node_set": node_set, "synthetic": ctx.synthetic,
              "catalog": ctx.provenance.get("catalog"), "store_version": ctx.provenance.get("store_version"),
              "nodes": nodes.height, "tasks": tasks.height, "gpus": int(nodes["gpus"].sum() or 0)}
    return PlacementInputs(nodes, tasks, ctx.trace, task_list, ctx.synthetic, source)


def read_inputs(home: Path, dataset: str, task_list: str = DEFAULT_TASK_LIST, node_set: str = "gpu") -> PlacementInputs:
    """`inputs_from` on the dataset `dataset` of the catalog of `home`."""
    with open_trace(home, dataset) as ctx:
        return inputs_from(ctx, task_list, node_set)
