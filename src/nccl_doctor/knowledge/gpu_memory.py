"""Total memory of common data-centre GPU models, in MiB as nvidia-smi prints it.

Only for pictures: where the evidence names a GPU's model (collect_env's
``GPU 0: NVIDIA H200``) but not its memory, the HTML report draws used memory
against this total and labels it nominal. Rules never read it.

Sources: the ``Memory-Usage`` column of real nvidia-smi tables kept in
``tests/fixtures`` (H200 143771 MiB, driver 580; H100 80GB HBM3 81559 MiB and
L40S 46068 MiB, driver 570; Tesla V100-PCIE-16GB 16160 MiB), and the A100's
80 GiB / 40 GiB as drivers since 450 print them (81920 / 40960 MiB). A model
not listed here gets no total: better no scale than a wrong one.
"""

from __future__ import annotations

import re

#: (model pattern, total MiB), most specific first.
NOMINAL_MIB: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\bH200\b", re.IGNORECASE), 143771),
    (re.compile(r"\bH100 80GB HBM3\b", re.IGNORECASE), 81559),
    (re.compile(r"\bL40S\b", re.IGNORECASE), 46068),
    (re.compile(r"\bA100\b.{0,80}?\b80\s?GB\b", re.IGNORECASE), 81920),
    (re.compile(r"\bA100\b.{0,80}?\b40\s?GB\b", re.IGNORECASE), 40960),
    (re.compile(r"\bV100-PCIE-16GB\b", re.IGNORECASE), 16160),
)


def nominal_total_mib(model: str | None) -> int | None:
    """The total memory nvidia-smi prints for ``model``, or ``None`` when not known here."""
    if not model:
        return None
    return next((mib for pattern, mib in NOMINAL_MIB if pattern.search(model)), None)
