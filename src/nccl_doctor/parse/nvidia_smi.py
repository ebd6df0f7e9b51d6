"""The default ``nvidia-smi`` table, drivers 390 to 590, and its error messages.

The table is read cell by cell (split on ``|``), so the 79-column layout of
drivers up to 525 and the 91-column layout of 530+ read alike, as do the
old 5-column Processes table (``GPU PID Type Process name Usage``, 390-440)
and the new one with MIG ``GI``/``CI`` columns (450+). A block starts at a
border, the ``NVIDIA-SMI`` header, a header row, a ``Processes:`` or ``MIG
devices:`` title, or a GPU/process row of a fragment, and runs while lines
look like table lines (a few blank or space-only separators allowed). The
timestamp line above the table is not part of the block.

A process row cut before its PID (a pasted fragment ending ``|    6   N/A
N/A``) yields no :class:`GpuProcess`; its GPU index is kept in the table's
``cut_row_gpu_indices``. A row cut after its PID yields a process whose
name is marked truncated and whose memory is ``None``.

The messages nvidia-smi prints instead of a table (``NVIDIA-SMI has
failed...``, ``Failed to initialize NVML: ...``, ``No devices were found``,
``Unable to determine the device handle for GPU ...``) are one-line blocks
of :class:`SmiError` (plus the ``NVML library version`` line after a
mismatch).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import (
    DriverInfo,
    Gpu,
    GpuProcess,
    GpuProcessTable,
    MigDevice,
    SmiError,
)
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nvsmi import (
    bus_id,
    compute_mode,
    flag,
    integer,
    is_error,
    number,
    text_value,
)
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser
from nccl_doctor.parse.dcgm import dcgm_title

TOOL = "nvidia-smi"
_BORDER = LazyPattern(r"^\+[-+=]{20,}\+?$")
_HEADER = LazyPattern(r"NVIDIA-SMI\s+(?P<smi>\d[\w.-]*)")
_DRIVER = LazyPattern(r"Driver Version:\s*(?P<v>[^\s|]+)")
_CUDA = LazyPattern(r"CUDA Version:\s*(?P<v>[^\s|]+)")
_GPU_ROW = LazyPattern(
    r"^\|\s*\d{1,4}\s+\S.*\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d"
)
# Cells end in free text and padding: each pattern matches a run of spaces one way only
# (a lazy ``.*?`` before ``\s*$``, or ``\s*X?\s*``, would try every split of a long run).
#: The first cell of a GPU row: its index, then the name and the persistence mode (see _gpu_cell).
_GPU_INDEX = LazyPattern(r"\s*(?P<index>\d{1,4})(?P<gap>\s+)")
_PERSISTENCE = ("On", "Off", "N/A", "WDDM", "TCC", "ERR!")
_BUS_CELL = LazyPattern(r"^\s*(?P<bus>\S+)(?:\s+(?P<disp>On|Off|N/A|ERR!))?\s*$")
_PROC_NEW = LazyPattern(
    r"^\s*(?P<gpu>\d{1,4}|N/A)\s+(?P<gi>\d{1,6}|N/A|-)\s+(?P<ci>\d{1,6}|N/A|-)\s+"
    r"(?P<pid>\d{1,10})\s+(?P<type>[A-Z](?:\+[A-Z])*)(?:\s+(?P<rest>\S(?:.*\S)?))?\s*$"
)
_PROC_OLD = LazyPattern(
    r"^\s*(?P<gpu>\d{1,4}|N/A)\s+(?P<pid>\d{1,10})\s+(?P<type>[A-Z](?:\+[A-Z])*)"
    r"(?:\s+(?P<rest>\S(?:.*\S)?))?\s*$"
)
_CUT_ROW = LazyPattern(r"^\s*(?P<gpu>\d{1,4})(?:\s+(?:\d{1,6}|N/A|-)){0,2}(?:\s+\d{1,10})?\s*$")
_MEM_TOKEN = LazyPattern(r"\d{1,12}MiB|N/A|\[N/A\]|\d{0,12}\.{2,3}")
_PROC_HEAD = LazyPattern(r"^\|\s*GPU\s+(?:GI\s+CI\s+)?PID\s+Type")
_MIG_HEAD = LazyPattern(r"^\|\s*GPU\s+GI\s+CI\s+MIG")
_MIG_ROW = LazyPattern(
    r"^\s*(?P<gpu>\d{1,4})\s+(?P<gi>\d{1,6})\s+(?P<ci>\d{1,6})\s+(?P<dev>\d{1,6})\s*$"
)
_POWER_SPLIT = LazyPattern(r"(?<!\s)\s+/\s+|(?<=W)/")
_MEMORY = LazyPattern(r"^\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")
_ERROR_LINES = (
    ("NVIDIA-SMI has failed", "no_driver"),
    ("Failed to initialize NVML: Driver/library version mismatch", "version_mismatch"),
    ("Failed to initialize NVML", "nvml_init"),
    ("No devices were found", "no_devices"),
    ("Unable to determine the device handle", "device_handle"),
)
_NVML_VERSION = LazyPattern(r"NVML library version:\s*(?P<v>\S+)")
_HANDLE_INDEX = LazyPattern(r"for GPU\s*(?P<index>\d{1,4}):(?:\s|$)")
_MAX_BLANKS = 2


_NVML_FAILED = "Failed to initialize NVML"
#: Where a quoted message's detail ends in a person's sentence around it.
_DETAIL_END = LazyPattern(r"[\"'`,;)]|\.(?:\s|$)")


def _nvml_detail(text: str) -> str | None:
    """What follows ``Failed to initialize NVML:`` (``Unknown Error``), on its own line or
    quoted in a sentence (where the sentence's own words after it are not part of it)."""
    at = text.find(_NVML_FAILED)
    rest = text[at + len(_NVML_FAILED) :].lstrip() if at >= 0 else ""
    if not rest.startswith(":"):
        return None
    rest = rest[1:].strip()
    if end := _DETAIL_END.search(rest):
        rest = rest[: end.start()]
    return rest.strip() or None


def _cells(text: str) -> list[str]:
    """The cells of a table row, without the outer empty parts."""
    body = text.strip()
    body = body.removeprefix("|")
    body = body.removesuffix("|")
    return body.split("|")


def _error_code(text: str) -> str | None:
    for marker, code in _ERROR_LINES:
        if marker in text:
            return code
    return None


def _memory(cell: str) -> tuple[int | None, int | None, bool]:
    """(used, total, whether a value read ERR!) of a ``10807MiB / 11178MiB`` cell."""
    match = _MEMORY.match(cell)
    if match is None:
        return None, None, is_error(cell)
    used, total = match["used"], match["total"]
    return integer(used), integer(total), is_error(used) or is_error(total)


def _gpu_cell(cell: str) -> tuple[int, str, str | None] | None:
    """``(index, name, persistence mode)`` of a GPU row's first cell: ``0  NVIDIA H100 ...  On``.

    The mode is the last word when a space precedes it; the name is what is
    left, stripped (empty when the cell holds only the index and the mode).
    """
    head = _GPU_INDEX.match(cell)
    if head is None:
        return None
    rest = cell[head.end() :].rstrip()
    for mode in _PERSISTENCE:
        before = rest.removesuffix(mode)
        if len(before) == len(rest):
            continue
        if before[-1:].isspace() or (not before and len(head["gap"]) > 1):
            return int(head["index"]), before.strip(), mode
    return int(head["index"]), rest, None


class _State:
    """What one table block has told so far."""

    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.section = "gpu"
        self.gpu: dict[str, object] | None = None
        self.gpu_line: Line | None = None
        self.gpu_row = 0
        self.errors: list[str] = []
        self.mig: dict[str, object] | None = None
        self.mig_line: Line | None = None
        self.procs: GpuProcessTable | None = None
        self.proc_rows = 0
        self.cut_rows: list[int] = []
        self.none_found = False
        self.closed = False
        self.truncated = False


class NvidiaSmiParser(BlockParser):
    """Parses the default ``nvidia-smi`` table (and its failure messages)."""

    kind = "nvidia-smi"
    anchors = (
        "NVIDIA-SMI",
        "+--------------",
        "GPU  Name",
        "| Processes:",
        "MIG devices:",
        "MiB |",
        " Off |",
        " On |",
        "Failed to initialize NVML",
        "No devices were found",
        "Unable to determine the device handle",
    )

    def starts(self, line: Line) -> bool:
        """A border, header, title, GPU or process row, or an nvidia-smi error message."""
        if not any(anchor in line.raw for anchor in self.anchors):
            return False  # the reader would never offer it: keep tests and reads alike
        text = line.text.strip()
        if _error_code(text) is not None:
            return True
        if _BORDER.match(text):
            return len(text) >= 60
        if not text.startswith("|"):
            return False
        if _HEADER.search(text) or re.match(r"^\|\s*(?:GPU\s+Name|Processes:|MIG devices:)", text):
            return True
        if _GPU_ROW.match(text):
            return True
        inner = "|".join(_cells(text))
        return "MiB" in text and bool(_PROC_NEW.match(inner) or _PROC_OLD.match(inner))

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Table lines and a few blank separators; after a message, its NVML version line.

        A dcgmi table's title row ends the block: DCGM draws the same borders."""
        text = line.text.strip()
        if not block or dcgm_title(text):
            return False
        if _error_code(block[0].text) is not None:
            return bool(_NVML_VERSION.search(text)) and len(block) == 1
        if not text:
            blanks = 0
            for earlier in reversed(block):
                if earlier.text.strip():
                    break
                blanks += 1
            return blanks < _MAX_BLANKS
        return text.startswith(("|", "+"))

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """Driver, GPU, MIG device and process facts of one table (or one message)."""
        if block and _error_code(block[0].text) is not None:
            return self._message(block)
        state = _State()
        for line in block:
            self._line(state, line)
        self._end_gpu(state)
        self._end_mig(state)
        self._end_procs(state)
        return state.facts

    # -- messages -------------------------------------------------------
    def _message(self, block: Sequence[Line]) -> list[Fact]:
        first = block[0]
        text = first.text.strip()
        code = _error_code(text) or "nvml_init"
        detail: str | None = None
        index: int | None = None
        if code == "device_handle":
            if match := _HANDLE_INDEX.search(text):
                index = int(match["index"])
            if ": " in text:
                detail = text.rsplit(": ", 1)[1].strip() or None
        elif code in {"nvml_init", "version_mismatch"}:
            detail = _nvml_detail(text)
        version = None
        for line in block[1:]:
            if match := _NVML_VERSION.search(line.text):
                version = match["v"]
        return [
            SmiError(
                cite=cite(first),
                rank=first.rank,
                host=first.host,
                tool=TOOL,
                error=code,
                message=text[:300],
                gpu_index=index,
                bus_id=bus_id(text) if code == "device_handle" else None,
                detail=detail,
                nvml_version=version,
            )
        ]

    # -- table lines ----------------------------------------------------
    def _line(self, state: _State, line: Line) -> None:
        text = line.text.strip()
        if not text:
            return
        if _HEADER.search(text) and "Driver Version" in text:
            self._end_gpu(state)
            self._end_mig(state)
            self._end_procs(state)
            state.section = "gpu"
            self._header(state, line, text)
            return
        if _BORDER.match(text) or text.startswith(("|-", "|=")):
            if state.section == "gpu":
                self._end_gpu(state)
            elif state.section == "mig":
                self._end_mig(state)
            elif state.section == "procs" and text.startswith("+"):
                state.closed = True
            return
        if re.match(r"^\|\s*Processes:", text):
            self._open_procs(state, line)
            return
        if re.match(r"^\|\s*MIG devices:", text) or (
            state.section == "gpu" and _MIG_HEAD.match(text)
        ):
            self._end_gpu(state)
            state.section = "mig"
            return
        if state.section != "procs" and _PROC_HEAD.match(text):
            self._open_procs(state, line)
            return
        if state.section == "procs":
            self._process(state, line, text)
        elif state.section == "mig":
            self._mig(state, line, text)
        else:
            self._gpu(state, line, text)

    def _header(self, state: _State, line: Line, text: str) -> None:
        smi = _HEADER.search(text)
        driver = _DRIVER.search(text)
        cuda = _CUDA.search(text)
        state.facts.append(
            DriverInfo(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                tool=TOOL,
                driver_version=text_value(driver["v"]) if driver else None,
                cuda_version=text_value(cuda["v"]) if cuda else None,
                smi_version=smi["smi"] if smi else None,
            )
        )

    # -- GPU rows -------------------------------------------------------
    def _gpu(self, state: _State, line: Line, text: str) -> None:
        cells = _cells(text)
        if _GPU_ROW.match(text) and len(cells) >= 2:
            self._end_gpu(state)
            self._gpu_first(state, line, cells)
            return
        if state.gpu is None:
            inner = "|".join(cells)
            if _MIG_ROW.match(cells[0]) and len(cells) >= 3:
                state.section = "mig"
                self._mig(state, line, text)
            elif "MiB" in text and (_PROC_NEW.match(inner) or _PROC_OLD.match(inner)):
                self._open_procs(state, line)
                self._process(state, line, text)
            return
        if len(cells) < 3:
            return
        state.gpu_row += 1
        if state.gpu_row == 1:
            self._gpu_second(state, cells)
        elif state.gpu_row == 2:
            mig = cells[2].strip()
            if mig:
                if is_error(mig):
                    state.errors.append("mig_mode")
                else:
                    state.gpu["mig_mode"] = flag(mig)

    def _gpu_first(self, state: _State, line: Line, cells: list[str]) -> None:
        gpu: dict[str, object] = {}
        state.errors = []
        cell = _gpu_cell(cells[0])
        if cell is None:
            return
        gpu["index"], name, pm = cell
        if name and not is_error(name):
            gpu["name"] = name
            gpu["name_truncated"] = name.endswith("...") or name.startswith("...")
        elif is_error(name):
            state.errors.append("name")
        if pm in {"WDDM", "TCC"}:
            gpu["driver_model"] = pm
        elif pm == "ERR!":
            state.errors.append("persistence_mode")
        elif pm:
            gpu["persistence_mode"] = flag(pm)
        bus = _BUS_CELL.match(cells[1])
        if bus:
            gpu["bus_id"] = bus_id(bus["bus"])
            if bus["disp"] == "ERR!":
                state.errors.append("display_active")
            else:
                gpu["display_active"] = flag(bus["disp"])
        if len(cells) >= 3:
            ecc = cells[2].strip()
            if is_error(ecc):
                state.errors.append("ecc_volatile_uncorrected")
            elif (count := integer(ecc)) is not None and ecc.isdigit():
                gpu["ecc_volatile_uncorrected"] = count
                gpu["ecc_mode"] = True
            else:
                gpu["ecc_mode"] = flag(ecc)
        state.gpu, state.gpu_line, state.gpu_row = gpu, line, 0

    def _gpu_second(self, state: _State, cells: list[str]) -> None:
        gpu = state.gpu
        if gpu is None:
            return
        left, _, cap = _POWER_SPLIT.sub("\0", cells[0], count=1).partition("\0")
        tokens = left.split()
        fields = ("fan_pct", "temperature_c", "perf_state", "power_draw_w")
        pairs: list[tuple[str | None, str]]
        if len(tokens) == 4:
            pairs = list(zip(fields, tokens, strict=True))
        else:
            pairs = [(self._shape(token), token) for token in tokens]
        for name, token in pairs:
            if name is None:
                continue
            if is_error(token):
                state.errors.append(name)
            elif name == "perf_state":
                gpu[name] = text_value(token) if re.fullmatch(r"P\d{1,2}", token) else None
            elif name == "power_draw_w":
                gpu[name] = number(token)
            else:
                gpu[name] = integer(token)
        if cap.strip():
            if is_error(cap):
                state.errors.append("power_limit_w")
            else:
                gpu["power_limit_w"] = number(cap)
        used, total, failed = _memory(cells[1])
        gpu["memory_used_mib"], gpu["memory_total_mib"] = used, total
        if failed:
            state.errors.append("memory_used_mib")
        util, _, mode = cells[2].strip().partition(" ")
        if is_error(util):
            state.errors.append("utilization_gpu_pct")
        else:
            gpu["utilization_gpu_pct"] = integer(util)
        if is_error(mode):
            state.errors.append("compute_mode")
        else:
            gpu["compute_mode"] = compute_mode(mode)

    @staticmethod
    def _shape(token: str) -> str | None:
        if token.endswith("%"):
            return "fan_pct"
        if re.fullmatch(r"\d+C", token):
            return "temperature_c"
        if re.fullmatch(r"P\d{1,2}", token):
            return "perf_state"
        if token.endswith("W"):
            return "power_draw_w"
        return None

    def _end_gpu(self, state: _State) -> None:
        gpu, line = state.gpu, state.gpu_line
        state.gpu, state.gpu_line, state.gpu_row = None, None, 0
        if gpu is None or line is None:
            return
        values = {k: v for k, v in gpu.items() if v is not None}
        state.facts.append(
            Gpu(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                tool=TOOL,
                errors=tuple(dict.fromkeys(state.errors)),
                **values,  # type: ignore[arg-type]
            )
        )
        state.errors = []

    # -- MIG devices ----------------------------------------------------
    def _mig(self, state: _State, line: Line, text: str) -> None:
        cells = _cells(text)
        if len(cells) < 2:
            return
        head = _MIG_ROW.match(cells[0])
        if head:
            self._end_mig(state)
            used, total, _ = _memory(cells[1])
            mig: dict[str, object] = {
                "gpu_index": int(head["gpu"]),
                "gi_id": int(head["gi"]),
                "ci_id": int(head["ci"]),
                "mig_index": int(head["dev"]),
                "memory_used_mib": used,
                "memory_total_mib": total,
            }
            if len(cells) >= 3:
                parts = cells[2].split()
                mig["sm_count"] = integer(parts[0]) if parts else None
                mig["ecc_volatile_uncorrected"] = integer(parts[1]) if len(parts) > 1 else None
            if len(cells) >= 4:
                names = ("copy_engines", "encoders", "decoders", "ofa_count", "jpeg_count")
                for name, token in zip(names, cells[3].split(), strict=False):
                    mig[name] = integer(token)
            state.mig, state.mig_line = mig, line
        elif state.mig is not None and not cells[0].strip():
            used, total, _ = _memory(cells[1])
            if total is not None:
                state.mig["bar1_used_mib"], state.mig["bar1_total_mib"] = used, total

    def _end_mig(self, state: _State) -> None:
        mig, line = state.mig, state.mig_line
        state.mig, state.mig_line = None, None
        if mig is None or line is None:
            return
        values = {k: v for k, v in mig.items() if v is not None}
        state.facts.append(
            MigDevice(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                tool=TOOL,
                **values,  # type: ignore[arg-type]
            )
        )

    # -- processes ------------------------------------------------------
    def _process(self, state: _State, line: Line, text: str) -> None:
        complete = text.endswith("|")
        inner = text.strip()[1:]
        if complete:
            inner = inner[:-1]
        if "No running processes found" in inner:
            state.none_found = True
            return
        match = _PROC_NEW.match(inner) or _PROC_OLD.match(inner)
        if match is None:
            cut = _CUT_ROW.match(inner)
            if cut and not complete:
                state.cut_rows.append(int(cut["gpu"]))
                state.truncated = True
            return
        groups = match.groupdict()
        rest = (groups.get("rest") or "").strip()
        name: str | None
        memory: int | None = None
        if complete:
            tokens = rest.rsplit(None, 1)
            if tokens and _MEM_TOKEN.fullmatch(tokens[-1]):
                name = rest[: len(rest) - len(tokens[-1])].strip() or None
                memory = integer(tokens[-1].removesuffix("MiB"))
            else:
                name = rest or None
            truncated = bool(name and (name.startswith("...") or name.endswith("...")))
        else:
            state.truncated = True
            name = rest or None
            truncated = True
        state.proc_rows += 1
        state.facts.append(
            GpuProcess(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                tool=TOOL,
                pid=int(groups["pid"]),
                gpu_index=integer(groups["gpu"]),
                gi_id=integer(groups.get("gi")),
                ci_id=integer(groups.get("ci")),
                type=groups["type"],
                name=name,
                name_truncated=truncated,
                memory_used_mib=memory,
            )
        )

    def _open_procs(self, state: _State, line: Line) -> None:
        self._end_gpu(state)
        self._end_mig(state)
        self._end_procs(state)
        state.section = "procs"
        state.procs = GpuProcessTable(
            cite=cite(line), rank=line.rank, host=line.host, tool=TOOL, rows=0
        )

    def _end_procs(self, state: _State) -> None:
        table = state.procs
        state.procs = None
        if table is None:
            return
        state.facts.append(
            GpuProcessTable(
                cite=table.cite,
                rank=table.rank,
                host=table.host,
                tool=TOOL,
                rows=state.proc_rows,
                none_found=state.none_found,
                truncated=state.truncated or not state.closed,
                cut_row_gpu_indices=tuple(state.cut_rows),
            )
        )
        state.proc_rows, state.cut_rows = 0, []
        state.none_found = state.closed = state.truncated = False
