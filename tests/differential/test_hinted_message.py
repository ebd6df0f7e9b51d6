"""The ids a catalogued message's row names outweigh the class's prior and a setting's shift:
NCCL's failed connect in a container is a connection that failed, not /dev/shm. (Quoted in the
reporter's sentence, where no rule confirms a cause and the ranking is the answer.)"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

SAID = (
    "Title: training fails at init inside docker\n\n"
    "We run it in a docker container, and it ends with `{warn}`.\n"
)


def _top(tmp_path: Path, warn: str) -> list[str]:
    report = diagnose_text(tmp_path, SAID.format(warn=warn))
    assert report.hypotheses
    assert report.hypotheses[0].symptom.startswith("NCCL reported a system error")
    return report.top(4)


def test_a_failed_connect_in_a_container_is_the_connection(tmp_path: Path) -> None:
    warn = "NCCL WARN socketStartConnect: Connect to 10.0.3.7<42219> failed : Connection timed out"
    top = _top(tmp_path, warn)
    assert top[0] == "net.unreachable"
    assert "nccl.shm" in top[1:]


def test_a_shared_memory_failure_in_a_container_stays_shm(tmp_path: Path) -> None:
    warn = (
        "NCCL WARN Error: failed to extend /dev/shm/nccl-Xb3kq to 9637892 bytes, error: No space "
        "left on device"
    )
    assert _top(tmp_path, warn)[0] == "nccl.shm"
