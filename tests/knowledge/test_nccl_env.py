"""The environment-variable tables: lookups, misspellings, value checks, harmful values."""

from __future__ import annotations

import re

import pytest

from nccl_doctor.knowledge.nccl_env import (
    FAMILIES,
    NOT_READ,
    VARS,
    NcclVar,
    closest,
    harm,
    is_known_family,
    lookup,
    validate,
)


def _get(name: str) -> NcclVar:
    var = lookup(name)
    assert var is not None, name
    return var


def test_table_size_and_uniqueness() -> None:
    names = [v.name for v in VARS]
    assert len(names) == len(set(names))
    assert sum(v.origin == "nccl" for v in VARS) >= 250
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", v.name) for v in VARS)


def test_table_rows_are_consistent() -> None:
    for var in VARS:
        assert var.kind in ("bool", "int", "enum", "list", "string", "size"), var.name
        if var.kind == "enum":
            assert var.values, var.name
        if var.removed_in is not None:
            assert var.deprecated, var.name
        if var.replacement is not None:
            assert var.deprecated, var.name
            assert lookup(var.replacement) is not None, var.replacement
        if var.harmful_values:
            assert var.harmful_when, var.name
        if var.default is not None and var.kind in ("bool", "int", "size"):
            assert validate(var.name, var.default) is None, var.name
        if var.default is not None and var.kind == "enum":
            assert validate(var.name, var.default) is None, var.name
        for value in var.harmful_values:
            if value:
                assert validate(var.name, value) is None, (var.name, value)


def test_core_nccl_variables() -> None:
    assert _get("NCCL_SOCKET_IFNAME").syntax == "iflist"
    assert _get("NCCL_IB_HCA").syntax == "iflist"
    assert _get("NCCL_IB_TIMEOUT").default == "20"
    assert _get("NCCL_IB_RETRY_CNT").default == "7"
    assert _get("NCCL_NVLS_ENABLE").since_version == "2.17.1"
    assert _get("NCCL_CUMEM_ENABLE").since_version == "2.18.1"
    assert _get("NCCL_SOCKET_RETRY_CNT").default == "34"
    assert _get("NCCL_WORK_FIFO_BYTES").default == "1048576"
    assert _get("NCCL_DEBUG").values == ("VERSION", "WARN", "INFO", "ABORT", "TRACE")
    assert "NVLSTree" in _get("NCCL_ALGO").values
    assert "PAT" in _get("NCCL_ALGO").values
    assert _get("NCCL_PROTO").values == ("LL", "LL128", "Simple")
    assert _get("NCCL_P2P_LEVEL").case_sensitive
    assert "SYS" in _get("NCCL_P2P_LEVEL").values
    assert _get("NCCL_P2P_DISABLE").debug_only
    assert _get("NCCL_SOCKET_IFNAME").since_version is None  # read before 2.3.5


def test_removed_and_renamed_variables() -> None:
    assert _get("NCCL_LL_THRESHOLD").removed_in == "2.5.6"
    assert _get("NCCL_LL_THRESHOLD").replacement == "NCCL_PROTO"
    assert _get("NCCL_RINGS").replacement == "NCCL_GRAPH_FILE"
    assert _get("NCCL_MNNVL").replacement == "NCCL_MNNVL_ENABLE"
    assert _get("NCCL_MAX_NRINGS").deprecated
    assert _get("NCCL_MAX_NRINGS").removed_in is None
    assert _get("NCCL_WORK_FIFO_DEPTH").replacement == "NCCL_WORK_FIFO_BYTES"


def test_torch_variables_and_aliases() -> None:
    aeh = _get("TORCH_NCCL_ASYNC_ERROR_HANDLING")
    assert aeh.default == "3"
    assert aeh.origin == "torch"
    old = _get("NCCL_ASYNC_ERROR_HANDLING")
    assert old.deprecated
    assert old.replacement == "TORCH_NCCL_ASYNC_ERROR_HANDLING"
    for alias, new in (
        ("NCCL_BLOCKING_WAIT", "TORCH_NCCL_BLOCKING_WAIT"),
        ("NCCL_DESYNC_DEBUG", "TORCH_NCCL_DESYNC_DEBUG"),
        ("NCCL_ENABLE_TIMING", "TORCH_NCCL_ENABLE_TIMING"),
        ("TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"),
        ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE"),
    ):
        assert _get(alias).replacement == new
    assert _get("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC").kind == "int"
    assert _get("TORCH_NCCL_NONBLOCKING_TIMEOUT").default == "1800"
    assert _get("TORCH_DISTRIBUTED_DEBUG").values == ("OFF", "INFO", "DETAIL")
    assert _get("CUDA_VISIBLE_DEVICES").origin == "cuda"
    assert _get("MASTER_ADDR").origin == "launcher"


def test_lookup_is_exact() -> None:
    assert lookup("nccl_debug") is None
    assert lookup(" NCCL_DEBUG ") is _get("NCCL_DEBUG")
    assert lookup("") is None
    assert lookup(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("NCCL_SOCKET_IFNAMES", "NCCL_SOCKET_IFNAME"),
        ("NCCL_IB_DISABLED", "NCCL_IB_DISABLE"),
        ("NCCL_P2P_DISABLED", "NCCL_P2P_DISABLE"),
        ("nccl_debug", "NCCL_DEBUG"),
        ("NCCL_DEBUG_SUBSYSTEM", "NCCL_DEBUG_SUBSYS"),
        ("NCCL_IB_HCAS", "NCCL_IB_HCA"),
        ("TORCH_NCCL_BLOCKING_WAITS", "TORCH_NCCL_BLOCKING_WAIT"),
        ("TORCH_NCCL_ASYNC_ERROR_HANDELING", "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
        ("NCCL_NET_GDR_LEVELS", "NCCL_NET_GDR_LEVEL"),
    ],
)
def test_closest_finds_the_intended_name(typo: str, meant: str) -> None:
    assert closest(typo) == meant


def test_closest_declines() -> None:
    assert closest("NCCL_SOCKET_IFNAME") is None  # known already
    assert closest("NCCL_TIMEOUT") is None  # nothing reads it; see NOT_READ
    assert "NCCL_TIMEOUT" in NOT_READ
    assert closest("PATH") is None
    assert closest("COMPLETELY_UNRELATED_THING") is None
    assert closest("") is None


def test_families() -> None:
    assert "NCCL_" in FAMILIES
    assert is_known_family("NCCL_WHATEVER")
    assert is_known_family("TORCH_NCCL_X")
    assert is_known_family("TORCH_DISTRIBUTED_DEBUG")
    assert not is_known_family("CUDA_VISIBLE_DEVICES")
    assert not is_known_family("PATH")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NCCL_ALGO", "Ring,Tree"),
        ("NCCL_ALGO", "ring"),
        ("NCCL_ALGO", "^NVLS,CollnetDirect"),
        ("NCCL_ALGO", "allreduce:tree;allgather:ring"),
        ("NCCL_PROTO", "^LL128;allreduce:LL128"),
        ("NCCL_PROTO", "Simple"),
        ("NCCL_SOCKET_IFNAME", "^docker,lo"),
        ("NCCL_SOCKET_IFNAME", "=eth0,eth1"),
        ("NCCL_SOCKET_IFNAME", "^=docker0"),
        ("NCCL_SOCKET_IFNAME", "eth"),
        ("NCCL_IB_HCA", "mlx5_0:1,mlx5_1"),
        ("NCCL_IB_HCA", "=mlx5_0"),
        ("NCCL_DEBUG", "INFO"),
        ("NCCL_DEBUG", "warn"),
        ("NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH"),
        ("NCCL_DEBUG_SUBSYS", "^INIT"),
        ("NCCL_P2P_LEVEL", "NVL"),
        ("NCCL_P2P_LEVEL", "5"),
        ("NCCL_NET_GDR_LEVEL", "PHB"),
        ("NCCL_P2P_DISABLE", "1"),
        ("NCCL_BUFFSIZE", "4194304"),
        ("NCCL_BUFFSIZE", "0x400000"),
        ("NCCL_P2P_DISABLE", "01"),
        ("NCCL_P2P_DISABLE", "0x1"),
        ("NCCL_IB_GID_INDEX", "3"),
        ("NCCL_CROSS_NIC", "1"),
        ("NCCL_SOCKET_FAMILY", "AF_INET6"),
        ("NCCL_CTA_POLICY", "EFFICIENCY|ZERO"),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        ("TORCH_DISTRIBUTED_DEBUG", "DETAIL"),
        ("NCCL_TOPO_FILE", "/etc/nccl/topo.xml"),
        ("NCCL_DEBUG", ""),
        ("NCCL_UNKNOWN_THING", "whatever"),
    ],
)
def test_valid_values(name: str, value: str) -> None:
    assert validate(name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "phrase"),
    [
        ("NCCL_ALGO", "Bogus", "unknown value 'Bogus'"),
        ("NCCL_ALGO", "Ring;Tree", "need a 'collective:' prefix"),
        ("NCCL_ALGO", "allreduc:ring", "unknown collective"),
        ("NCCL_ALGO", "Ring,,Tree", "empty item"),
        ("NCCL_PROTO", "LL256", "unknown value"),
        ("NCCL_P2P_DISABLE", "true", "reads it as 0"),
        ("NCCL_IB_DISABLE", "yes", "reads it as 0"),
        ("NCCL_P2P_DISABLE", "2", "expects 0 or 1"),
        ("NCCL_BUFFSIZE", "4M", "reads only '4'"),
        ("NCCL_BUFFSIZE", "08", "reads only '0'"),
        ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "ten", "not a number"),
        ("NCCL_NTHREADS", "many", "not an integer"),
        ("NCCL_SOCKET_IFNAME", "eth0,^lo", "only count at the start"),
        ("NCCL_SOCKET_IFNAME", "eth0, eth1 x", "has a space"),
        ("NCCL_IB_HCA", "mlx5_0:x", "is not a number"),
        ("NCCL_DEBUG", "DEBUG", "unknown value 'DEBUG'"),
        ("NCCL_DEBUG_SUBSYS", "INIT,FOO", "unknown value 'FOO'"),
        ("NCCL_P2P_LEVEL", "nvl", "case-sensitive"),
        ("NCCL_SOCKET_FAMILY", "ipv4", "unknown value"),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "4", "unknown value"),
        ("TORCH_NCCL_BLOCKING_WAIT", "2", "expects 0 or 1"),
        ("TORCH_DISTRIBUTED_DEBUG", "VERBOSE", "unknown value"),
    ],
)
def test_invalid_values(name: str, value: str, phrase: str) -> None:
    problem = validate(name, value)
    assert problem is not None
    assert phrase in problem
    assert problem.startswith(name)
    assert "\n" not in problem


def test_harmful_values() -> None:
    hint = harm("NCCL_P2P_DISABLE", "1")
    assert hint is not None
    assert "P2P" in hint
    assert harm("NCCL_P2P_DISABLE", "0") is None
    assert harm("NCCL_IB_DISABLE", "1") is not None
    assert harm("NCCL_SOCKET_IFNAME", "lo") is not None
    assert harm("NCCL_SOCKET_IFNAME", "eth0") is None
    assert harm("NCCL_NVLS_ENABLE", "0") is not None
    assert harm("CUDA_VISIBLE_DEVICES", "NoDevFiles") is not None
    assert harm("CUDA_VISIBLE_DEVICES", "0,1") is None
    assert harm("NCCL_ASYNC_ERROR_HANDLING", "0") is not None
    assert harm("NCCL_NOT_A_VAR", "1") is None
