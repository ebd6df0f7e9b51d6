"""What the reporter tried and how it came out: another backend, one GPU, CUDA's own tests,
a version, and the change that made it work (shared memory, another port, equal batches,
the host's network, a privileged pod, the UVM module reloaded).
"""

from __future__ import annotations

from nccl_doctor.differential.cues.base import (
    FIXED,
    NOT_FIXED,
    WORK_WORDS,
    WORKS,
    WORKS_SAID,
    WORKS_UNDENIED,
    Cue,
    cue,
    outcome,
)
from nccl_doctor.differential.prose import NO_GPU_SEEN, NOT_SAID, NUM, UPDATE_WORDS, rx
from nccl_doctor.signs.launch import OTHER_PORT_SAME, SAME_PORT_NAMED

#: What feeds each rank its batches: the DataLoader's worker processes, a sharded dataset's
#: files, the sampler that splits the data across ranks.
_DATA_LOADING = (
    r"(?:\bnum_workers\b|\bdataloader workers\b|\bsamples_per_shard\b|\bshard files?\b"
    r"|\bshards\b|\bDistributedSampler\b|\bpersistent_workers\b)"
)

#: A collective by the names people and the benchmarks give it (nccl-tests' ``*_perf``).
_COLLECTIVE = (
    r"\b(?:all_?reduce|all_?gather|all_?to_?all|all2all|reduce_?scatter|broadcast|send_?recv"
    r"|reduce|gather|scatter)(?:_perf)?\b"
)
#: It stalls or fails.
_STALLS = r"\b(?:hangs?|hung|stuck|freez\w*|fails?|failed|deadlock\w*)\b"

TRIED: dict[str, Cue] = {
    # the same code works with gloo, or on one GPU: NCCL's intra-node transport is at fault
    # (a "works" denied right before it is none: "it does not work with gloo either")
    "nccl_only": outcome(
        rf"{WORKS_SAID}\b[^.!?;\n]{{0,40}}\b(?:with|using|on) (?:the )?`?gloo\b"
        rf"|\bgloo\b[^.!?;\n]{{0,30}}{WORKS_SAID}\b"
        rf"|{WORKS_SAID} (?:fine |well )?(?:with|on) (?:a )?single GPU"
        rf"|single GPU\b[^.!?;\n]{{0,30}}{WORKS_SAID}\b"
        rf"|{WORKS_SAID} (?:fine |well )?(?:with|on) (?:one|1) GPU\b"
        # "Single-GPU training is fine", "one-GPU runs are OK": the job on one GPU alone runs
        r"|\b(?:single|one|1)-GPU (?:\w+ )?(?:training|runs?|jobs?|inference) "
        r"(?:is|are|runs?|works?) (?:fine|ok|okay|normal(?:ly)?|clean)\b"
        # "crashes only with 2+ GPUs", "fails only on multiple GPUs"
        r"|\bonly (?:with|on|when using|for) (?:2\+|two or more|multiple|several|more than one)"
        r" GPUs\b"
    ),
    # the same crash with no NCCL in the process at all ("ran the dataloader alone in a loop
    # (no GPU, no DDP) and it also crashed"): the fault is in what the job runs besides NCCL
    "crashes_without_nccl": outcome(
        r"\b(?:alone|by itself|on its own|without (?:DDP|NCCL|the GPUs?|distributed|torchrun))\b"
        r"[^.!?;\n]{0,80}\b(?:also|still|too)\b[^.!?;\n]{0,20}"
        r"\b(?:crash\w*|segfault\w*|seg ?faults?|died|dies|aborts?|aborted)\b"
    ),
    # the same failure with gloo too: the fault is under both backends (the store, the
    # rendezvous, the network between the hosts), not NCCL's own transports
    "gloo_fails_too": outcome(
        r"\bgloo\b[^.!?;\n]{0,40}\b(?:(?:the )?same (?:error|result|problem|issue|thing|behaviou?r)"
        r"|also (?:fails?|failed|hangs?|hung|crash\w*|errors?)|fails? too|as well"
        r"|still (?:fails?|failed|hangs?|hung|the same|errors?))"
        r"|\b(?:even|also) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|(?:\bnot|n't|\bnever) work\w* (?:with|using|on) (?:the )?`?gloo\b"
        r"|\bsame (?:error|result|problem|issue|thing) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|\bgloo\W{0,3}(?:\w+\W{0,3})?(?:还是|也)",
        unless=WORKS_UNDENIED,
    ),
    # the same failure on one GPU alone: no GPU-to-GPU path (P2P, SHM, NVLink) is in use
    "one_gpu_fails_too": outcome(
        r"\b(?:even|also|too)\b[^.!?;\n]{0,20}\b(?:with|on|using) (?:a |one |only one )?"
        r"(?:single|one|1) ?(?:GPU|card)\b"
        r"|\b(?:errors?|fails?|failed|hangs?|hung|crash\w*|stuck|deadlock\w*|freez\w*)\b"
        r"[^.!?;\n]{0,20}\b(?:with|on|using) (?:a |only )?(?:single|one|1) ?(?:GPU|card)\b"
        r"|\bsingle[- ]?(?:GPU|card)\b[^.!?;\n]{0,30}\b(?:errors?|fails?|failed|hangs?|hung"
        r"|crash\w*|stuck|deadlock\w*|freez\w*)\b",
        unless=WORKS,
    ),
    # CUDA's own peer-to-peer samples pass: the GPUs' peer access works outside NCCL
    "p2p_test_passed": outcome(
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest|simpleIPC)\b[^.!?;\n]{0,60}"
        r"\b(?:pass(?:es|ed)?|works?|worked|succe\w*|fine|ok(?:ay)?)\b"
        r"|" + NOT_SAID + r"\b(?:successfully|succesfully) (?:tried|ran|run|tested)\b"
        r"[^.!?;\n]{0,30}"
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest)\b"
    ),
    # nvidia-smi works where CUDA does not: NVML needs only the control and GPU device nodes
    # and the kernel module that matches its library, CUDA also the unified-memory node
    # (/dev/nvidia-uvm) ("nvidia-smi works fine", "nvidia-smi ok", "nvidia-smi shows all 8
    # GPUs"); not an account of before ("nvidia-smi worked until I updated", "used to work")
    "smi_works": cue(
        r"\bnvidia-smi\b[`'\")]?(?: ?(?:and|,|/) ?[`'\"]?[\w-]{1,20}(?: -\w{1,10})?[`'\")]?)?"
        r"\s+(?:works?|worked|is (?:ok|fine|working)|ok\b|runs? (?:fine|ok|normally)"
        r"|(?:shows|lists|listed|showed|displays|sees) (?:all|both|the|my|\d+|every)"
        r"(?: \d+| of the| of my)? (?:gpus?|cards?|devices?)\b(?!'?s? (?:util|usage|load|memory))"
        r")"
        r"|\bnvidia-smi\b[^.;\n]{0,20}\bnormal(?:ly)?\b",
        unless=rx(
            r"\b(?:until|before|used to|anymore|no longer|stopped|initially|at first|after a while"
            rf"|then|now)\b|\breboot\w*\b|{UPDATE_WORDS}"
        ),
    ),
    # the process sees no GPU at all ("device_count() returns 0", "torch sees no GPU", "no GPU
    # found", "nvidia-smi: command not found"): no device node or driver library reached it,
    # where a wrong index or CUDA_VISIBLE_DEVICES leaves it the others
    "no_gpu_seen": cue(NO_GPU_SEEN),
    # the failure comes and goes with a library version: a bug or a second library
    "version_said": outcome(
        rf"\b(?:works?|worked|fine|no (?:problem|issue)s?)\b[^.!?;\n]{{0,60}}"
        rf"\b(?:version |v)?{NUM}\b"
        rf"|\b{NUM}\b[^.\n]{{0,40}}\b(?:works?|worked|is fine|fix(?:es|ed)|solv(?:es|ed)"
        r"|(?:go|goes|went) away)\b"
        # ("with the module nccl/2.18.5-cuda12.2 ... the same run exits cleanly")
        rf"|\b{NUM}\b(?:[^.\n]|\.(?!\s)){{0,60}}\b(?:exits?|exited|runs?|ran|finish(?:es|ed)?"
        r"|completes?|completed|ends?|ended) (?:cleanly|fine|normally|without (?:an? )?"
        r"(?:error|crash|problem)s?)\b"
        r"|\bregression\b|\b(?:after|since) (?:an? )?(?:upgrad|updat)\w*"
        r"|\bdowngrad\w*\b[^.!?;\n]{0,40}\b(?:fix|work|solv)"
        # a version found free of it ("not reproducible with 2.31.2", "it doesn't happen on
        # NCCL 2.18.3", "Working NCCL runtime tested: 2.31.2")
        r"|(?:\bnot|n['\u2019]t|\bnever|\bcannot) (?:be )?(?:reproduc\w*|happen\w*|occur\w*"
        rf"|seen)\b[^.!?;\n]{{0,30}}\b(?:with|on|in|using|under)\b[^.!?;\n]{{0,20}}\b{NUM}\b"
        rf"|\bworking (?:nccl|torch|pytorch|cuda|driver)\b[^.!?;\n]{{0,40}}\b{NUM}\b"
        # another NCCL build, installed or rebuilt, fixed it ("pip install nvidia-nccl-cu12 is
        # ok", "rebuilt NCCL, and it all works")
        r"|\b(?:install\w*|reinstall\w*|rebuil\w*|switch\w*|replac\w*|upgrad\w*|updat\w*)\b"
        r"[^.!?;\n]{0,40}\bnccl\b(?![-_]tests)[^.!?;\n]{0,40}"
        r"\b(?:is ok|is fine|works?|worked|fix\w*|solv\w*|resolv\w*)\b",
        # another program's version ("works with transformers 4.30", "fine on vLLM 0.4.2",
        # "fairseq 0.9.0: works well"), with no word of the NCCL stack (NCCL, torch, CUDA, the
        # driver) in the line: that program's own change, not NCCL's; a program the list does
        # not name is one whose name stands right before the number
        unless=rx(
            r"^(?!.*\b(?:nccl|torch|pytorch|cuda|cudnn|driver|nvidia)).*(?:\b(?:transformers"
            r"|accelerate|deepspeed|lightning|vllm|sglang|peft|trl|datasets|numpy|python"
            r"|tensorflow|jax|xformers|flash[-_ ]?attn|flash[-_ ]attention|bitsandbytes"
            r"|megatron|diffusers|ray|ultralytics|timm|mmcv|detectron2?)\b"
            r"|\b(?!(?:version|release|with|on|in|and|or|to|from|using|tested|is|was)\b)"
            r"[a-z][a-z0-9_-]{2,30}[ :=]v?\d+\.\d+)"
        ),
    ),
    # what made it work names the cause, like a setting does (signs.settings): the container
    # given shared memory, the store moved to another port, the ranks given equal batches
    "shm_fix_worked": outcome(
        rf"(?:--ipc[= ]host|--shm-size|\bshm_size|/dev/shm|\bhostIPC:? ?true)\b[^.;\n]{{0,40}}"
        rf"{FIXED}|{FIXED}[^.;\n]{{0,40}}(?:--ipc[= ]host|--shm-size|\bshm_size\b"
        r"|\bhostIPC:? ?true\b)"
        r"|\b(?:increas|enlarg|rais|bigger|larger|mor)\w* (?:the )?(?:/dev/shm|shm|shared memory)\b"
        rf"[^.;\n]{{0,40}}{FIXED}",
        unless=NOT_FIXED,
    ),
    # the DataLoader's workers said to have run out of shared memory, or to matter ("a
    # DataLoader worker was killed by a bus error ... insufficient shared memory", "with
    # num_workers=0 it never crashes"): the loader's /dev/shm, which NCCL's SHM only shares
    "loader_shm": cue(
        r"\bDataLoader(?: worker)?s?\b[^.;\n]{0,60}?\b(?:bus error|SIGBUS|shared memory|shm)\b"
        r"|\bnum_workers\s?=\s?0\b[^.;\n]{0,40}?\b(?:never|no longer|doesn't|does not|don't"
        r"|do not) (?:crash|fail|die)\w*"
    ),
    "port_change_worked": outcome(
        r"\b(?:chang\w*|switch\w*|another|different|other|new)\b[^.;\n]{0,30}"
        rf"(?:--master[_-]port|MASTER_PORT|\bport)\b[^.;\n]{{0,40}}{FIXED}",
        unless=NOT_FIXED,
    ),
    "even_batches_worked": outcome(
        rf"(?:\bdrop_last\s*=\s*True|\bJoin\(|\bjoin context|even_batches)[^.;\n]{{0,60}}{FIXED}"
        rf"|{FIXED}[^.;\n]{{0,40}}(?:\bdrop_last\s*=\s*True|\bJoin\()",
        unless=NOT_FIXED,
    ),
    # the data loading changed and the job ran ("num_workers=0 works", "with more than one
    # shard file the problem is solved", "a DistributedSampler fixed it"): the ranks' input
    # pipelines, not the communicators, held the job (a worker that deadlocks, a rank with no
    # batch while the others wait in the gradients' all-reduce)
    "data_loading_worked": outcome(
        rf"{_DATA_LOADING}[^.;\n]{{0,60}}{FIXED}|{FIXED}[^.;\n]{{0,40}}{_DATA_LOADING}",
        unless=NOT_FIXED,
    ),
    # one collective runs on the same ranks and another stalls or fails ("all_reduce_perf
    # gives 95 GB/s, but alltoall_perf hangs", "broadcast works fine while all_gather
    # hangs"): the ranks met and connected, so what stalls is the other collective's own
    # path (its algorithm, its peers' transport), not how the ranks find each other
    "other_collective_runs": outcome(
        rf"{_COLLECTIVE}[^.;\n]{{0,80}}?(?:{WORK_WORDS}|\bpass(?:es|ed)?\b|\bbandwidth (?:is|of)\b"
        rf"|\bGB/s\b)[^.;\n]{{0,60}}?\b(?:but|while|whereas|however)\b(?:[^.;\n]{{0,40}}?"
        rf"{_COLLECTIVE}[^.;\n]{{0,40}}?{_STALLS}|[^.;\n]{{0,20}}?{_STALLS}[^.;\n]{{0,30}}?"
        rf"{_COLLECTIVE})"
        rf"|{_COLLECTIVE}[^.;\n]{{0,30}}?{_STALLS}"
        rf"[^.;\n]{{0,40}}?\b(?:but|while|whereas)\b[^.;\n]{{0,30}}?{_COLLECTIVE}"
        rf"[^.;\n]{{0,40}}?(?:{WORK_WORDS}|\bpass(?:es|ed)?\b)",
        unless=rx(r"\b(?:not|never) (?:work|pass|run)\w*|n't (?:work|pass|run)\w*|\beither\b"),
    ),
    # the job works on the host's network, not the pods' or the containers' own ("with
    # hostNetwork: true it works", "--network=host fixed it"): the overlay's addresses or
    # interfaces are what NCCL and the store could not use
    "host_network_fixes": outcome(
        r"\b(?:hostNetwork:? ?true|--net(?:work)?[= ]host|host network(?:ing)?)\b[^.;\n]{0,40}"
        r"\b(?:works?|worked|fix\w*|solv\w*|resolv\w*|fine)\b"
        r"|\b(?:works?|worked|fix\w*|solv\w*|fine)\b[^.;\n]{0,40}"
        r"\b(?:hostNetwork:? ?true|--net(?:work)?[= ]host|host network(?:ing)?)",
        unless=NOT_FIXED,
    ),
    # it works once the container runs privileged: the pod lacked device nodes or
    # capabilities (IPC lock, the RDMA or GPU devices) the library asks for
    "privileged_works": outcome(
        r"\b(?:--)?privileged(?::? ?true)?\b[^.;\n]{0,40}"
        + FIXED
        + r"|"
        + FIXED
        + r"[^.;\n]{0,40}\b(?:--)?privileged\b"
        r"|\bnon-?privileged\b[^.;\n]{0,60}\b(?:fails?|failed|errors?|crash\w*)\b",
        unless=rx(r"\bnot (?:work|fix|help|solv)\w*|n't (?:work|fix|help|solv)\w*|\bstill\b"),
    ),
    "uvm_reload_worked": outcome(
        r"\b(?:modprobe|reload\w*|re-?insert\w*|load\w*)\b[^.;\n]{0,20}\bnvidia[-_]uvm\b"
        rf"[^.;\n]{{0,40}}{FIXED}",
        unless=NOT_FIXED,
    ),
    # the port changed and the bind failed the same: the job binds its own port twice
    "other_port_same": cue(OTHER_PORT_SAME.pattern, unless=rx(SAME_PORT_NAMED.pattern)),
}
