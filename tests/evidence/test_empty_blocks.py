"""A line that only looked like the start of a tool's output is not lost; a tool's output
with nothing to tell stays silent."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence import reader
from nccl_doctor.facts.text import TextLine


def test_a_sentence_that_names_the_version_command_is_still_read_as_words(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    path.write_text(
        "Both nodes have the same stack.\n"
        'python -c "import torch;print(torch.__version__)" prints 2.7.1+cu126 on both nodes.\n'
    )
    result = reader.read_paths([str(path)])
    said = [(f.cite.line, f.text) for f in result.facts if isinstance(f, TextLine)]
    assert said == [
        (1, "Both nodes have the same stack."),
        (2, 'python -c "import torch;print(torch.__version__)" prints 2.7.1+cu126 on both nodes.'),
    ]


def test_a_run_manifest_of_a_job_that_ended_well_gives_no_fact(tmp_path: Path) -> None:
    path = tmp_path / "MANIFEST.json"
    path.write_text(
        '{"nccl_doctor_run": 1,\n'
        ' "command": "torchrun --nproc-per-node 1 job.py",\n'
        ' "exit_code": 0,\n'
        ' "launcher": "torchrun"}\n'
    )
    assert reader.read_paths([str(path)]).facts == []
