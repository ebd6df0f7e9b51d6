"""net.ib_link from NCCL's own device lists: a host of the job that uses fewer IB devices than
its peers, all of its own among theirs, has lost those rails; the same lists, or lists that
only name the devices differently, say nothing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_USING = (
    "{host}:881{n}:881{n} [0] NCCL INFO NET/IB : Using {devices} [RO]; OOB bond0:10.128.4.1{n}<0>\n"
)


def _line(host: str, n: int, names: list[str]) -> str:
    devices = " ".join(f"[{i}]{name}:1/IB" for i, name in enumerate(names))
    return _USING.format(host=host, n=n, devices=devices)


_EIGHT = [f"mlx5_{i}" for i in range(8)]
_SLOWER = "Every job that includes gpu-b17 runs 18% slower; 2-node busbw is 298 vs 370 GB/s.\n"


def test_a_host_that_uses_fewer_devices_has_lost_rails(tmp_path: Path) -> None:
    seven = [d for d in _EIGHT if d != "mlx5_3"]
    text = _SLOWER + _line("gpu-b17", 7, seven) + _line("gpu-b16", 6, _EIGHT)
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["net.ib_link"]
    (found,) = [f for f in report.findings if f.id == "net.ib_link"]
    assert found.summary.startswith(
        "NCCL on gpu-b17 uses 7 IB device(s), without mlx5_3, while on gpu-b16 it uses 8"
    )
    assert (found.severity.value, found.subjects.hosts) == ("warning", ("gpu-b17",))


def test_the_same_rails_on_every_host_say_nothing(tmp_path: Path) -> None:
    text = _SLOWER + _line("gpu-b17", 7, _EIGHT) + _line("gpu-b16", 6, _EIGHT)
    report = diagnose_text(tmp_path, text)
    assert "net.ib_link" not in [f.id for f in report.findings]


def test_devices_named_apart_are_no_missing_rail(tmp_path: Path) -> None:
    # a node whose HCAs enumerate under other names (mlx5_ib0..) is not a subset of the others
    other = [f"mlx5_ib{i}" for i in range(4)]
    text = _SLOWER + _line("gpu-b17", 7, other) + _line("gpu-b16", 6, _EIGHT)
    report = diagnose_text(tmp_path, text)
    assert "net.ib_link" not in [f.id for f in report.findings]
