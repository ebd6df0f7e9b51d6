"""``python -m torch.utils.collect_env`` and its forks (vLLM's), from 2019 to today.

Layouts read: torch's ``Key: value`` lines (python2.7-era ones with
``Yes``/``No``, newer ones with ``Is XPU available``, ``Caching allocator
config``), vLLM's ``====``-boxed sections with ``Key   : value`` lines and
its ``GPU Topology:`` matrix, GPU lists on one line or on the lines after an
empty ``GPU models and configuration:``, the lscpu dump (old and new
util-linux layouts), and ``[pip3]``/``[conda]`` package rows. A block may
also start at the package rows (a pasted tail). vLLM's ``NAME=value``
environment lines end the block, so the env parser reads them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.software import CpuInfo, PythonPackage, SoftwareVersions
from nccl_doctor.parse._blocktext import (
    StatefulBlockParser,
    na,
    strip_ansi,
    to_bool,
    to_int,
    trailing_blanks,
)
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.topo import parse_topo_lines

_START = LazyPattern(
    r"^\s*(?:Collecting environment information|PyTorch version\s*:"
    r"|Versions of relevant libraries:?\s*$|\[(?:pip[23]?|conda|uv)\] \S)"
)
_BANNER = LazyPattern(r"^\s*={10,}\s*$")
_PACKAGE = LazyPattern(r"^\s*\[(?P<manager>pip[23]?|conda|uv)\] (?P<rest>.*)$")
_ENV_VAR = LazyPattern(r"^[A-Z_][A-Z0-9_]*=")
_KEY_VALUE = LazyPattern(r"^(?P<key>[A-Za-z][\w .()/,+-]{0,60}?)\s*:(?P<value>(?:\s.*)?)$")
_CPU_KEY_VALUE = LazyPattern(r"^\s*(?P<key>[A-Za-z][\w .()/,+-]{0,60}?)\s*:(?P<value>.*)$")
_WMIC = LazyPattern(r"^[A-Z][A-Za-z0-9]*=")
_GPU_ROW = LazyPattern(r"^\s*GPU (?P<index>\d{1,4}): (?P<name>\S.*)$")
_PATH = LazyPattern(r"^\s*(?:/|[A-Za-z]:\\)\S")
_DASHES = LazyPattern(r"^\s*--[\w ]+--\s*$")
#: MIG devices under a GPU (``  MIG 3g.40gb     Device  0:``) and XPU device lists (``* [0] ...``).
_SUB_DEVICE = LazyPattern(r"^\s+MIG \S+\s+Device\s+\d+:|^\s*\* \[\d+\]")
_LEGEND = LazyPattern(r"^\s*(?:\S{1,8}\s*=\s+\S|NIC\d+\s*:\s*\S+\s*$)")
_MATRIX = LazyPattern(r"^\s*(?:GPU\d+|NIC\d+|mlx\d+_\w+)\s")
_PY_VERSION = LazyPattern(r"^(\d+\.\d+(?:\.\d+)?)")
_NUMA_CPUS = LazyPattern(r"^NUMA node(?P<node>\d{1,4}) CPU\(s\)$")
_NCCL = LazyPattern(r"^(?:nvidia-nccl-cu\d+|nccl|libnccl\d*)$", re.IGNORECASE)
_SKIP_ROWS = frozenset({"could not collect", "no relevant packages"})
_MAX_BLANKS = 3

#: Keys whose value may be empty in a well-formed output.
_EMPTY_OK = frozenset(
    {
        "gpu models and configuration",
        "cuda_module_loading set to",
        "caching allocator config",
        "cudnn version",
        "vllm build flags",
        "gpu topology",
        "intel gpu models",
        "cpu",
        "legend",
        "nic legend",
    }
)
_NOT_A_KEY = LazyPattern(
    r"(?:Error|Exception|Warning|Interrupt)$|^NCCL\b|\b(?:INFO|WARN|WARNING|ERROR)\b"
)
_VLLM_KEYS = frozenset(
    {"rocm version", "neuron sdk version", "vllm version", "vllm build flags", "gpu topology"}
)
_TITLES = {"cpu info": "cpu", "versions of relevant libraries": "libs", "vllm info": "vllm"}
_TEXT_FIELDS = {
    "pytorch version": "torch_version",
    "cuda used to build pytorch": "cuda_used_to_build_torch",
    "rocm used to build pytorch": "rocm_used_to_build_torch",
    "os": "os",
    "gcc version": "gcc_version",
    "clang version": "clang_version",
    "cmake version": "cmake_version",
    "libc version": "libc_version",
    "python platform": "python_platform",
    "cuda runtime version": "cuda_runtime_version",
    "cuda_module_loading set to": "cuda_module_loading",
    "nvidia driver version": "nvidia_driver_version",
    "hip runtime version": "hip_runtime_version",
    "miopen runtime version": "miopen_runtime_version",
    "caching allocator config": "caching_allocator_config",
}
_BOOL_FIELDS = {
    "is debug build": "is_debug_build",
    "is cuda available": "is_cuda_available",
    "is xpu available": "is_xpu_available",
    "is xnnpack available": "is_xnnpack_available",
}
_CPU_INT_FIELDS = {
    "cpu(s)": "cpu_count",
    "socket(s)": "sockets",
    "core(s) per socket": "cores_per_socket",
    "thread(s) per core": "threads_per_core",
    "numa node(s)": "numa_nodes",
}
_CPU_TEXT_FIELDS = {
    "architecture": "architecture",
    "model name": "model_name",
    "vendor id": "vendor_id",
    "hypervisor vendor": "hypervisor_vendor",
    "virtualization": "virtualization",
    "virtualization type": "virtualization_type",
}


@dataclass(frozen=True, slots=True)
class _State:
    """The section a collect_env block is in.

    ``banner`` is 1 after an opening ``====`` line and 2 after its title.
    """

    phase: str
    banner: int = 0
    cpu_first: bool = False


def _section(text: str, phase: str) -> str | None:
    """The phase a heading line moves to (``CPU:``, ``Versions of relevant libraries:``)."""
    head = text.strip().rstrip(":").strip().lower()
    if head == "cpu" and text.strip().endswith(":"):
        return "cpu"
    if head == "versions of relevant libraries":
        return "libs"
    return phase if head in _EMPTY_OK else None


def _gpu_name(text: str) -> str:
    """A GPU name without the `` (UUID: ...)`` nvidia-smi -L appends."""
    at = text.find(" (UUID:")
    return (text[:at] if at >= 0 else text).strip()


def _title(text: str) -> str | None:
    """The phase a vLLM section title names (``CPU Info``, ``Environment Variables``...)."""
    title = text.strip().lower()
    return "env" if title == "environment variables" else _TITLES.get(title)


def _topo_line(text: str) -> bool:
    """A line of an embedded ``nvidia-smi topo -m`` (header, row, legend)."""
    return bool(
        "CPU Affinity" in text
        or _MATRIX.match(text)
        or _LEGEND.match(text)
        or text.strip() in ("Legend:", "NIC Legend:")
    )


def _key_value_ok(text: str) -> bool:
    """A ``Key: value`` line with a value, or one of the keys that may be empty.

    Exception lines (``RuntimeError: ...``) and log lines (``NCCL INFO x : y``)
    that follow a paste are not collect_env's.
    """
    m = _KEY_VALUE.match(text.lstrip())
    if m is None or _NOT_A_KEY.search(m["key"]):
        return False
    return bool(m["value"].strip()) or m["key"].strip().lower() in _EMPTY_OK


class CollectEnvParser(StatefulBlockParser[_State]):
    """Parses collect_env outputs into software, package, CPU and topology facts."""

    kind = "collect_env"
    anchors = (
        "Collecting environment information",
        "PyTorch version",
        "Versions of relevant libraries",
        "[pip3] ",
        "[pip2] ",
        "[pip] ",
        "[conda] ",
        "[uv] ",
    )

    def starts(self, line: Line) -> bool:
        """The banner line, ``PyTorch version:``, the libraries heading or a package row."""
        return _START.match(line.text) is not None

    def _initial(self, first: Line) -> _State:
        return _State("libs" if _PACKAGE.match(first.text) else "head")

    def _step(self, state: _State, line: Line) -> _State | None:
        text = strip_ansi(line.text).rstrip()
        if not text.strip():
            return state
        if _BANNER.match(text):
            return dataclasses.replace(state, banner=0 if state.banner == 2 else 1)
        if state.banner == 1:
            return _State(_title(text) or "head", banner=2)
        if _PACKAGE.match(text):
            return _State("libs")
        m = _KEY_VALUE.match(text) if state.phase == "libs" else None
        if m is not None and m["key"].strip().lower() in _VLLM_KEYS:
            return _State("vllm")  # vLLM 0.4-0.6: its info follows the packages directly
        if state.phase in ("env", "libs") or _ENV_VAR.match(text):
            return None
        if (phase := _section(text, state.phase)) is not None:
            return _State(phase, cpu_first=phase == "cpu")
        if state.phase == "cpu":
            if state.cpu_first or _WMIC.match(text):
                return _State("cpu")
            m = _CPU_KEY_VALUE.match(text)
            return state if m and (m["value"].strip() or m["key"].startswith("Caches")) else None
        if _key_value_ok(text) or _GPU_ROW.match(text) or _SUB_DEVICE.match(text):
            return _State(state.phase)
        if _PATH.match(text) or _DASHES.match(text):
            return _State(state.phase)
        if state.phase == "vllm" and _topo_line(text):
            return _State(state.phase)
        return None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Whether ``line`` continues the block (at most three blank lines in a row)."""
        if not line.text.strip() and trailing_blanks(block) >= _MAX_BLANKS:
            return False
        return super().accepts(line, block)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """The facts of one collect_env block."""
        return _Reader(block).facts()


class _Reader:
    """One pass over a collect_env block."""

    def __init__(self, block: Sequence[Line]) -> None:
        self.block = block
        self.soft: dict[str, Any] = {}
        self.cpu: dict[str, Any] = {}
        self.fields: list[tuple[str, str]] = []
        self.gpus: list[tuple[int, str]] = []
        self.cudnn: list[str] = []
        self.packages: list[PythonPackage] = []
        self.topo: list[Line] = []
        self.anchor: Line | None = None
        self.cpu_line: Line | None = None

    def facts(self) -> list[Fact]:
        """Read the block and build its facts."""
        phase, last_key, banner, topo_open = "head", "", 0, False
        for line in self.block:
            text = strip_ansi(line.text).rstrip()
            if not text.strip():
                continue
            if _BANNER.match(text):
                banner, topo_open = (0 if banner == 2 else 1), False
                continue
            if banner == 1:
                phase, banner = _title(text) or "head", 2
                continue
            banner = 0
            if m := _PACKAGE.match(text):
                phase = "libs"
                self._package(line, m["manager"], m["rest"])
                continue
            if "CPU Affinity" in text:
                topo_open = True
            if topo_open and _topo_line(text):
                self.topo.append(line)
                continue
            section = _section(text, phase)
            if section == "cpu" or (section == "libs" and phase != "libs"):
                phase = section
                self.cpu_line = line if section == "cpu" else self.cpu_line
                continue
            if phase == "cpu":
                self._cpu(line, text)
            elif m := _GPU_ROW.match(text):
                if (index := to_int(m["index"])) is not None:
                    self.gpus.append((index, _gpu_name(m["name"])))
            elif _PATH.match(text) and last_key == "cudnn version":
                self.cudnn.append(text.strip())
            elif m := _KEY_VALUE.match(text):
                last_key = m["key"].strip().lower()
                self._field(line, last_key, m["key"].strip(), m["value"].strip())
        return self._emit()

    def _field(self, line: Line, key: str, shown: str, value: str) -> None:
        self.fields.append((shown, value))
        if key == "pytorch version":
            self.anchor = self.anchor or line
        if key in _TEXT_FIELDS:
            self.soft.setdefault(_TEXT_FIELDS[key], na(value))
        elif key in _BOOL_FIELDS:
            self.soft.setdefault(_BOOL_FIELDS[key], to_bool(value))
        elif key == "python version":
            self.soft.setdefault("python_version_text", na(value))
            m = _PY_VERSION.match(value.strip())
            self.soft.setdefault("python_version", m[1] if m else None)
        elif key == "gpu models and configuration" and (m := _GPU_ROW.match(value)):
            if (index := to_int(m["index"])) is not None:
                self.gpus.append((index, _gpu_name(m["name"])))
        elif key == "cudnn version":
            cudnn = na(value)
            known = cudnn is not None and not cudnn.lower().startswith(("probably", "could not"))
            self.soft.setdefault("cudnn_version", cudnn if known else None)
        elif key == "vllm version" and (version := na(value)):
            self.soft.setdefault("vllm_version", version.split()[0])

    def _cpu(self, line: Line, text: str) -> None:
        m = _CPU_KEY_VALUE.match(text)
        if m is None:
            return
        key, value = m["key"].strip(), na(m["value"])
        self.cpu_line = self.cpu_line or line
        low = key.lower()
        if low in _CPU_INT_FIELDS:
            self.cpu.setdefault(_CPU_INT_FIELDS[low], to_int(value))
        elif low in _CPU_TEXT_FIELDS:
            self.cpu.setdefault(_CPU_TEXT_FIELDS[low], value)
        elif (numa := _NUMA_CPUS.match(key)) and value is not None:
            self.cpu.setdefault("numa_node_cpus", [])
            self.cpu["numa_node_cpus"].append((int(numa["node"]), value))

    def _package(self, line: Line, manager: str, rest: str) -> None:
        row = rest.strip()
        if not row or row.lower() in _SKIP_ROWS:
            return
        build = channel = None
        if manager == "conda":
            parts = row.split()
            name, version = parts[0], parts[1] if len(parts) > 1 else None
            build = parts[2] if len(parts) > 2 else None
            channel = parts[3] if len(parts) > 3 else None
        elif "==" in row:
            name, _, version = row.partition("==")
        else:
            name, version = re.split(r"\s*@\s*|\s+", row, maxsplit=1)[0], None
        self.packages.append(
            PythonPackage(
                manager=manager,
                name=name.strip(),
                version=na(version),
                build=build,
                channel=channel,
                cite=cite(line),
                rank=line.rank,
                host=line.host,
            )
        )

    def _emit(self) -> list[Fact]:
        anchor = self.anchor or self.block[0]
        soft = self.soft
        platform = soft.get("python_platform")
        wsl = (
            None if platform is None else bool(re.search(r"microsoft|WSL", platform, re.IGNORECASE))
        )
        nccl = next((p.version for p in self.packages if _NCCL.match(p.name) and p.version), None)
        cmake = soft.get("cmake_version")
        if isinstance(cmake, str):
            soft["cmake_version"] = cmake.removeprefix("version ").strip() or None
        facts: list[Fact] = [
            SoftwareVersions(
                gpu_models=tuple(self.gpus),
                cudnn_libraries=tuple(self.cudnn),
                wsl=wsl,
                nccl_version=nccl,
                libraries=tuple((p.manager, p.name, p.version or "") for p in self.packages),
                fields=tuple(self.fields),
                cite=cite(anchor),
                rank=anchor.rank,
                host=anchor.host,
                **soft,
            )
        ]
        facts.extend(self.packages)
        if self.cpu and self.cpu_line is not None:
            self.cpu["numa_node_cpus"] = tuple(self.cpu.get("numa_node_cpus", ()))
            line = self.cpu_line
            facts.append(CpuInfo(cite=cite(line), rank=line.rank, host=line.host, **self.cpu))
        if self.topo:
            facts.extend(parse_topo_lines(self.topo))
        return facts
