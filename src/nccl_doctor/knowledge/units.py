"""Units, named once: what a quantity's name must end with, and the conversions.

A name that holds a bandwidth or a link rate (a field, a variable, a
function, a key of the JSON report) ends with its unit, spelt out, because
``gbps`` lower-cased reads the same for gigabits and gigabytes, and both
occur: link rates are in bits, transfers in bytes.

- ``_gbytes_s``: gigabytes per second, 10**9 bytes/s (GB/s). Probe and
  nccl-tests bandwidths (``busbw_gbytes_s``), NVLink speeds as nvidia-smi
  prints them (``26.562 GB/s``), a GPU model's expected figures.
- ``_gbits_s``: gigabits per second, 10**9 bits/s (Gb/s). InfiniBand and
  Ethernet link rates (ibstat's ``Rate: 200``, ``100 Gb/sec (4X EDR)``,
  ibv_devinfo's ``active_speed: 25.0 Gbps`` per lane).
- ``_mbits_s`` / ``_mbytes_s``: the same, 10**6 (NCCL's ``speed=400000`` of an
  IB device is Mb/s; NVML's NVLink speed field is MB/s).
- Sizes: ``_bytes``, ``_mib`` (2**20 bytes), ``_gib`` (2**30); times:
  ``_s``, ``_ms``, ``_us``.

No name ends in a bare ``gbps`` or ``mbps`` (``tests/knowledge/test_units.py``
fails one). Files keep the keys their format was published with: the probe
result file (schema 1, ``docs/probe.md``) writes ``algbw_GBps``,
``busbw_GBps`` and ``expected_GBps`` (GB/s); a saved live bundle wrote an
NVLink's ``speed_mbps`` (MB/s) before it wrote ``speed_mbytes_s``. The code
reads those keys into the names above at one place each.
"""

from __future__ import annotations

#: Decimal prefixes, as bandwidths and link rates are quoted.
GIGA = 10**9
MEGA = 10**6


def gbytes_s(size_bytes: float, seconds: float) -> float:
    """``size_bytes`` moved in ``seconds``, in GB/s (0 for a time that is not positive)."""
    return size_bytes / seconds / GIGA if seconds > 0 else 0.0


def mbytes_s_to_gbytes_s(speed_mbytes_s: float) -> float:
    """NVML's NVLink speed (MB/s) as GB/s (``26562`` is 26.562)."""
    return speed_mbytes_s * MEGA / GIGA


#: A size unit as tools print it (lower-cased: ``GiB``, ``GB``, ``bytes``) in MiB. Memory and
#: file sizes are powers of 1024 whichever way the tool spells them (df -h's ``64M``).
MIB_PER_UNIT = {
    "b": 1 / (1024 * 1024),
    "bytes": 1 / (1024 * 1024),
    "kib": 1 / 1024,
    "kb": 1 / 1024,
    "mib": 1.0,
    "mb": 1.0,
    "gib": 1024.0,
    "gb": 1024.0,
    "tib": 1024.0 * 1024,
    "tb": 1024.0 * 1024,
}


def to_mib(value: float | None, unit: str | None) -> float | None:
    """``value`` ``unit`` (``2.0``, ``GiB``) in MiB, or ``None`` for an unknown unit."""
    factor = MIB_PER_UNIT.get((unit or "").lower())
    if value is None or factor is None:
        return None
    return round(value * factor, 3)
