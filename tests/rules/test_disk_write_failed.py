"""A checkpoint whose write failed on a full disk: torch.save's zip writer reports its short
write (caffe2/serialize/inline_container.cc), a node health check its free-space test; the
disk is the cause, the peers' watchdog timeouts follow. A heap corrupted inside NCCL's own
frames, its glibc line alone, is NCCL's crash."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text

_SAVE = (
    "[rank0]: RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter "
    "failed writing file data/1187: file write failed\n"
    "[rank0]: RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos "
    "20854013248 vs 20854013136\n"
)
_NHC = "ERROR:  nhc:  Health check failed:  check_fs_free:  /scratch has only 0% free (412MB)\n"


def test_a_failed_checkpoint_write_is_the_full_disk(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _SAVE)
    assert critical_ids(report) == ["host.resources"]
    assert "disk" in report.findings[0].summary
    assert critical_ids(diagnose_text(tmp_path, _NHC)) == ["host.resources"]


def test_a_health_check_with_room_left_or_a_write_that_worked_says_nothing(
    tmp_path: Path,
) -> None:
    fine = (
        "nhc: check_fs_free: /scratch checked, 41% free\nSaved checkpoint to /scratch/step30000\n"
    )
    assert critical_ids(diagnose_text(tmp_path, fine)) == []


def test_a_heap_corrupted_in_nccls_frames_is_nccls_crash(tmp_path: Path) -> None:
    text = (
        "Random ranks abort at 1024 GPUs. The failing rank's stderr only has:\n\n"
        "free(): corrupted unsorted chunks\n\n"
        "                #5  0x00007f3c8a0ab7ba _int_free (libc.so.6 + 0xa37ba)\n"
        "                #7  0x00007f3b2e8d41c2 n/a (libnccl.so.2 + 0x8d41c2)\n"
    )
    assert critical_ids(diagnose_text(tmp_path, text)) == ["nccl.internal"]
