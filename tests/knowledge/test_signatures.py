"""The signature catalogue: entries load, validate, match their own format, run in linear time."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.knowledge.signatures import (
    LIBRARIES,
    SYMPTOMS,
    Signature,
    SignatureError,
    _parse,
    by_id,
    legacy_cuda_codes,
    load_signatures,
    validate,
)
from tests.knowledge._catalogue import catalogue_ids
from tests.knowledge._signature_samples import adversarial, literals, render


def _sigs() -> tuple[Signature, ...]:
    return load_signatures()


def test_every_library_has_signatures_and_ids_are_unique() -> None:
    sigs = _sigs()
    counts = Counter(s.library for s in sigs)
    assert set(counts) == set(LIBRARIES)
    assert counts["nccl"] > 500
    assert counts["torch"] > 40
    ids = [s.id for s in sigs]
    assert len(ids) == len(set(ids))
    assert len(by_id()) == len(sigs)


def test_every_entry_passes_validation() -> None:
    problems = {s.id: validate(s) for s in _sigs()}
    assert {k: v for k, v in problems.items() if v} == {}
    assert all(s.symptom in SYMPTOMS for s in _sigs())


#: A library whose messages another quotes inside its own: libfabric's EFA errors in NCCL's
#: libfabric plugin's completion errors (refining, refined).
_QUOTED = {("libfabric", "aws_ofi_nccl")}


def test_a_refinement_names_entries_of_its_library_and_is_looked_up_before_them() -> None:
    from nccl_doctor.facts.catalogue import signature_of

    refining = [s for s in _sigs() if s.refines]
    assert refining
    ids = by_id()
    for sig in refining:
        assert all(
            r in ids and (ids[r].library == sig.library or (sig.library, ids[r].library) in _QUOTED)
            for r in sig.refines
        ), sig.id
    # a line both read: the narrower reading answers
    line = "socketFinalizeAccept from 10.1.0.7<43110>: wrong type 3 != 4"
    assert {"nccl.warn.socket.socketfinalizeaccept_from_wrong_type"} <= {
        r for s in refining for r in s.refines
    }
    found = signature_of(line)
    assert found is not None
    assert found.id == "nccl.warn.socket.wrong_type_net_transports"
    other = signature_of(line.replace("3 != 4", "1 != 2"))
    assert other is not None
    assert other.id == "nccl.warn.socket.socketfinalizeaccept_from_wrong_type"


def test_hint_ids_are_catalogue_ids() -> None:
    known = catalogue_ids()
    if known is None:
        pytest.skip("docs/diagnoses.md is not beside this checkout")
    unknown = {s.id: sorted(set(s.hint_ids) - known) for s in _sigs() if set(s.hint_ids) - known}
    assert unknown == {}


def test_each_pattern_matches_a_rendering_of_its_own_format() -> None:
    """The sample is rendered from the format string (not from the pattern): the pattern
    must find it, capture every declared field, and (mined formats) run to its end."""
    failures = []
    for sig in _sigs():
        sample = sig.example or render(sig)
        m = sig.compiled().search(sample)
        if m is None:
            failures.append((sig.id, "no match", sample[:120]))
        elif any(m.group(f) is None for f in sig.fields):
            failures.append((sig.id, "field not captured", sample[:120]))
        elif not sig.example and m.end() != len(sample):
            failures.append((sig.id, f"stops at {m.end()}/{len(sample)}", sample[:120]))
    assert failures == []


def test_patterns_compile_together_in_one_hyperscan_database() -> None:
    hyperscan = pytest.importorskip("hyperscan")
    sigs = _sigs()
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[s.pattern.encode() for s in sigs],
        ids=list(range(len(sigs))),
        elements=len(sigs),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(sigs),
    )
    hit: set[int] = set()

    def on_match(idx: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
        hit.add(idx)

    text = "\n".join(s.example or render(s) for s in sigs) + "\n"
    db.scan(text.encode(), match_event_handler=on_match)
    missed = [sigs[i].id for i in range(len(sigs)) if i not in hit]
    assert missed == []  # Hyperscan reads every pattern as re does


def _scan_all(size: int) -> float:
    start = time.perf_counter()
    for sig in _sigs():
        rx = sig.compiled()
        for text in adversarial(sig, size):
            rx.search(text)
    return time.perf_counter() - start


def test_patterns_run_in_linear_time_on_adversarial_input() -> None:
    """Near-miss repetitions of each format's literals, one long line each.

    Bounded repeats make the work per start offset constant, so ten times the
    input costs about ten times the time; a quadratic pattern would cost a
    hundred. The bounds are generous for a loaded two-core CI box.
    """
    small = _scan_all(20_000)
    large = _scan_all(200_000)
    assert large < 60, f"{large:.1f} s for 200 KB per pattern"
    assert large < 30 * max(small, 0.05), (small, large)


def test_adversarial_inputs_hold_the_format_literals() -> None:
    sig = by_id()["torch.pgnccl.watchdog_timeout"]
    assert literals(sig)[0].startswith("Watchdog caught collective operation timeout")
    texts = adversarial(sig, 10_000)
    assert all(len(t) == 10_000 for t in texts)


@pytest.mark.parametrize(
    ("line", "ident", "fields"),
    [
        (
            (
                "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
                "Timeout(ms)=600000) ran for 600010 milliseconds before timing out."
            ),
            "torch.pgnccl.watchdog_timeout",
            {"seq": "12", "op": "ALLREDUCE", "timeout_ms": "600000", "ran_ms": "600010"},
        ),
        (
            (
                "node1:1234:1290 [3] misc/shmutils.cc:72 NCCL WARN Error while creating shared "
                "memory segment /dev/shm/nccl-abc123 (size 9637888)"
            ),
            "nccl.line.warn",
            {"cuda_dev": "3", "file": "misc/shmutils.cc", "line": "72"},
        ),
        (
            (
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 "
                "has a total capacty of 79.15 GiB of which 1.25 MiB is free. Process 777 has "
                "40.00 GiB memory in use."
            ),
            "torch.cuda.oom",
            {"size": "20.00 MiB", "device": "0", "total": "79.15 GiB", "free": "1.25 MiB"},
        ),
        (
            (
                "[E socket.cpp:957] [c10d] The client socket has timed out after 60000ms while "
                "trying to connect to (10.0.0.1, 29500)."
            ),
            "torch.c10d.socket_connect_timeout",
            {"timeout": "60000ms", "host": "10.0.0.1", "port": "29500"},
        ),
        (
            (
                "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Read error [10.0.0.2]:35724: "
                "Connection reset by peer"
            ),
            "gloo.tcp.read_error",
            {"peer": "[10.0.0.2]:35724", "errno_text": "Connection reset by peer"},
        ),
        (
            (
                "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, "
                "GPU has fallen off the bus."
            ),
            "driver.nvrm.xid",
            {"pci": "0000:3b:00", "xid": "79"},
        ),
        (
            "node1:1:2 [0] init.cc:1 NCCL WARN Cuda failure 999 'unknown error'",
            "cuda.error.unknown",
            {"message": "unknown error"},
        ),
    ],
)
def test_real_shaped_lines_match_with_their_fields(
    line: str, ident: str, fields: dict[str, str]
) -> None:
    m = by_id()[ident].compiled().search(line)
    assert m is not None
    assert {k: m.group(k) for k in fields} == fields


def test_nccl_entries_record_where_each_release_prints_them() -> None:
    sig = next(
        s for s in _sigs() if s.format == "Error while %s shared memory segment %s (size %ld)"
    )
    assert sig.library == "nccl"
    assert "nccl.shm" in sig.hint_ids
    assert all(
        re.fullmatch(r"src/[\w/.]+:\d+@v2\.\d+\.\d+-1(,v2\.\d+\.\d+-1)*", w) for w in sig.where
    )
    assert sig.versions.first == sig.versions.seen[0]
    result_warns = [s for s in _sigs() if s.library == "nccl" and s.result == "ncclSystemError"]
    assert result_warns
    assert all(s.symptom == "nccl_system" for s in result_warns)


def test_cuda_signatures_reuse_the_cuda_error_table() -> None:
    by_msg = {s.result: s for s in _sigs() if s.library == "cuda"}
    for err in cuda_errors.ERRORS:
        if err.message and err.name and err.code:
            sig = by_msg[err.name]
            assert sig.compiled().search(f"Cuda failure {err.code} '{err.message}'")
            assert sig.compiled().search(f"CUDA error: {err.message}")
    assert by_msg["cudaErrorUnknown"].symptom == "cuda_unknown"
    assert by_msg["cudaErrorMemoryAllocation"].symptom == "gpu_oom"


def test_legacy_cuda_numbers_agree_with_the_current_table() -> None:
    legacy = {c.name: c for c in legacy_cuda_codes()}
    assert legacy["cudaErrorUnknown"].legacy_code == 30
    assert legacy["cudaErrorUnknown"].code == 999
    assert legacy["cudaErrorIllegalAddress"].legacy_code == 77
    for code in legacy.values():
        current = cuda_errors.by_name(code.name)
        if current is not None:
            assert current.code == code.code, code.name


_GOOD = {
    "id": "torch.test.sample",
    "library": "torch",
    "where": ["x.cpp@v2.1.2"],
    "versions": {"first": "2.1.2", "last": "2.1.2", "seen": ["2.1.2"]},
    "format": "Rank {rank:d} failed",
    "format_style": "concat",
    "pattern": r"Rank (?P<rank>-?\d{1,20}) failed",
    "fields": ["rank"],
    "symptom": "crashed",
    "hint_ids": [],
}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"pattern": r"Rank (?P<rank>\d+) failed"}, "unbounded repeat"),
        ({"pattern": r"Rank (?P<rank>.*) failed"}, "unbounded repeat"),
        ({"pattern": r"Rank (?P<rank>\d{1,}) failed"}, "unbounded repeat"),
        ({"pattern": r"(?<=x)Rank (?P<rank>\d{1,3}) failed"}, "lookaround"),
        ({"pattern": r"Rank (?P<rank>\d{1,3}) failed$"}, "end anchor"),
        ({"pattern": r"(a)Rank (?P<rank>\d{1,3}) \1"}, "backreference"),
        ({"fields": ["other"]}, "differ from the pattern's groups"),
        ({"symptom": "sad"}, "symptom"),
        ({"id": "nccl.test.sample"}, "is not '<library>"),
        ({"versions": {"first": "2.4.1", "last": "2.1.2", "seen": ["2.1.2"]}}, "versions.first"),
    ],
)
def test_loader_rejects_a_bad_line(change: dict[str, object], why: str) -> None:
    with pytest.raises(SignatureError, match=re.escape(why)):
        _parse({**_GOOD, **change}, "test.jsonl:1")


def test_loader_accepts_the_good_line_and_escaped_specials() -> None:
    sig = _parse({**_GOOD, "pattern": r"Rank (?P<rank>\d{1,3}) failed \$\+ [*+$]"}, "t:1")
    assert sig.fields == ("rank",)


def test_catalogue_files_are_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")
    from tests.knowledge._catalogue import ROOT

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]["nccl_doctor"]
    assert "knowledge/signatures/*.jsonl" in globs
    assert "knowledge/signatures/*.json" in globs


def test_the_catalogue_is_kept_between_runs_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nccl_doctor.knowledge import signatures

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    read = load_signatures()  # read by an earlier run, or from the files
    load_signatures.cache_clear()
    try:
        first = load_signatures()  # read from the files, and kept
        assert first == read
        here = Path(signatures.__file__).parent
        parsed = [
            sig
            for library in signatures.LIBRARIES
            for sig in signatures._read(library, (here / f"{library}.jsonl").read_text())
        ]
        assert list(first) == parsed  # every field, the ones added later too (relays)
        assert any(s.relays for s in first)
        assert len(list(tmp_path.rglob("signatures-*.marshal"))) == 1
        load_signatures.cache_clear()
        monkeypatch.setattr(signatures, "_read", None)  # the next run reads no line
        again = load_signatures()
        assert again == first
        assert [s.versions for s in again] == [s.versions for s in first]
    finally:
        load_signatures.cache_clear()


def test_a_changed_catalogue_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nccl_doctor import cache
    from nccl_doctor.knowledge import signatures

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    files = [("torch", json.dumps(_GOOD).encode() + b"\n")]
    rows = signatures._rows(files)
    assert cache.kept("t", b"one", lambda: rows) == rows
    assert cache.kept("t", b"one", lambda: ()) == rows  # kept: not made again
    assert cache.kept("t", b"two", lambda: ()) == ()  # another key: made
    assert [signatures._signature(r) for r in rows] == [_parse(_GOOD, "t:1")]
    bad = [("torch", json.dumps({**_GOOD, "symptom": "sad"}).encode())]
    with pytest.raises(SignatureError, match="symptom"):
        cache.kept("t", b"three", lambda: signatures._rows(bad))
    assert len(list(tmp_path.rglob("t-*.marshal"))) == 2  # one and two; a failed read: nothing


def test_a_messages_location_is_the_one_of_the_release_the_evidence_names() -> None:
    """NCCL moved this WARN between files and lines over 26 releases: the location cited is
    the newest release read at or below the user's, the oldest below all, the newest when no
    version is known; a documented (release-less) location stays as written."""
    sig = by_id()["nccl.warn.bootstrap.bootstrap_no_socket_interface_found"]
    assert sig.location("2.18.6") == "src/bootstrap.cc:45@v2.18.6-1"
    assert sig.location("2.20.3+cuda12.2") == "src/bootstrap.cc:48@v2.19.4-1"
    assert sig.location("2.3.7") == "src/bootstrap.cc:37@v2.4.8-1"
    assert sig.location() == "src/bootstrap.cc:120@v2.30.7-1"
    hung = by_id()["kernel.hung_task"]
    assert hung.location("2.18.6") == "linux kernel/hung_task.c check_hung_task"
