"""The nccl-tests block parser: every fixture, other versions' formats, negatives."""

from __future__ import annotations

import pytest

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import (
    NcclTestCommand,
    NcclTestConfig,
    NcclTestFailure,
    NcclTestRank,
    NcclTestRow,
    NcclTestSummary,
)
from nccl_doctor.parse.nccl_tests import NcclTestsParser
from tests.helpers import FORMATS, blocks, fixture_text, of_type, parse_blocks


def parse(text: str) -> list:
    """All facts of ``text`` through a fresh parser."""
    return parse_blocks(NcclTestsParser(), text)


def row_at(facts: list, size: int) -> NcclTestRow:
    return next(r for r in of_type(facts, NcclTestRow) if r.size_bytes == size)


# -- fixtures --------------------------------------------------------------


def test_a100_old_format_error_column_without_hash() -> None:
    text = fixture_text("nccl-tests/a100-8gpu-mpirun-old-format-error-column-no-hash.txt")
    found = blocks(NcclTestsParser(), text)
    assert len(found) == 1
    assert (found[0][0].number, found[0][-1].number) == (1, 15)
    facts = parse(text)
    cmd = of_type(facts, NcclTestCommand)[0]
    assert (cmd.test, cmd.launcher, cmd.n_procs) == ("all_reduce_perf", "mpirun", 8)
    assert cmd.args == (("-b", "32"), ("-f", "2"), ("-e", "8G"))
    cfg = of_type(facts, NcclTestConfig)[0]
    assert (cfg.test, cfg.n_threads, cfg.n_gpus, cfg.min_bytes, cfg.max_bytes) == (
        "all_reduce_perf",
        1,
        1,
        32,
        8589934592,
    )
    assert (cfg.step_factor, cfg.step_bytes, cfg.warmup_iters, cfg.iters) == (2, None, 5, 20)
    assert cfg.validation is True
    assert cfg.agg_iters is None
    ranks = of_type(facts, NcclTestRank)
    assert [r.rank for r in ranks] == list(range(8))
    assert {r.host for r in ranks} == {"AI-A100-Beethoven01"}
    r7 = ranks[7]
    assert (r7.pid, r7.device, r7.gpu_name) == (1821223, 7, "NVIDIA A100-SXM4-40GB")
    assert (r7.bus_id_raw, r7.bus_id, r7.pci_bus, r7.group) == ("0x00", None, 0, None)
    assert of_type(facts, NcclTestRow) == []
    assert of_type(facts, NcclTestSummary) == []  # the excerpt ends at the column headers


def test_b200_all_gather_split_by_nccl_banner() -> None:
    text = fixture_text("nccl-tests/b200-gke-gib-allgather-kubectl.txt")
    found = blocks(NcclTestsParser(), text)
    # the NCCL banner (nccl-log's) ends the header block; the table is a block of its own
    assert [(b[0].number, b[-1].number) for b in found] == [(11, 15), (18, 51)]
    facts = parse(text)
    assert of_type(facts, NcclTestCommand) == []  # run_nccl_tests.sh -t all_gather
    cfg = of_type(facts, NcclTestConfig)[0]
    assert (cfg.min_bytes, cfg.max_bytes, cfg.warmup_iters, cfg.iters, cfg.agg_iters) == (
        8,
        1073741824,
        50,
        100,
        1,
    )
    assert cfg.graph == 0
    ranks = of_type(facts, NcclTestRank)
    assert [(r.rank, r.host, r.group, r.pid) for r in ranks] == [
        (0, "nccl-gib-test-0", 0, 1444),
        (1, "nccl-gib-test-1", 0, 1415),
    ]
    assert ranks[0].bus_id == "00000000:8F:00.0"
    assert ranks[0].gpu_name == "NVIDIA B200"
    rows = of_type(facts, NcclTestRow)
    assert len(rows) == 28
    zero = rows[0]
    assert (zero.size_bytes, zero.count, zero.dtype, zero.redop, zero.root) == (
        0,
        0,
        "float",
        "none",
        None,
    )
    big = row_at(facts, 1073741824)
    assert (big.time_us, big.algbw_gbytes_s, big.busbw_gbytes_s, big.wrong) == (
        14640.0,
        73.35,
        36.67,
        0,
    )
    assert (big.in_place_time_us, big.in_place_busbw_gbytes_s, big.in_place_wrong) == (
        11892.0,
        45.14,
        0,
    )
    assert big.collective is None
    summary = of_type(facts, NcclTestSummary)[0]
    assert summary.avg_busbw_gbytes_s == 12.5463
    assert (summary.out_of_bounds, summary.out_of_bounds_ok) == (0, True)
    assert summary.avg_busbw_ok is None
    assert summary.nranks == 2  # carried from the header block
    assert summary.rows == 28
    assert summary.cite.line == 50


def test_gh200_slingshot_srun_all_reduce() -> None:
    facts = parse(fixture_text("nccl-tests/gh200-slingshot-cxi-srun-allreduce.txt"))
    cmd = of_type(facts, NcclTestCommand)[0]
    assert (cmd.test, cmd.launcher) == ("all_reduce_perf", "srun")
    assert cmd.args == (("-b", "8"), ("-e", "128M"), ("-f", "2"))
    ranks = of_type(facts, NcclTestRank)
    assert len(ranks) == 8
    assert [r.host for r in ranks].count("nid005099") == 4
    assert ranks[1].bus_id == "00000019:01:00.0"
    assert ranks[4].device == 0
    rows = of_type(facts, NcclTestRow)
    assert len(rows) == 25
    assert {r.collective for r in rows} == {"all_reduce"}
    last = row_at(facts, 134217728)
    assert (last.busbw_gbytes_s, last.in_place_busbw_gbytes_s, last.redop, last.dtype) == (
        132.43,
        131.99,
        "sum",
        "float",
    )
    assert row_at(facts, 262144).time_us == 123.3
    summary = of_type(facts, NcclTestSummary)[0]
    assert (summary.test, summary.avg_busbw_gbytes_s, summary.nranks) == (
        "all_reduce_perf",
        20.7448,
        8,
    )


def test_h200_mpijob_with_openmpi_warnings() -> None:
    text = fixture_text("nccl-tests/h200-dranet-mpijob-allreduce-openmpi-warnings.txt")
    facts = parse(text)
    cmd = of_type(facts, NcclTestCommand)[0]
    assert (cmd.test, cmd.launcher, cmd.n_procs, cmd.cite.line) == (
        "all_reduce_perf",
        "mpirun",
        2,
        2,
    )
    assert ("-e", "8G") in cmd.args
    ranks = of_type(facts, NcclTestRank)
    assert [(r.host, r.bus_id) for r in ranks] == [
        ("nccl-test-dranet-1gpu-1nic-worker-0", "00000000:CC:00.0"),
        ("nccl-test-dranet-1gpu-1nic-worker-1", "00000000:97:00.0"),
    ]
    rows = of_type(facts, NcclTestRow)
    assert len(rows) == 24
    assert {r.collective for r in rows} == {"all_reduce"}  # the command line named the test
    top = row_at(facts, 8589934592)
    assert (top.count, top.time_us, top.busbw_gbytes_s, top.in_place_time_us) == (
        2147483648,
        269368.0,
        31.89,
        269407.0,
    )
    summary = of_type(facts, NcclTestSummary)[0]
    assert (summary.avg_busbw_gbytes_s, summary.out_of_bounds, summary.rows) == (15.5188, 0, 24)
    # the Open MPI warning boxes are not part of any block
    assert all(not (3 <= b[0].number <= 31) for b in blocks(NcclTestsParser(), text)[1:])


# -- other versions ---------------------------------------------------------

NEWEST = """\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41501 on      gpu01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41502 on      gpu01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
     1048576        131072     float    none      -1    25.11   41.76   20.88       0    24.60   42.63   21.31       0
  1073741824     134217728     float    none      -1   5555.3  193.28   96.64       0   5540.1  193.81   96.91       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 58.9345 
#
# Collective test concluded: all_gather_perf
"""  # noqa: E501, W291


def test_newest_header_lines() -> None:
    facts = parse(NEWEST)
    cfg = of_type(facts, NcclTestConfig)[0]
    assert (cfg.test, cfg.tests_version, cfg.nccl_version_code) == (
        "all_gather_perf",
        "2.17.6",
        22807,
    )
    assert row_at(facts, 1073741824).collective == "all_gather"
    assert row_at(facts, 1073741824).busbw_gbytes_s == 96.64
    summary = of_type(facts, NcclTestSummary)[0]
    assert (summary.test, summary.nranks, summary.avg_busbw_gbytes_s) == (
        "all_gather_perf",
        2,
        58.9345,
    )


OLD_ERROR_COLUMN = """\
# nThread 1 nGpus 4 minBytes 8 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  12877 on h0913n-ubuntu device  0 [0x0e] GeForce GTX 1080 Ti
#
#                                                     out-of-place                    in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    12.50    0.00    0.00  0e+00    12.31    0.00    0.00  0e+00
    33554432       8388608   float     sum   3550.1    9.45   16.54  2e-07   3547.9    9.46   16.55  2e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 4.1234
"""  # noqa: E501


def test_old_error_column_and_no_root() -> None:
    facts = parse(OLD_ERROR_COLUMN)
    r = row_at(facts, 33554432)
    assert (r.root, r.time_us, r.busbw_gbytes_s, r.wrong, r.error) == (
        None,
        3550.1,
        16.54,
        None,
        2e-07,
    )
    assert (r.in_place_time_us, r.in_place_error) == (3547.9, 2e-07)
    assert row_at(facts, 8).error == 0.0
    rank = of_type(facts, NcclTestRank)[0]
    assert (rank.group, rank.pci_bus, rank.bus_id, rank.gpu_name) == (
        None,
        14,
        None,
        "GeForce GTX 1080 Ti",
    )
    cfg = of_type(facts, NcclTestConfig)[0]
    assert (cfg.n_gpus, cfg.graph, cfg.agg_iters) == (4, None, None)


FAILED = """\
# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 3740409 on fengyun416 device  0 [0x01] NVIDIA RTX A6000
#  Rank  1 Group  0 Pid 3740409 on fengyun416 device  1 [0x07] NVIDIA RTX A6000
fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL developers / '
 .. fengyun pid 3164639: Test failure common.cu:1007
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     8388608       2097152     float     sum      -1    341.2   24.58   43.02    N/A    347.4   24.15   42.26    N/A
   134217728      33554432     float     sum      -1   1773.7   75.67  132.43     96   1779.6   75.42  131.99  1e+06
# Out of bounds values : 96 FAILED
# Avg bus bandwidth    : 0.123 FAILED
# error: remote process exited or there was a network error
"""  # noqa: E501


def test_failures_not_validated_and_wrong_counts() -> None:
    facts = parse(FAILED)
    cfg = of_type(facts, NcclTestConfig)[0]
    assert cfg.validation is False
    failures = of_type(facts, NcclTestFailure)
    assert [(f.kind, f.host, f.file, f.source_line) for f in failures] == [
        ("nccl", "fengyun", "common.cu", 959),
        ("test", "fengyun", "common.cu", 1007),
        ("error", None, None, None),
    ]
    assert failures[0].message == (
        "internal error - please report this issue to the NCCL developers /"
    )
    assert failures[1].pid == 3164639
    assert failures[2].message == "remote process exited or there was a network error"
    na = row_at(facts, 8388608)
    assert (na.wrong, na.error, na.in_place_wrong, na.busbw_gbytes_s) == (None, None, None, 43.02)
    bad = row_at(facts, 134217728)
    assert (bad.wrong, bad.in_place_wrong) == (96, 1000000)
    summary = of_type(facts, NcclTestSummary)[0]
    assert (summary.out_of_bounds, summary.out_of_bounds_ok) == (96, False)
    assert (summary.avg_busbw_gbytes_s, summary.avg_busbw_ok) == (0.123, False)
    assert summary.nranks == 2


PER_ITERATION = """\
     1048576        262144     float     sum      -1    25.11   41.76   73.08       0    24.10    26.00    25.90     1.20    24.60   42.63   74.60       0    24.00    25.50    25.40     1.10
"""  # noqa: E501


def test_per_iteration_columns_and_a_row_alone() -> None:
    # a data row starts a block of its own (after NCCL lines interrupted the table)
    facts = parse(PER_ITERATION)
    r = of_type(facts, NcclTestRow)[0]
    assert (r.time_us, r.busbw_gbytes_s, r.wrong) == (25.11, 73.08, 0)
    assert (r.in_place_time_us, r.in_place_busbw_gbytes_s, r.in_place_wrong) == (24.60, 74.60, 0)
    assert r.collective is None


def test_table_interrupted_by_nccl_lines() -> None:
    text = NEWEST.replace(
        "  1073741824",
        "gpu01:41501:41600 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
        "  1073741824",
    )
    found = blocks(NcclTestsParser(), text)
    assert len(found) == 2
    assert not any("NCCL INFO" in line.raw for b in found for line in b)
    facts = parse(text)
    assert row_at(facts, 1073741824).collective == "all_gather"  # carried from the first block
    assert of_type(facts, NcclTestSummary)[0].rows == 2


def test_second_run_resets_context() -> None:
    facts = parse(NEWEST + "\nmpirun -np 2 ./build/sendrecv_perf -b 8 -e 8\n" + FAILED)
    commands = of_type(facts, NcclTestCommand)
    assert [c.test for c in commands] == ["sendrecv_perf"]
    summaries = of_type(facts, NcclTestSummary)
    assert [s.test for s in summaries] == ["all_gather_perf", "sendrecv_perf"]
    assert {r.collective for r in of_type(facts, NcclTestRow) if r.size_bytes == 134217728} == {
        "sendrecv"
    }


# -- negatives ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Running all_reduce_perf benchmark for the report",
        "UserWarning: an out-of-place operation was used",
        "Using devices: cuda:0, cuda:1",
        "host:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
        "NCCL version 2.26.6+cuda12.8",
        "    total     sum of all values",
    ],
)
def test_lines_that_do_not_start_a_block(line: str) -> None:
    (only,) = lines_of(line)
    assert NcclTestsParser().starts(only) is False


def test_other_kinds_fixtures_start_no_block() -> None:
    parser = NcclTestsParser()
    for kind in ("nccl-log", "nvidia-smi", "ibstat", "xid", "torchrun", "topo", "collect_env"):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            assert blocks(parser, text) == [], path.name


def test_nccl_log_lines_inside_output_are_left_to_nccl_log() -> None:
    text = fixture_text("nccl-tests/b200-gke-gib-allgather-kubectl.txt")
    taken = {line.number for b in blocks(NcclTestsParser(), text) for line in b}
    banner = next(i for i, raw in enumerate(text.splitlines(), 1) if raw.startswith("NCCL version"))
    assert banner not in taken


def test_a_command_and_footers_pasted_as_inline_code() -> None:
    """Markdown's backticks around a pasted command or footer are not part of it; every footer
    of a block is kept (a run without MPI prints one per process)."""
    facts = parse(
        "`mpirun -H 10.0.0.1,10.0.0.2 -np 2 ./all_reduce_perf -b 8 -e 128M -f 128 -g 2`\n"
        "`# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 3.94145 \n"
        "#\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 3.94156 `\n"
    )
    [command] = of_type(facts, NcclTestCommand)
    assert (command.launcher, command.n_procs, command.args[-1]) == ("mpirun", 2, ("-g", "2"))
    summaries = of_type(facts, NcclTestSummary)
    assert [(s.cite.line, s.avg_busbw_gbytes_s) for s in summaries] == [(3, 3.94145), (6, 3.94156)]


def test_the_command_lines_settings_are_read_with_it() -> None:
    """This parser claims the command line, so the settings on it are its to read: a
    ``-x NCCL_P2P_DISABLE=1`` or an inline ``NCCL_CUMEM_ENABLE=0`` steers the test."""
    text = (
        "NCCL_DEBUG=INFO mpirun -np 16 -x NCCL_P2P_DISABLE=1 -x LD_PRELOAD=/opt/nccl/libnccl.so.2"
        " ./build/alltoall_perf -b 8 -e 128M -f 2 -g 1\n"
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
    )
    facts = parse(text)
    assert of_type(facts, NcclTestCommand)[0].test == "alltoall_perf"
    assert [(e.name, e.value, e.form, e.cite.line) for e in of_type(facts, EnvVar)] == [
        ("NCCL_DEBUG", "INFO", "inline", 1),
        ("NCCL_P2P_DISABLE", "1", "inline", 1),
        ("LD_PRELOAD", "/opt/nccl/libnccl.so.2", "inline", 1),
    ]


def test_a_command_line_without_settings_gives_none() -> None:
    facts = parse("mpirun -np 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1\n")
    assert of_type(facts, NcclTestCommand)[0].n_procs == 8
    assert of_type(facts, EnvVar) == []


def test_rows_without_a_redop_column_of_old_builds() -> None:
    """Builds of 2019 printed all_gather without a redop column; the row keeps its sizes and
    both maximum errors, its redop ``None``; a line of seven numbers alone starts no block."""
    text = (
        "# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 4294967296 step: 2(factor) warmup "
        "iters: 5 iters: 100 validation: 1\n"
        "#                                             out-of-place                       "
        "in-place\n"
        "#       size         count    type     time   algbw   busbw  error     time   algbw   "
        "busbw  error\n"
        "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
        "(GB/s)\n"
        "  1073741824      33554432   float     7391  145.27  127.11  0e+00     7402  145.06  "
        "126.93  0e+00\n"
        "  4294967296     134217728   float    29122  129.05  129.05  1e+00    29169  128.84  "
        "128.84  1e+00\n"
        "# Out of bounds values : 2 FAILED\n"
        "# Avg bus bandwidth    : 128.028\n"
    )
    facts = parse(text)
    small, big = row_at(facts, 1073741824), row_at(facts, 4294967296)
    assert (big.count, big.dtype, big.redop, big.time_us, big.busbw_gbytes_s) == (
        134217728,
        "float",
        None,
        29122.0,
        129.05,
    )
    assert (big.error, big.in_place_error, big.wrong) == (1.0, 1.0, None)
    assert (small.corrupt, big.corrupt) == (False, True)
    assert (
        blocks(
            NcclTestsParser(),
            "  4294967296     134217728   float    29122  129.05  "
            "129.05  1e+00    29169  128.84  128.84  1e+00\n",
        )
        == []
    )
