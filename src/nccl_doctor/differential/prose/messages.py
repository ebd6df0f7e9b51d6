"""Prose rows that name a message or a signal in words: a timeout, out of memory, a kill, a
signal, the store, CUDA's device, driver and kernel errors (in the table's order)."""

from __future__ import annotations

import re

from nccl_doctor.differential.prose.failure import FAILURE
from nccl_doctor.differential.prose.words import (
    NO_GPU_SEEN,
    UNDENIED,
    ProseSymptom,
    rx,
)
from nccl_doctor.facts.told import not_negated
from nccl_doctor.knowledge.xid import xid_info
from nccl_doctor.signs.gpu import XID_SAID

#: NCCL's results by their enum's name, said in a sentence ("NCCL refuses with
#: ncclInvalidUsage at startup"): each is its class. (A line the catalogue reads, one quoting
#: the result's text "unhandled system error" with the causes its source names, comes first:
#: the reporter's words open a class only where no such line does.)
_RESULTS = (
    ("nccl_system", r"\bncclSystemError\b"),
    ("nccl_unhandled_cuda", r"\bncclUnhandledCudaError\b"),
    ("nccl_internal", r"\bncclInternalError\b"),
    ("nccl_invalid", r"\bncclInvalid(?:Usage|Argument)\b"),
    ("nccl_remote", r"\bncclRemoteError\b"),
)


def _a_fault_xid(text: str, match: re.Match[str]) -> bool:
    """An Xid said, not denied, whose table meaning is a fault (not an informational one)."""
    info = xid_info(match["code"])
    return info is not None and info.severity != "info" and not_negated(text, match)


MESSAGES: tuple[ProseSymptom, ...] = (
    *(
        ProseSymptom(
            cls,
            rx(pattern),
            "the reporter names the NCCL result the call returned",
            counts=not_negated,
        )
        for cls, pattern in _RESULTS
    ),
    # the driver's own code for a GPU fault, retold ("a single Xid 62 just before the hang",
    # "dmesg showed Xid 79"): what the GPU did comes before how the job then ended
    ProseSymptom(
        "xid",
        rx(XID_SAID.pattern),
        "the reporter names an Xid, the driver's code for a fault of the GPU",
        counts=_a_fault_xid,
    ),
    ProseSymptom(
        "collective_timeout",
        rx(
            r"\bwatchdog\b.{0,60}\b(?:time[sd]? ?out|timeout|abort)"
            r"|\bcollective[- ]time ?out|\bNCCL (?:collective )?time ?out"
            # "ProcessGroupNCCL timeout during the broadcast"; Chinese, Japanese and Korean: the
            # watchdog or a collective timed out ("watchdog 超时", "collective 操作超时",
            # "watchdogがタイムアウト", "all_reduce가 타임아웃")
            r"|\bProcessGroupNCCL\b[^.;\n]{0,20}\btime ?out"
            r"|\b(?:watchdog|collective|all_?reduce|all_?gather|broadcast|reduce_scatter|NCCL)\b"
            r"[^。；.;\n]{0,12}(?:超时|タイムアウト|타임아웃)"
        ),
        "the reporter names the watchdog's collective timeout",
    ),
    ProseSymptom(
        "collective_timeout",
        rx(
            # the process group's own timeout by its setting's name, or said in Chinese
            # ("nccl 超时": nccl timed out)
            r"\b(?:ddp|pg|process_group|nccl)_timeout\b|\b(?:nccl|ddp|barrier)\s?超时"
            # a failure at the default timeout's length: 30 minutes (torch's default for every
            # process group before 2.2 and for gloo's), 1800 s, 1800000 ms
            r"|\b(?:time[sd]? ?out|timeout)\b.{0,60}(?:\b30 ?min\w*|\b1800(?:000)?\b|30 ?分钟)"
            r"|(?:\b30 ?min\w*|\b1800 ?s\b|30 ?分钟).{0,30}(?:\btime[sd]? ?out|\btimeout|超时)"
            r"|\b(?:fail\w*|crash\w*|errors?|dies|killed)\b.{0,80}\b(?:always|exactly|every time"
            r"|each time) (?:after|at) (?:exactly |about )?(?:30|thirty) min"
            r"|\b(?:always|exactly|every time|each time)\b.{0,40}\b(?:fail|crash|error|die)\w*\b"
            r".{0,20}\bafter (?:exactly |about )?(?:30|thirty) min"
        ),
        "the reporter says it fails at the process group's timeout (named, or by its length)",
        # a setting or a length alone is no failure ("ddp_timeout=7200, everything works")
        counts=lambda text, _match: FAILURE.said_in(text),
    ),
    ProseSymptom(
        "gpu_oom",
        rx(
            r"\b(?:CUDA|GPU) out of memory\b|\bran out of (?:GPU )?memory\b"
            r"|\b(?:fail\w*|unable) to allocate (?:GPU|CUDA|device) memory\b"
            r"|\bCUDA error\b.{0,30}\b(?:fail\w* to )?allocat\w* (?:GPU )?memory\b"
            r"|\b(?:got|get|gets|getting|hit|hits|runs?) (?:an? )?(?:CUDA |GPU )?out of memory\b"
            # "out of memory on rank 0 only", "OOM with 8 GPUs" (not the kernel's OOM killer),
            # "GPU memory leak"
            # (not the host's: "CPU OOM", "out of memory ... increase swap")
            r"|(?<!CPU )(?<!host )(?<!RAM )(?<!system )\bout of memory\b(?! killer)"
            r"(?![^.\n]{0,40}\b(?:swap|RAM)\b)"
            r"|(?<!CPU )(?<!host )(?<!RAM )\bOOM\b(?![- ]?kill)|\bGPU memory leak\w*"
            # "still runs out of GPU memory", "resuming immediately OOMs on the GPU"
            r"|\b(?:runs?|running) out of (?:GPU |CUDA |device |VRAM )?memory\b"
            r"|(?<!CPU )(?<!host )\bOOM(?:s|ed|ing|'d)\b"
            # the names the error goes by: torch's exception (torch.OutOfMemoryError, alias
            # torch.cuda.OutOfMemoryError), the driver API's and the runtime's enum names
            r"|\b(?:torch\.(?:cuda\.)?)?OutOfMemoryError\b|\bCUDA_ERROR_OUT_OF_MEMORY\b"
            r"|\bcudaErrorMemoryAllocation\b"
            # Chinese: GPU memory blown / not enough; Japanese and Korean: GPU memory short
            r"|爆显存|显存(?:不够|不足|溢出|爆了|炸了)|GPU ?メモリ(?:が)?(?:不足|足りな)"
            r"|GPU ?메모리(?:가)? ?부족"
        ),
        "the reporter says it ran out of GPU memory",
        counts=not_negated,
    ),
    ProseSymptom(
        "host_limit",
        # torch's own words for a data-loading worker that died without a Python error
        # (torch/utils/data/dataloader.py, torch/csrc/DataLoader.cpp), as a title retells them
        rx(
            r"\bDataLoader worker\b[^.;\n]{0,40}?\b(?:exited unexpectedly|is killed by signal"
            r"|(?:was )?killed|died)\b"
        ),
        "the reporter says a DataLoader worker died (host memory or /dev/shm, torch's words)",
    ),
    ProseSymptom(
        "killed",
        rx(
            # (not a process its user stopped: "was killed by me with Ctrl-C after it hung")
            r"\b(?:says|said|prints?|printed|shows?|got|gets|was|were|being|just)\s+killed\b"
            r"(?! by (?:me|us|the user|hand|ctrl|keyboard))"
            r"|\bOOM[- ]kill"
            # Chinese: "just killed", "killed appears", "was killed" (the shell's word, quoted)
            r"|(?:直接|就|被|出现|显示|提示)\s?killed\b"
            # "caused exited -9", "exits with return code = -9", "signal 9": SIGKILL by its number
            r"|\bexit(?:ed|s)?\b.{0,25}(?<![\w.-])-9\b|\bsignal 9\b|\bSIGKILL\b"
            # 128 + 9: the shell's and the launchers' exit code of a killed process ("exit code
            # 137", "退出码 137"); Chinese "bei kill diao"; Japanese "Killed と表示"
            r"|\b(?:exit|return|error|status)\w*\b[^.;\n]{0,20}(?<![\w.-])137\b|退出码\s?137"
            r"|被\s?kill(?:掉|了)?|kill\s?掉|Killed\s?(?:と|って)"
        ),
        "the reporter says the process was killed (the shell's 'Killed': SIGKILL)",
        counts=not_negated,
    ),
    # a host limit by the C library's words or the limit's name, said without a message the
    # catalogue reads ("Too many open files with 8 dataloader workers", "No space left on
    # device in /dev/shm", "hit the ulimit on open file descriptors", "the locked memory limit
    # is too low", "the disk filled up"); Chinese and Japanese the same
    ProseSymptom(
        "host_limit",
        rx(
            r"\btoo many open files\b|\bno space left on device\b|\bdisk quota exceeded\b"
            r"|\b(?:hit|hits|reach\w*|exceed\w*) (?:the )?(?:ulimit|limit) (?:on|of|for) "
            r"(?:open )?(?:files|file descriptors|fds|locked memory|processes|threads)\b"
            r"|\b(?:locked|pinned|memlock) memory limit (?:is )?(?:too )?(?:low|small)\b"
            r"|\b(?:/dev/shm|shared memory|shm)\b[^.;\n]{0,20}\b(?:is |was )?(?:too small|full"
            r"|exhausted|not (?:big|large) enough)\b"
            r"|\bdisk (?:filled up|is full|was full|ran out)\b|\bran out of disk\b"
            r"|/dev/shm\s?空间不足|打开的文件(?:数)?太多|共享内存(?:不足|太小)|磁盘(?:满了|空间不足)"
            r"|ディスクの空き容量がなくな"
        ),
        "the reporter names a host limit that ran out (open files, /dev/shm, disk, locked memory)",
        counts=not_negated,
    ),
    ProseSymptom(
        "bus_error",
        rx(
            r"\bbus errors?\b|\bSIGBUS\b"
            # signal 7 as a death ("dies with signal 7"), not a handler installed for it
            r"|\b(?:died|dies|killed|terminated|crash\w*|exit\w*|received|got|with)\b"
            r"[^.;\n]{0,20}\bsignal 7\b"
        ),
        "the reporter says a process died of a bus error (SIGBUS)",
        counts=not_negated,
        # the kernel's PCIe AER report (kernel.aer.*) is no signal: its own class, or harmless
        unless=rx(r"\bPCIe Bus Error\b"),
    ),
    ProseSymptom(
        "crashed",
        rx(
            r"\bseg(?:mentation )?fault\w{0,10}|\bSIGSEGV\b"
            # the other signals a process's own fault raises: an instruction the CPU lacks, a
            # division by zero (SIGILL, SIGFPE), and segfault in Chinese and Japanese
            r"|\billegal instruction\b|\bfloating[- ]point exception\b|\bSIG(?:ILL|FPE)\b"
            r"|段错误|セグフォ|セグメンテーション(?:違反|フォルト)"
            # the launcher's exit code of a process these signals ended ("local_rank 2 failed
            # with exitcode -11"), or the signal by number
            r"|\bexit\s?code\b[:=\s]{0,3}-(?:4|8|11)\b"
            r"|\b(?:died|dies|killed|terminated|crash\w*|exit\w*|received|got|with|by)\b"
            r"[^.;\n]{0,20}\bsignal (?:4|8|11)\b"
        ),
        "the reporter says a process crashed natively (segfault, illegal instruction)",
        counts=not_negated,
    ),
    ProseSymptom(
        "aborted",
        rx(
            r"\bSIGABRT\b|\bsignal 6\b|\bexit\w*\b.{0,25}(?<![\w.-])-6\b"
            r"|\bterminate called after throwing\b"
            # the shell's words for SIGABRT ("Aborted (core dumped)"), or an abort that left a
            # core file
            r"|\baborted \(core dumped\)|\babort\w*\b[^.;\n]{0,30}\bcore (?:file|dump)"
            r"|abort\s?了[^。；\n]{0,20}core"
        ),
        "the reporter says a process aborted (SIGABRT: a C++ exception, an assert, the watchdog)",
        counts=not_negated,
    ),
    # an RDMA work completion with an error, retold ("NET/IB completion error 12 naming a peer",
    # "Got completion from peer ... with error 12", "retry exceeded", IBV_WC_ names)
    ProseSymptom(
        "rdma_completion",
        rx(
            r"\bcompletion (?:error|status|with error)\s{0,2}[:=]?\s{0,2}\d{1,2}\b"
            # ("a completion with status=12 from the peer's IP": NCCL's WARN retold)
            r"|\bcompletions? (?:with|of|had|has|gave|returned) (?:an? )?(?:error )?status"
            r"\s?[:=]?\s?\d{1,2}\b"
            r"|\bcompletion from peer\b[^.;\n]{0,60}\berror\s{0,2}\d{1,2}\b"
            r"|\b(?:transport )?retry (?:count )?exceeded\b|\bIBV_WC_[A-Z_]{3,40}\b"
        ),
        "the reporter retells an RDMA work completion that came back with an error",
        counts=not_negated,
    ),
    ProseSymptom(
        "store_timeout",
        rx(
            r"\bTCP connect\(\)|\bconnect\(\) (?:error|fail\w*)|\bconnection refused\b"
            rf"|\brendezvous\b.{{0,40}}{UNDENIED}\b(?:fail\w*|time[sd]? ?out)"
            r"|\b(?:init\w*|init_process_group|rendezvous|store)\b.{0,30}"
            rf"{UNDENIED}\b(?:time[sd]? ?out|timeout)\b"
            # the workers cannot reach the master ("can't connect to the master addr", "time
            # out waiting to connect to the master", "gives up after waiting 30 min on the TCP
            # store"); Chinese, Japanese: cannot connect to the master, the rendezvous or the
            # TCPStore timed out
            r"|\b(?:can ?(?:no|['\u2019])t|could ?n[o']t|unable to|fails? to|failed to) "
            r"(?:connect|reach|get through) to (?:the )?(?:master|MASTER_ADDR|rendezvous|store"
            r"|TCP ?store|rank 0|head node)"
            r"|\btime[sd]? out waiting (?:to connect |for )(?:to )?(?:the )?(?:master|store"
            r"|TCP ?store|rendezvous|other nodes|workers)"
            r"|\bgives? up after waiting\b[^.;\n]{0,40}\b(?:TCP ?store|store|rendezvous|master)"
            # "rank 1 times out connecting to (10.128.0.5, 29500)", "a socket timeout connecting
            # to the store"
            r"|\b(?:time[sd]? ?out|timeout) (?:while )?connecting to\b"
            r"|连不上\s?(?:master|主节点|MASTER)|(?:rendezvous|TCP ?Store|store)[^。；\n]{0,10}"
            r"(?:连接)?超时|マスター[^。\n]{0,20}接続できず|(?:rendezvous|TCPStore)が?タイムアウト"
        ),
        "the reporter says connecting to the store or the rendezvous failed",
        counts=not_negated,
    ),
    ProseSymptom(
        "collective_timeout",
        rx(
            r"\b(?:DDP|NCCL|all_?reduce|all_?gather|reduce_scatter|broadcast|barrier|collective"
            rf"|training|jobs?)\b.{{0,40}}{UNDENIED}"
            r"\b(?:times? ?out|timed ?out|timeout)\b"
        ),
        "the reporter says the job or a collective timed out",
        counts=not_negated,
    ),
    ProseSymptom(
        "cuda_device",
        rx(
            r"\bdevice_count\(\)\s*(?:shows|returns|gives|reports|is|=|==)\s*(?:only )?"
            r"(?:0|1|one|zero)\b"
            r"|\b(?:sees?|detects?|shows?|finds?|lists?) only (?:one|1|a single) (?:GPU|device)\b"
            r"|\bonly (?:sees?|detects?|finds?|shows?|lists?) (?:one|1|a single) (?:GPU|device)\b"
            rf"|{NO_GPU_SEEN}"
            # CUDA refuses the device asked for: busy (another process on an exclusive-mode
            # GPU), or an ordinal past the count; in Chinese and Japanese the same
            r"|\b(?:devices? (?:is |are )?busy or unavailable|exclusive[_ ]process"
            r"|invalid device ordinal|not a valid device|(?:can ?(?:no|['\u2019])t|unable to) "
            r"(?:get|use|access) (?:its|the|their|a) (?:GPU|device)\b)"
            r"|独占模式|设备忙或(?:者)?不可用|device ordinal\s?不合法|存在しないデバイス番号"
        ),
        "the reporter says CUDA cannot give a process its GPU (too few, busy or out of range)",
    ),
    ProseSymptom(
        "cuda_driver",
        rx(
            r"\bis_available\(\)\s*(?:returns?|returned|is|gives?|gave|shows?|says|=+|->|:)"
            r"\s*False\b|\bCUDA (?:is )?(?:not available|unavailable)\b"
            r"|\bcan ?(?:no|['\u2019])t use (?:cuda|the cuda)\b"
            # the driver older than the runtime ("driver version is insufficient", "driver is
            # too old", "the CUDA driver is older than what the wheel was built against"), or
            # it fails to start; in Chinese and Korean the same
            r"|\bdriver version is insufficient\b|\bdriver (?:is |was )?(?:too old|older than)\b"
            # ("the NVIDIA driver on the system is too old", "the driver on these nodes was too
            # old")
            r"|\bdriver (?:on|of|in) [^.;\n]{0,30}?\b(?:is|was|are) too old\b"
            r"|\bdriver (?:initiali[sz]ation|init) (?:fails|failed|error)\b"
            r"|\btoo old (?:a )?driver\b"
            r"|驱动(?:版本)?(?:太旧|过旧|太老|过低|太低)|找不到\s?NVIDIA\s?驱动"
            r"|(?:driver|驱动)\s?和\s?(?:toolkit|CUDA|runtime)[^。；\n]{0,6}(?:对不上|不匹配)"
            # (Chinese and Japanese: CUDA's initialisation failed)
            r"|CUDA\s?(?:の\s?)?(?:初始化|初期化)[^。；\n]{0,6}(?:fail|失败|失敗)"
            r"|driver\s?(?:버전이|가)[^.\n]{0,20}(?:낮|오래)"
        ),
        "the reporter says CUDA cannot be used at all (torch.cuda.is_available() is False)",
        counts=not_negated,
    ),
    # CUDA's unknown error in words ("CUDA fails with error 999", "CUDA unknown error"): its
    # own class, whose causes are the driver's stack (the UVM module first)
    ProseSymptom(
        "cuda_unknown",
        rx(
            r"\b(?:CUDA |cuda )?error(?: code)?:? ?999\b|\bcudaErrorUnknown\b"
            r"|\bCUDA_ERROR_UNKNOWN\b|\bCUDA\b[^.;\n]{0,30}\bunknown error\b"
        ),
        "the reporter names CUDA's unknown error (999): the driver's stack under CUDA",
        counts=not_negated,
    ),
    # a kernel's own assertion, in words ("crashes with a device-side assert"); not the
    # advice every CUDA error of PyTorch's carries ("compile with TORCH_USE_CUDA_DSA to enable
    # device-side assertions")
    ProseSymptom(
        "cuda_assert",
        rx(
            r"(?<!enable )(?<!enabling )(?<!enables )\bdevice[- ]side assert(?:ion)?s?\b"
            # a kernel's assertion by its own line ("Assertion `t >= 0 && t < n_classes`
            # failed"), or in words ("a cuda assertion in the nll loss kernel")
            r"|\bAssertion `[^`\n]{1,160}` failed|\bcuda assert(?:ion)?s?\b"
        ),
        "the reporter names a device-side assertion (a kernel checked its index or value)",
        counts=not_negated,
    ),
    # a kernel fault, in words ("dies with an illegal memory access")
    ProseSymptom(
        "cuda_fault",
        rx(r"\billegal (?:memory )?(?:access|address)(?:es)?\b|\bmisaligned address\b"),
        "the reporter names a kernel fault (an illegal memory access): the context is lost",
        counts=not_negated,
    ),
)
