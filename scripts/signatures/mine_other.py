"""Write ``cuda.jsonl``, ``cuda_legacy.json`` and ``kernel.jsonl`` (``mine_driver.py`` writes
``driver.jsonl``).

Usage: ``python scripts/signatures/mine_other.py [/path/to/jcuda/git-dir]``

* cuda: one signature per CUDA error message of
  :data:`nccl_doctor.knowledge.cuda_errors.ERRORS` (reused, not copied by
  hand: the table is the one home of codes, names and texts), anchored on the
  ways the message reaches a log: PyTorch's ``CUDA error: <msg>``, NCCL's
  ``Cuda failure [N] '<msg>'``, ``CUDA error N '<msg>'``.
* cuda_legacy.json: the ``cudaError_t`` numbers that CUDA 10.1 renumbered
  (``cudaErrorUnknown`` was 30, now 999). CUDA's headers are in none of the
  repositories read; the numbers come from JCuda's ``cudaError.java``, which
  mirrors ``driver_types.h`` of each CUDA release, at tags
  ``version-10.0.0-RC01`` (CUDA 10.0) and ``version-10.1.0-RC01`` (CUDA 10.1).
* kernel: line shapes from the Linux sources, quoted in the ``where`` of each row.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from common import OUT_DIR, escape, write_jsonl

from nccl_doctor.knowledge.cuda_errors import ERRORS, catalogue_id, self_evident, symptom_class

JCUDA_FILE = "JCudaJava/src/main/java/jcuda/runtime/cudaError.java"
JCUDA_TAGS = ("version-10.0.0-RC01", "version-10.1.0-RC01")
#: The prefixes CUDA's texts come behind: PyTorch's ``CUDA error:`` (runtime calls) and
#: ``CUDA driver error:`` (driver calls, c10/cuda/driver_api.h: cuGetErrorString's text,
#: the runtime's own text for most codes); NCCL's ``Cuda failure N
#: '...'``; ``CUDA error N '...'``; other wrappers' ``CUDART error:`` (SGLang),
#: ``CUDA runtime error in <call>:`` (TensorRT-LLM), ``CUDA Error:`` (vLLM, darknet); THC's
#: ``cuda runtime error (N) :``; an error's own name (CuPy's ``cudaErrorX:``, the driver's
#: ``CUDA_ERROR_X:``); ggml's ``failed to initialize CUDA:``; CUDA's samples' ``(error code
#: ...)``. A text :func:`cuda_errors.self_evident` says is CUDA's own needs none.
CUDA_CONTEXT = (
    r"(?:CUDA (?:driver )?error: |Cuda failure (?:-?\d{1,4} )?'|CUDA error -?\d{1,4} '"
    r"|CUDA(?:RT| [Rr]untime)? (?:[Ee]rror|ERROR)(?: in \w{1,60})?: "
    r"|cuda runtime error \(\d{1,5}\) : |(?:cudaError[A-Za-z]{1,60}|CUDA_ERROR_[A-Z_]{1,60})\)?: "
    r"|failed to initialize CUDA: |\(error code )"
)
CUDA_VERSIONS = {"first": "12.x", "last": "13.x", "seen": ["12.x", "13.x"]}


def cuda_rows() -> list[dict[str, Any]]:
    rows = []
    for err in ERRORS:
        if not err.message or not err.name or err.code == 0:
            continue
        symptom = symptom_class(err)
        rows.append({
            "id": catalogue_id(err),
            "library": "cuda",
            "level": "error",
            "where": [f"nccl_doctor.knowledge.cuda_errors:{err.code}"],
            "versions": CUDA_VERSIONS,
            "format": f"CUDA error: {err.message}",
            "format_style": "literal",
            "pattern": ("" if self_evident(err) else CUDA_CONTEXT)
            + f"(?P<message>{escape(err.message)})",
            "fields": ["message"],
            "symptom": symptom,
            "hint_ids": [err.diagnosis_id] if err.diagnosis_id else [],
            "result": err.name,
            "note": f"cudaGetErrorString({err.code}); the code, name and hint live in "
            "knowledge.cuda_errors",
        })  # fmt: skip
    return rows


def legacy_codes(mirror: Path) -> dict[str, Any]:
    tables = []
    for tag in JCUDA_TAGS:
        text = subprocess.run(
            ["git", "-C", str(mirror), "show", f"{tag}:{JCUDA_FILE}"],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        tables.append(
            {
                m[0]: int(m[1], 0)
                for m in re.findall(r"int (cuda\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)\s*;", text)
            }
        )
    old, new = tables
    codes = [
        {"name": k, "legacy_code": old[k], "code": new[k]}
        for k in sorted(old, key=old.__getitem__)
        if k in new and old[k] != new[k]
    ]
    return {
        "source": "github.com/jcuda/jcuda "
        + JCUDA_FILE
        + " at "
        + " and ".join(JCUDA_TAGS)
        + " (JCuda mirrors driver_types.h of CUDA 10.0 and 10.1)",
        "codes": codes,
    }


KERNEL_SRC = "linux mm/oom_kill.c"
AER_SRC = "linux drivers/pci/pcie/aer.c"
CURRENT = {"first": "current", "last": "current", "seen": ["current"]}


def _doc(ident: str, library: str, where: str, fmt: str, pattern: str, fields: list[str],
         symptom: str, hints: list[str], note: str, style: str = "printf", example: str = ""
         ) -> dict[str, Any]:  # fmt: skip
    row = {
        "id": ident, "library": library, "level": "info" if symptom == "info" else "error", "where": [where], "versions": CURRENT,
        "format": fmt, "format_style": style, "pattern": pattern, "fields": fields,
        "symptom": symptom, "hint_ids": hints, "note": note,
    }  # fmt: skip
    if example:
        row["example"] = example  # a line of this shape (made up here, values invented)
    return row


KERNEL_ROWS = [
    _doc("kernel.oom.killed_process", "kernel", KERNEL_SRC + " __oom_kill_process",
         "%s: Killed process %d (%s) total-vm:%lukB, anon-rss:%lukB, file-rss:%lukB, "
         "shmem-rss:%lukB, UID:%u pgtables:%lukB oom_score_adj:%hd",
         r"Killed process (?P<pid>\d{1,10}) \((?P<comm>[^\n)]{0,64}?)\) total-vm:(?P<total_vm_kb>\d{1,20})kB, "
         r"anon-rss:(?P<anon_rss_kb>\d{1,20})kB, file-rss:(?P<file_rss_kb>\d{1,20})kB",
         ["pid", "comm", "total_vm_kb", "anon_rss_kb", "file_rss_kb"], "host_oom",
         ["host.resources", "launch.rank_crash"],
         "the host OOM killer's victim; older kernels print the same line without the leading "
         "'Out of memory: ' and without shmem-rss/UID/pgtables/oom_score_adj",
         example="Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:65432kB, "
         "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:512kB oom_score_adj:0"),
    _doc("kernel.oom.memcg_killed", "kernel", KERNEL_SRC + " (oom_kill_process message)",
         "Memory cgroup out of memory: Killed process %d (%s)",
         r"Memory cgroup out of memory: Killed process (?P<pid>\d{1,10}) \((?P<comm>[^\n)]{0,64})\)",
         ["pid", "comm"], "host_oom", ["host.resources", "launch.rank_crash"],
         "a container's memory limit, not the host's RAM, was hit"),
    _doc("kernel.oom.invoked", "kernel", KERNEL_SRC + " dump_header",
         "%s invoked oom-killer: gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd",
         r"invoked oom-killer: gfp_mask=(?P<gfp_mask>0x[0-9a-fA-F]{1,16})[^\n,]{0,80}, "
         r"order=(?P<order>-?\d{1,3}), oom_score_adj=(?P<oom_score_adj>-?\d{1,5})",
         ["gfp_mask", "order", "oom_score_adj"], "host_oom", ["host.resources"],
         "the first line of an OOM report; the process named is the allocator, not always the victim"),
    _doc("kernel.oom.constraint", "kernel", KERNEL_SRC + " dump_oom_summary",
         "oom-kill:constraint=%s,nodemask=%*pbl,cpuset=%s,mems_allowed=%*pbl,global_oom,"
         "task_memcg=%s,task=%s,pid=%d,uid=%d",
         r"oom-kill:constraint=(?P<constraint>[A-Z_]{1,40}),[^\n]{0,400}?,task=(?P<task>[^\n,]{0,64}),"
         r"pid=(?P<pid>\d{1,10}),uid=(?P<uid>\d{1,10})",
         ["constraint", "task", "pid", "uid"], "host_oom", ["host.resources"],
         "one-line OOM summary (Linux 5.0+); oom_memcg= in place of global_oom for a cgroup OOM",
         example="oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
         "global_oom,task_memcg=/user.slice,task=python,pid=4242,uid=1000"),
    _doc("kernel.segfault", "kernel", "linux arch/x86/mm/fault.c show_signal_msg",
         "%s%s[%d]: segfault at %lx ip %px sp %px error %lx",
         r"\[(?P<pid>\d{1,10})\]: segfault at (?P<address>[0-9a-fA-F]{1,16}) "
         r"ip (?P<ip>[0-9a-fA-F]{1,16}) sp (?P<sp>[0-9a-fA-F]{1,16}) error (?P<error>[0-9a-fA-F]{1,8})",
         ["pid", "address", "ip", "sp", "error"], "crashed", ["launch.rank_crash"],
         "a process died of SIGSEGV (exit code -11 in torchrun's summary); the pattern starts at "
         "'[pid]' (the command name before it is left to the line parser)",
         example="python[4242]: segfault at 0 ip 00007f3a1c2b3d4e sp 00007ffd5e6f7a80 error 4 in "
         "libc.so.6[7f3a1c200000+195000]"),
    _doc("kernel.hung_task", "kernel", "linux kernel/hung_task.c check_hung_task",
         "INFO: task %s:%d blocked for more than %ld seconds.",
         r"INFO: task (?P<comm>[^\n]{1,64}?):(?P<pid>\d{1,10}) blocked for more than "
         r"(?P<seconds>\d{1,10}) seconds\.", ["comm", "pid", "seconds"], "hang", ["app.hang"],
         "a task stuck in uninterruptible sleep (often a driver or filesystem call)"),
    # the same line for a kernel thread of the I/O stack (a filesystem's journal or transaction
    # thread, the block layer's writeback, swap, ZFS's sync thread, Lustre's RPC and lock
    # threads, the SCSI error handler, a loop device): the host's storage stalls, not the job; a
    # kworker is not one (a workqueue thread does any work: its hung line, often in the GPU
    # driver, stays the generic row; its name holds a colon, kworker/u256:3, hence the lazy comm)
    _doc("kernel.hung_task.io_thread", "kernel", "linux kernel/hung_task.c check_hung_task",
         "INFO: task %s:%d blocked for more than %ld seconds.",
         r"INFO: task (?P<comm>(?:jbd2/|xfsaild/|kswapd|kcompactd|khugepaged|"
         r"txg_sync|z_wr_|flush-|md\d{1,4}_raid|dmcrypt_write|nfsd|rpciod|kjournald|btrfs-|"
         r"ptlrpcd|ldlm_|scsi_eh_|loop\d)[^\n]{0,60}?):"
         r"(?P<pid>\d{1,10}) blocked for more than (?P<seconds>\d{1,10}) seconds\.",
         ["comm", "pid", "seconds"], "host_io", ["host.resources", "app.hang"],
         "a kernel thread of the I/O stack stuck in uninterruptible sleep: the disk, its "
         "filesystem or a network filesystem stopped answering; ranks that read or write there "
         "wait with it",
         example="INFO: task jbd2/nvme0n1p2-8:812 blocked for more than 122 seconds."),
    _doc("kernel.oom.reaper", "kernel", KERNEL_SRC + " oom_reap_task_mm",
         "oom_reaper: reaped process %d (%s), now anon-rss:%lukB, file-rss:%lukB, "
         "shmem-rss:%lukB",
         r"oom_reaper: reaped process (?P<pid>\d{1,10}) \((?P<comm>[^\n)]{0,64})\)",
         ["pid", "comm"], "host_oom", ["host.resources", "launch.rank_crash"],
         "the OOM reaper freed a killed process's memory: the OOM killer chose it just before",
         example="oom_reaper: reaped process 4242 (python), now anon-rss:0kB, file-rss:0kB, "
         "shmem-rss:0kB"),
    _doc("kernel.gpf", "kernel", "linux arch/x86/kernel/traps.c (general protection fault)",
         "%s[%d] general protection fault ip:%lx sp:%lx error:%lx",
         r"\[(?P<pid>\d{1,10})\] general protection fault ip:(?P<ip>[0-9a-fA-F]{1,16}) "
         r"sp:(?P<sp>[0-9a-fA-F]{1,16}) error:(?P<error>[0-9a-fA-F]{1,8})",
         ["pid", "ip", "sp", "error"], "crashed", ["launch.rank_crash"],
         "a process died of SIGSEGV from a bad (non-canonical) pointer, often prefixed 'traps: '",
         example="traps: python[4242] general protection fault ip:7f3a1c2b3d4e sp:7ffd5e6f7a80 "
         "error:0 in libc.so.6[7f3a1c200000+195000]"),
    # PCIe Advanced Error Reporting (drivers/pci/pcie/aer.c aer_print_error and
    # aer_print_port_info; aer_error_severity_string spells 'Uncorrected'/'Corrected', newer
    # kernels 'Uncorrectable'/'Correctable')
    _doc("kernel.aer.bus_error_uncorrected", "kernel", AER_SRC + " aer_print_error",
         "PCIe Bus Error: severity=%s, type=%s, (%s)",
         r"PCIe Bus Error: severity=Uncorrect(?:ed|able) \((?P<severity>Fatal|Non-Fatal)\), "
         r"type=(?P<type>[^\n,]{1,40}), \((?P<agent>[^\n)]{1,40})\)",
         ["severity", "type", "agent"], "pcie_error", ["gpu.lost", "gpu.pcie_degraded"],
         "a PCIe transaction failed beyond the link's own retry; a Fatal one resets the link, "
         "and a GPU behind it falls off the bus (Xid 79)",
         example="pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
         "type=Transaction Layer, (Receiver ID)"),
    _doc("kernel.aer.error_received", "kernel", AER_SRC + " aer_print_port_info",
         "%s%s error received: %04x:%02x:%02x.%d",
         r"Uncorrect(?:ed|able) \((?P<severity>Fatal|Non-Fatal)\) error received: "
         r"(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])",
         ["severity", "pci"], "pcie_error", ["gpu.lost", "gpu.pcie_degraded"],
         "the root port names the device that reported the error (the GPU's bus id, or a "
         "switch above it)",
         example="pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: "
         "0000:3b:00.0"),
    _doc("kernel.aer.corrected", "kernel", AER_SRC + " aer_print_error",
         "PCIe Bus Error: severity=%s, type=%s, (%s)",
         r"PCIe Bus Error: severity=Correct(?:ed|able), type=(?P<type>[^\n,]{1,40}), "
         r"\((?P<agent>[^\n)]{1,40})\)", ["type", "agent"], "info", ["gpu.pcie_degraded"],
         "the link corrected it by itself (a retried TLP): no failure; a steady stream of them "
         "is a marginal link or riser",
         example="pcieport 0000:00:01.1: PCIe Bus Error: severity=Corrected, type=Physical "
         "Layer, (Receiver ID)"),
    _doc("kernel.aer.corrected_received", "kernel", AER_SRC + " aer_print_port_info",
         "%s%s error received: %04x:%02x:%02x.%d",
         r"Correct(?:ed|able) error received: "
         r"(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])", ["pci"], "info",
         ["gpu.pcie_degraded"], "the root port's line before a corrected error's report",
         example="pcieport 0000:00:01.1: AER: Corrected error received: 0000:01:00.0"),
]  # fmt: skip


def main(argv: list[str]) -> int:
    mirror = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror/jcuda+jcuda/repo")
    print(write_jsonl("cuda", cuda_rows()))
    print(write_jsonl("kernel", KERNEL_ROWS))
    legacy = OUT_DIR / "cuda_legacy.json"
    legacy.write_text(json.dumps(legacy_codes(mirror), indent=1) + "\n", encoding="utf-8")
    print(legacy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
