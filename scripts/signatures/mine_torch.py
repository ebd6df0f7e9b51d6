"""Mine PyTorch's distributed messages into ``signatures/torch.jsonl``.

Usage: ``python scripts/signatures/mine_torch.py DIR`` where ``DIR/<version>/``
holds, for each version of :data:`VERSIONS`, the files of that release's
wheel (``pip download --no-deps torch==V``): ``torch/distributed/**/*.py``
and ``torch/lib/*.so.strings`` (``strings -n 6`` of ``libtorch_cpu.so``,
``libtorch_cuda.so``, ``libc10.so``, ``libc10_cuda.so``). The wheels carry
Python source (read with ``ast``: file:line at each version) but not the C++
sources; a C++ message is written here as its source builds it (``{name}``
for each piece ``c10::str``/``fmt`` splices in) and is counted as present in a
version when every literal piece listed in ``check`` is in that version's
binaries, so its ``where`` names the source file without a line.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import pattern_for, write_jsonl
from torch_python import PyMessage, _fstring, read_tree

VERSIONS = ("2.1.2", "2.4.1", "2.6.0", "2.8.0", "2.10.0", "2.11.0")
C10D = "torch/csrc/distributed/c10d/"


@dataclass(frozen=True)
class Cpp:
    id: str
    file: str
    format: str
    check: tuple[str, ...]
    symptom: str
    hints: tuple[str, ...] = ()
    level: str = "error"
    pattern: str | None = None
    fields: tuple[str, ...] | None = None
    note: str = ""


@dataclass(frozen=True)
class Py:
    id: str
    file: str
    anchor: str
    symptom: str
    hints: tuple[str, ...] = ()


PG = C10D + "ProcessGroupNCCL.cpp"
HANG = ("app.hang",)
CPP: tuple[Cpp, ...] = (
    Cpp("torch.pgnccl.log_prefix", PG, "[PG ID {pg_id:d} PG GUID {pg_guid}({pg_desc}) Rank {rank:d}] ",
        ("[PG ID ", " PG GUID ", ") Rank "), "info", level="info",
        note="ProcessGroupNCCL's log prefix (logPrefix()) since 2.6; earlier releases print '[Rank N] ' or '[PG N Rank N] '"),
    Cpp("torch.pgnccl.watchdog_timeout", PG,
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq:d}, OpType={op}, "
        "NumelIn={numel_in:d}, NumelOut={numel_out:d}, Timeout(ms)={timeout_ms:d}) ran for "
        "{ran_ms:d} milliseconds before timing out.",
        ("Watchdog caught collective operation timeout: ", "WorkNCCL(", "SeqNum=", ", Timeout(ms)=",
         " ran for ", " milliseconds before timing out."), "collective_timeout", HANG),
    Cpp("torch.pgnccl.blocking_wait_timeout", PG, "Work {work} timed out in blocking wait",
        (" timed out in blocking wait",), "collective_timeout", HANG,
        note="2.1-2.4 add ' (NCCL_BLOCKING_WAIT=1).', later releases '.'"),
    Cpp("torch.pgnccl.async_teardown", PG,
        "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
        "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        ("Some NCCL operations have failed or timed out. Due to the ",), "aborted",
        ("app.hang", "launch.rank_crash"), note="follows the watchdog's timeout or NCCL error"),
    Cpp("torch.pgnccl.take_process_down", PG,
        "To avoid data inconsistency, we are taking the entire process down.",
        ("To avoid data inconsistency, we are taking the entire process down.",), "aborted",
        ("app.hang", "launch.rank_crash")),
    Cpp("torch.pgnccl.comm_aborted", PG,
        "NCCL communicator was aborted on rank {rank:d}. Original reason for failure was: {reason}",
        ("NCCL communicator was aborted on rank ", " Original reason for failure was: "), "aborted",
        ("launch.rank_crash", "app.hang")),
    Cpp("torch.pgnccl.watchdog_terminated", PG,
        "Process group watchdog thread terminated with exception: {what}",
        ("Process group watchdog thread terminated with exception: ",), "aborted",
        ("app.hang", "launch.rank_crash")),
    Cpp("torch.pgnccl.watchdog_stuck", PG,
        "ProcessGroupNCCL's watchdog got stuck for {seconds:d} seconds without making progress in "
        "monitoring enqueued collectives.",
        ("ProcessGroupNCCL's watchdog got stuck for ",), "hang", HANG,
        note="the heartbeat monitor; it aborts the process after TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"),
    Cpp("torch.pgnccl.dump_signal", PG,
        "Received a dump signal due to a collective timeout from {source} and we will try our best "
        "to dump the debug info.",
        ("Received a dump signal due to a collective timeout from ",), "collective_timeout", HANG,
        note="printed on the ranks that did not time out themselves: a cascade"),
    Cpp("torch.pgnccl.desync_lagging", PG,
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        ("the lagging/dead/mismatched ranks that caused the desync are:",), "desync",
        ("app.collective_mismatch", "app.hang")),
    Cpp("torch.pgnccl.no_gpus", PG, "ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
        ("ProcessGroupNCCL is only supported with GPUs, no GPUs found!",), "cuda_error",
        ("cuda.device_visibility",)),
    Cpp("torch.pgnccl.barrier_device_guess", PG,
        "using GPU {device:d} to perform barrier as devices used by this process are currently "
        "unknown.", (" to perform barrier as devices used by this process are currently unknown.",),
        "info", ("cuda.device_visibility",), level="warning"),
    Cpp("torch.pgnccl.guessing_device", PG,
        "Guessing device ID based on global rank. This can cause a hang if rank to GPU mapping is "
        "heterogeneous.", ("Guessing device ID based on global rank",), "info",
        ("cuda.device_visibility",), level="warning"),
    Cpp("torch.nccl.error_in", C10D + "NCCLUtils.hpp",
        "NCCL error in: {file}:{line:d}, {error}, NCCL version {nccl_version}",
        ("NCCL error in: ",), "info",
        pattern=r"NCCL error in: (?P<file>[^\n:]{1,200}):(?P<line>\d{1,10}), "
        r"(?P<error>[^\n,]{0,200}?), NCCL version (?P<nccl_version>[\w.+-]{1,40})",
        fields=("file", "line", "error", "nccl_version"),
        note="C10D_NCCL_CHECK; the error text is ncclGetErrorString's (knowledge.nccl_results), "
        "the next line the torch_detail sentence (torch.nccl.detail.*)"),
    Cpp("torch.nccl.detail.unhandled_cuda", C10D + "NCCLUtils.cpp",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        ("ncclUnhandledCudaError: Call to CUDA function failed.",), "nccl_unhandled_cuda"),
    Cpp("torch.nccl.detail.system", C10D + "NCCLUtils.cpp",
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error.", ("ncclSystemError: System call (e.g. socket, malloc)",), "nccl_system"),
    Cpp("torch.nccl.detail.internal", C10D + "NCCLUtils.cpp",
        "ncclInternalError: Internal check failed.", ("ncclInternalError: Internal check failed.",),
        "nccl_internal", ("nccl.internal",)),
    Cpp("torch.nccl.detail.invalid_argument", C10D + "NCCLUtils.cpp",
        "ncclInvalidArgument: Invalid value for an argument.",
        ("ncclInvalidArgument: Invalid value for an argument.",), "nccl_invalid"),
    Cpp("torch.nccl.detail.invalid_usage", C10D + "NCCLUtils.cpp",
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",), "nccl_invalid"),
    Cpp("torch.nccl.detail.remote", C10D + "NCCLUtils.cpp",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.", ("ncclRemoteError: A call failed possibly due to a network error",),
        "nccl_remote", ("launch.rank_crash", "net.ib_transport")),
    Cpp("torch.c10d.collective_mismatch", C10D + "ProcessGroupWrapper.cpp",
        "Detected mismatch between collectives on ranks. Rank {rank:d} is running collective: "
        "{collective}, but Rank {other_rank:d} is running collective: {other_collective}.",
        ("Detected mismatch between collectives on ranks. Rank ", " is running collective: ",
         ", but Rank "), "desync", ("app.collective_mismatch",)),
    Cpp("torch.c10d.socket_connect_timeout", C10D + "socket.cpp",
        "The client socket has timed out after {timeout:w} while trying to connect to ({host}, "
        "{port:d}).", ("The client socket has timed out after {} while trying to connect to ({}, {}).",),
        "store_timeout", ("net.unreachable", "launch.rendezvous")),
    Cpp("torch.c10d.socket_connect_any_failed", C10D + "socket.cpp",
        "The client socket has failed to connect to any network address of ({host}, {port:d}).",
        ("The client socket has failed to connect to any network address of ({}, {}).",),
        "store_timeout", ("net.unreachable", "launch.rendezvous")),
    Cpp("torch.c10d.socket_connect_failed", C10D + "socket.cpp",
        "The client socket has failed to connect to {address:w} {error}.",
        ("The client socket has failed to connect to {} {}.",), "store_timeout", ("net.unreachable",)),
    Cpp("torch.c10d.socket_listen_failed", C10D + "socket.cpp",
        "The server socket has failed to listen on any local network address.",
        ("The server socket has failed to listen on any local network address.",), "store_timeout",
        ("launch.port_in_use",), note="the bind error follows (EADDRINUSE: the port is taken)"),
    Cpp("torch.c10d.socket_bind_failed", C10D + "socket.cpp",
        "The server socket has failed to bind to {address:w} {error}.",
        ("The server socket has failed to bind to {} {}.",), "store_timeout", ("launch.port_in_use",)),
    Cpp("torch.c10d.store_wait_timeout", C10D + "TCPStore.cpp", "wait timeout after {timeout_ms:d}ms, keys: {keys}",
        ("wait timeout after {}ms, keys: {}",), "store_timeout", ("launch.rendezvous", "app.hang")),
    Cpp("torch.c10d.socket_timeout", C10D + "Utils.hpp", "Socket Timeout", ("Socket Timeout",),
        "store_timeout", ("launch.rendezvous", "net.unreachable")),
    Cpp("torch.c10d.store_wait_timeout_legacy", C10D + "TCPStore.cpp", "Wait timeout", ("Wait timeout",),
        "store_timeout", ("launch.rendezvous",)),
    Cpp("torch.ddp.unfinished_reduction", C10D + "reducer.cpp",
        "Expected to have finished reduction in the prior iteration before starting a new one.",
        ("Expected to have finished reduction in the prior iteration",), "ddp_usage",
        ("app.unused_params",)),
    Cpp("torch.ddp.no_grad_params", C10D + "reducer.cpp",
        "Parameter indices which did not receive grad for rank {rank:d}: {indices}",
        ("Parameter indices which did not receive grad for rank ",), "ddp_usage", ("app.unused_params",)),
    Cpp("torch.ddp.param_count_mismatch", C10D + "comm.cpp",
        "DDP expects same model across all ranks, but Rank {rank:d} has {count:d} params, while "
        "rank {other_rank:d} has inconsistent {other_count:d} params.",
        ("DDP expects same model across all ranks, but Rank ", " params, while rank ", " has inconsistent "),
        "ddp_usage", ("app.param_mismatch",)),
    Cpp("torch.ddp.param_size_mismatch", C10D + "comm.cpp",
        "params[{index:d}] in this process with sizes {sizes} appears not to match sizes of the "
        "same param in process 0.", (" appears not to match sizes of the same param in process 0.",),
        "ddp_usage", ("app.param_mismatch",)),
    Cpp("torch.ddp.param_stride_mismatch", C10D + "comm.cpp",
        "params[{index:d}] in this process with sizes {sizes} appears not to match strides of the "
        "same param in process 0.", (" appears not to match strides of the same param in process 0.",),
        "ddp_usage", ("app.param_mismatch",)),
    Cpp("torch.cuda.oom", "c10/cuda/CUDACachingAllocator.cpp",
        "CUDA out of memory. Tried to allocate {size:m}. GPU {device:d} has a total capacity of "
        "{total:m} of which {free:m} is free.", ("CUDA out of memory. Tried to allocate ", " has a total capac",
                                             " is free. "), "gpu_oom", ("gpu.oom", "gpu.contention"),
        note="2.1 spells 'capacty'; the same line goes on with the processes holding memory "
        "(torch.cuda.oom_process)"),
    Cpp("torch.cuda.oom_process", "c10/cuda/CUDACachingAllocator.cpp",
        "Process {pid:d} has {memory:m} memory in use.", (" memory in use. ",), "gpu_oom",
        ("gpu.contention", "gpu.oom"),
        note="one per process on the GPU, inside the OOM message: a pid that is not the job's is "
        "contention"),
    Cpp("torch.cuda.oom_this_process", "c10/cuda/CUDACachingAllocator.cpp",
        "Including non-PyTorch memory, this process has {memory:m} memory in use.",
        ("Including non-PyTorch memory, this process",), "gpu_oom", ("gpu.oom",),
        ),
    Cpp("torch.cuda.error", "c10/cuda/CUDAException.cpp", "CUDA error: {message}", ("CUDA error: ",),
        "cuda_error", note="the text is cudaGetErrorString's: the cuda.error.* signatures and "
        "knowledge.cuda_errors name the code"),
    Cpp("torch.cuda.async_report", "c10/cuda/CUDAException.cpp",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.", ("CUDA kernel errors might be",), "info",
        level="info"),
)  # fmt: skip

EP = "torch/distributed/elastic/"
PY: tuple[Py, ...] = (
    Py("torch.elastic.worker_failed", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of binary", "failure", ("launch.rank_crash",)),
    Py("torch.elastic.worker_failed_fn", EP + "multiprocessing/api.py",
       r"^failed \(exitcode: %s\) local_rank: %s \(pid: %s\) of fn", "failure", ("launch.rank_crash",)),
    Py("torch.elastic.signal_exception", EP + "multiprocessing/api.py", r"got signal: ", "killed",
       ("launch.rank_crash", "host.resources")),
    Py("torch.elastic.closing_signal", EP + "multiprocessing/api.py", r"^Sending process %s closing signal",
       "info", ("launch.rank_crash",)),
    Py("torch.elastic.death_signal", EP + "agent/server/api.py", r"death signal, shutting down workers",
       "killed", ("launch.rank_crash",)),
    Py("torch.elastic.restart_group", EP + "agent/server/api.py", r"attempts left; will restart worker group",
       "failure", ("launch.rank_crash",)),
    Py("torch.elastic.exit_barrier_error", EP + "agent/server/api.py", r"^Error waiting on exit barrier",
       "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.rendezvous_complete", EP + "agent/server/api.py", r"Rendezvous complete for workers",
       "info"),
    Py("torch.elastic.child_failed_root_cause", EP + "multiprocessing/errors/__init__.py",
       r"Root Cause \(first observed failure\)", "failure", ("launch.rank_crash",)),
    Py("torch.elastic.child_failed_exitcode", EP + "multiprocessing/errors/__init__.py",
       r"^  exitcode  : ", "failure", ("launch.rank_crash",)),
    Py("torch.elastic.child_failed_rank", EP + "multiprocessing/errors/__init__.py",
       r"^  rank      : ", "failure", ("launch.rank_crash",)),
    Py("torch.elastic.child_failed_signal", EP + "multiprocessing/errors/__init__.py", r"^Signal \{.*received by PID",
       "killed", ("launch.rank_crash", "host.resources")),
    Py("torch.elastic.rdzv_store_connection_failed", EP + "rendezvous/c10d_rendezvous_backend.py",
       r"The connection to the C10d store has failed", "store_timeout",
       ("net.unreachable", "launch.rendezvous")),
    Py("torch.elastic.rdzv_state_corrupt", EP + "rendezvous/dynamic_rendezvous.py",
       r"The rendezvous state is corrupt", "store_timeout", ("launch.duplicate_launch",)),
    Py("torch.elastic.members_join_timeout", EP + "utils/distributed.py",
       r"timed out waiting for all .* members to join", "store_timeout", ("launch.rendezvous",)),
    Py("torch.elastic.store_create", EP + "utils/distributed.py", r"^Creating c10d store on", "info"),
    Py("torch.c10d.store_barrier_timeout", "torch/distributed/distributed_c10d.py",
       r"Timed out initializing process group in store based barrier", "store_timeout",
       ("launch.rendezvous", "launch.duplicate_launch")),
    Py("torch.c10d.store_barrier_done", "torch/distributed/distributed_c10d.py",
       r"Completed store-based barrier for key", "info"),
    Py("torch.c10d.no_nccl_built", "torch/distributed/distributed_c10d.py",
       r"Distributed package doesn't have NCCL built in", "library_missing", ("cuda.device_visibility",)),
)  # fmt: skip


def _strings(root: Path, version: str) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for p in sorted((root / version / "torch/lib").glob("*.strings"))
    )


def _rows_cpp(root: Path) -> list[dict[str, Any]]:
    blobs = {v: _strings(root, v) for v in VERSIONS}
    rows = []
    for c in CPP:
        seen = [v for v in VERSIONS if all(piece in blobs[v] for piece in c.check)]
        if not seen:
            raise SystemExit(f"{c.id}: not found in any version")
        if c.pattern:
            pattern, fields = c.pattern, list(c.fields or ())
        else:
            pattern, fields = pattern_for(c.format, "concat")
            pattern = pattern.replace("total capacity", "total capaci?ty")  # 2.1's "capacty"
        rows.append(
            _row(
                c.id,
                c.level,
                [f"{c.file}@{','.join('v' + v for v in seen)}"],
                seen,
                c.format,
                "concat",
                pattern,
                fields,
                c.symptom,
                c.hints,
                c.note,
            )
        )
    return rows


def _template(text: str) -> str:
    """``string.Template``'s ``${name}`` as ``{name}``."""
    text = text.replace("{", "{{").replace("}", "}}")
    return re.sub(
        r"\$\{\{(\w+)\}\}|\$(\w+)", lambda m: "{" + (m.group(1) or m.group(2)) + "}", text
    )


def _constants(root: Path, rel: str) -> list[PyMessage]:
    """Each line of the module's ``string.Template`` constants (the ChildFailedError summary)
    and its f-strings (the "Signal N (SIGx) received by PID" message is one)."""
    import ast  # noqa: PLC0415 -- only this reader needs it

    path = root / rel
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            out.append(PyMessage(rel, node.lineno, "f-string", "python", _fstring(node)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "${" in node.value:
            for i, line in enumerate(node.value.split("\n")):
                out.append(PyMessage(rel, node.lineno + i, "template", "python", _template(line)))
    return out


def _rows_py(root: Path) -> list[dict[str, Any]]:
    per_version: dict[str, dict[str, list[PyMessage]]] = {}
    for v in VERSIONS:
        base = root / v
        msgs = read_tree(base / "torch/distributed", base)
        for rel in {p.file for p in PY if p.file.endswith("errors/__init__.py")}:
            msgs.extend(_constants(base, rel))
        by_file: dict[str, list[PyMessage]] = {}
        for m in msgs:
            by_file.setdefault(m.path, []).append(m)
        per_version[v] = by_file
    rows = []
    for p in PY:
        texts: dict[tuple[str, str], dict[str, list[int]]] = {}
        args: dict[tuple[str, str], tuple[str, ...]] = {}
        for v in VERSIONS:
            for m in per_version[v].get(p.file, []):
                if re.search(p.anchor, m.text):
                    texts.setdefault((m.style, m.text), {}).setdefault(v, []).append(m.line)
                    args[(m.style, m.text)] = m.args
                    break
        if not texts:
            raise SystemExit(f"{p.id}: not found")
        ordered = sorted(
            texts.items(), key=lambda kv: VERSIONS.index(next(iter(kv[1]))), reverse=True
        )
        for n, ((style, text), where) in enumerate(ordered):
            seen = [v for v in VERSIONS if v in where]
            ident = p.id if n == 0 else f"{p.id}_{seen[-1].replace('.', '_')}"
            pattern, fields = pattern_for(text, style, list(args[(style, text)]))
            locs = [f"{p.file}:{ln}@v{v}" for v in seen for ln in where[v]]
            kind = "info" if p.symptom == "info" else "error"
            rows.append(
                _row(ident, kind, locs, seen, text, style, pattern, fields, p.symptom, p.hints, "")
            )
    return rows


def _row(ident: str, level: str, where: list[str], seen: list[str], fmt: str, style: str,
         pattern: str, fields: list[str], symptom: str, hints: tuple[str, ...], note: str
         ) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "id": ident,
        "library": "torch",
        "level": level,
        "where": where,
        "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
        "format": fmt,
        "format_style": style,
        "pattern": pattern,
        "fields": fields,
        "symptom": symptom,
        "hint_ids": list(hints),
    }
    if note:
        row["note"] = note
    return row


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/tmp_sig/torch")
    rows = _rows_cpp(root) + _rows_py(root)
    print(f"{len(rows)} signatures -> {write_jsonl('torch', rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
