"""Package listings of two NCCL releases in a job across nodes whose NCCL failed: each node's
environment has its own, so the nodes run different releases. On one node the listings say
nothing of the nodes; a cut-short launch ("--nnodes=2 ...") gives no missing node rank."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_REPORT = (
    "Two 8x A100 nodes, each with its own venv. As soon as we run {nodes} (torchrun "
    "--nnodes={n} ...), the ranks fail during init:\n"
    "[rank12]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
    "c10d/ProcessGroupNCCL.cpp:2006, internal error - please report this issue to the NCCL "
    "developers, NCCL version 2.21.5\n"
    "[rank12]: ncclInternalError: Internal check failed.\n\n"
    "gpu-a:\n"
    "nvidia-nccl-cu12          2.20.5\n"
    "torch                     2.4.1\n\n"
    "gpu-b:\n"
    "nvidia-nccl-cu12          2.21.5\n"
    "torch                     2.4.1\n"
)


def test_two_nccl_packages_across_failed_nodes_are_a_mismatch(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REPORT.format(nodes="2 nodes", n=2))
    assert critical_ids(report) == ["nccl.version_mismatch"]
    assert report.findings[0].summary.startswith("The package listings show NCCL 2.20.5, 2.21.5")
    # the launch was cut short by the reporter: no node rank is known to be missing
    assert all(f.id != "launch.rendezvous" for f in report.findings)


def test_two_nccl_packages_on_one_node_say_nothing_of_nodes(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _REPORT.format(nodes="1 node", n=1))
    assert all("package listings" not in f.summary for f in report.findings)


_TOLD = (
    "We train on two 8x A100 nodes, gpu01 and gpu02, each with its own venv. Each node alone "
    "trains fine; together they {told}\n\n"
    "gpu01$ pip list | grep -iE '^torch |nccl'\n"
    "nvidia-nccl-cu12         2.18.1\n"
    "torch                    2.1.2\n"
    "gpu02$ pip list | grep -iE '^torch |nccl'\n"
    "nvidia-nccl-cu12         {other}\n"
    "torch                    2.2.0\n"
)


def test_the_failure_told_in_words_beside_two_listings_is_a_mismatch(tmp_path: Path) -> None:
    told = "sometimes fail at once with ncclInternalError."
    report = diagnose_text(tmp_path, _TOLD.format(told=told, other="2.19.3"))
    assert critical_ids(report) == ["nccl.version_mismatch"]
    assert report.findings[0].summary.startswith("The package listings show NCCL 2.18.1, 2.19.3")


def test_one_release_listed_twice_or_no_nccl_failure_is_no_mismatch(tmp_path: Path) -> None:
    told = "sometimes fail at once with ncclInternalError."
    same = diagnose_text(tmp_path, _TOLD.format(told=told, other="2.18.1"))
    assert all("package listings" not in f.summary for f in same.findings)
    # no word of NCCL failing: the listings alone say nothing of what went wrong
    calm = diagnose_text(tmp_path, _TOLD.format(told="run slower than we hoped.", other="2.19.3"))
    assert all("package listings" not in f.summary for f in calm.findings)
