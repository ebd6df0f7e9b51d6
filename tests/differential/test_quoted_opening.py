"""A message quoted by its fixed opening alone (a title, a sentence cut at its first number) is
still that message, where no full one matches and the opening is the library's own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.catalogue import quoted_opening, signature_of
from nccl_doctor.pipeline import diagnose_paths


@pytest.mark.parametrize(
    ("text", "signature", "cls"),
    [
        # NCCL before 2.12 printed the sizes after these words; the title stops here
        (
            "Title: Run multi-worker with nccl error: NET/IB : collective mismatch error",
            "nccl.warn.net_ib.net_ib_collective_mismatch_error_local",
            "nccl_internal",
        ),
        # NVLS's bind failure quoted without its size
        (
            "Failed to bind NVLink SHARP (NVLS) Multicast memory: CUDA error 401",
            "nccl.warn.nvls.failed_to_bind_nvlink_sharp_nvls",
            "nccl_unhandled_cuda",
        ),
        # inside a sentence in another language, the store's timeout cut before its seconds
        (
            (
                "执行训练时会报错 torch.distributed.DistNetworkError: The client socket has timed "
                "out after"
            ),
            "torch.c10d.socket_connect_timeout",
            "store_timeout",
        ),
        # a message with no field is all opening: a title that keeps its first sentence
        (
            (
                "Title: ValueError: You can't train a model that has been loaded in 8-bit "
                "precision on a different device than the one you're training on."
            ),
            "accelerate.accelerator.quantized_other_device",
            "failure",
        ),
        (
            "Title: Some NCCL operations have failed or timed out",
            "torch.pgnccl.async_teardown",
            "aborted",
        ),
    ],
)
def test_an_opening_quoted_alone_is_its_message(text: str, signature: str, cls: str) -> None:
    assert signature_of(text) is None
    found = quoted_opening(text)
    assert found is not None
    assert (found.id, found.symptom) == (signature, cls)


@pytest.mark.parametrize(
    "text",
    [
        # three words: too few to be the library's alone
        "NET/IB : collective",
        # the words of an opening in another order are not a quote of it
        "the collective mismatch error on NET/IB",
        # a harmless notice's opening (class info) names no failure
        "NCCL INFO NET/IB : No device found.",
        # a message with no field, quoted by fewer than 24 characters of it
        "Hostfile is empty",
        # a harmless notice with no field (DeepSpeed's, users paste it as the error)
        "NCCL backend in DeepSpeed not yet implemented",
        "",
    ],
)
def test_no_opening_is_read_where_the_library_did_not_print_it(text: str) -> None:
    assert quoted_opening(text) is None


def test_a_full_message_is_read_as_itself_not_by_its_opening(tmp_path: Path) -> None:
    line = (
        "node1:1307:1586 [0] transport/net_ib.cc:1038 NCCL WARN NET/IB : req 0/1 tag 0 peer "
        "10.0.0.6<58683> collective mismatch error, local size 496640 remote size 65536"
    )
    sig = signature_of(line)
    assert sig is not None
    assert sig.id == "nccl.warn.net_ib.net_ib_req_tag_peer_collective_mismatch"


def test_a_title_quoting_an_opening_ranks_that_messages_causes(tmp_path: Path) -> None:
    """The whole pipeline: a thread whose only error is the title's quote of NET/IB's
    size check ranks the causes that check points at (two NCCL builds, ranks calling other
    collectives) first, not the generic failure's."""
    path = tmp_path / "evidence.txt"
    path.write_text(
        "Title: Run multi-worker with nccl error: NET/IB : collective mismatch error\n\n"
        "Two workers, one GPU each, TensorFlow 2.0 in docker, NCCL version: 2.5.4\n"
    )
    report = diagnose_paths([str(path)])
    assert report.hypotheses
    assert report.hypotheses[0].symptom.startswith("NCCL reported an internal error")
    assert report.top(3)[0] in {"nccl.version_mismatch", "app.collective_mismatch"}
    assert "nccl.p2p" not in report.top(3)
