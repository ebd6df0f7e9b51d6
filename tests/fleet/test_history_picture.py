"""The HTML report's node/GPU history picture, drawn from the history on both engines."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from nccl_doctor.fleet import Store
from tests.fleet._support import EXAMPLE, HEALTHY, cli, replay_bundle, report_of
from tests.render._dom import Node, parse

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _page(path: Path) -> Node:
    return parse(path.read_text(encoding="utf-8"))


def _rows(page: Node) -> list[tuple[str, list[str]]]:
    """Each row's label and its marks' states, oldest first."""
    (svg,) = page.find_all("svg", class_="history")
    labels = [" ".join(t.text for t in g.find_all("text")) for g in svg.find_all("g", class_="row")]
    marks = svg.find_all("g", class_="mark")
    states = [m.attrs["class"].split()[1] for m in marks]
    out, at = [], 0
    for label, g in zip(labels, svg.find_all("g", class_="row"), strict=True):
        count = int(g.attrs.get("data-marks", "0"))
        out.append((label, states[at : at + count]))
        at += count
    return out


def test_the_report_shows_its_nodes_and_gpus_history(store: Store, tmp_path: Path) -> None:
    bad = report_of([EXAMPLE])
    store.record("diagnose", bad, when=T0, node="node05")
    store.record(
        "check",
        report_of([replay_bundle(HEALTHY, tmp_path / "a", "node05")]),
        when=T0 + timedelta(hours=1),
    )
    store.record("diagnose", bad, when=T0 + timedelta(hours=2), node="node05")
    page = tmp_path / "report.html"
    done = cli(
        "diagnose",
        str(EXAMPLE),
        "--node",
        "node05",
        "--format",
        "html",
        "-o",
        str(page),
        "--db",
        store.target.location,
        "--record",
    )
    assert done.returncode == 1, done.stderr
    html = page.read_text(encoding="utf-8")
    assert 'id="history"' in html
    assert "node05" not in html  # pseudonymised, the picture too
    rows = dict(_rows(_page(page)))
    assert rows["host-1"] == ["critical", "ok", "critical", "critical"]
    assert rows["host-1 GPU 2"] == ["critical", "critical", "critical"]  # the slot's three tables
    assert rows["host-1 GPU 1"] == ["ok", "ok", "ok"]
    svg = _page(page).find_all("svg", class_="history")[0]
    current = [m for m in svg.find_all("g", class_="mark") if m.attrs["data-run"] == "4"]
    assert len(current) == 1 + 8  # the node's row and each of its eight GPUs'
    assert all(m.find_all("rect")[0].attrs.get("stroke") == "#1f2328" for m in current)
    tips = [t.text for m in current for t in m.find_all("title")]
    assert any("gpu.contention" in tip and "this report" in tip for tip in tips)
    kept = tmp_path / "kept.html"
    cli(
        "diagnose",
        str(EXAMPLE),
        "--node",
        "node05",
        "--format",
        "html",
        "-o",
        str(kept),
        "--db",
        store.target.location,
        "--keep-names",
    )
    assert dict(_rows(_page(kept)))["node05"] == ["critical", "ok", "critical", "critical"]


def test_no_history_no_picture_and_nothing_created(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = cli(
        "diagnose",
        str(EXAMPLE),
        "--format",
        "html",
        "-o",
        str(page),
        env={"XDG_DATA_HOME": str(tmp_path / "data")},
    )
    assert done.returncode == 1
    assert 'id="history"' not in page.read_text(encoding="utf-8")
    assert not (tmp_path / "data").exists()
