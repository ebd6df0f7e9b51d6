"""Signs read by the GPU rules (``rules/gpu``) and, for the GPUs' setting, the differential's
context."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign
from nccl_doctor.knowledge.gpu_boards import CONSUMER_BOARD_PATTERN, NVLINK_BOARD_PATTERN

# -- the machine: boards, counts, wedged processes --------------------------------

NVLINK_BOARD = sign(
    "gpu.nvlink_board",
    NVLINK_BOARD_PATTERN,
    "a line names an NVLink/NVSwitch board part (SXM, HGX/DGX, a known server or cloud instance)",
)
CONSUMER_BOARD = sign(
    "gpu.consumer_board",
    CONSUMER_BOARD_PATTERN,
    "a line names a GeForce/TITAN board (no PCIe peer-to-peer between such cards)",
)
MULTI_GPU = sign(
    "gpu.multi_gpu",
    r"\b(?:[2-9]|1[0-6])\s*(?:x|\*|×)\s*(?:NVIDIA\s+)?(?:Tesla\s+)?(?:A100|A800|H100|H200|H800|"
    r"V100|B200|B100|GB200)|\b(?:[2-9]|1[0-6])\s+(?:NVIDIA\s+)?(?:A100|A800|H100|H200|H800|V100|"
    r"B200)\b|\b(?:[2-9]|1[0-6]) ?GPUs\b",
    "a person says the machine has several data-centre GPUs (``8x A100``, ``4 GPUs``)",
)
GPU_ERROR = sign(
    "gpu.gpu_error",
    r"CUDA error|cuda failure|\bXid\b|NVRM|GPU (?:error|fault|hang)|ggml-cuda|cudaError",
    "a GPU-side error was printed or named (CUDA error, Xid, NVRM, a GPU fault)",
)
WEDGE = sign(
    "gpu.wedge",
    r"still around after SIGKILL|(?:can ?not|can't|couldn't|could not|unable to) (?:be )?kill"
    r"|unkillable|uninterruptible sleep|\bD state\b|stuck in (?:the )?(?:kernel|driver)"
    r"|only (?:solution|way|fix|thing)[^.]{0,40}\breboot"
    r"|reboot(?:ing)? (?:is the only|was the only)"
    r"|State 'stop-sigterm' timed out",
    "GPU processes survive SIGKILL, or only a reboot recovered (the GPU is wedged in the driver)",
)

# -- compute mode, fabric, MIG ------------------------------------------------------

DEVICES_BUSY = sign(
    "gpu.devices_busy",
    r"busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE",
    "CUDA found the devices busy or unavailable (an exclusive or prohibited compute mode)",
)
SYSTEM_NOT_READY = sign(
    "gpu.system_not_ready",
    r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY",
    "CUDA error 802: the GPUs never joined the NVLink fabric (fabric manager not ready)",
)
FABRIC_MANAGER_LOG = sign(
    "gpu.fabric_manager_log",
    r"fabric ?manager .{0,60}(?:don'?t|doesn'?t|does not) match"
    # systemd's lines for the unit (its own: 'Failed with result', 'status=1/FAILURE'; the
    # status block's ExecStart line names the binary before its exit status)
    r"|nvidia-fabricmanager\.service.{0,60}(?:[Ff]ailed|FAILURE)"
    r"|nv-fabricmanager.{0,100}(?:error|failed|status=\d{1,3}/FAILURE)"
    r"|Failed to start NVIDIA fabric ?manager|Unit nvidia-fabricmanager\.service "
    r"(?:not found|could not be found)",
    "the fabric manager failed, is missing, or does not match the driver (its log or systemd)",
)
FM_UP = sign(
    "gpu.fm_up",
    r"Started NVIDIA fabric ?manager|Successfully configured all the available GPUs and NVSwitches"
    r"|(?P<active>^\s{0,8}Active: active \(running\))|(?P<header>nvidia-fabricmanager\.service - )",
    "the fabric manager unit up: systemd started it, its log configured the fabric, or its "
    "status block (the unit's ``header``, then ``active``: 'Active: active (running)' now)",
)
MIG_PROFILE = sign(
    "gpu.mig_profile",
    r"\bMIG[- ](?P<profile>\d+g\.\d+gb)\b",
    "a MIG slice's profile in a device name or a report (``A100-SXM4-80GB-MIG-3g.40gb``)",
)
FM_NOTHING_TO_DO = sign(
    "gpu.fm_nothing_to_do",
    r"NVSwitch driver failed with error:\s?WARNING Nothing to do|NV_WARN_NOTHING_TO_DO",
    "the fabric manager found no NVSwitch (PCIe GPUs, NVLink bridges): it has nothing to do, "
    "and its exit is no failure",
)
MIG_ENUMERATION = sign(
    "gpu.mig_enumeration",
    r"device >= 0 && device < num_gpus|invalid device ordinal|no CUDA GPUs are available"
    r"|no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice",
    "a process asked CUDA for a device it does not have: on MIG, each process enumerates one "
    "instance, whatever NVML counts",
)
MIG_IN_USE = sign(
    "gpu.mig_in_use",
    r"(?<!not )(?<!no )(?<!without )(?<!disabled )"
    r"\b(?:MIG (?:GPU )?(?:instances?|slices?|partitions?|devices?)|MIG mode (?:is )?enabled"
    r"|partitioned (?:in)?to MIG|Multi-Instance GPU (?:instances?|partitions?|mode))\b"
    # a MIG device's UUID, or its prefix said ("identifiers that start with MIG- followed by
    # a UUID"); nvidia-smi's MIG tables' two kinds of instance, named together
    r"|\bMIG-(?:GPU-)?[0-9a-f]{8}-|\b(?:start|begin)s?(?:ing)? with [\"'`]?MIG-"
    r"|\bGPU instances? and compute instances?\b",
    "the job's GPUs said to be MIG instances (``with MIG GPU instances``, ``partitioned into "
    "MIG``): each process enumerates one instance",
)
MIG_CUDA_FAIL = sign(
    "gpu.mig_cuda_fail",
    r"device >= 0 && device < num_gpus|INTERNAL ASSERT FAILED|invalid device ordinal"
    r"|no CUDA GPUs are available|CUDA error|RuntimeError|fails?\b",
    "CUDA (or the job) failed: what a process on MIG slices hits when it wants several devices",
)

# -- memory -----------------------------------------------------------------------

OOM_TEXT = sign(
    "gpu.oom_text",
    r"out of memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY",
    "an out-of-memory error was printed or quoted (any wording)",
)
#: a person telling of a process that is not the job's holding GPU memory ("nvidia-smi shows a
#: python process using about 11 GB on GPU 1 when nothing of mine runs", "the OOM message lists
#: another process id with 10.9 GiB in use"); Chinese: "a process whose user is not me",
#: "someone else's jupyter"
FOREIGN_HOLDER = sign(
    "gpu.foreign_holder",
    # (not "the other process", "my other process": the job's own other rank)
    r"(?<!the )(?<!my )(?<!our )(?<!each )"
    r"\b(?:another|other|an? (?:idle|stray|leftover|zombie|old|python)) (?:\w+ ){0,2}process"
    r"(?:es)?(?: id)?\b[^.;\n]{0,60}?\b(?:using|uses|holds?|holding|occupy\w*|tak(?:es|ing)"
    r"|with)\b[^.;\n]{0,20}?\b\d{1,3}(?:\.\d{1,2})? ?(?:GB|GiB|G)\b"
    # whose process it is ("The user of that PID is not me", "a process that is not mine",
    # "another student's Jupyter kernel")
    r"|\b(?:user|owner) of (?:that|the|this) (?:PID|process)\b[^.;\n]{0,20}?\b(?:is not|isn't)"
    r" (?:me|mine)\b|\b(?:process|PID)\b[^.;\n]{0,30}?\b(?:is not|isn't) mine\b"
    r"|\b(?:someone else|another user|another student|a colleague|a coworker)'s"
    r" (?:\w+ ){0,2}(?:process|kernel|job|notebook)"
    # ("ps says it is a python process of another user")
    r"|\bprocess(?:es)? (?:of|from|owned by|belonging to|run by|started by) (?:another|a"
    r" different|some other|someone else|a colleague|a coworker)(?: user)?\b"
    # (not denied: "没有别人的程序", "there are no other people's programs")
    r"|进程[^。；\n]{0,20}?(?:用户|user)\s?不是我"
    r"|(?<!没有)(?<!没)(?<!无)(?:别人|其他人|他人|师兄|师姐|同学|同事)的?"
    r"[^。；\n]{0,10}?(?:进程|程序|jupyter|notebook|任务)",
    "a person says a process that is not the job's holds memory on a GPU",
)
#: The reporter says the processes on the GPU are the job's own ("they are all mine", "the
#: PIDs match my four tasks"): ranks crowded onto one GPU, not another user's.
OWN_HOLDERS = sign(
    "gpu.own_holders",
    r"\b(?:they|those|these|all of them|the processes|the PIDs)\b[^.;\n]{0,30}?\b(?:are|were) "
    r"(?:all )?(?:mine|my own|ours|our own|(?:from |of )?my (?:own )?(?:job|tasks|ranks))\b"
    r"|\bPIDs? (?:match|matches|matching|are) (?:my|our|the job's)\b"
    r"|(?:都是|全是|只有)我(?:自己)?的",
    "the reporter says the processes holding the GPU are the job's own",
)
SMALL_BATCH = sign(
    "gpu.small_batch",
    r"(?:reduc\w{0,20}|lower\w{0,20}|decreas\w{0,20}|even (?:with|at)|tried)\b"
    r".{0,40}\bbatch[ _-]?size"
    r"|batch[ _-]?size (?:of |to |=\s*)?(?:1|2|4|8)\b.{0,60}(?:still|same|didn't|did not|not)",
    "a person says the OOM stays at a small batch size (so something else may hold the memory)",
)
FRAMEWORK_OOM = sign(
    "gpu.framework_oom",
    r"RESOURCE_EXHAUSTED:?\s*Out of memory|Out of memory while trying to allocate"
    r"|OOM when allocating tensor|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"
    r"|failed to allocate [\d.]+\s*[KMG]i?B .{0,40}CUDA_ERROR_OUT_OF_MEMORY"
    r"|torch\.(?:cuda\.)?OutOfMemoryError",
    "a GPU allocation failed in the wording of JAX/XLA, TensorFlow, CUDA's names or torch's class",
)
NVSHMEM_HEAP_OOM = sign(
    "gpu.nvshmem_heap_oom",
    # its error macro prints the CUresult: 2 is CUDA_ERROR_OUT_OF_MEMORY (mem_heap.cpp)
    r"non-zero status: 2 cuMemCreate failed"
    r"|nvshmem malloc failed \(hint: check if total allocation has exceeded NVSHMEM symmetric",
    "NVSHMEM's symmetric heap could not grow (cuMemCreate out of memory) or is full "
    "(NVSHMEM_SYMMETRIC_SIZE)",
)
SAID_OOM = sign(
    "gpu.said_oom",
    r"\b(?:OOM|out of (?:GPU |device |CUDA |video )?memory)\b.{0,80}\b(?:GPU|CUDA|NCCL|VRAM|device)"
    r"|\b(?:GPU|CUDA|NCCL|VRAM|device)\b.{0,80}\b(?:OOM|out of (?:GPU |device )?memory)\b",
    "a sentence says the GPU (or CUDA/NCCL) ran out of memory",
)
HOST_OOM = sign(
    "gpu.host_oom",
    r"oom[- ]?kill|killed process|host memory|system memory|\bRAM\b|swap|cgroup",
    "the out-of-memory a line speaks of is the host's (the OOM killer, RAM, swap, a cgroup)",
)
JAX = sign(
    "gpu.jax",
    r"\bjax\b|\bxla\b|flax",
    "the job runs JAX/XLA (which preallocates most of the GPU's memory)",
)
TENSORFLOW = sign(
    "gpu.tensorflow",
    r"tensorflow|\btf\b",
    "the job runs TensorFlow (which takes the GPU's memory unless memory growth is on)",
)

# -- faults in words --------------------------------------------------------------

SAID_ECC = sign(
    "gpu.said_ecc",
    r"uncorrectable ECC error|ECC error|double[- ]bit ECC|ecc_uncorrectable"
    # nvidia-smi -q's states of a memory error waiting on a reset, and the table's volatile
    # uncorrectable count above zero, as a reporter retells them
    r"|Remapped Rows Pending\s{0,3}:?\s{0,3}Yes|Pending (?:Page )?(?:Blacklist|Retirement)"
    r"\s{0,3}:?\s{0,3}Yes|Row Remapping Failure Occurred\s{0,3}:?\s{0,3}Yes"
    r"|Volatile Uncorr\w{0,10}\.? ECC\b\s{0,3}[=:]?\s{0,3}[1-9]",
    "a line speaks of ECC errors (or of nvidia-smi's pending retirement or remapping)",
)
DENIED_ECC = sign(
    "gpu.denied_ecc",
    r"\b(?:no|zero|0|without(?: any)?|not any) (?:\w+ )?ECC errors?\b"
    r"(?![^.\n]{0,80}\b(?:but|except|however|apart from)\b)",
    "a line says there are no ECC errors (and names no exception after it)",
)
CORRECTABLE = sign(
    "gpu.correctable",
    r"correctable",
    "a line says correctable (or uncorrectable: read with ``gpu.uncorrectable``)",
)
UNCORRECTABLE = sign(
    "gpu.uncorrectable",
    r"uncorrectable",
    "a line says uncorrectable (an ECC error that is not merely a corrected one)",
)
#: A line of nvidia-smi -q's clock event (throttle) reasons naming a slowdown as active, where
#: the GPU's section around it was not pasted (``        HW Power Brake Slowdown       :
#: Active``); SW Power Cap under load is the GPU at its limit, which is normal.
SLOWDOWN_ACTIVE = sign(
    "gpu.slowdown_active",
    r"^\s{0,16}(?P<reason>HW Slowdown|HW Thermal Slowdown|HW Power Brake Slowdown"
    r"|SW Thermal Slowdown)\s{0,40}:\s{0,4}Active\b",
    "nvidia-smi -q names a hardware or thermal slowdown of the clocks as active",
    case=True,
)
SAID_OVERHEAT = sign(
    "gpu.said_overheat",
    # (not denied: "the GPUs are not overheating")
    r"(?<!not )(?<!n't )(?<!no )(?:over ?heat|thermal (?:shutdown|throttl)|too hot)"
    r"|throttl(?:ing|ed) .{0,30}(?:temp|power|thermal)",
    "a sentence says the GPU overheats or throttles on temperature or power",
)
GPU_LOST = sign(
    "gpu.lost",
    r"GPU is lost|fallen off the bus|NVML_ERROR_GPU_IS_LOST|GPU requires reset"
    r"|Unable to determine the device handle",
    "NVML, nvidia-smi or the kernel says a GPU is lost (fell off the bus, needs a reset)",
)
SAID_LOST = sign(
    "gpu.said_lost",
    r"fell off the bus|fallen off the bus|GPU (?:is|was) lost|GPU disappeared"
    # nvidia-smi's table reading ERR! in a GPU's fields: NVML cannot talk to it
    r"|nvidia-smi\b[^.;\n]{0,40}\bERR!",
    "a sentence says a GPU fell off the bus, disappeared, or reads ERR! in nvidia-smi",
)
SHARING_LAYER = sign(
    "gpu.sharing_layer",
    r"\[HAMI-core\b|\blibvgpu\.so\b|\bHAMi\b",
    "a GPU-sharing layer between the job and the driver: HAMi's HAMi-core (libvgpu.so, preloaded "
    "into the container to split GPUs, intercepts CUDA driver and NVML calls and logs "
    "'[HAMI-core Msg|Info|Warn|ERROR ...]' lines), named by its lines, its library or its name",
    case=True,
)
XID_SAID = sign(
    "gpu.xid_said",
    # an Xid by its number in any line ("dmesg shows Xid 79", "XID error 48", "Xid: 74"): the
    # driver's own code for the fault, whose meaning the Xid table holds
    # (not denied: "dmesg shows no Xid 79")
    r"(?<!no )(?<!not )(?<!without )(?<!any )\bXid\b[^\d\n]{0,12}?(?P<code>\d{1,3})\b",
    "an Xid named by its number (the driver's fault code), in a sentence or a log line",
)

#: lspci's own word that a link trained below what both ends can do ("LnkSta: Speed 2.5GT/s
#: (downgraded), Width x16 (ok)"; pciutils >= 3.6 marks the part it compared).
LINK_DOWNGRADED = sign(
    "gpu.link_downgraded",
    r"LnkSta:\s{0,8}Speed (?P<speed>[\d.]{1,5})GT/s(?: \((?P<sstat>ok|downgraded)\))?,"
    r"\s{0,4}Width (?P<width>x\d{1,2})(?: \((?P<wstat>ok|downgraded)\))?",
    "lspci's link status (LnkSta) of a device, with its mark: ok or downgraded",
    case=True,
)

#: A node's GPUs counted in words ("8x H100 nodes", "4 x A100", "2*RTX 4090"): how many ranks a
#: node may hold, where no launch or NCCL line counts them.
GPUS_PER_NODE_SAID = sign(
    "gpu.gpus_per_node_said",
    r"\b(?P<n>[2-9]|1[0-6]) ?[x\u00d7*] ?(?:NVIDIA |Tesla |GeForce )?(?:RTX |GTX )?"
    r"(?:[ABHL]\d{1,3}[A-Z]?|GB\d{3}|V100|T4|P100|A[2-6]000|[2-5]090|GPUs?)\b",
    "a count of GPUs per node in words (8x H100)",
)
