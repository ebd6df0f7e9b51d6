"""Units are named once: every bandwidth name spells its unit, and the conversions are pinned."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import nccl_doctor
from nccl_doctor.knowledge.units import gbytes_s, mbytes_s_to_gbytes_s
from nccl_doctor.probe.formulas import algbw_gbytes_s, busbw_gbytes_s

PACKAGE = Path(nccl_doctor.__file__).parent
#: Suffixes that read the same for bits and bytes once lower-cased.
_AMBIGUOUS = ("gbps", "mbps", "kbps", "tbps")
#: Old names kept as deprecated properties while their readers move; (file, name). None is
#: left: every reader reads the new names. The list only shrinks.
OLD_NAMES: frozenset[tuple[str, str]] = frozenset()


def _names(tree: ast.AST) -> set[str]:
    """The identifiers a module defines or reads: functions, classes, arguments, names, fields.

    Keyword arguments of calls are left out: they name a parameter (checked
    where it is defined) or the key of a record a file format fixes.
    """
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def _ambiguous(name: str) -> bool:
    return name.lower().endswith(_AMBIGUOUS)


def _offenders() -> set[tuple[str, str]]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.update((rel, n) for n in _names(tree) if _ambiguous(n))
    return found


def test_no_name_ends_in_a_bare_gbps() -> None:
    assert _offenders() - OLD_NAMES == set()


def test_the_old_names_list_only_shrinks() -> None:
    """An old name nobody uses any more must leave the list (and its property the fact)."""
    assert OLD_NAMES - _offenders() == set()


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("busbw_gbps", True),
        ("busbw_GBps", True),
        ("rate_Gbps", True),
        ("speed_mbps", True),
        ("busbw_gbytes_s", False),
        ("rate_gbits_s", False),
        ("speed_mbits_s", False),
    ],
)
def test_the_checker_tells_a_bare_unit_from_a_spelt_one(name: str, bad: bool) -> None:
    assert _ambiguous(name) is bad
    assert (name in _names(ast.parse(f"def f({name}): return x.{name}"))) is True


def test_the_conversions() -> None:
    # 1 GB in 10 ms is 100 GB/s (decimal gigabytes, as nccl-tests and the probe quote them)
    assert gbytes_s(10**9, 0.01) == pytest.approx(100.0)
    assert gbytes_s(2 * 10**9, 1.0) == 2.0
    assert gbytes_s(10**9, 0.0) == 0.0
    assert gbytes_s(10**9, -1.0) == 0.0
    # NVML's NVLink speed field is MB/s: 26562 is nvidia-smi's "26.562 GB/s"
    assert f"{mbytes_s_to_gbytes_s(26562):.3f}" == "26.562"
    assert mbytes_s_to_gbytes_s(50_000) == 50.0
    # the probe's formulas are the same conversion, times nccl-tests' bus factor
    assert algbw_gbytes_s(10**9, 0.01) == gbytes_s(10**9, 0.01)
    assert busbw_gbytes_s("all_reduce", 8, 10**9, 0.01) == pytest.approx(100.0 * 2 * 7 / 8)


def test_sizes_convert_to_mib_in_powers_of_1024() -> None:
    from nccl_doctor.knowledge.units import to_mib

    assert to_mib(64, "M" + "iB") == 64.0
    assert to_mib(2.0, "GB") == 2048.0
    assert to_mib(67108864, "bytes") == 64.0
    assert to_mib(1.0, "parsecs") is None
    assert to_mib(None, "GiB") is None
