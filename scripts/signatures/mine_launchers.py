"""Write ``deepspeed.jsonl``, ``horovod.jsonl`` and ``accelerate.jsonl``: the launchers besides
torchrun, read from their own source at release tags.

Usage: ``python scripts/signatures/mine_launchers.py`` (git mirrors of deepspeedai/DeepSpeed,
where microsoft/DeepSpeed moved, horovod/horovod and huggingface/accelerate under
``/work/.mirror``; another root as the first argument). A kept row's note says what the
message means (:data:`NOTES`), else that it is the library's own.

Python messages are read with ``ast`` (:mod:`torch_python`: a logging call's or a raised
exception's first argument, f-strings as ``{name}`` placeholders) from the tag's files;
Horovod's C++ messages are ``<<`` chains and ``Status`` constructors in ``horovod/common``,
read from the first literal of each chain to the statement's end (literals kept,
expressions as ``{name}``, ``std::endl`` ends the line), and ``throw std::..._error(a + b)``
concatenations, read whole. A message that ends in ``ncclGetErrorString``'s text
(``ncclAllReduce failed: unhandled system error``) is one entry per ``ncclResult_t``
(:mod:`nccl_doctor.knowledge.nccl_results`), each with the class that result opens, as torch's
``NCCL error`` is. A literal's ``{name}`` left for a later ``str.format`` (Horovod's
``Timeout(message=...)``) is a placeholder.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from clex import blank_comments
from common import escape, pattern_for, write_jsonl
from torch_python import _message, read_tree

from nccl_doctor.differential.symptoms import NCCL_RESULT_CLASS
from nccl_doctor.knowledge import nccl_results

Keep = tuple[str, str, str, tuple[str, ...]]  # (id, anchor over the message, symptom, hints)

# a launcher's child ended by a signal: Python's returncode is minus the signal's number
SIGNALS = {-9: ("sigkill", "killed", ("host.resources", "launch.rank_crash")),
           -11: ("sigsegv", "crashed", ("launch.rank_crash",)),
           -7: ("sigbus", "bus_error", ("nccl.shm",)),
           -6: ("sigabrt", "aborted", ("app.hang", "launch.rank_crash"))}  # fmt: skip

LIBRARIES: dict[str, dict[str, Any]] = {
    "deepspeed": {
        "mirror": "deepspeedai+DeepSpeed",  # (microsoft/DeepSpeed moved there)
        "tags": ("v0.9.0", "v0.12.0", "v0.14.0", "v0.16.4", "v0.18.0", "v0.19.5"),
        "python": ("deepspeed/launcher", "deepspeed/comm", "deepspeed/elasticity",
                   "deepspeed/runtime/engine.py", "deepspeed/runtime/zero/utils.py",
                   "deepspeed/runtime/zero/stage3.py", "accelerator/real_accelerator.py"),
        "keep": (
            # launch.py's sigkill_handler: a rank's process ended non-zero; the launcher kills
            # the others and exits with its code (the cause is in that rank's own output)
            ("deepspeed.launch.exit_code", r"exits with return code = ", "failure",
             ("launch.rank_crash",)),
            ("deepspeed.launch.killing_subprocess", r"^Killing subprocess ", "info", ()),
            ("deepspeed.runner.no_gpu", r"^Unable to proceed, no GPU resources available",
             "cuda_device", ("cuda.device_visibility", "driver.container")),
            ("deepspeed.runner.no_extra_nodes", r"^Num nodes is >1 but no extra nodes",
             "failure", ("launch.rendezvous",)),
            # the runner checks it can ssh to the hostfile's first host before it launches
            ("deepspeed.runner.host_unreachable", r"was not reachable via ssh", "failure",
             ("net.unreachable",)),
            ("deepspeed.runner.no_master_addr", r"^Unable to detect suitable master address",
             "failure", ("net.socket_interface", "launch.rendezvous")),
            # a hostfile the runner cannot read, or a node it does not list: no launch
            ("deepspeed.runner.hostfile_bad",
             (r"^Hostfile (?:contains a bad entry|is empty or not formatted|is not formatted"
              r"|contains multiple entries|contains duplicate hosts)"), "failure",
             ("launch.rendezvous",)),
            ("deepspeed.runner.host_not_in_hostfile", r"^Hostname '\{\w+\}' not found in hostfile",
             "failure", ("launch.rendezvous",)),
            # two launch.py for one runner on a node: the same host listed twice, a nested launch
            ("deepspeed.launch.pid_file_exists", r"^pid file exists but shouldn't", "failure",
             ("launch.duplicate_launch",)),
            ("deepspeed.launcher_helper.rank_mismatch", r"^(?:local_)?rank number doesn't match",
             "failure", ("launch.duplicate_launch",)),
            # no hostfile: the runner starts this node's GPUs only (master 127.0.0.1); run on each
            # node of a job meant to span several, it starts one job per node
            ("deepspeed.runner.no_hostfile", r"^Unable to find hostfile, will proceed", "info",
             ("launch.duplicate_launch",)),
            ("deepspeed.comm.no_launcher", r"^Not using the DeepSpeed or dist launchers", "info",
             ("launch.rendezvous",)),
            ("deepspeed.comm.init_backend", r"^Initializing TorchBackend in DeepSpeed", "info", ()),
            # users paste it as the error; DeepSpeed's own NCCL backend never shipped: harmless
            ("deepspeed.comm.nccl_not_implemented", r"^NCCL backend in DeepSpeed not yet implemented",
             "info", ()),
            ("deepspeed.engine.local_rank_conflict",
             (r"^(?:LOCAL_RANK \(\{\w+\}\) != OMPI_COMM_WORLD_LOCAL_RANK|Mismatch in local rank "
              r"setting)"), "failure", ("launch.duplicate_launch",)),
            ("deepspeed.engine.no_local_rank", r"^DeepSpeed requires the LOCAL_RANK environment",
             "failure", ("launch.rendezvous",)),
            # ZeRO compares the ranks' parameter sizes before partitioning them: the models differ
            ("deepspeed.zero.ranks_disagree", r"disagreement (?:on list \w+ )?between rank0 and rank",
             "ddp_usage", ("app.param_mismatch",)),
            ("deepspeed.zero.allocator_flushes", r"pytorch allocator cache flushes since last step",
             "info", ("gpu.oom",)),
            ("deepspeed.accelerator.cpu_fallback", r"^Setting accelerator to CPU", "cuda_device",
             ("cuda.device_visibility", "driver.container")),
            ("deepspeed.elasticity.invalid_world_size",
             r"^World size \(\{\w+\}\) is not valid with the current list", "failure",
             ("launch.rendezvous",)),
        ),
        "signals": "deepspeed.launch.exit_code",
    },
    "horovod": {
        "mirror": "horovod+horovod",
        "tags": ("v0.20.0", "v0.24.3", "v0.28.1"),
        "python": ("horovod/runner",),
        "cpp": ("horovod/common",),
        "keep": (
            # a rank raised, or one rank ran out of data and left while others still reduce
            ("horovod.common.shut_down", r"^Horovod has been shut down", "failure",
             ("launch.rank_crash", "app.collective_mismatch")),
            # the controller compared the ranks' requests for one tensor: they differ
            ("horovod.common.mismatch", r"^Mismatched ", "desync",
             ("app.collective_mismatch", "app.param_mismatch")),
            # the stall inspector: a subset of ranks submitted a tensor, the rest never did
            ("horovod.common.stall", r"^One or more tensors were submitted to be",
             "collective_timeout", ("app.collective_mismatch", "app.hang")),
            ("horovod.runner.nonzero_exit",
             r"^Horovod detected that one or more processes exited with non-zero", "failure",
             ("launch.rank_crash",)),
            # NCCLContext::ErrorCheck: an NCCL call returned an error; HorovodInternalError
            # carries it to Python (one entry per ncclResult_t: see RESULTS)
            ("horovod.nccl.op_failed", r"^\{op_name\} failed: \{nccl_result\}", "failure", ()),
            # NCCLOpContext::AsyncErrorCheck: ncclCommGetAsyncError found the communicator failed
            ("horovod.nccl.async_error", r"^NCCL async error: \{nccl_async_err\}", "failure", ()),
            # horovodrun waits for the task service on every host to start and register (ssh,
            # then each host connecting back to the driver)
            ("horovod.runner.start_timeout",
             r"^Timed out waiting for \{activity\}\. Please check connectivity between servers",
             "store_timeout", ("net.unreachable", "net.socket_interface")),
            # elastic: fewer hosts than --min-np were discovered before the timeout
            ("horovod.elastic.start_timeout",
             r"^Timed out waiting for \{\{activity\}\}\. Please check that you have enough resources",
             "store_timeout", ("launch.rendezvous",)),
            # elastic's registry ends the job: every worker failed, every host is blacklisted
            # after failures, or the workers failed and reset more often than --reset-limit
            ("horovod.elastic.all_failed", r"^failure count == \{\w+\} -> stop running", "failure",
             ("launch.rank_crash",)),
            ("horovod.elastic.all_blacklisted", r"^blacklisted slots count == \{\w+\} -> stop running",
             "failure", ("launch.rank_crash",)),
            ("horovod.elastic.reset_count_exceeded",
             r"^reset count \{\w+\} has exceeded limit \{\w+\} -> stop running", "failure",
             ("launch.rank_crash",)),
            ("horovod.elastic.reset_limit",
             r"^Horovod was shutdown because number of resets during elastic job exceeded limit",
             "failure", ("launch.rank_crash",)),
            ("horovod.elastic.job_shutdown", r"^Job has been shutdown, see above error messages",
             "failure", ("launch.rank_crash",)),
            ("horovod.elastic.no_previous_hosts", r"^No hosts from previous set remaining",
             "failure", ("launch.rank_crash",)),
            # the registry could not start workers on the hosts discovery added: the job ends
            ("horovod.elastic.activate_hosts_failed",
             r"^failed to activate new hosts -> stop running", "failure", ("launch.rank_crash",)),
            # the host manager blacklists a host a worker failed on (its cooldown, 0.24+, may
            # let it back); the job goes on with the others: the failure is the worker's own
            ("horovod.elastic.blacklist_host", r"^blacklist failing host: ", "info",
             ("launch.rank_crash",)),
            ("horovod.elastic.blacklisted_host_registers",
             r"^host registers state \{value\} but is already blacklisted", "info",
             ("launch.rank_crash",)),
        ),
        # exceptions whose traceback line is the class name (and its argument at most)
        "classes": (
            # elastic's notice to the workers that hosts were added or removed (True: a host
            # was removed, so the state is not synced first); hvd.elastic.run catches it and
            # resets: seen in a traceback only where the training loop is not wrapped by it
            ("horovod.elastic.hosts_updated_interrupt", "horovod/common/exceptions.py",
             "HostsUpdatedInterrupt", "info", ("launch.rank_crash",)),
        ),
        # messages that end in ncclGetErrorString's text: the placeholder that holds it
        "results": {"horovod.nccl.op_failed": "nccl_result",
                    "horovod.nccl.async_error": "nccl_async_err"},
    },
    "accelerate": {
        "mirror": "huggingface+accelerate",
        "tags": ("v0.20.0", "v0.25.0", "v0.30.0", "v1.0.0", "v1.14.0"),
        "python": ("src/accelerate/commands", "src/accelerate/utils", "src/accelerate/state.py",
                   "src/accelerate/accelerator.py", "src/accelerate/data_loader.py"),
        "keep": (
            # the warning every `accelerate launch` without a config prints: harmless
            ("accelerate.launch.defaults_used",
             r"^The following values were not passed to `accelerate launch`", "info", ()),
            # consumer RTX 40xx cards hang over P2P/IB on older drivers: accelerate refuses
            ("accelerate.state.rtx4000_p2p", r"^Using RTX 4000 series doesn't support",
             "failure", ("nccl.p2p",)),
            ("accelerate.launch.rtx4000_p2p_disabled", r"^Using RTX 4000 series which doesn't",
             "info", ("nccl.p2p",)),
            ("accelerate.utils.old_kernel", r"^Detected kernel version ", "info", ("app.hang",)),
            ("accelerate.launch.multi_gpu_one_process", r"^You need to use at least 2 processes",
             "failure", ("cuda.device_visibility",)),
            # accelerate's own test of the main process port before it starts torchrun's agent
            ("accelerate.launch.port_in_use", r"^Tried to launch distributed communication on port",
             "store_create", ("launch.port_in_use", "launch.duplicate_launch")),
            # 1.8+: on one node the same test only warns, and torchrun picks a free port
            ("accelerate.launch.port_in_use_standalone", r"^Port `\{\w+\}` is already in use",
             "info", ("launch.port_in_use",)),
            # debug mode (--debug, ACCELERATE_DEBUG_MODE=1) gathers every rank's tensor shapes
            # before a collective and refuses when they differ: the ranks disagree
            ("accelerate.operations.shape_mismatch",
             r"^Cannot apply desired operation due to shape mismatches", "desync",
             ("app.collective_mismatch",)),
            # dispatch_batches (an IterableDataset's default): rank 0 fetches and concatenates
            # every rank's batch; batches of different lengths end it, the others wait
            ("accelerate.data_loader.dispatch_batch_sizes",
             r"^You can't use batches of different size with `dispatch_batches=True`",
             "app_error", ("launch.rank_crash",)),
            # an iterable loader keeps uneven batch counts: a rank that runs out first stops
            # calling the gradient all-reduce and the others wait for it
            ("accelerate.accelerator.even_batches_iterable",
             r"^Overrid{1,2}ing even_batches is only supported for map-style datasets", "info",
             ("app.hang",)),
            # a model spread over the GPUs (device_map="auto", a quantized model's placement)
            # under a distributed launch: every rank's copy is on the same GPUs
            ("accelerate.accelerator.device_map_distributed",
             (r"^You can't train a model that has been loaded with `device_map='auto'` in any "
              r"distributed mode"), "failure", ("nccl.duplicate_gpu", "cuda.device_visibility")),
            ("accelerate.accelerator.quantized_other_device",
             (r"^You can't train a model that has been loaded in 8-bit(?: or 4-bit)? precision on "
              r"a different device"), "failure", ("nccl.duplicate_gpu", "cuda.device_visibility")),
            ("accelerate.accelerator.quantized_many_devices",
             (r"^You can't train a model that has been loaded in 8-bit(?: or 4-bit)? precision on "
              r"multiple devices"), "failure", ("nccl.duplicate_gpu",)),
            ("accelerate.accelerator.dtensor_ddp",
             r"^Your model contains `DTensor` parameters, which is incompatible with DDP",
             "failure", ("nccl.duplicate_gpu",)),
            # the devices asked for are not the ones the process sees
            ("accelerate.modeling.device_not_available",
             r"^Device \{\w+\} is not available, available devices are", "cuda_device",
             ("cuda.device_visibility",)),
            ("accelerate.modeling.device_unavailable",
             r"^Device \{\w+\} seems unavailable, Proceeding", "info", ("gpu.contention",)),
            ("accelerate.state.backend_not_available",
             r"^Your assigned backend \{\w+\} is not available", "cuda_device",
             ("cuda.device_visibility",)),
            ("accelerate.launch.too_few_gpu_ids",
             r"^Less than two GPU ids were configured and tried to run on", "failure",
             ("cuda.device_visibility",)),
            # a multi-node launch with no address for the rendezvous
            ("accelerate.launch.multinode_no_main_process",
             r"^When using multiple machines, you need to specify the main process",
             "failure", ("launch.rendezvous",)),
            ("accelerate.state.multinode_no_master_addr",
             r"^Tried to launch on distributed with multinode, but `MASTER_ADDR` env was not set",
             "failure", ("launch.rendezvous",)),
            # find_executable_batch_size halved the batch to nothing: the model alone fills it
            ("accelerate.memory.no_batch_size",
             r"^No executable batch size found, reached zero", "gpu_oom", ("gpu.oom",)),
        ),
    },
}  # fmt: skip
# what a kept message means, where its id alone does not say (the report gives it as the
# reason an id is ranked)
NOTES = {
    "deepspeed.runner.no_hostfile": "the runner found no hostfile and launches on this node's "
    "GPUs alone (its master is 127.0.0.1): on each node of a job meant to span several, one "
    "job per node",
    "deepspeed.runner.host_unreachable": "the runner could not ssh to the hostfile's first "
    "host: no passwordless ssh, a wrong name, or the host down",
    "deepspeed.runner.no_master_addr": "hostname -I gave the runner no address to offer "
    "the other nodes",
    "deepspeed.runner.hostfile_bad": "the hostfile could not be read: the nodes of the job "
    "are not known",
    "deepspeed.runner.host_not_in_hostfile": "--include/--exclude names a host the hostfile lacks",
    "deepspeed.launch.pid_file_exists": "a second launch.py started for the same runner on "
    "this node",
    "deepspeed.launcher_helper.rank_mismatch": "the rank the MPI launcher gave differs from "
    "the one in the environment: two launchers number the ranks",
    "deepspeed.comm.no_launcher": "the process was started without a launcher's variables; "
    "DeepSpeed looks for MPI's",
    "deepspeed.comm.init_backend": "DeepSpeed starts torch.distributed: a healthy run's "
    "line; the last one before a stall means the ranks never met",
    "deepspeed.comm.nccl_not_implemented": "DeepSpeed's own NCCL backend never shipped; "
    "torch.distributed's NCCL is used: harmless",
    "deepspeed.engine.local_rank_conflict": "--local_rank and the environment's LOCAL_RANK "
    "differ: two launchers number the ranks",
    "deepspeed.engine.no_local_rank": "the process was not started by a launcher: no LOCAL_RANK",
    "deepspeed.zero.ranks_disagree": "ZeRO compared the ranks' parameter sizes and they "
    "differ: the ranks built different models",
    "deepspeed.zero.allocator_flushes": "the allocator flushed its cache to find memory: "
    "the step runs close to the GPU's memory",
    "deepspeed.accelerator.cpu_fallback": "DeepSpeed found no GPU and fell back to the CPU",
    "deepspeed.elasticity.invalid_world_size": "the ranks that joined are not a world size "
    "the elastic configuration allows",
    "accelerate.launch.port_in_use_standalone": "another process holds the main process port "
    "on this node; accelerate lets torchrun pick a free one and goes on",
    "accelerate.operations.shape_mismatch": "debug mode compared the ranks' tensor shapes "
    "before a collective and they differ: the ranks are not running the same step",
    "accelerate.data_loader.dispatch_batch_sizes": "rank 0 could not join the batches it "
    "fetches for every rank (their lengths differ) and raised; the others wait for its "
    "broadcast",
    "accelerate.accelerator.even_batches_iterable": "an iterable loader keeps uneven batch "
    "counts: at the epoch's end a rank with fewer batches stops calling the all-reduce",
    "accelerate.accelerator.device_map_distributed": "the model was spread over the GPUs "
    "(device_map) and the job was launched with several processes: every rank's copy sits on "
    "the same GPUs",
    "accelerate.accelerator.quantized_other_device": "a quantized model was loaded on a GPU "
    "other than the rank's own (every rank's on GPU 0)",
    "accelerate.accelerator.quantized_many_devices": "a quantized model spread over several "
    "GPUs cannot train under a distributed launch: the ranks share the GPUs",
    "accelerate.accelerator.dtensor_ddp": "the model's parameters are tensor-parallel "
    "(device_map='auto' under torchrun) and DDP cannot wrap them",
    "accelerate.modeling.device_not_available": "a device index asked for is past the GPUs "
    "this process sees",
    "accelerate.modeling.device_unavailable": "a GPU could not take a tensor while the model "
    "was placed (full, or held exclusively); it is left out",
    "accelerate.state.backend_not_available": "the backend asked for does not fit the devices "
    "this process found (no GPU seen, or torch_xla installed)",
    "accelerate.launch.too_few_gpu_ids": "a multi-GPU launch configured with fewer than two "
    "GPU ids",
    "accelerate.launch.multinode_no_main_process": "a multi-node launch with no address or "
    "port for the rendezvous",
    "accelerate.state.multinode_no_master_addr": "a multi-node launch with no MASTER_ADDR: "
    "the ranks have no rendezvous (accelerate took the run for CPU-only)",
    "accelerate.memory.no_batch_size": "find_executable_batch_size halved the batch to zero: "
    "the model alone does not fit the GPU",
}
# messages built in a variable and logged after: their level as the call logs them
LEVEL_OF = {"accelerate.launch.defaults_used": "warning",
            "accelerate.launch.rtx4000_p2p_disabled": "warning",
            "accelerate.utils.old_kernel": "warning"}  # fmt: skip
LEVELS = {"log.error": "error", "log.warning": "warning", "log.warn": "warning",
          "log.info": "info", "log.debug": "debug", "log.exception": "error",
          "log.critical": "error"}  # fmt: skip


def _literals(root: Path, rel_to: Path) -> list[tuple[str, int, str, str]]:
    """Every string constant and f-string of the files under ``root`` (a message built in a
    variable before it is logged: ``message = "The following values..."``)."""
    out = []
    for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:  # a piece of an f-string, not a message
                continue
            if isinstance(node, ast.Constant | ast.JoinedStr) and (msg := _message(node)):
                text = (
                    msg[1] if msg[0] == "python" else msg[1].replace("{", "{{").replace("}", "}}")
                )
                # a %-format logged later (``logger.warning(msg % n)``): its conversions as
                # the call's placeholders, so it is the call's message, not a second one
                text = _placeholders(_formatted(text))
                out.append((str(path.relative_to(rel_to)), node.lineno, text, "literal"))
    return out


def _formatted(text: str) -> str:
    """``text`` (``{name}`` placeholders, literal braces doubled) as a later ``str.format``
    prints it: a literal ``{name}`` becomes a placeholder and doubled braces one brace.
    Horovod's ``Timeout(message=...)`` formats ``{activity}`` in; its elastic driver's
    ``'...{{activity}}...' f'...'`` is no f-string piece, so it prints ``{activity}``."""
    return re.sub(
        r"\{\{\{\{|\}\}\}\}|\{\{(\w*)\}\}",
        lambda m: m.group(0)[:2] if m.group(1) is None else "{" + (m.group(1) or "value") + "}",
        text,
    )


def _placeholders(text: str) -> str:
    """A %-format's conversions as ``{value}``, ``{value_2}``... (one name each)."""
    count = iter(range(1, 100))
    return re.sub(
        r"%[-#0 +]*\d*(?:\.\d+)?[sdifr]",
        lambda _m: "{value" + (f"_{n}" if (n := next(count)) > 1 else "") + "}",
        text,
    )


def _git(mirror: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(mirror), *args], check=True, capture_output=True).stdout


def _export(mirror: Path, tag: str, paths: tuple[str, ...], into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(_git(mirror, "archive", tag, *paths))) as tar:
        tar.extractall(into, filter="data")


_LIT = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _extent(src: str, start: int, stops: str = "", cuts: str = "") -> tuple[int, list[int]]:
    """Where the expression from ``start`` ends (a bracket it did not open, or one of ``stops``
    outside brackets), and the places just after each of ``cuts`` outside brackets; string
    literals are skipped whole."""
    depth, i, after = 0, start, []
    while i < len(src):
        ch = src[i]
        if ch == '"':
            lit = _LIT.match(src, i)
            i = lit.end() - 1 if lit else i
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and ch in stops:
            break
        elif depth == 0 and ch in cuts:
            after.append(i + 1)
        i += 1
    return i, after


def _chain(src: str, start: int) -> str:
    """The ``<<`` chain or call argument from the literal at ``start`` to the statement's end."""
    i, _ = _extent(src, start, stops=";,")
    out: list[str] = []
    taken: set[str] = set()
    for raw in re.split(r"<<", src[start:i]):
        part = raw.strip()
        if not part:
            continue
        if part.startswith("std::endl"):
            break
        lits = _LIT.findall(part)
        if lits and re.fullmatch(r'(?:\s*"(?:[^"\\]|\\.)*")+\s*', part):
            out.append("".join(lits).replace("{", "{{").replace("}", "}}"))
            continue
        out.append(_named(part, taken))
    return "".join(out)


def _named(part: str, taken: set[str]) -> str:
    """An expression spliced into a message as ``{name}``, named by its last word."""
    words = [w for w in re.findall(r"[A-Za-z_]\w*", part) if w not in ("std", "count", "string")]
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", words[-1] if words else "value").lower()
    base, k = name, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return "{" + name + "}"


_THROW = re.compile(r"throw\s+std::\w+_error\s*\(")


def _throw(src: str, start: int) -> str:
    """A ``throw std::..._error(a + "b" + c)``'s message: literals kept, the rest ``{name}``."""
    i, after = _extent(src, start, cuts="+")
    cuts = [start, *after]
    out: list[str] = []
    taken: set[str] = set()
    for a, b in zip(cuts, [*cuts[1:], i + 1], strict=True):
        part = src[a : b - 1].strip()
        part = re.sub(r'^std::string\s*\((\s*"(?:[^"\\]|\\.)*"\s*)\)$', r"\1", part)
        if re.fullmatch(r'(?:\s*"(?:[^"\\]|\\.)*")+\s*', part):
            out.append("".join(_LIT.findall(part)).replace("{", "{{").replace("}", "}}"))
        elif part:
            out.append(_named(part, taken))
    return "".join(out)


def _cpp_messages(root: Path, rel_to: Path, anchors: list[str]) -> list[tuple[str, int, str]]:
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        src = blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        rel = str(path.relative_to(rel_to))
        for m in _LIT.finditer(src):
            if any(re.match(a, m.group(1)) for a in anchors):
                line = src.count("\n", 0, m.start()) + 1
                out.append((rel, line, _chain(src, m.start())))
        for m in _THROW.finditer(src):
            text = _throw(src, m.end())
            if any(re.match(a, text) for a in anchors):
                out.append((rel, src.count("\n", 0, m.start()) + 1, text))
    return out


def _rows(library: str, spec: dict[str, Any], mirror: Path) -> list[dict[str, Any]]:
    keep: tuple[Keep, ...] = spec["keep"]
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    levels: dict[str, str] = {}
    classes: dict[str, dict[str, list[str]]] = {}
    for tag in spec["tags"]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _export(mirror, tag, (*spec.get("python", ()), *spec.get("cpp", ())), root)
            messages: list[tuple[str, int, str, str]] = []
            for sub in spec.get("python", ()):
                base = root / sub
                files = read_tree(base, root) if base.is_dir() else [
                    m for m in read_tree(base.parent, root) if m.path == sub]  # fmt: skip
                for msg in files:
                    text = msg.text
                    if msg.style == "printf":  # a %-format: its conversions as placeholders
                        text = _placeholders(text.replace("{", "{{").replace("}", "}}"))
                    messages.append((msg.path, msg.line, text, msg.kind))
            # the keep rows that no call names: a literal assigned before it is logged
            for sub in spec.get("python", ()):
                messages += _literals(root / sub, root)
            for sub in spec.get("cpp", ()):
                cpp = _cpp_messages(root / sub, root, [a for _i, a, _s, _h in keep])
                messages += [(p, n, t, "cpp") for p, n, t in cpp]
            for ident, rel, name, _s, _h in spec.get("classes", ()):
                for line in _class_lines(root / rel, name):
                    classes.setdefault(ident, {}).setdefault(tag, []).append(f"{rel}:{line}@{tag}")
            for path, line, text, kind in messages:
                for ident, anchor, _s, _h in keep:
                    if re.search(anchor, text):
                        found.setdefault((ident, text), {}).setdefault(tag, []).append(
                            f"{path}:{line}@{tag}"
                        )
                        if kind != "literal" or text not in levels:
                            levels[text] = LEVELS.get(kind, LEVEL_OF.get(ident, "error"))
    rows: list[dict[str, Any]] = []
    for ident, _anchor, symptom, hints in keep:
        variants = sorted(
            ((t, w) for (i, t), w in found.items() if i == ident), key=lambda tw: -len(tw[1])
        )
        if not variants:
            raise SystemExit(f"{ident}: not found")
        for n, text, where in _merged(variants):
            seen = [t for t in spec["tags"] if t in where]
            pattern, fields = pattern_for(text, "python")
            # TensorShape::DebugString() prints "[1024, 10]": a bracketed list, commas inside
            pattern = re.sub(r"\(\?P<(debug_string\w*)>[^)]*\)",
                             lambda m: f"(?P<{m.group(1)}>\\[[^\\n\\]]{{0,200}}\\])",
                             pattern)  # fmt: skip
            row = {
                "id": ident if n == 0 else f"{ident}_{n + 1}", "library": library,
                "level": levels[text], "where": sorted({w for ws in where.values() for w in ws}),
                "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
                "format": text, "format_style": "python", "pattern": pattern,
                "fields": fields, "symptom": symptom, "hint_ids": list(hints),
                "note": NOTES.get(ident, f"{library}'s own message; versions are release tags read"),
            }  # fmt: skip
            if "debug_string" in pattern:  # the rendered sample has no brackets: a real line
                row["example"] = (
                    re.sub(
                        r"\{(\w+)\}",
                        lambda m: "[1024, 10]" if "debug_string" in m.group(1) else "ALLREDUCE",
                        text,
                    )
                    .replace("{{", "{")
                    .replace("}}", "}")
                )
            if ident in spec.get("results", {}):
                rows += _result_rows(row, spec["results"][ident])
                continue
            rows.append(row)
            if spec.get("signals") == ident and n == 0:
                rows += _signal_rows(row)
    return rows + _class_rows(library, spec, classes)


def _class_lines(path: Path, name: str) -> list[int]:
    """The line of ``class name`` in ``path`` (none where the file or the class is absent)."""
    if not path.is_file():
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]


def _class_rows(
    library: str, spec: dict[str, Any], found: dict[str, dict[str, list[str]]]
) -> list[dict[str, Any]]:
    """An exception raised with no message of its own: the traceback's last line is its
    name (and its argument's ``str``, e.g. ``HostsUpdatedInterrupt: True``)."""
    rows = []
    for ident, _rel, name, symptom, hints in spec.get("classes", ()):
        where = found.get(ident)
        if not where:
            raise SystemExit(f"{ident}: class {name} not found")
        seen = [t for t in spec["tags"] if t in where]
        rows.append({
            "id": ident, "library": library, "level": "info" if symptom == "info" else "error",
            "where": sorted({w for ws in where.values() for w in ws}),
            "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
            "format": name, "format_style": "literal", "pattern": escape(name), "fields": [],
            "symptom": symptom, "hint_ids": list(hints),
            "note": f"{library}'s exception class, raised without a message; versions are "
            "release tags read",
        })  # fmt: skip
    return rows


def _merged(
    variants: list[tuple[str, dict[str, list[str]]]],
) -> list[tuple[int, str, dict[str, list[str]]]]:
    """The texts of one message whose patterns differ only in their fields' names (a variable
    renamed between releases) as one, named as the text seen at the most tags; each with its
    place among the texts (its id's suffix, unchanged by the merge)."""
    out: list[tuple[int, str, dict[str, list[str]]]] = []
    keys: list[str] = []
    for n, (text, where) in enumerate(variants):
        key = re.sub(r"\(\?P<\w+>", "(", pattern_for(text, "python")[0])
        if key in keys:
            merged = out[keys.index(key)][2]
            for tag, places in where.items():
                merged.setdefault(tag, []).extend(places)
            continue
        keys.append(key)
        out.append((n, text, {tag: list(places) for tag, places in where.items()}))
    return out


def _result_rows(row: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """A message ending in ``ncclGetErrorString``'s text, once per ``ncclResult_t``: the
    result's short text (the prefix of both its forms) in place of ``field``, the class that
    result opens, and the id the result alone suggests, if any."""
    out = []
    group = re.compile(r"\(\?P<" + field + r">[^)]*\)")
    for result in nccl_results.RESULTS:
        symptom = NCCL_RESULT_CLASS.get(result.code)
        if symptom is None:  # ncclSuccess, ncclInProgress, ncclTimeout: no failure class
            continue
        suffix = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", result.name[4:]).lower()
        pattern = group.sub(escape(result.short_message), row["pattern"])
        fields = [f for f in row["fields"] if f != field]
        if row["format"].startswith("{op_name} "):  # the NCCL call's name, not the line before
            pattern, fields = r"(?P<op_name>nccl\w{1,40}) " + pattern.lstrip(), ["op_name", *fields]
        fmt = row["format"].replace("{" + field + "}", result.short_message)
        extra = {"example": fmt.replace("{op_name}", "ncclAllReduce")} if "{op_name}" in fmt else {}
        out.append({**row, "id": f"{row['id']}_{suffix}", "format": fmt, "pattern": pattern,
                    "fields": fields, "symptom": symptom,
                    "hint_ids": [result.diagnosis_id] if result.diagnosis_id else [],
                    "note": f"{result.name} ({result.code}): {result.meaning}", **extra})  # fmt: skip
    return out


def _signal_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The exit-code line for a child a signal ended: its own class (killed, crashed...)."""
    out = []
    code_rx = re.compile(r"\(\?P<(\w*return_code\w*)>[^)]*\)")
    name = code_rx.search(row["pattern"]).group(1)  # type: ignore[union-attr]
    for code, (suffix, symptom, hints) in SIGNALS.items():
        # no signal number is a prefix of another's (-6, -7, -9, -11): no end test needed
        pattern = code_rx.sub(str(code), row["pattern"])
        out.append({**row, "id": f"{row['id']}_{suffix}", "pattern": pattern,
                    "fields": [f for f in row["fields"] if f != name], "symptom": symptom,
                    "hint_ids": list(hints),
                    "note": f"returncode {code}: the child died of {suffix.upper()}",
                    "example": row["format"].replace("{" + name + "}", str(code))
                    .replace("{cmd}", "['python', '-u', 'train.py', '--local_rank=3']")})  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    kept = {ident for spec in LIBRARIES.values() for ident, *_ in spec["keep"]}
    if stray := sorted(set(NOTES) - kept):  # a note whose id no row has would go unseen
        raise SystemExit(f"notes for no kept row: {', '.join(stray)}")
    for library, spec in LIBRARIES.items():
        rows = _rows(library, spec, root / spec["mirror"] / "repo")
        print(f"{len(rows)} signatures -> {write_jsonl(library, rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
