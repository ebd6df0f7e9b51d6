"""A failure no message classifies, after training ran: the communicators had connected and
carried traffic, so what is set up once (the GPUs' peer path, the interfaces, the builds,
the devices each rank sees) had worked; the causes that come with running (memory, data, a
faulting GPU) lead. The same words at start-up keep the generic class's order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.pipeline import diagnose_paths

RAN = "it failed after training ran"
_ERROR = "The error is as follows: RuntimeError: worker process exited unexpectedly\n"


def _hypotheses(tmp_path: Path, text: str) -> list[tuple[str, tuple[str, ...]]]:
    path = tmp_path / "report.txt"
    path.write_text(text, encoding="utf-8")
    report = diagnose_paths([str(path)])
    assert not report.findings
    return [(h.id, h.for_) for h in report.hypotheses]


@pytest.mark.parametrize(
    "when",
    [
        "The pre-training run on 8 A800s crashed after a few iter.",
        "Fine-tuning on 4 GPUs crashes after 300 steps.",
        "It trains for the first epoch; in the second epoch it crashes.",
    ],
)
def test_a_failure_after_training_ran_leads_with_causes_of_running(
    tmp_path: Path, when: str
) -> None:
    found = _hypotheses(tmp_path, f"{when} {_ERROR}")
    assert [i for i, _ in found[:2]] == ["cuda.device_assert", "gpu.oom"]
    assert all(any(why.startswith(RAN) for why in for_) for _, for_ in found[:2])
    assert "nccl.p2p" not in [i for i, _ in found]


def test_the_same_failure_at_start_keeps_the_set_up_causes(tmp_path: Path) -> None:
    found = _hypotheses(
        tmp_path, f"The pre-training run on 8 A800s crashes right at the start. {_ERROR}"
    )
    assert found[0][0] == "nccl.p2p"
    assert "cuda.device_assert" not in [i for i, _ in found]
    assert not any(why.startswith(RAN) for _, for_ in found for why in for_)
