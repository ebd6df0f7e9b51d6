"""NCCL's own WARN, quoted by PyTorch after ``Last error:``, says which cause of its class.

A ``DistBackendError`` carries the result's generic text (``invalid argument``);
PyTorch appends ``ncclGetLastError()``, the WARN NCCL printed. Where the catalogue's
row for that WARN reads a cause from NCCL's source, the differential weighs it:
NCCL 2.14-2.16 take only 0 or 1 for a config's ``blocking``, and from 2.17 the
initializer sets every attribute to ``NCCL_CONFIG_UNDEF_INT`` (-2147483648), so that
value refused says the caller was built against a newer libnccl than the one loaded.
The version PyTorch prints in the same line is the libnccl it loaded: the report's
inventory names it. Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.report import Report
from tests.helpers import diagnose_text

#: vLLM 0.2 on torch 2.1 (built against NCCL 2.18) with an older libnccl first on the path.
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 57, in '
    "init_model\n"
    "    _init_distributed_environment(self.parallel_config, self.rank,\n"
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 144, in '
    "_init_distributed_environment\n"
    "    torch.distributed.all_reduce(torch.zeros(1).cuda())\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", '
    "line 2050, in all_reduce\n"
    "    work = group.allreduce([tensor], opts)\n"
    "torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, invalid argument, NCCL version 2.14.3\n"
    "ncclInvalidArgument: Invalid value for an argument.\n"
    "Last error:\n"
)


def _report(tmp_path: Path, quoted: str) -> Report:
    return diagnose_text(tmp_path, TRACE + quoted + "\n")


def test_an_unset_config_refused_points_at_another_libnccl(tmp_path: Path) -> None:
    report = _report(tmp_path, "Invalid config blocking attribute value -2147483648")
    first = report.hypotheses[0]
    assert first.id == "nccl.version_mismatch"
    assert first.symptom.startswith("NCCL rejected its arguments or usage")
    assert first.for_[0] == (
        "the message is nccl.warn.init.invalid_config_blocking_attribute_value "
        "(src/init.cc:1270@v2.14.3-1): the ncclConfig_t came from a caller built against newer "
        "NCCL headers than the libnccl loaded (-2147483648 is 2.17's 'unset'; 2.14-2.16 take "
        "only 0 or 1): two NCCL builds"
    )
    assert report.inventory.versions == (("nccl", "2.14.3"),)


def test_a_quoted_warn_without_a_reading_leaves_the_class_priors(tmp_path: Path) -> None:
    report = _report(tmp_path, "Invalid config cgaClusterSize attribute value 17")
    assert [h.id for h in report.hypotheses[:2]] == [
        "nccl.duplicate_gpu",
        "nccl.version_mismatch",
    ]
    assert all("the message is" not in " ".join(h.for_) for h in report.hypotheses)


def test_without_last_error_the_result_alone_gives_the_class(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, TRACE.removesuffix("Last error:\n"))
    assert report.hypotheses[0].id == "nccl.duplicate_gpu"
    assert report.inventory.versions == (("nccl", "2.14.3"),)


def test_a_peer_that_posted_less_points_at_counts_or_settings(tmp_path: Path) -> None:
    """ncclIbIsend's check "to catch user collective call count/size mismatches": the ranks
    called other counts, or cut the data differently (a setting, or another NCCL release)."""
    warn = (
        "gpu-b12:1307367:1307586 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 "
        "peer 10.10.23.6<58683> collective mismatch error, local size 496640 remote size 65536\n"
        "gpu-b12:1307367:1307586 [0] NCCL INFO transport/net.cc:1071 -> 5\n"
    )
    report = diagnose_text(
        tmp_path, warn + TRACE.replace("invalid argument", "invalid usage") + "\n"
    )
    top3 = [h.id for h in report.hypotheses[:3]]
    assert len({"app.collective_mismatch", "nccl.env", "nccl.version_mismatch"} & set(top3)) >= 2
    hinted = [h.id for h in report.hypotheses if h.for_[0].startswith("the message is ")]
    assert sorted(hinted) == ["app.collective_mismatch", "nccl.env", "nccl.version_mismatch"]
