"""The HTML report of real evidence: structure, pictures, escaping, no network."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.store import Facts
from nccl_doctor.pipeline import diagnose_read, facts_of
from nccl_doctor.render import FORMATS, pseudonyms, render_report
from nccl_doctor.render.html import Bandwidth, report_html
from nccl_doctor.render.svg import bandwidth_svg
from nccl_doctor.report import Report
from tests.render._dom import Node, parse

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "fixtures" / "captured" / "zoo-h200"
FIXTURES = {
    "h200-cuda-999": [ROOT / "examples" / "h200-cuda-999"],
    "oom-foreign": [ZOO / "oom_foreign.log", ZOO / "oom_foreign.nvidia-smi.txt"],
    "topo-b200": [ROOT / "tests/fixtures/formats/topo/b200-a4-nv18-8nic-nic-legend.txt"],
    "illegal-access": [
        ROOT / "tests/fixtures/triage/illegal-access-rank1-launcher-blames-rank0.log"
    ],
}

PLANTED = """\
gpu-node-17:2201:2201 [1] NCCL INFO cudaDriverVersion 12040
gpu-node-17:2200:2200 [0] NCCL INFO cudaDriverVersion 12040
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/alice/train.py", line 40, in <module>
[rank1]:     loss.backward()
[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered \
<script>alert(1)</script> token=hunter2secretvalue
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/alice/train.py", line 40, in <module>
[rank0]:     loss.backward()
[rank0]: torch.distributed.DistBackendError: NCCL error: remote process exited \
or there was a network error, NCCL version 2.21.5
"""


def _diagnose(paths: list[Path]) -> tuple[Report, Facts]:
    result = read_paths([str(p) for p in paths])
    return diagnose_read(result), facts_of(result)


@pytest.fixture(scope="module")
def pages() -> dict[str, tuple[Report, str]]:
    out = {}
    for name, paths in FIXTURES.items():
        report, facts = _diagnose(paths)
        out[name] = (report, render_report(report, "html", facts=facts))
    return out


def _section(doc: Node, anchor: str) -> Node:
    return doc.find("section", id=anchor)


def test_html_is_a_format() -> None:
    assert "html" in FORMATS


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_page_is_well_formed_and_offline(name: str, pages: dict[str, tuple[Report, str]]) -> None:
    _, page = pages[name]
    assert page.startswith("<!DOCTYPE html>")
    doc = parse(page)
    csp = doc.find("meta", http_equiv="Content-Security-Policy").attrs["content"]
    assert "default-src 'none'" in csp
    assert not doc.find_all("script")
    assert not doc.find_all("link")
    assert not doc.find_all("iframe")
    for node in doc.walk():
        for attr in ("src", "href", "action", "xlink:href", "srcset", "poster"):
            value = node.attrs.get(attr)
            if value is not None:
                assert value.startswith("#"), f"<{node.tag} {attr}={value!r}> leaves the page"
        assert "url(" not in node.attrs.get("style", "")
    # a URL only ever appears as escaped text, never inside a tag's markup
    for tag in re.findall(r"<[^>]*>", page):
        assert not re.search(r"(?i)https?://|//[a-z0-9]", tag), tag


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_verdict_and_root_cause_in_the_header(
    name: str, pages: dict[str, tuple[Report, str]]
) -> None:
    report, page = pages[name]
    doc = parse(page)
    body = doc.find("body")
    header = next(c for c in body.children if isinstance(c, Node))
    assert header.tag == "header", "the header is the first thing on the page"
    assert header.find(id="verdict").text == report.verdict.value
    roots = [f for f in report.findings if f.root_cause]
    if roots:
        box = header.find("section", id="root-cause")
        assert box.attrs["data-id"] == roots[0].id
        assert roots[0].id in box.find("h1").text
        assert roots[0].id in doc.find("title").text
    if report.first_failure is not None:
        first = header.find(id="first-failure").text
        assert f"{report.first_failure.cite.line}" in first


def test_every_finding_with_fix_and_evidence(pages: dict[str, tuple[Report, str]]) -> None:
    report, page = pages["h200-cuda-999"]
    doc = parse(page)
    articles = _section(doc, "findings").find_all("article", class_="finding")
    assert [a.attrs["data-id"] for a in articles] == [f.id for f in report.findings]
    for article, finding in zip(articles, report.findings, strict=True):
        assert article.attrs["data-severity"] == finding.severity.value
        steps = article.find("ol", class_="fix").find_all("li")
        assert len(steps) == len(finding.fix)
        where = [td.text for td in article.find_all("td", class_="where")]
        for cite in finding.evidence[:8]:
            assert f"{cite.source}:{cite.line}" in where
    # the cascade folded under its explainer
    folded = dict(report.folded)
    assert folded
    for explainer, kids in folded.items():
        article = next(a for a in articles if a.attrs["data-id"] == explainer)
        assert [k.attrs["data-id"] for k in article.find_all(class_="kid")] == [k.id for k in kids]
    coverage = _section(doc, "coverage").text
    for missing in report.coverage.missing:
        assert missing in coverage
    raw = doc.find("details", id="raw-evidence")
    assert "open" not in raw.attrs
    assert "694989" in raw.text


def test_timeline_rows_and_first_failure(pages: dict[str, tuple[Report, str]]) -> None:
    report, page = pages["illegal-access"]
    svg = _section(parse(page), "timeline").find("svg")
    rows = [g.attrs["data-row"] for g in svg.find_all("g", class_="row")]
    assert rows == ["rank 0", "rank 1"]
    first = svg.find_all("g", data_kind="first")
    assert len(first) == 1
    assert report.first_failure is not None
    assert first[0].attrs["data-row"] == f"rank {report.first_failure.rank}" == "rank 1"
    assert "illegal memory access" in first[0].find("title").text
    cascade = svg.find_all("g", data_kind="cascade")
    assert cascade
    assert {g.attrs["data-row"] for g in cascade} == {"rank 0"}
    assert "seconds after" in svg.text  # glog timestamps give a time axis


def test_timeline_of_the_example_marks_rank_2(pages: dict[str, tuple[Report, str]]) -> None:
    svg = _section(parse(pages["h200-cuda-999"][1]), "timeline").find("svg")
    rows = {g.attrs["data-row"]: g for g in svg.find_all("g", class_="row")}
    # world size 4 ("size: 4", "(1/4)"): rank 3 printed nothing, and is drawn all the same
    assert list(rows) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    (first,) = svg.find_all("g", data_kind="first")
    assert first.attrs["data-row"] == "rank 2"
    assert "log order" in svg.text  # no timestamps: the x axis is reading order
    quiet = {row: g.find_all("text", class_="quiet") for row, g in rows.items()}
    assert not quiet["rank 2"]
    assert quiet["rank 0"][0].text == "no error seen"
    assert quiet["rank 3"][0].text == "no error seen (no output of this rank was read)"


def test_timeline_past_max_rows_counts_the_quiet_ranks(tmp_path: Path) -> None:
    log = "".join(
        f"[I1209 12:18:13.669220685 ProcessGroupNCCL.cpp:978] [PG ID 0 PG GUID 0 Rank {r}] "
        f"ProcessGroupNCCL initialization options: size: 512, global rank: {r}, "
        "TIMEOUT(ms): 600000\n"
        for r in (0, 1)
    )
    log += "[rank7]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log += "[rank9]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (tmp_path / "job.log").write_text(log, encoding="utf-8")
    report, facts = _diagnose([tmp_path / "job.log"])
    svg = parse(render_report(report, "html", facts=facts)).find("section", id="timeline")
    rows = [g.attrs["data-row"] for g in svg.find_all("g", class_="row")]
    assert rows == ["rank 7", "rank 9"]
    assert (
        svg.find("text", class_="hidden-rows").text
        == "510 more ranks with no error seen, not drawn"
    )


def test_memory_chart_of_the_example(pages: dict[str, tuple[Report, str]]) -> None:
    svg = _section(parse(pages["h200-cuda-999"][1]), "memory").find("svg")
    gpus = {g.attrs["data-gpu"]: g for g in svg.find_all("g", class_="gpu")}
    # collect_env names 8 H200s: each gets a bar, also those with no process listed
    assert list(gpus) == [f"GPU {n}" for n in range(8)]
    gpu2 = gpus["GPU 2"]
    assert "PID 694989 tritonserver 36392 MiB" in gpu2.text
    assert gpu2.find_all("g", data_kind="other")
    # bars span the GPU's total (the H200's nominal 143771 MiB), labelled used / total
    head = gpus["GPU 0"].find("text", class_="head").text
    assert head == (
        "78816 / 143771 MiB (55%) by the listed processes · total: nominal, NVIDIA H200"
    )
    track, seg1, seg2 = gpus["GPU 0"].find_all("rect")
    assert float(track.attrs["width"]) == 420.0
    filled = float(seg1.attrs["width"]) + float(seg2.attrs["width"])
    assert filled == pytest.approx(420 * 78816 / 143771, abs=0.2)  # about half, not full
    assert [t.text for t in gpus["GPU 1"].find_all("text")][-1] == "no process listed"
    assert "cut short" in gpus["GPU 6"].text  # its row is the cut one
    assert "the list was cut before this GPU" in gpus["GPU 7"].text
    assert gpus["GPU 7"].find("text", class_="head").text == (
        "use not shown; total 143771 MiB (nominal, NVIDIA H200)"
    )


def test_memory_chart_with_a_process_of_unknown_size(pages: dict[str, tuple[Report, str]]) -> None:
    svg = _section(parse(pages["oom-foreign"][1]), "memory").find("svg")
    gpu0 = svg.find("g", data_gpu="GPU 0")
    assert "PID 707" in gpu0.text
    assert gpu0.find("text", class_="head").text == "123407 / 143771 MiB used (86%)"
    assert gpu0.find_all("g", data_kind="unlisted")


def test_memory_chart_shows_gpus_without_processes_and_unknown_totals(tmp_path: Path) -> None:
    smi = ROOT / "tests/fixtures/formats/nvidia-smi/440.82-2x-gtx1080ti-docker-no-procs.txt"
    report, facts = _diagnose([smi])
    svg = parse(render_report(report, "html", facts=facts)).find("section", id="memory")
    gpus = {g.attrs["data-gpu"]: g for g in svg.find_all("g", class_="gpu")}
    assert [gpus[g].attrs["data-total"] for g in ("GPU 0", "GPU 1")] == ["11175", "11178"]
    assert gpus["GPU 0"].find("text", class_="head").text == "10916 / 11175 MiB used (98%)"
    assert all("no process listed" in gpu.text for gpu in gpus.values())
    # a process table alone, no GPU row, no model: the bar says its total is unknown
    (tmp_path / "smi.txt").write_text(
        (ROOT / "examples/h200-cuda-999/nvidia-smi.txt").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    report, facts = _diagnose([tmp_path / "smi.txt"])
    svg = parse(render_report(report, "html", facts=facts)).find("section", id="memory")
    head = svg.find("g", data_gpu="GPU 2").find("text", class_="head").text
    assert head == "36392 MiB by the listed processes, total not known"
    assert "no known total" in svg.find("text", class_="scale-note").text


def test_topology_matrix_table(pages: dict[str, tuple[Report, str]]) -> None:
    doc = parse(pages["topo-b200"][1])
    table = _section(doc, "topology").find("table", class_="topo")
    rows = table.find_all("tr")
    assert len(rows) == 17  # header + 8 GPUs + 8 NICs
    cells = rows[1].find_all("td")
    assert [c.text for c in cells[:3]] == ["X", "NV18", "NV18"]
    assert "background" in cells[1].attrs["style"]
    assert "mlx5_0" in rows[9].find("th").text
    # no failures, no processes: no timeline, no memory chart
    assert not doc.find_all("section", id="timeline")
    assert not doc.find_all("section", id="memory")


def test_without_facts_no_pictures(pages: dict[str, tuple[Report, str]]) -> None:
    report, _ = pages["h200-cuda-999"]
    doc = parse(render_report(report, "html"))
    assert not doc.find_all("svg")
    assert not doc.find_all("section", id="raw")
    assert doc.find("section", id="root-cause").attrs["data-id"] == "gpu.contention"


def test_planted_markup_stays_text_and_secrets_and_hosts_are_hidden(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(PLANTED, encoding="utf-8")
    report, facts = _diagnose([log])
    page = render_report(report, "html", facts=facts)
    doc = parse(page)
    assert not doc.find_all("script")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)</script>" in doc.text  # shown, as text
    assert "hunter2secretvalue" not in page
    assert "[REDACTED]" in page
    assert "alice" not in page
    markdown = render_report(report, "markdown")
    assert "gpu-node-17" in report.hosts
    assert "gpu-node-17" not in page
    assert "gpu-node-17" not in markdown
    assert "host-1" in page


def test_same_clean_as_markdown(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(PLANTED, encoding="utf-8")
    report, facts = _diagnose([log])
    page = report_html(report, facts, pseudonyms(report).apply)
    assert page == render_report(report, "html", facts=facts)


def test_bandwidth_chart_with_synthetic_data() -> None:
    """SYNTHETIC data: probes do not exist yet; this only exercises the drawing."""
    sizes = [2**k for k in range(10, 31, 2)]
    good = [(s, min(360.0, s / 2**20)) for s in sizes]
    bad = [(s, min(90.0, s / 2**22)) for s in sizes]
    svg_text = bandwidth_svg(
        [good, bad], 350.0, labels=["SYNTHETIC ok", "SYNTHETIC slow"], title="SYNTHETIC test"
    )
    svg = parse(svg_text).find("svg")
    series = svg.find_all("g", class_="series")
    assert [g.attrs["data-series"] for g in series] == ["SYNTHETIC ok", "SYNTHETIC slow"]
    line = series[0].find("polyline").attrs["points"].split()
    xs = [float(p.split(",")[0]) for p in line]
    steps = {round(b - a, 1) for a, b in itertools.pairwise(xs)}
    assert len(steps) == 1, "sizes growing 4x are evenly spaced on a log axis"
    assert len(series[0].find_all("circle")) == len(sizes)
    assert svg.find_all("line", class_="expected")
    assert "expected 350 GB/s" in svg.text
    assert "1 GiB" in svg.text
    assert "no bandwidth" in bandwidth_svg([], None)


def test_bandwidth_slot_in_the_page(pages: dict[str, tuple[Report, str]]) -> None:
    report, _ = pages["h200-cuda-999"]
    data = Bandwidth([[(2**20, 10.0), (2**30, 300.0)]], 350.0, ["SYNTHETIC"], "SYNTHETIC test data")
    page = report_html(report, None, pseudonyms(report).apply, bandwidth=data)
    section = _section(parse(page), "bandwidth")
    assert "SYNTHETIC test data" in section.text
    assert section.find("svg")


def test_memory_total_from_an_out_of_memory_message(tmp_path: Path) -> None:
    table = (ROOT / "examples/h200-cuda-999/nvidia-smi.txt").read_text(encoding="utf-8")
    oom = (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 60.00 GiB. "
        "GPU 0 has a total capacity of 139.80 GiB of which 39.18 GiB is free.\n"
    )
    (tmp_path / "smi.txt").write_text(table, encoding="utf-8")
    (tmp_path / "train.log").write_text(oom, encoding="utf-8")
    report, facts = _diagnose([tmp_path / "smi.txt", tmp_path / "train.log"])
    svg = parse(render_report(report, "html", facts=facts)).find("section", id="memory")
    gpu0 = svg.find("g", data_gpu="GPU 0")
    assert gpu0.attrs["data-total"] == "143155.2"  # 139.80 GiB
    assert gpu0.find("text", class_="head").text.endswith(
        "(55%) by the listed processes · total: out-of-memory message"
    )
    assert "data-total" not in svg.find("g", data_gpu="GPU 2").attrs  # no total for GPU 2


def test_memory_chart_keeps_two_outputs_of_one_file_apart() -> None:
    """Two hosts' nvidia-smi pasted in one file: GPU 0 of each is its own bar, under a heading."""
    smi = (
        ROOT / "tests/fixtures/formats/nvidia-smi/570-vs-550-two-hosts-run-cmd-prefix-v100-xorg.txt"
    )
    report, facts = _diagnose([smi])
    svg = parse(render_report(report, "html", facts=facts)).find("section", id="memory")
    name = smi.name
    assert [t.text for t in svg.find_all("text", class_="readout")] == [name, f"{name} #2"]
    bars = [(g.attrs["data-readout"], g.attrs["data-gpu"]) for g in svg.find_all("g", class_="gpu")]
    assert bars == [
        (name, "GPU 0"),
        (name, "GPU 1"),
        (f"{name} #2", "GPU 0"),
        (f"{name} #2", "GPU 1"),
    ]
    heads = [g.find("text", class_="head").text for g in svg.find_all("g", class_="gpu")]
    assert heads == ["5 / 16384 MiB used (0%)"] * 2 + ["8 / 16384 MiB used (0%)"] * 2
    first, second = svg.find_all("g", class_="gpu")[0], svg.find_all("g", class_="gpu")[2]
    assert "PID 3486" in first.text
    assert "PID 2412" not in first.text
    assert "PID 2412" in second.text
    assert "PID 3486" not in second.text
