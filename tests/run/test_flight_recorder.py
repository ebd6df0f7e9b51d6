"""The flight-recorder parser: the real H200 dump, hostile pickles, JSON dumps, routing."""

from __future__ import annotations

import io
import json
import os
import pickle
import tarfile
from pathlib import Path

import pytest

from nccl_doctor.evidence.intake import dump_rank
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.flight import FlightDump, FlightEntry, FlightGroup
from nccl_doctor.parse.flight_recorder import FlightRecorderParser, load_dump, looks_like_dump
from tests.run._fr_dumps import REAL, real_dump


def test_real_h200_dump() -> None:
    result = read_paths([str(REAL)])
    assert [s.kind for s in result.sections] == ["flight-recorder"]
    facts = result.facts
    (dump,) = [f for f in facts if isinstance(f, FlightDump)]
    assert (dump.version, dump.comm_lib_version, dump.entry_count) == ("2.10", "2.28.9", 1)
    (group,) = [f for f in facts if isinstance(f, FlightGroup)]
    assert (group.pg_id, group.desc, group.group_ranks) == ("0", "default_pg", (0,))
    assert (group.last_enqueued, group.last_started, group.last_completed) == (1, None, None)
    (entry,) = [f for f in facts if isinstance(f, FlightEntry)]
    assert (entry.seq, entry.op, entry.state) == (1, "all_reduce", "completed")
    assert entry.profiling_name == "nccl:all_reduce"
    assert entry.input_sizes == ((1048576,),)
    assert entry.input_dtypes == ("Float",)
    assert entry.timeout_ms == 10000
    assert (entry.pg_id, entry.pg_desc, entry.is_p2p) == ("0", "default_pg", False)
    assert entry.rank == 0  # from the file name fr_dump_rank0
    assert entry.cite.source == str(REAL)
    assert entry.cite.line == 1  # entry index + 1
    assert "all_reduce seq 1" in entry.cite.text
    assert "timeout 10000 ms" in entry.cite.text


class _Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_naming_a_global_is_refused_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    hostile = {"version": "2.10", "pg_status": {}, "entries": [_Boom(marker)]}
    path = tmp_path / "fr_rank0"
    path.write_bytes(pickle.dumps(hostile, protocol=2))
    assert b"system" in path.read_bytes()
    result = read_paths([str(path)])
    assert not marker.exists()
    assert result.sections == []
    (note,) = [n for n in result.notes if n.source == str(path)]
    assert "refused global" in note.message
    assert "system" in note.message
    for protocol in (3, 4, 5):
        dump, why = load_dump(pickle.dumps(hostile, protocol=protocol))
        assert dump is None
        assert why is not None
        assert "refused global" in why
    assert not marker.exists()


def test_corrupt_and_foreign_pickles_are_notes() -> None:
    parser = FlightRecorderParser()
    data = pickle.dumps(real_dump(), protocol=2)
    facts, notes = parser.parse(data[: len(data) // 2], "cut", None)
    assert facts == []
    assert "truncated or corrupt" in notes[0]
    facts, notes = parser.parse(pickle.dumps([1, 2, 3], protocol=2), "list", None)
    assert facts == []
    assert "not a flight-recorder dump" in notes[0]


def test_json_dump_of_the_same_shape(tmp_path: Path) -> None:
    dump = real_dump()
    entry = dump["entries"][0]
    entry["process_group"] = list(entry["process_group"])
    path = tmp_path / "fr_rank3.json"
    path.write_text(json.dumps(dump, indent=1))
    assert looks_like_dump(path.read_bytes()[:8192])
    result = read_paths([str(path)])
    assert [s.kind for s in result.sections] == ["flight-recorder"]
    (got,) = [f for f in result.facts if isinstance(f, FlightEntry)]
    assert (got.rank, got.seq, got.op, got.input_sizes) == (3, 1, "all_reduce", ((1048576,),))


def test_dumps_inside_an_archive_are_read(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.tgz"
    data = REAL.read_bytes()
    with tarfile.open(archive, "w:gz") as tar:
        for rank in (0, 1):
            info = tarfile.TarInfo(f"run/fr_rank{rank}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    result = read_paths([str(archive)])
    assert [s.kind for s in result.sections] == ["flight-recorder", "flight-recorder"]
    assert {f.rank for f in result.facts if isinstance(f, FlightEntry)} == {0, 1}


def test_text_files_are_not_taken_for_dumps() -> None:
    assert not looks_like_dump(b'{"nccl_doctor_live_host": 1,\n "hostname": "x"}')
    assert not looks_like_dump(b"NCCL WARN something\n")
    assert looks_like_dump(b'{"version": "2.10", "pg_config": {}}')


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("fr_rank3", 3),
        ("nccl_trace_rank_12", 12),
        ("run/hang-2/fr_rank0", 0),
        ("dumps/fr-5.json", 5),
        ("trace_7.pkl", 7),
        ("dump.json", None),
    ],
)
def test_the_rank_of_a_dump_is_its_names_trailing_digits(name: str, rank: int | None) -> None:
    """As torch's own analyzer takes it (flight_recorder/components/loader.py: <prefix><rank>)."""
    assert dump_rank(name) == rank
