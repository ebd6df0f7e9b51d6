"""Hostile file systems: FIFOs, folders 1,500 levels deep, links that leave the folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nccl_doctor.evidence.archives import Limits
from nccl_doctor.evidence.intake import Intake

ROOT = Path(__file__).resolve().parents[2]


def _read(paths: list[str], limits: Limits | None = None) -> tuple[dict[str, bytes], list[str]]:
    intake = Intake(limits)
    got = {o.name: o.stream.read() for o in intake.streams(paths)}
    return got, [f"{n.source}: {n.message}" for n in intake.notes]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own: a regression that blocks fails by timeout, not hangs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "nccl_doctor", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def test_a_fifo_is_a_note_never_a_blocked_read(tmp_path: Path) -> None:
    fifo = tmp_path / "evidence" / "pipe"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    (tmp_path / "evidence" / "train.log").write_text("NCCL WARN x\n")
    named = _cli("parse", str(fifo))  # nobody ever writes to it: opening it blocked forever
    assert named.returncode == 2
    assert f"{fifo}: a named pipe (FIFO), not a regular file: skipped" in named.stderr
    walked = _cli("parse", str(fifo.parent))
    assert walked.returncode == 0
    assert f"note: {fifo}: a named pipe (FIFO), not a regular file: skipped" in walked.stdout
    assert f"read {fifo.parent / 'train.log'}: 1 lines" in walked.stdout


def test_devices_are_not_read(tmp_path: Path) -> None:
    got, notes = _read(["/dev/null", "/dev/zero"])
    assert got == {}
    assert notes == [
        "/dev/null: a character device, not a regular file: skipped (a pipe can be given as -)",
        "/dev/zero: a character device, not a regular file: skipped (a pipe can be given as -)",
    ]


def test_a_folder_1500_levels_deep_is_walked_to_a_bound(tmp_path: Path) -> None:
    top = tmp_path / "deep"
    top.mkdir()
    (top / "a.log").write_text("top\n")
    here = top
    for _ in range(1500):
        here = here / "d"
        here.mkdir()
    (here / "bottom.log").write_text("bottom\n")
    other = tmp_path / "other.log"
    other.write_text("other\n")
    try:
        got, notes = _read([str(top), str(other)], Limits(folder_depth=40))
    finally:
        while here != top:  # shutil.rmtree recurses: remove bottom-up
            for child in here.iterdir():
                child.unlink()
            here.rmdir()
            here = here.parent
    assert got == {str(top / "a.log"): b"top\n", str(other): b"other\n"}
    assert notes == [f"{top}: 1 folder(s) nested more than 40 levels deep: not read"]


def test_folder_depth_is_counted_from_the_folder_given(tmp_path: Path) -> None:
    here = tmp_path
    for level in range(1, 4):
        here = here / f"l{level}"
        here.mkdir()
        (here / "x.log").write_text(f"{level}\n")
    got, notes = _read([str(tmp_path)], Limits(folder_depth=2))
    assert sorted(got.values()) == [b"1\n", b"2\n"]
    assert notes == [f"{tmp_path}: 1 folder(s) nested more than 2 levels deep: not read"]


def test_links_are_followed_only_within_the_folder_given(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.log").write_text("HF_TOKEN=hf_abc\n")
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "a.log").write_text("a\n")
    (folder / "to-a.log").symlink_to("a.log")
    (folder / "escape.log").symlink_to(outside / "secret.log")
    (folder / "up.log").symlink_to(Path("..") / "outside" / "secret.log")
    (folder / "outside-folder").symlink_to(outside)
    (folder / "loop").symlink_to("loop")
    got, notes = _read([str(folder)])
    assert got == {str(folder / "a.log"): b"a\n", str(folder / "to-a.log"): b"a\n"}
    secret = outside.resolve() / "secret.log"
    assert sorted(notes) == [
        (
            f"{folder / 'escape.log'}: symbolic link to {secret}, outside the folder given: "
            "not followed"
        ),
        f"{folder / 'loop'}: dangling symbolic link: skipped",
        (
            f"{folder / 'outside-folder'}: symbolic link to {outside.resolve()}, outside the "
            "folder given: not followed"
        ),
        f"{folder / 'up.log'}: symbolic link to {secret}, outside the folder given: not followed",
    ]


def test_a_link_named_by_the_user_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.log").write_text("x\n")
    (tmp_path / "link.log").symlink_to(tmp_path / "real.log")
    got, notes = _read([str(tmp_path / "link.log")])
    assert (got, notes) == ({str(tmp_path / "link.log"): b"x\n"}, [])
