"""`ddlx reproduce`: published figures beside ddlx's values.

Golden tests on the real files this repository can reach (the complete Alibaba v2023 trace, the
ITP archive): every figure computable from them matches, with the expected values counted here
with the csv module, independently of the profiles' SQL. Then the framework itself: tolerances,
SYNTHETIC samples, data that is not in the catalog, the command's formats, the report section,
and that every profile's definitions are registered and documented.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from ddlx.analysis.definitions import registry
from ddlx.analysis.runner import run_analysis
from ddlx.datasets.importers import import_dataset
from ddlx.datasets.ingest import ingest
from ddlx.reports.report import build_report
from ddlx.reproduce import (
    DIFFERS,
    EXACT,
    MATCHES,
    NOT_HERE,
    SYNTHETIC,
    Profile,
    PublishedFigure,
    profiles,
    reproduce,
    rounded,
    within,
)
from tests.conftest import SHARED_TRACES, needs_shared_traces
from tests.test_pai_v2023_ingest import write_release as write_v2023_release

V2023 = SHARED_TRACES / "alibaba-gpu-v2023"
ITP_ARCHIVE = SHARED_TRACES / "itp-elasticflow" / "raw-traces.tar.gz"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "reproduce.md"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _by_id(reproduction) -> dict[str, object]:
    return {r.figure.id: r for r in reproduction.results}


@pytest.fixture(scope="module")
def v2023_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("v2023") / "home"
    ingest("pai-v2023", V2023, home)
    return home


@needs_shared_traces
def test_openb_atc23_on_the_real_files(v2023_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ddlx.datasets.traces.pai_v2023 import reproduce as openb

    monkeypatch.setattr(openb, "FILL_UP_SEEDS", 2)  # the experiment's figures: two seeds are enough here
    nodes = _rows(V2023 / "openb_node_list_all_node.csv")
    pods = _rows(V2023 / "openb_pod_list_default.csv")
    gpus_by_model: Counter[str] = Counter()
    for node in nodes:
        gpus_by_model[node["model"]] += int(node["gpu"])
    gpu_pods = [p for p in pods if int(p["num_gpu"]) > 0]
    sharing = [p for p in pods if int(p["num_gpu"]) == 1 and int(p["gpu_milli"]) < 1000]
    expected = {
        "nodes": len(nodes), "gpu_nodes": sum(int(n["gpu"]) > 0 for n in nodes),
        "gpus": sum(int(n["gpu"]) for n in nodes),
        **{f"gpus_{model}": gpus_by_model[model] for model in ("G2", "T4", "G3", "P100", "V100M32", "V100M16", "A10")},
        "pods": len(pods), "gpu_pods": len(gpu_pods), "sharing_pods": len(sharing),
        "sharing_share": 100 * len(sharing) / len(gpu_pods),
        "multi_gpu_pods": sum(int(p["num_gpu"]) > 1 for p in pods),
        **{f"qos_{qos}": n for qos, n in Counter(p["qos"] for p in pods).items()},
    }
    result = reproduce(v2023_home, "openb-atc23")
    assert not result.synthetic
    found = _by_id(result)
    fgd = {"fgd_unallocated_reduction", "fgd_unallocated_reduction_gpus"}
    assert set(found) == set(expected) | fgd
    for figure_id, value in expected.items():
        assert found[figure_id].value == pytest.approx(value), figure_id
        assert found[figure_id].verdict == MATCHES, (figure_id, found[figure_id].value)
    # The fill-up experiment runs: FGD cuts the unallocated GPUs of the best other policy, and the
    # GPUs saved are that cut of the other's unallocated GPUs (tests/test_placement.py checks the runs).
    share, gpus = found["fgd_unallocated_reduction"], found["fgd_unallocated_reduction_gpus"]
    assert 0 < share.value < 100 and 0 < gpus.value < 6212 and {share.verdict, gpus.verdict} <= {MATCHES, DIFFERS}


@needs_shared_traces
def test_itp_elasticflow_on_the_real_archive(tmp_path: Path) -> None:
    jobs, clusters, gpu_seconds = 0, set(), 0.0
    with tarfile.open(ITP_ARCHIVE, "r:gz") as tar:
        for member in tar.getmembers():
            if member.name.endswith(".csv"):
                clusters.add(Path(member.name).stem)
                for row in csv.DictReader(io.TextIOWrapper(tar.extractfile(member), encoding="utf-8")):
                    jobs += 1
                    gpu_seconds += float(row["num_gpu"]) * float(row["duration"])
    import_dataset("itp", ITP_ARCHIVE, tmp_path / "home", preset="itp")
    found = _by_id(reproduce(tmp_path / "home", "itp-elasticflow"))
    assert (found["jobs"].value, found["clusters"].value) == (jobs, len(clusters))
    assert found["gpu_hours"].value == pytest.approx(gpu_seconds / 3600)
    assert {r.verdict for r in found.values()} == {MATCHES}
    # Under another name, with --dataset.
    import_dataset("elastic", ITP_ARCHIVE, tmp_path / "other", preset="itp")
    assert reproduce(tmp_path / "other", "itp-elasticflow", dataset="elastic").counts() == {MATCHES: 3}


def test_tolerances() -> None:
    assert EXACT.matches(6212, 6212.0) and not EXACT.matches(6212, 6211)
    assert rounded(1).matches(43.6, 43.5648) and rounded(1).matches(43.6, 43.55)
    assert not rounded(1).matches(43.6, 43.5499) and not rounded(1).matches(43.6, 43.65)
    assert within(0.5, "read off a chart").matches(14.7, 15.2) and not within(0.5, "").matches(14.7, 15.21)
    assert within(0.5, "read off a chart").text("%") == "within ±0.5 % (read off a chart)"
    assert rounded(2).text("%") == "equal when rounded to 2 decimals"


def test_a_dataset_not_in_the_catalog_is_not_computable_here(tmp_path: Path) -> None:
    result = reproduce(tmp_path / "empty", "itp-elasticflow")
    assert not result.synthetic and {r.verdict for r in result.results} == {NOT_HERE}
    assert all("holds no dataset 'itp'" in r.reason and "--preset itp" in r.reason for r in result.results)


def test_a_partial_ingest_names_what_is_missing(tmp_path: Path) -> None:
    """Only the node lists: the cluster's figures are computed, the workload's name the table."""
    release = write_v2023_release(tmp_path / "release")
    ingest("pai-v2023", release, tmp_path / "home", tables=["pai_v2023_nodes"])
    found = _by_id(reproduce(tmp_path / "home", "openb-atc23"))
    assert found["nodes"].verdict in (MATCHES, DIFFERS) and found["nodes"].value is not None
    assert found["pods"].verdict == NOT_HERE and "pai_v2023_pods" in found["pods"].reason


def test_a_synthetic_sample_gets_values_but_no_verdict(tmp_path: Path, cli) -> None:
    """The hand-written v2023 release, ingested as if generated: SYNTHETIC values, no verdicts,
    no differences, in the table, JSON and CSV."""
    release = write_v2023_release(tmp_path / "release")
    (release / "SYNTHETIC.json").write_text(json.dumps({"generator": "test", "trace": "pai-v2023"}))
    ingest("pai-v2023", release, tmp_path / "home")
    result = reproduce(tmp_path / "home", "openb-atc23")
    assert result.synthetic
    computed = [r for r in result.results if r.value is not None]
    assert computed and {r.verdict for r in computed} == {SYNTHETIC}
    table = cli("reproduce", "openb-atc23", "--data-home", tmp_path / "home")
    assert table.code == 0, table.err
    assert "SYNTHETIC DATA" in table.out and " SYNTHETIC " in table.out and "matches" not in table.out
    document = json.loads(cli("reproduce", "openb-atc23", "--format", "json", "--data-home", tmp_path / "home").out)
    assert document["synthetic"] is True
    computed_rows = [f for f in document["figures"] if f["value"] is not None]
    assert all(f["value_is_synthetic"] and f["difference"] is None and f["verdict"] == SYNTHETIC for f in computed_rows)
    rows = list(csv.DictReader(io.StringIO(cli("reproduce", "openb-atc23", "--format", "csv",
                                               "--data-home", tmp_path / "home").out)))
    assert len(rows) == len(result.results) and {r["profile"] for r in rows} == {"openb-atc23"}


def test_a_real_release_gets_verdicts_and_the_report_shows_them(tmp_path: Path) -> None:
    """The hand-written (real, not generated) v2023 release: counts it holds by hand differ from
    the paper's, and `ddlx analyze` puts the table in the report and summary."""
    release = write_v2023_release(tmp_path / "release")
    ingest("pai-v2023", release, tmp_path / "home")
    nodes = _rows(release / "openb_node_list_all_node.csv")
    result = run_analysis(tmp_path / "home", "pai-v2023", ["overview"])
    (reproduction,) = result.reproductions
    found = _by_id(reproduction)
    assert found["nodes"].value == len(nodes) and found["nodes"].verdict == DIFFERS
    assert found["nodes"].difference == len(nodes) - 1523
    summary = result.to_dict()["reproduction"][0]
    assert summary["profile"] == "openb-atc23" and summary["verdicts"][DIFFERS] >= 1
    report = build_report(result)
    (view,) = report.reproductions
    assert view.profile == "openb-atc23" and len(view.rows) == len(reproduction.results)
    from ddlx.reports.render import render_html, render_markdown

    html, markdown = render_html(report), render_markdown(report)
    assert 'id="reproduction"' in html and "Published figures" in markdown
    # the fill-up experiment is left to `ddlx reproduce`: an analysis says so
    assert "an experiment that an analysis does not run" in html


def test_the_command_lists_profiles_and_refuses_an_unknown_one(cli) -> None:
    listing = cli("reproduce")
    assert listing.code == 0 and all(f"{name}:" in listing.out for name in profiles())
    wrong = cli("reproduce", "openb-atc32")
    assert wrong.code != 0 and "unknown profile 'openb-atc32'" in wrong.err and "openb-atc23" in wrong.err


def test_every_profile_is_registered_documented_and_consistent() -> None:
    known = registry()
    docs = DOCS.read_text()
    readme = (DOCS.parent.parent / "README.md").read_text()
    assert len(profiles()) >= 6
    for profile in profiles().values():
        assert isinstance(profile, Profile) and f"`{profile.name}`" in docs and f"`{profile.name}`" in readme
        ids = [f.id for f in profile.figures]
        assert len(ids) == len(set(ids)), profile.name
        for figure in profile.figures:
            assert isinstance(figure, PublishedFigure)
            assert figure.definition in known, (profile.name, figure.id)
            assert figure.compute is not None or figure.pending, figure.id  # why it is not computed yet
            assert all(other in ids and other != figure.id for other in figure.conflicts), figure.id
            assert all(figure.id in profile.figure(other).conflicts for other in figure.conflicts), figure.id
        for figure in profile.figures:  # the docs' table of the profile's figures, as written from them
            assert f"| `{figure.id}` | " in docs and figure.source.replace("|", "\\|") in docs, figure.id
        for definition in profile.definitions:
            line = f"- **`{definition.id}`** ({definition.title}; {definition.unit}): {definition.text}"
            assert line in docs, definition.id
