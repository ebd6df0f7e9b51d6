"""Facts of the GPU/NIC topology: ``nvidia-smi topo -m`` and ``nvidia-smi nvlink``.

A topo matrix yields one :class:`TopoMatrix` (the whole table) plus row-level
facts that rules can read without walking the matrix: one :class:`TopoLink`
per pair of devices (the first row that gives the pair is cited), one
:class:`TopoGpu` per GPU row (its CPU/NUMA affinity) and one :class:`TopoNic`
per NIC (its device name, from the NIC Legend or the old-style header).
A legend-only fragment yields only :class:`TopoNic` facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoMatrix(Fact):
    """One ``nvidia-smi topo -m`` matrix (cites its header row).

    ``devices`` are the column names in order (``GPU0``.., ``NIC0``.., or
    ``mlx5_0`` in old drivers); ``links`` every cell as (row, column, link)
    except the ``X`` diagonal, links as printed (``NV12``, ``SYS``, ``PIX``...);
    ``nic_names`` the NIC Legend as (``NIC0``, ``mlx5_2``).
    """

    devices: tuple[str, ...]
    gpu_count: int
    nic_count: int
    links: tuple[tuple[str, str, str], ...]
    nic_names: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoLink(Fact):
    """The connection between two devices of a topo matrix (one per unordered pair).

    ``a``/``b`` are matrix labels (``GPU0``, ``NIC3``); ``a_nic``/``b_nic`` the
    NIC device name (``mlx5_2``) when that end is a NIC whose name is known.
    ``nvlinks`` is the bonded NVLink count of ``NV#`` links, else ``None``.
    """

    a: str
    b: str
    link: str
    nvlinks: int | None
    a_nic: str | None = None
    b_nic: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoGpu(Fact):
    """One GPU row's affinities in a topo matrix (cites the row).

    ``cpu_affinity``/``numa_affinity`` are the printed lists (``0-55,112-167``);
    ``cpu_count`` counts that list; ``numa_node`` is set when the affinity is
    a single node; ``gpu_numa_id`` is the GPU's own NUMA node (Grace systems).
    """

    gpu: str
    index: int | None
    cpu_affinity: str | None
    cpu_count: int | None
    numa_affinity: str | None
    numa_node: int | None
    gpu_numa_id: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoNic(Fact):
    """A NIC of a topo matrix: its label and device name (``NIC0`` -> ``mlx5_2``)."""

    nic: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NvLink(Fact):
    """One link of ``nvidia-smi nvlink -s``: active with a speed, or ``<inactive>``.

    ``speed_gbytes_s`` is in GB/s (gigabytes) as nvidia-smi prints it;
    ``active`` is ``None`` when the state text could not be read (cut lines).
    ``gpu_index``/``gpu_name``/``uuid`` come from the ``GPU n:`` header above
    (``None`` for a fragment without one; ``uuid`` ``None`` when redacted).
    """

    gpu_index: int | None
    gpu_name: str | None
    uuid: str | None
    link: int
    active: bool | None
    speed_gbytes_s: float | None
    state_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NvLinkAllInactive(Fact):
    """A GPU for which NVML reports no NVLink information because all links are inactive."""

    gpu_index: int | None
    gpu_name: str | None
    uuid: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NvLinkErrorCount(Fact):
    """One error counter of ``nvidia-smi nvlink -e`` (``Link 0: CRC Errors: 65535``).

    ``counter`` is the name as printed; ``count`` the integer value, ``None``
    when the value is not an integer (``value_text`` keeps it).
    """

    gpu_index: int | None
    gpu_name: str | None
    uuid: str | None
    link: int
    counter: str
    count: int | None
    value_text: str
