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

from nccl_doctor.knowledge.cuda_errors import ERRORS, catalogue_id, symptom_class

JCUDA_FILE = "JCudaJava/src/main/java/jcuda/runtime/cudaError.java"
JCUDA_TAGS = ("version-10.0.0-RC01", "version-10.1.0-RC01")
CUDA_CONTEXT = r"(?:CUDA error: |Cuda failure (?:-?\d{1,4} )?'|CUDA error -?\d{1,4} ')"
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
            "pattern": CUDA_CONTEXT + f"(?P<message>{escape(err.message)})",
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
CURRENT = {"first": "current", "last": "current", "seen": ["current"]}


def _doc(ident: str, library: str, where: str, fmt: str, pattern: str, fields: list[str],
         symptom: str, hints: list[str], note: str, style: str = "printf", example: str = ""
         ) -> dict[str, Any]:  # fmt: skip
    row = {
        "id": ident, "library": library, "level": "error", "where": [where], "versions": CURRENT,
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
         r"INFO: task (?P<comm>[^\n:]{1,64}):(?P<pid>\d{1,10}) blocked for more than "
         r"(?P<seconds>\d{1,10}) seconds\.", ["comm", "pid", "seconds"], "hang", ["app.hang"],
         "a task stuck in uninterruptible sleep (often a driver or filesystem call)"),
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
