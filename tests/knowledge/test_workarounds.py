"""Fix steps say whether they repair the cause or only mask it, and repairs come first.

The kind is read from the step's mechanism (the masking switches of
``knowledge/workarounds.py``), so the tests run every rule's fixes as the
catalogue's own cases produce them, and check specific steps by their text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nccl_doctor.findings import Finding
from nccl_doctor.knowledge.nccl_env import lookup
from nccl_doctor.knowledge.workarounds import MASKS, FixKind, classify, ordered
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render import render_report

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent for p in (ROOT / "tests" / "cases").glob("*/*/*/case.json"))


@pytest.fixture(scope="module")
def every_finding() -> list[Finding]:
    """Every finding (folded ones too) of every case of the catalogue."""
    found: list[Finding] = []
    for case in CASES:
        report = diagnose_paths(sorted(str(p) for p in case.iterdir() if p.name != "case.json"))
        found.extend(report.findings)
        found.extend(kid for _, kids in report.folded for kid in kids)
    return found


def test_across_the_catalogue_no_step_comes_after_a_workaround(
    every_finding: list[Finding],
) -> None:
    workarounds = 0
    for finding in every_finding:
        kinds = [step.kind for step in finding.steps]
        if FixKind.WORKAROUND in kinds:
            workarounds += 1
            first = kinds.index(FixKind.WORKAROUND)
            assert set(kinds[first:]) == {FixKind.WORKAROUND}, (finding.id, finding.fix)
        for step in finding.steps:
            assert (step.masks is not None) == (step.kind is FixKind.WORKAROUND), step
    ids = {f.id for f in every_finding if any(s.kind is FixKind.WORKAROUND for s in f.steps)}
    # the cases exercise the workarounds of several rules, not a vacuous pass
    assert {"nccl.p2p", "nccl.shm", "nccl.nvls", "net.ib_transport", "app.hang"} <= ids
    assert workarounds >= 10


def test_every_rule_with_fixes_has_a_step_that_repairs_or_checks(
    every_finding: list[Finding],
) -> None:
    for finding in every_finding:
        if finding.fix:
            kinds = {step.kind for step in finding.steps}
            assert kinds - {FixKind.WORKAROUND}, (finding.id, finding.fix)


@pytest.mark.parametrize(
    ("step", "kind", "setting"),
    [
        # workarounds: a switch that trades speed (or the report of a fault) for running
        ("NCCL_P2P_DISABLE=1 keeps jobs running meanwhile (slower)", "workaround",
         "NCCL_P2P_DISABLE=1"),
        ("Until then, NCCL_SHM_DISABLE=1 keeps jobs running (slower)", "workaround",
         "NCCL_SHM_DISABLE=1"),
        ("NCCL_IB_DISABLE=1 (TCP sockets) is a slow stopgap only", "workaround",
         "NCCL_IB_DISABLE=1"),
        ("Until fixed, NCCL_NVLS_ENABLE=0 keeps jobs running", "workaround",
         "NCCL_NVLS_ENABLE=0"),
        ("Until then: NCCL_PROTO=^LL128 or upgrade", "workaround", "NCCL_PROTO=^LL128"),
        ("As a workaround, rerun with NCCL_NET_GDR_LEVEL=LOC (GDR off).", "workaround",
         "NCCL_NET_GDR_LEVEL=LOC"),
        ("export NCCL_ALGO=Ring", "workaround", "NCCL_ALGO=Ring"),
        ("Set CUDA_LAUNCH_BLOCKING=1 for the job", "workaround", "CUDA_LAUNCH_BLOCKING=1"),
        (("Or raise the process-group timeout (init_process_group(timeout=...)) above the "
         "preprocessing time."), "workaround", "a longer timeout"),
        (("Or pass find_unused_parameters=True to DistributedDataParallel (costs an extra "
         "graph traversal per step)."), "workaround", "find_unused_parameters=True"),
        ("Set TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "workaround",
         "TORCH_NCCL_ASYNC_ERROR_HANDLING=0"),
        # the same switches used to learn something: checks
        ("Rerun once with NCCL_P2P_DISABLE=1: if it then runs, P2P between the GPUs is broken",
         "check", None),
        (("Rerun rank 0 with CUDA_LAUNCH_BLOCKING=1 (or the same batch on the CPU) to get the "
         "Python line of the failing kernel"), "check", None),
        (("Rerun with NCCL_DEBUG=INFO and check the `NET/Plugin` line: test with "
         "NCCL_NET_PLUGIN=none to confirm the plugin is the problem."), "check", None),
        (("Run the CUDA sample p2pBandwidthLatencyTest (or nvidia-smi topo -p2p r) to see which "
         "GPU pairs fail"), "check", None),
        ("Check ACS/IOMMU (iommu=pt) and the PCIe/NVLink path between the GPUs named",
         "check", None),
        ("Run dcgmi diag -r 3 before returning the node to service", "check", None),
        ("Ignore the other ranks' timeouts/connection errors: they are the cascade", "check",
         None),
        # repairs: hardware, configuration, code, and undoing a workaround
        (("Disable PCIe ACS in the BIOS (or with setpci on the switches/root ports) and boot "
         "with iommu=pt"), "repair", None),
        ("Unset NCCL_ALGO (or widen it) for this job", "repair", None),
        ("Remove NCCL_P2P_DISABLE once p2pBandwidthLatencyTest passes", "repair", None),
        (("Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to prefixes that match that "
         "interface on every host"), "repair", None),
        ("Start it: systemctl enable --now nvidia-fabricmanager", "repair", None),
        ("Reseat the GPU and its power cables or try another slot", "repair", None),
        (("Run the long preprocessing (tokenisation, dataset map/caching) once before the "
         "distributed job"), "repair", None),
        (("Check what PID 675 is (`ps -o user,etime,cmd -p 675`) and stop it, or start the job "
         "on other GPUs (CUDA_VISIBLE_DEVICES)"), "repair", None),
        (("Xid 13: check the application (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer); restart "
         "the job"), "repair", None),
        (("Do not load the cuda-compat libcuda on this GPU: remove /usr/local/cuda/compat from "
         "LD_LIBRARY_PATH"), "repair", None),
        ("Move the job off the GPU; do not raise power limits to hide it", "repair", None),
    ],
)  # fmt: skip
def test_known_steps_get_their_kind(step: str, kind: str, setting: str | None) -> None:
    found = classify(step)
    assert found.kind.value == kind
    assert found.setting == setting
    assert (found.reason is not None) == (kind == "workaround")


def test_the_reason_says_what_the_switch_trades() -> None:
    reason = classify("NCCL_P2P_DISABLE=1 keeps jobs running meanwhile (slower)").reason
    assert reason is not None
    assert "host memory" in reason
    assert "still there" in reason


def test_masking_values_are_the_values_that_mask() -> None:
    assert classify("Until then, NCCL_NVLS_ENABLE=1 keeps jobs running").kind is FixKind.REPAIR
    assert classify("Until then, NCCL_P2P_LEVEL=SYS keeps jobs running").kind is FixKind.REPAIR
    assert classify("Until then, NCCL_P2P_LEVEL=LOC keeps jobs running").kind is (
        FixKind.WORKAROUND
    )


def test_every_masking_variable_is_a_known_variable() -> None:
    for mask in MASKS:
        assert lookup(mask.name) is not None, mask.name
        assert mask.reason
        assert mask.topics


def test_ordered_moves_only_the_workarounds_and_keeps_each_group_in_order() -> None:
    steps = [
        "Rerun once with NCCL_P2P_DISABLE=1: if it then runs, P2P between the GPUs is broken",
        "NCCL_P2P_DISABLE=1 keeps jobs running meanwhile (slower)",
        "Disable PCIe ACS in the BIOS",
        "Only as a stopgap: NCCL_SHM_DISABLE=1 (slower intra-node traffic)",
        "Reseat the GPU",
    ]
    assert ordered(steps) == (steps[0], steps[2], steps[4], steps[1], steps[3])


def test_a_report_tags_every_step_and_puts_the_workaround_last_in_every_format() -> None:
    case = ROOT / "tests" / "cases" / "nccl" / "p2p" / "first_allreduce_hang_works_without_p2p"
    report = diagnose_paths([str(p) for p in sorted(case.iterdir())])
    p2p = next(f for f in report.findings if f.id == "nccl.p2p")
    assert [s.kind.value for s in p2p.steps] == ["check", "repair", "repair", "workaround"]
    assert p2p.steps[-1].setting == "NCCL_P2P_DISABLE=1"

    data = json.loads(render_report(report, "json"))
    item = next(f for f in data["findings"] if f["id"] == "nccl.p2p")
    assert [s["kind"] for s in item["fix_steps"]] == ["check", "repair", "repair", "workaround"]
    assert [s["text"] for s in item["fix_steps"]] == item["fix"]
    assert item["fix_steps"][-1]["setting"] == "NCCL_P2P_DISABLE=1"
    assert "host memory" in item["fix_steps"][-1]["masks"]
    assert item["fix_steps"][0]["masks"] is None

    text = render_report(report, "text", width=200)
    assert "4. [workaround] Until then, NCCL_P2P_DISABLE=1 keeps jobs running" in text
    assert "masks the cause: P2P off" in text
    assert "2. [repair] Disable PCIe ACS" in text
    markdown = render_report(report, "markdown")
    assert "4. **workaround** — Until then, NCCL\\_P2P\\_DISABLE=1" in markdown
    assert "*(masks the cause: P2P off" in markdown
    html = render_report(report, "html")
    assert '<li data-kind="workaround"><span class="kind k-workaround">workaround</span>' in html
    assert '<div class="masks">masks the cause: P2P off' in html
