"""The analysis options (`ddlx.analysis.options.AnalysisOptions`): one typed field per option with
its default, refused in one line when unknown or out of range, recorded when changed, listed in
docs/analysis.md, read by attribute; and each option that changes a number changes the key its kept
results are found under."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from ddlx.analysis.options import AnalysisOptions, options_table
from ddlx.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]


def _refusal(options: dict) -> str:
    with pytest.raises(UsageError) as info:
        AnalysisOptions.from_mapping(options)
    return str(info.value)


def test_the_defaults() -> None:
    options = AnalysisOptions()
    assert (options.resolution_s, options.window, options.top_percents, options.top_users, options.top_vcs) == (
        3600, "trace", (1, 10), None, None)
    assert options.queue_thresholds_s == (60.0, 600.0, 3600.0, 21600.0, 86400.0)
    assert (options.placement_seeds, options.idle_gpu_util_percent, options.idle_sm_active) == (3, 5.0, 0.05)
    assert (options.engine, options.spark_master, options.partitions, options.spark_conf,
            options.samples_location) == ("duckdb", None, None, None, None)
    assert options.to_dict() == {} and options.recorded() == {}
    assert AnalysisOptions.from_mapping(None) == options == AnalysisOptions.from_mapping({"top_users": None})


@pytest.mark.parametrize(("key", "closest"), [("resolution", "resolution_s"), ("top_user", "top_users"),
                                              ("queue_threshold_s", "queue_thresholds_s"), ("Window", "window")])
def test_an_unknown_option_is_refused_with_the_closest_name(key: str, closest: str) -> None:
    assert _refusal({key: 1}) == f"unknown analysis option {key!r}; did you mean {closest!r}?"


def test_an_unknown_option_without_a_close_one_lists_them_all() -> None:
    message = _refusal({"colour": "red"})
    assert message.startswith("unknown analysis option 'colour'; expected one of: resolution_s, window, ")
    assert message.endswith(", samples_location") and message.count(", ") == 13


@pytest.mark.parametrize(("options", "message"), [
    ({"resolution_s": 0}, "resolution_s must be a positive whole number of seconds, not 0"),
    ({"resolution_s": 1.5}, "resolution_s must be a positive whole number of seconds, not 1.5"),
    ({"resolution_s": "hour"}, "resolution_s must be a positive whole number of seconds, not 'hour'"),
    ({"resolution_s": True}, "resolution_s must be a positive whole number of seconds, not True"),
    ({"window": "busy"}, "window must be trace or active, not 'busy'"),
    ({"top_percents": [0, 10]}, "top_percents must be a non-empty list of whole numbers from 1 to 100, not [0, 10]"),
    ({"top_percents": [12.5]}, "top_percents must be a non-empty list of whole numbers from 1 to 100, not [12.5]"),
    ({"top_percents": []}, "top_percents must be a non-empty list of whole numbers from 1 to 100, not []"),
    ({"top_percents": "10"}, "top_percents must be a list of whole numbers from 1 to 100, not '10'"),
    ({"top_users": 0}, "top_users must be a positive whole number, not 0"),
    ({"top_vcs": -2}, "top_vcs must be a positive whole number, not -2"),
    ({"queue_thresholds_s": [60, -1]}, "queue_thresholds_s must be a non-empty list of numbers of seconds, "
                                       "0 or more, not [60, -1]"),
    ({"queue_thresholds_s": [float("inf")]}, "queue_thresholds_s must be a non-empty list of numbers of seconds, "
                                             "0 or more, not [inf]"),
    ({"placement_seeds": 0}, "placement_seeds must be a positive whole number, not 0"),
    ({"idle_gpu_util_percent": 0}, "idle_gpu_util_percent must be a percent above 0 and at most 100, not 0"),
    ({"idle_gpu_util_percent": 150}, "idle_gpu_util_percent must be a percent above 0 and at most 100, not 150"),
    ({"idle_sm_active": 5}, "idle_sm_active must be a ratio above 0 and at most 1, not 5"),
    ({"engine": "flink"}, "engine must be duckdb or spark, not 'flink'"),
    ({"spark_master": "local[2]"}, "spark_master needs engine spark (--engine spark), not duckdb"),
    ({"partitions": 3, "spark_conf": {"a": "b"}}, "partitions and spark_conf need engine spark (--engine spark), "
                                                  "not duckdb"),
    ({"engine": "spark", "partitions": 0}, "partitions must be a positive whole number, not 0"),
    ({"engine": "spark", "spark_conf": {"spark.x": 1}},
     "spark_conf must map Spark setting names to texts, not {'spark.x': 1}"),
    ({"samples_location": " "}, "samples_location must be a non-empty text, not ' '"),
])
def test_a_bad_value_is_refused_in_one_line_naming_the_option(options: dict, message: str) -> None:
    assert _refusal(options) == message and "\n" not in message


def test_loose_values_are_held_in_one_type() -> None:
    options = AnalysisOptions.from_mapping({"resolution_s": 600.0, "top_percents": [5, 50.0],
                                            "queue_thresholds_s": [30, 90], "top_vcs": "4"})
    assert options.resolution_s == 600 and type(options.resolution_s) is int
    assert options.top_percents == (5, 50) and all(type(p) is int for p in options.top_percents)
    assert options.queue_thresholds_s == (30.0, 90.0) and options.top_vcs == 4
    assert AnalysisOptions.from_mapping(options) is options
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.resolution_s = 60  # type: ignore[misc]


def test_a_result_records_the_changed_options_and_spark_settings_by_key() -> None:
    options = AnalysisOptions(resolution_s=600, top_percents=(5,), engine="spark",
                              spark_conf={"spark.hadoop.fs.s3a.secret.key": "hidden", "spark.sql.ansi.enabled": "true"})
    assert options.to_dict() == {"resolution_s": 600, "top_percents": [5], "engine": "spark",
                                 "spark_conf": {"spark.hadoop.fs.s3a.secret.key": "hidden",
                                                "spark.sql.ansi.enabled": "true"}}
    assert options.recorded() == {"resolution_s": 600, "top_percents": [5], "engine": "spark",
                                  "spark_conf_keys": ["spark.hadoop.fs.s3a.secret.key", "spark.sql.ansi.enabled"]}
    assert AnalysisOptions.from_mapping(options.to_dict()) == options


def test_the_docs_list_every_option_from_the_dataclass() -> None:
    text = (ROOT / "docs" / "analysis.md").read_text()
    assert options_table() in text
    rows = [line for line in options_table().splitlines()[2:]]
    assert [re.match(r"\| `(\w+)` \|", row).group(1) for row in rows] == [
        "resolution_s", "window", "top_percents", "top_users", "top_vcs", "queue_thresholds_s", "placement_seeds",
        "idle_gpu_util_percent", "idle_sm_active", "engine", "spark_master", "partitions", "spark_conf",
        "samples_location"]
    assert "| `resolution_s` | `int` | 3600 |" in rows[0] and "| `top_users` | `int \\| None` | unset |" in rows[3]


def test_no_module_reads_an_option_by_a_string_key() -> None:
    reads = re.compile(r"\boptions\s*(\.get\(|\[)")
    found = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "analysis").rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if reads.search(line)]
    assert found == []


# -- kept results ----------------------------------------------------------------------------------

#: An option, a value other than its default, the module whose numbers it changes, and the trace.
CHANGES = [
    ("resolution_s", 1800, "utilization", "philly"),
    ("window", "active", "utilization", "philly"),
    ("top_percents", [5, 50], "users", "philly"),
    ("top_users", 3, "users", "philly"),
    ("top_users", 3, "failures", "philly"),
    ("top_vcs", 2, "queueing", "philly"),
    ("top_vcs", 2, "failures", "philly"),
    ("queue_thresholds_s", [30, 900], "queueing", "philly"),
    ("placement_seeds", 1, "sharing", "pai-v2023"),
    ("idle_gpu_util_percent", 50, "gpu_efficiency", "mycluster"),
    ("idle_sm_active", 0.45, "gpu_efficiency", "smcluster"),
]


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Data homes by dataset: SYNTHETIC Philly and Alibaba v2023 samples, and a Slurm import with GPU
    samples written by hand, of gpu_util (mycluster) or of sm_active alone (smcluster)."""
    from ddlx.datasets.importers import import_dataset
    from ddlx.datasets.ingest import ingest
    from ddlx.datasets.telemetry.store import Chunk, write_chunk
    from ddlx.traces.pai_v2023.generator import generate as generate_v2023
    from ddlx.traces.philly.generator import generate as generate_philly
    from tests.test_gpu_efficiency import SACCT, SM_ACTIVE, _frame, _write_samples

    folder = tmp_path_factory.mktemp("options")
    found = {}
    for trace, generate in (("philly", generate_philly), ("pai-v2023", generate_v2023)):
        generate(folder / trace / "release", scale=0.004, seed=5)
        ingest(trace, folder / trace / "release", folder / trace / "home")
        found[trace] = folder / trace / "home"
    (folder / "sacct.txt").write_text(SACCT)
    telemetry = folder / "telemetry"
    for dataset in ("mycluster", "smcluster"):
        import_dataset(dataset, folder / "sacct.txt", telemetry, preset="slurm", tz="UTC")
        found[dataset] = telemetry
    _write_samples(telemetry, "mycluster")
    minutes = Chunk("hand", "sm_active", "2024-05-01T10:00:00+00:00", "2024-05-01T10:10:00+00:00")
    write_chunk(telemetry, "smcluster", minutes, _frame("sm_active", {("n01", 0): SM_ACTIVE}))
    return found


def _tables(home: Path, dataset: str, module: str, options: dict, cache: bool = True) -> tuple[dict, dict]:
    """The tables of `module` by name and the kept results' summary of a run with `options`."""
    from ddlx.analysis.runner import run_analysis

    result = run_analysis(home, dataset, [module], options=options, cache=cache)
    return {t.name: t.frame for t in result.module(module).tables}, result.provenance["kept_results"]


def _same(left, right) -> bool:
    """True when two frames hold the same rows (floats within 1e-9: the fill-up experiment's seeds
    are summed in the order its processes end)."""
    from polars.testing import assert_frame_equal

    try:
        assert_frame_equal(left, right, rel_tol=1e-9, abs_tol=1e-12)
    except AssertionError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize(("option", "value", "module", "dataset"), CHANGES)
def test_an_option_that_changes_a_number_changes_the_key_of_its_kept_results(
        homes: dict[str, Path], option: str, value: object, module: str, dataset: str, speedups_on: None,
        duckdb_on_one_thread: None) -> None:
    home = homes[dataset]
    default, _ = _tables(home, dataset, module, {})  # keeps the results at the defaults
    kept, summary = _tables(home, dataset, module, {option: value})
    fresh, _ = _tables(home, dataset, module, {option: value}, cache=False)
    changed = [name for name in fresh if name not in default or not _same(default[name], fresh[name])]
    assert changed, f"{option} = {value!r} changes no table of {module}"
    # the run with the option read the default's kept results that it shares, computed the others
    assert sorted(kept) == sorted(fresh) and all(_same(kept[name], fresh[name]) for name in fresh), changed
    assert summary["folder"] is not None
    assert summary["read"] > 0, summary
