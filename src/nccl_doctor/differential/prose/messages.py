"""Prose rows that name a message or a signal in words: a timeout, out of memory, a kill, a
signal, the store, CUDA's device, driver and kernel errors (in the table's order)."""

from __future__ import annotations

from nccl_doctor.differential.prose.failure import FAILURE
from nccl_doctor.differential.prose.words import (
    NO_GPU_SEEN,
    UNDENIED,
    ProseSymptom,
    not_negated,
    rx,
)

MESSAGES: tuple[ProseSymptom, ...] = (
    ProseSymptom(
        "collective_timeout",
        rx(
            r"\bwatchdog\b.{0,60}\b(?:time[sd]? ?out|timeout|abort)"
            r"|\bcollective[- ]time ?out|\bNCCL (?:collective )?time ?out"
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
        ),
        "the reporter says it ran out of GPU memory",
        counts=not_negated,
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
        ),
        "the reporter says the process was killed (the shell's 'Killed': SIGKILL)",
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
        "bus_error",
        rx(r"\bbus error\b|\bSIGBUS\b"),
        "the reporter says a process died of a bus error (SIGBUS)",
        counts=not_negated,
        # the kernel's PCIe AER report (kernel.aer.*) is no signal: its own class, or harmless
        unless=rx(r"\bPCIe Bus Error\b"),
    ),
    ProseSymptom(
        "crashed",
        rx(r"\bseg(?:mentation )?fault\w{0,10}|\bSIGSEGV\b"),
        "the reporter says a process crashed natively (segfault)",
        counts=not_negated,
    ),
    ProseSymptom(
        "aborted",
        rx(
            r"\bSIGABRT\b|\bsignal 6\b|\bexit\w*\b.{0,25}(?<![\w.-])-6\b"
            r"|\bterminate called after throwing\b"
        ),
        "the reporter says a process aborted (SIGABRT: a C++ exception, an assert, the watchdog)",
        counts=not_negated,
    ),
    ProseSymptom(
        "store_timeout",
        rx(
            r"\bTCP connect\(\)|\bconnect\(\) (?:error|fail\w*)|\bconnection refused\b"
            rf"|\brendezvous\b.{{0,40}}{UNDENIED}\b(?:fail\w*|time[sd]? ?out)"
            r"|\b(?:init\w*|init_process_group|rendezvous|store)\b.{0,30}"
            rf"{UNDENIED}\b(?:time[sd]? ?out|timeout)\b"
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
            rf"|{NO_GPU_SEEN}"
        ),
        "the reporter says CUDA enumerates fewer GPUs than the machine has",
    ),
    ProseSymptom(
        "cuda_driver",
        rx(
            r"\bis_available\(\)\s*(?:returns?|returned|is|gives?|gave|shows?|says|=+|->|:)"
            r"\s*False\b|\bCUDA (?:is )?(?:not available|unavailable)\b"
            r"|\bcan ?(?:no|['\u2019])t use (?:cuda|the cuda)\b"
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
        rx(r"(?<!enable )(?<!enabling )(?<!enables )\bdevice[- ]side assert(?:ion)?s?\b"),
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
