"""The differential: a failure never gets an empty report; a healthy run gets no hypothesis."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential import STRONG, differential
from nccl_doctor.differential.checks import NEXT_CHECK
from nccl_doctor.differential.priors import PRIORS
from nccl_doctor.differential.shifts import SHIFTS
from nccl_doctor.differential.symptoms import LABELS
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.report import Verdict
from nccl_doctor.rules import CATALOGUE
from tests.helpers import diagnose_text

HERE = Path(__file__).resolve().parents[1] / "fixtures"
DIFF = HERE / "differential"
CAPTURED = HERE / "captured"


def test_tables_name_only_catalogue_ids_and_every_prior_has_a_next_check() -> None:
    ids = {p.id for priors in PRIORS.values() for p in priors} | {s.id for s in SHIFTS}
    assert ids <= set(CATALOGUE)
    assert set(NEXT_CHECK) <= set(CATALOGUE)
    assert ids - set(NEXT_CHECK) == set()
    assert set(PRIORS) == set(LABELS)
    for cls, priors in PRIORS.items():
        assert len({p.id for p in priors}) == len(priors), cls
        assert all(0 < p.weight < 1 and p.why and p.source for p in priors), cls


def test_every_shift_acts_in_some_class() -> None:
    # a shift below STRONG only reweighs an id a class's prior names: one whose id no class
    # it weighs in names does nothing (the first-collective network shift did, until its ids
    # joined the collective_timeout prior)
    named = {cls: {p.id for p in priors} for cls, priors in PRIORS.items()}
    for shift in SHIFTS:
        classes = shift.classes or frozenset(PRIORS)
        assert shift.factor >= STRONG or any(shift.id in named[c] for c in classes), shift.why


def test_bare_nccl_system_error_in_a_container_ranks_shm_first() -> None:
    report = diagnose_paths([str(DIFF / "system_error_container.txt")])
    assert report.findings == ()
    assert report.verdict is Verdict.INCONCLUSIVE
    top = report.hypotheses[0]
    assert top.id == "nccl.shm"
    assert top.symptom.startswith("NCCL reported a system error")
    assert "runs in a container (Docker's /dev/shm is 64 MB)" in top.for_
    assert top.check.startswith("df -h /dev/shm")
    assert top.probability > report.hypotheses[1].probability
    assert report.top(3)[0] == "nccl.shm"
    assert top.cite.line == 10


def test_the_same_error_with_shm_disabled_counts_against_shm(tmp_path: Path) -> None:
    text = (DIFF / "system_error_container.txt").read_text()
    evidence = tmp_path / "log.txt"
    evidence.write_text("export NCCL_SHM_DISABLE=1\n" + text)
    report = diagnose_paths([str(evidence)])
    ids = [h.id for h in report.hypotheses]
    assert ids[0] != "nccl.shm"
    shm = next((h for h in report.hypotheses if h.id == "nccl.shm"), None)
    if shm is not None:  # still listed lower, with the reason it fell
        assert "NCCL_SHM_DISABLE=1 is set: SHM is not used" in shm.against


def test_pre_10_1_cuda_error_30_is_the_unknown_error_and_suspend_points_at_uvm() -> None:
    report = diagnose_paths([str(DIFF / "cuda30_after_suspend.txt")])
    top = report.top(3)
    assert top[:2] == ["cuda.unknown_error", "driver.uvm"]
    uvm = next(h for h in report.hypotheses if h.id == "driver.uvm")
    assert any("suspend" in reason for reason in uvm.for_)
    assert uvm.check == "lsmod | grep nvidia_uvm; ls -l /dev/nvidia-uvm"


def test_a_hang_in_prose_with_the_p2p_workaround_names_p2p_first() -> None:
    report = diagnose_paths([str(DIFF / "p2p_freeze_prose.txt")])
    assert report.top(1) == ["nccl.p2p"]
    assert report.hypotheses  # the other causes of a silent hang follow
    assert all(h.id != "nccl.p2p" for h in report.hypotheses)


@pytest.mark.parametrize(
    "path",
    [
        CAPTURED / "h200-580" / "torchrun-nccl-info-1gpu.log",
        CAPTURED / "h200-580" / "nvidia-smi.txt",
        CAPTURED / "zoo-h200" / "busy_self.log",
    ],
    ids=lambda p: p.name,
)
def test_a_healthy_run_gets_no_hypothesis(path: Path) -> None:
    report = diagnose_paths([str(path)])
    assert report.hypotheses == ()
    assert all(f.severity.value != "critical" for f in report.findings)


def test_a_decisive_finding_is_followed_only_by_its_alternatives() -> None:
    from nccl_doctor.triage import ALTERNATIVES

    report = diagnose_paths([str(CAPTURED / "zoo-h200" / "duplicate_gpu.log")])
    assert report.findings[0].id == "nccl.duplicate_gpu"
    assert report.findings[0].confidence.value == "high"
    # the same symptom's next candidates, never the finding's own id
    assert 0 < len(report.hypotheses) <= ALTERNATIVES
    # (ncclInvalidUsage's next causes in the development corpora: another libnccl, then
    # the rank-to-GPU mapping)
    assert [h.id for h in report.hypotheses] == ["nccl.version_mismatch", "cuda.device_visibility"]
    assert all(h.symptom.startswith("NCCL rejected its arguments") for h in report.hypotheses)
    assert report.top(3) == [
        "nccl.duplicate_gpu",
        "nccl.version_mismatch",
        "cuda.device_visibility",
    ]


def test_known_ids_are_left_out_and_probabilities_fall() -> None:
    facts = facts_of(read_paths([str(DIFF / "system_error_container.txt")]))
    failures = tuple(f for f in facts.all if type(f).__name__ == "NcclErrorReport")
    assert failures
    full = differential(facts, failures)
    without = differential(facts, failures, known={"nccl.shm"})
    assert full[0].id == "nccl.shm"
    assert "nccl.shm" not in [h.id for h in without]
    assert [h.probability for h in full] == sorted((h.probability for h in full), reverse=True)


def test_every_format_shows_the_ranked_differential() -> None:
    import json

    from nccl_doctor.render import render_report

    report = diagnose_paths([str(DIFF / "system_error_container.txt")])
    text = render_report(report, "text", width=100)
    assert "Possible causes of NCCL reported a system error (ncclSystemError) (ranked):" in text
    assert "1. nccl.shm  (46%)" in text
    assert "check: df -h /dev/shm" in text
    doc = json.loads(render_report(report, "json"))
    assert [h["id"] for h in doc["hypotheses"]][:2] == ["nccl.shm", "driver.container"]
    assert doc["hypotheses"][0]["probability"] == 0.46
    assert doc["hypotheses"][0]["source"]["line"] == 10
    markdown = render_report(report, "markdown")
    assert "| 1 | `nccl.shm` | 46% |" in markdown
    html = render_report(report, "html")
    assert '<section id="hypotheses">' in html
    assert "<code>nccl.shm</code>" in html


def test_the_999_inside_ncclunhandledcudaerror_ranks_the_expert_checklist() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "h200-cuda-999"
    report = diagnose_paths([str(example)])
    assert report.findings[0].id == "gpu.contention"
    assert report.hypotheses[0].symptom.startswith("CUDA returned its unknown error")
    assert [h.id for h in report.hypotheses][:2] == ["driver.uvm", "gpu.fabric_manager"]


def test_a_message_only_the_catalogue_knows_gets_its_class_and_hints() -> None:
    report = diagnose_paths([str(DIFF / "store_get_socket_timeout.txt")])
    assert report.findings == ()
    top = report.hypotheses[0]
    # the first collective: ranks wait on the store for rank 0's ncclUniqueId; the store
    # itself worked (the rendezvous completed), rank 0 never got there: busy, or dead
    assert top.symptom == "a collective timed out (watchdog)"
    assert top.id == "app.hang"
    assert top.for_[0].startswith("the message is torch.pgnccl.unique_id_store (")
    assert [h.id for h in report.hypotheses][:2] == ["app.hang", "launch.rank_crash"]


@pytest.mark.parametrize(
    ("line", "signature", "symptom"),
    [
        # CUDA's messages follow one of several prefixes: indexed by the message itself
        (
            "RuntimeError: CUDA error: device-side assert triggered",
            "cuda.error.assert",
            "cuda_assert",
        ),
        (
            (
                "transport/p2p.cc:210 NCCL WARN Cuda failure 700 'an illegal memory access was "
                "encountered'"
            ),
            "cuda.error.illegal_address",
            "cuda_fault",
        ),
        (
            "RuntimeError: CUDA error: uncorrectable ECC error encountered",
            "cuda.error.eccuncorrectable",
            "cuda_fault",
        ),
        (
            "RuntimeError: CUDA error: no CUDA-capable device is detected",
            "cuda.error.no_device",
            "cuda_device",
        ),
    ],
)
def test_catalogue_reads_messages_behind_a_prefix(line: str, signature: str, symptom: str) -> None:
    from nccl_doctor.facts.catalogue import signature_of

    sig = signature_of(line)
    assert sig is not None
    assert (sig.id, sig.symptom) == (signature, symptom)


def test_every_failure_signature_is_indexed() -> None:
    """A signature the lookup cannot index is never found: only one too vague may be left."""
    from nccl_doctor.facts.catalogue import _index
    from nccl_doctor.knowledge.signatures import load_signatures

    indexed = {sig.id for _, sig in _index()}
    left = [s.id for s in load_signatures() if s.symptom != "info" and s.id not in indexed]
    assert left == ["gloo.tcp.writev_error"]  # 'writev ' and a peer: no word of 8 letters


def test_catalogue_lookup_names_real_messages() -> None:
    from nccl_doctor.facts.catalogue import signature_of

    shm = signature_of(
        "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)"
    )
    assert shm is not None
    assert (shm.symptom, shm.hint_ids) == ("nccl_system", ("nccl.shm",))
    xid = signature_of("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.")
    assert xid is not None
    assert xid.symptom == "xid"
    assert signature_of("epoch 3 step 100 loss 0.25 lr 3e-4") is None


def test_every_class_the_catalogue_names_has_priors() -> None:
    from nccl_doctor.knowledge.signatures import SYMPTOMS, load_signatures

    assert SYMPTOMS - {"info"} <= set(PRIORS)
    assert {s.symptom for s in load_signatures()} <= SYMPTOMS


def test_ddps_usage_error_is_followed_by_the_training_codes_other_mistakes(
    tmp_path: Path,
) -> None:
    evidence = tmp_path / "ddp.txt"
    evidence.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 120, in <module>\n'
        "[rank1]:     loss = model(batch).sum()\n"
        "[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration "
        "before starting a new one. This error indicates that your module has parameters that "
        "were not used in producing loss. You can enable unused parameter detection by passing "
        "the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`.\n"
    )
    report = diagnose_paths([str(evidence)])
    assert report.top(3) == ["app.unused_params", "app.param_mismatch", "app.collective_mismatch"]
    assert report.hypotheses[0].symptom.startswith("DDP refused the model")


def test_a_gloo_pair_closed_by_its_peer_is_a_connection_not_a_native_crash(
    tmp_path: Path,
) -> None:
    evidence = tmp_path / "gloo.txt"
    evidence.write_text(
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed "
        "by peer [10.0.3.7]:19443\n"
    )
    report = diagnose_paths([str(evidence)])
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks")
    assert [h.id for h in report.hypotheses][:2] == ["launch.rank_crash", "net.unreachable"]


@pytest.mark.parametrize(
    "what",
    ["", "  what():  a condition the stack's catalogue does not know\n"],
)
def test_an_uncaught_cpp_exception_no_message_classifies_is_an_abort(
    tmp_path: Path, what: str
) -> None:
    """std::terminate aborts the process: its class is the abort's, not an empty report."""
    path = tmp_path / "rank3.log"
    path.write_text(
        "terminate called after throwing an instance of 'c10::DistBackendError'\n" + what
    )
    report = diagnose_paths([str(path)])
    assert report.hypotheses[0].symptom == "a rank aborted (SIGABRT)"
    assert report.top(2) == ["app.hang", "launch.rank_crash"]


_WRONG_TABLE = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "     (us)  (GB/s)  (GB/s)\n"
    "    16777216       4194304     float     sum      -1   1502.1   11.17   16.75  4194304"
    "   1499.7   11.19   16.78  4194304\n"
    "# Out of bounds values : 8388608 FAILED\n"
    "# Avg bus bandwidth    : 16.75\n"
)


def test_wrong_values_across_nodes_put_gpudirect_rdma_first(tmp_path: Path) -> None:
    """Across nodes the data crosses the network: GPUDirect RDMA leads, P2P falls back."""
    path = tmp_path / "allreduce.log"
    path.write_text("We run all_reduce_perf across two nodes with 8 GPUs each:\n" + _WRONG_TABLE)
    report = diagnose_paths([str(path)])
    assert report.first_failure is not None
    assert "wrong values" in report.first_failure.message
    assert report.hypotheses[0].id == "net.gdr"
    assert report.verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    ("said", "wrong"),
    [
        ("all_reduce returns wrong results on 8 GPUs with NCCL.", True),
        ("After the broadcast the weights hold garbage values on rank 1.", True),
        ("I checked that the results are not wrong: they match the CPU run.", False),
    ],
)
def test_wrong_values_said_open_their_class(tmp_path: Path, said: str, wrong: bool) -> None:
    path = tmp_path / "report.txt"
    path.write_text(said + "\n")
    report = diagnose_paths([str(path)])
    label = report.hypotheses[0].symptom if report.hypotheses else ""
    assert label.startswith("a collective returned wrong values") is wrong


def test_a_survivors_remote_error_outranks_the_reporters_words(tmp_path: Path) -> None:
    # a title cut short is the first failure and names no class; the survivor's ncclRemoteError
    # below it is the cascade of a peer or the network, still machine output
    report = diagnose_text(
        tmp_path,
        "Title: torch.distributed.DistBackendError: NCCL error in: /opt/conda/torch/csrc/"
        "distributed/c10d/NCCLUtils.hpp:317, remote process exited or there was a network\n"
        "DDP communication failing. Training not proceeding.\n"
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version "
        "2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.\n"
        "Last error:\n"
        "socketProgressOpt: Call to recv from 172.16.0.7<33759> failed : Connection reset by "
        "peer\n",
    )
    lead = report.hypotheses[0]
    assert lead.symptom.startswith("NCCL reported a remote error")
    assert lead.cite.line == 3
    assert "nccl.p2p" not in report.top(3)


@pytest.mark.parametrize(
    ("title", "first"),
    [
        # socket types 3 and 4: a Socket-transport handshake at an IB-transport listener
        (
            "Title: 多机多卡训练，出现了socketFinalizeAccept: wrong type 3 != 4错误。",
            "net.ib_config",
        ),
        ("Title: socketFinalizeAccept from 10.0.0.2<4123>: wrong type 4 != 3", "net.ib_config"),
        # bootstrap and proxy: not the network transports
        ("Title: socketFinalizeAccept from 10.0.0.2<4123>: wrong type 1 != 2", "nccl.internal"),
        ("Title: socketFinalizeAccept: wrong type 2 != 4", "nccl.internal"),
    ],
)
def test_the_socket_types_a_refused_handshake_names_tell_the_cause(
    tmp_path: Path, title: str, first: str
) -> None:
    report = diagnose_text(tmp_path, title + "\n")
    assert report.hypotheses[0].symptom.startswith("NCCL reported an internal error")
    assert report.hypotheses[0].id == first


def test_a_quoted_rdma_completion_error_of_nccl_2_29_is_a_remote_error(tmp_path: Path) -> None:
    # 2.29 prints it from a helper that returns success to its caller (which returns
    # ncclRemoteError); the status is a verbs name, with no word 'error' in the line
    report = diagnose_text(
        tmp_path,
        "Title: NET/IB: Got completion from peer 10.0.0.2<5512> with "
        "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129 hca mlx5_0\n",
    )
    assert report.hypotheses[0].symptom.startswith("NCCL reported a remote error")
    assert {h.id for h in report.hypotheses[:2]} == {"net.ib_config", "net.ib_transport"}


@pytest.mark.parametrize(
    "line",
    [
        "torch.distributed.DistNetworkError: Connection reset by peer",
        "BrokenPipeError: [Errno 32] Broken pipe",
    ],
)
def test_a_connection_the_other_end_closed_points_at_the_peer_first(
    tmp_path: Path, line: str
) -> None:
    # ECONNRESET and EPIPE: the other end's process went away (or something cut the link)
    report = diagnose_text(tmp_path, line + "\n")
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks")
    assert report.hypotheses[0].id == "launch.rank_crash"
    assert report.hypotheses[1].id in {"net.unreachable", "net.socket_interface"}  # the link
