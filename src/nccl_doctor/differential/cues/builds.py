"""What the machines are built and set up with: builds that differ, NCCL settings from
elsewhere or per process, memlock, the fabric manager, RoCE GIDs, the UVM node,
GPUDirect, IB ports, clocks and PCIe links, NVLink, a suspend, the job's own kernels and
models, a nested launcher.
"""

from __future__ import annotations

from nccl_doctor.differential.cues.base import LAUNCHER, SPAWN, Cue, cue
from nccl_doctor.differential.prose import (
    GPU_THROTTLED,
    NOT_SAID,
    NVLINK_UNUSED,
    PARAMS_DIFFER,
    UNDENIED,
    UPDATE_WORDS,
    rx,
)
from nccl_doctor.signs.driver import SUSPEND, UVM_SAID_MISSING
from nccl_doctor.signs.languages import (
    DRIVER_HALVES_OTHER,
    DRIVER_UPGRADED_OTHER,
    NOT_REBOOTED_OTHER,
)

BUILDS: dict[str, Cue] = {
    # NCCL builds said to differ between the job's nodes or processes
    "nccl_versions_differ": cue(
        r"\bnccl\b[^.!?;\n]{0,20}\bversions? (?:mismatch|differ\w*|inconsisten\w*)"
        r"|\b(?:mismatch\w*|different) (?:nccl )?versions? of nccl\b"
        r"|\bdifferent [\"'\u201c]?nccl versions?\b"
        # two builds said side by side ("the trainer uses NCCL 2.21 while the server loads
        # 2.26", "node A has torch 2.1 and node B torch 2.3"); not an upgrade ("from 2.21 to
        # 2.26"), nor one build said the same everywhere
        r"|\b(?:NCCL|torch|pytorch|CUDA)(?: version)? v?\d{1,3}\.\d{1,3}[\w.+]{0,12}[^.;\n]{0,60}"
        r"\b(?:while|whereas|but|vs\.?|versus|and (?:node|machine|server|host|the other)\b)"
        r"[^.;\n]{0,60}\b(?:NCCL|torch|pytorch|CUDA)(?: version)? v?\d{1,3}\.\d{1,3}",
        unless=rx(
            r"\b(?:from|upgrad\w*|downgrad\w*)\b[^.;\n]{0,30}\bto\b"
            r"|\bthe same (?:NCCL|torch|pytorch|CUDA|versions?|builds?)\b"
        ),
    ),
    # an NCCL setting carried in from elsewhere: a shell profile, nccl.conf, an image or a
    # cluster it was written for ("NCCL_IB_HCA=mlx5_5 exported in our .bashrc from an old
    # cluster"): it names devices or paths this machine may not have
    "inherited_setting": cue(
        r"\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}\b[^.;\n]{0,80}(?:\.bashrc|\.profile|\.bash_profile"
        r"|nccl\.conf|\b(?:from|for) (?:an? |the |our |my )?(?:old|older|previous|other|another"
        r"|different) (?:cluster|machine|node|server|system|setup|image|environment)\b"
        r"|\bleft ?over\b)"
        r"|(?:\.bashrc|\.bash_profile|nccl\.conf)\b[^.;\n]{0,60}\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}"
        # set by an image's Dockerfile ("It has a block of ENV lines at the top: NCCL_DEBUG=INFO,
        # NCCL_P2P_DISABLE=1"; "ENV NCCL_IB_DISABLE=1 in the base image")
        r"|\bENV (?:lines?|block|entries|instructions?|variables)\b[^.;\n]{0,40}"
        r"\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}|(?-i:\bENV\s+(?:TORCH_)?NCCL_[A-Z0-9_]{2,40})"
        # set by someone else ("someone exported NCCL_IB_DISABLE=1 in the job script")
        r"|\b(?:someone|somebody|a colleague|the admins?|the previous (?:user|owner)"
        r"|another user)\b[^.;\n]{0,30}\b(?:set|exported|added|put)\b[^.;\n]{0,30}"
        r"\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}"
        # seen set though nobody set it ("NCCL_TOPO_FILE ... 'set by environment', but I never
        # set those"): it came from the image, a profile or a launcher
        r"|\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}\b[^.;\n]{0,100}\b(?:I|we) (?:never|did not|didn't"
        r"|don't|do not) (?:set|export|define)\b"
    ),
    # NCCL's topology or graph file said set ("NCCL_TOPO_FILE and NCCL_GRAPH_FILE being 'set by
    # environment', pointing to files under /opt/microsoft"): NCCL trusts the file over what it
    # would detect (the context's topology_file, as NCCL's own line says it)
    "topology_file_said": cue(
        r"\bNCCL_(?:TOPO|GRAPH)_FILE\b[^.;\n]{0,60}\b(?:set by (?:the )?environment"
        r"|(?:is|was|are|were|being|gets?|got) (?:set|exported|defined)|points? to|pointing to"
        r"|loaded)"
    ),
    # one process sets an NCCL variable the others do not ("vLLM sets NCCL_CUMEM_ENABLE=0
    # in its workers while the trainer keeps the default"): the communicator's members
    # disagree on how to allocate or talk
    "setting_differs": cue(
        r"\bNCCL_[A-Z0-9_]{2,40}\b[^.;\n]{0,80}\b(?:while|whereas|but) (?:the |its )?"
        r"(?:other|trainer|server|rest|nodes?|workers?|ranks?|client)\b[^.;\n]{0,40}"
        r"\b(?:not|default|keeps?|without|unset|does(?:n't| not))\b"
    ),
    # one node's software changed and the other's not ("after upgrading PyTorch on only one
    # of the two nodes"): the nodes now run different builds
    "one_node_changed": cue(
        rf"{UPDATE_WORDS}[^.;\n]{{0,40}}\bon (?:only )?one of the (?:two |\d+ )?"
        r"(?:nodes|machines|hosts|servers)\b"
        # one node named ("rebuilt the container on node 2 only", "only on node B we updated")
        rf"|(?:{UPDATE_WORDS}|\b(?:rebuil\w*|reinstall\w*|re-?imag\w*))[^.;\n]{{0,40}}"
        r"\bon (?:node|host|machine|server) ?\w{1,12} only\b"
        r"|\bonly (?:on )?one (?:of the )?(?:nodes?|machines?|hosts?)\b[^.;\n]{0,30}"
        rf"(?:was |were |got )?{UPDATE_WORDS}"
    ),
    # a second NCCL put in front of the one PyTorch was built with (LD_PRELOAD, the system's
    # library): the process runs a build its callers were not made for (not LD_LIBRARY_PATH
    # alone: nccl-tests and plugins are run with NCCL's lib folder on it as a matter of course)
    "other_nccl_loaded": cue(
        rf"{NOT_SAID}\bLD_PRELOAD\w*\b[^\n]{{0,80}}\bnccl|\bsystem(?:'s)? (?:NCCL|libnccl)\b"
    ),
    # the driver's two halves said to differ: nvidia-smi's mismatch retold ("nvidia-smi
    # complains that the driver and the library versions don't match")
    "driver_halves_differ": cue(
        r"\bdriver(?: and (?:the )?|/| ?& ?)library(?: versions?)?\b[^.;\n]{0,20}?"
        r"\b(?:don't|do not|doesn't|does not|didn't|did not|no longer) match"
        r"|\bdriver/library (?:version )?mismatch\b"
        r"|\b(?:kernel module|module) and (?:the )?(?:user[- ]space|librar\w+)\b[^.;\n]{0,30}?"
        r"\b(?:differ\w*|mismatch\w*|don't match|do not match)"
        # (Chinese: the driver and the library (versions) do not match)
        r"|驱动(?:程序)?\s?(?:和|与|跟)\s?(?:库|lib\w*)[^。；\n]{0,12}(?:不匹配|不一致|对不上)"
        rf"|{DRIVER_HALVES_OTHER}"
    ),
    # the driver's packages upgraded in place ("unattended-upgrades upgraded nvidia-driver-550
    # from 550.90.07 to 550.127.05"), and the machine not rebooted since ("uptime says 41
    # days", "hasn't been rebooted"): the new libraries beside the old, still loaded module
    "driver_upgraded": cue(
        rf"{UPDATE_WORDS}[^.;\n]{{0,60}}?\b(?:nvidia-driver|libnvidia|nvidia driver"
        r"|(?:the |gpu |nvidia )?drivers?\b)"
        r"|\b(?:nvidia-driver(?:-\d{2,3})?|(?:the |gpu |nvidia )drivers?)\b[^.;\n]{0,40}?"
        rf"(?:was |were |got |been )?{UPDATE_WORDS}"
        # (Chinese: the driver was (automatically) upgraded, someone upgraded the driver)
        r"|(?:驱动|nvidia-driver[\w.-]{0,40})[^。；\n]{0,30}?(?:被)?(?:自动)?(?:升级|更新)"
        r"|(?:升级|更新)了?(?:一下)?\s?(?:NVIDIA\s?|显卡)?驱动"
        rf"|{DRIVER_UPGRADED_OTHER}",
        # (not one rebooted after it: "then rebooted", "rebooted after the upgrade"; "hasn't
        # been rebooted since" is the opposite; in Chinese and Japanese the same)
        unless=rx(
            r"\b(?:after|then) (?:a |the )?reboot\w*"
            r"|(?<!been )(?<!not )(?<!never )\breboot(?:ed|ing)? (?:after|since)\b"
            r"|(?:之后|以后|后|然后)(?:也|又)?重启(?:了|过)|再起動(?:しました|した後)"
        ),
    ),
    "not_rebooted": cue(
        r"(?:\b\w+n't|\b(?:not|never|without(?: a)?|no)) (?:been )?(?:reboot\w*|restart\w* "
        r"(?:the )?(?:machine|node|server|system|host))\b"
        r"|\buptime\b[^.;\n]{0,20}?\b\d{1,4} days\b"
        r"|\bno reboot\b"
        # (Chinese: not (yet) rebooted)
        r"|(?:没有?|未|还没有?|并没有?)(?:重启|重新启动)"
        rf"|{NOT_REBOOTED_OTHER}"
    ),
    # the RDMA adapters may pin only a little memory: ulimit -l (memlock) below what the queue
    # pairs and registered buffers need ("ulimit -l is 64", "max locked memory 65536")
    "memlock_small": cue(
        # (not "--ulimit memlock=-1": -1 is unlimited)
        # (not a number denied: "ulimit -l is not 64, it is unlimited")
        r"\bulimit -l\b[^.;\n\d-]{0,20}(?<!not )\b\d{1,6}\b(?! ?(?:G|GB))"
        r"|\bmemlock\b[^.;\n\d-]{0,30}(?<!not )\b\d{1,6}\b(?! ?(?:G|GB))"
        r"|\bmax locked memory\s+\(kbytes, -l\)\s+\d{1,6}\b",
        in_question=True,
    ),
    # the NVSwitch fabric's manager named: it must run, at the driver's own version, before
    # CUDA starts on an HGX board (802, "system not yet initialized")
    "fabric_manager_said": cue(
        rf"{NOT_SAID}\b(?:nvidia-)?fabric ?manager\b|{NOT_SAID}\bnv-fabricmanager\b",
        # (not one said to run: "is running fine", "State: Completed, Status: Success"; "is not
        # running", "inactive (dead)" is the failure itself)
        unless=rx(rf"{UNDENIED}\b(?:running|active)\b|\bStatus: Success\b"),
    ),
    # a RoCE port's GID said to change or to be the wrong one ("the gid index changed from 3
    # to 4", "wrong GID index"): the queue pairs address their peers by it (NCCL warns "GID
    # table changed", and a forced NCCL_IB_GID_INDEX makes ibv_modify_qp fail with EINVAL)
    "gid_trouble": cue(
        r"\bGID(?:[ _-]?index(?:es)?| tables?| entr(?:y|ies))?\b[^.;\n]{0,40}"
        rf"{NOT_SAID}\b(?:chang\w*|moved?|wrong|incorrect|invalid|mismatch\w*|shift\w*)\b"
        r"|\b(?:wrong|incorrect|invalid|changed|mismatched) (?:RoCE )?GID\b"
        # only link-local (RoCE v1) GIDs where the fabric routes RoCE v2 over IPv4
        r"|\blink[- ]local\b[^.;\n]{0,40}\bGIDs?\b|\bGIDs?\b[^.;\n]{0,40}\blink[- ]local\b"
        r"|\bRoCE ?v1\b",
        unless=rx(r"(?:\b(?:not|never)|n't) (?:chang|mov|wrong|differ)\w*|\bsame\b"),
    ),
    # the unified-memory module or its device node said missing, or reloading it said to fix
    # it ("/dev/nvidia-uvm is missing", "modprobe nvidia-uvm fixed it"): CUDA needs both,
    # nvidia-smi neither
    "uvm_missing": cue(UVM_SAID_MISSING.pattern),
    # the GPUDirect RDMA stack named: the peer-memory kernel module that lets a NIC (or
    # gdrcopy's CPU mappings) reach GPU memory, or GPUDirect RDMA itself
    "gdr_stack": cue(
        rf"{NOT_SAID}\b(?:nv_peer_mem(?:ory)?|nvidia[_-]peermem|gdrcopy|gdrdrv|gdr_copy)\b"
        rf"|{NOT_SAID}\bGPU ?Direct[ -]RDMA\b",
        in_question=True,
    ),
    # a verbs call named as failing: RDMA set-up (memory registration, queue pairs)
    "verbs_call": cue(r"\bibv_(?:reg_mr|modify_qp|create_qp|create_cq|open_device|alloc_pd)\w*"),
    # an RDMA port said down, polling (no link partner) or flapping, in ibstat's words or the
    # reporter's ("State: Down", "Physical state: Polling", "the IB link flaps")
    "ib_port_down": cue(
        r"\b(?:port |physical |link )?state:\s*(?:Down|Polling|Disabled|Initiali[sz]ing)\b"
        # (not ip's "qdisc mq state DOWN mode DEFAULT": an Ethernet interface's)
        r"|\b(?:port|physical|link) state (?:is |was |as |shows? |shown as )?(?:Down|Polling"
        r"|Disabled|Initiali[sz]ing)\b"
        # a port up on the wire that no subnet manager brought up (ibv_devinfo's PORT_INIT,
        # ibstat's "State: Initializing", in a sentence of any language: "State 是 Initializing")
        r"|\bPORT_INIT\b|\bState\s{0,3}(?:是|为|:|is|was)?\s{0,3}Initiali[sz]ing\b"
        r"|\b(?:IB |InfiniBand |RoCE |HCA )?(?:link|port)s? (?:keeps? )?flapp\w*"
        r"|\bflapp\w* (?:IB |InfiniBand |RoCE )?(?:links?|ports?)\b|\blink[ -]flaps?\b"
    ),
    # an RDMA port said to run at a lower rate than its siblings ("mlx5_2's Rate is 100, the
    # other ports 200", "port 1 came up at 100 Gb/s instead of 200"): a link trained down, its
    # rail a fraction of the others; not a training speed (an RDMA port or adapter is named)
    "ib_port_slow": cue(
        r"(?:\bmlx\d_\d+|\bHCAs?\b|\bports?\b|\bIB\b|InfiniBand|\bibstat\b|网卡|端口|口)"
        r"[^.;\n。]{0,40}?\b(?:Rate|link speed|speed|(?:came|comes) up at|(?:runs?|running"
        r"|trained|negotiated) at)\b[^.;\n。\d]{0,20}"
        r"\b(?:10|14|25|40|50|56|100|200)\b(?-i: ?Gb(?:/s(?:ec)?|ps))?"
        r"(?! ?(?:it/s|samples|tokens|images|img|ms|s\b|%))(?-i:(?! ?[GM]B))[^.;\n。\d]{0,10}?"
        r"(?:instead of|rather than|not|vs\.?|versus|while|but|whereas|，|,|\()[^.;\n。\d]{0,60}?"
        r"\b(?:100|200|400|800)\b"
    ),
    # the GPUs' clocks held down by heat or a power cap (prose.GPU_THROTTLED)
    "gpu_throttled": cue(GPU_THROTTLED, in_question=True),
    # a GPU's PCIe link trained below its width or generation ("x4 instead of x16", "Gen1
    # instead of Gen4", "the link downgraded")
    "pcie_downtrained": cue(
        r"\bx(?:1|2|4|8)\b[^.;\n]{0,40}\b(?:instead of|rather than|not|vs\.?|expected|should be"
        r"|out of)\b[^.;\n]{0,10}\bx(?:8|16)\b"
        r"|\bGen ?[1-3]\b[^.;\n]{0,40}\b(?:instead of|rather than|not|vs\.?|expected|should be)\b"
        r"[^.;\n]{0,10}\bGen ?[3-6]\b"
        r"|\b(?:PCIe|link)\b[^.;\n]{0,30}\b(?:downgraded|downtrained|degraded|down-trained)\b"
        # nvidia-smi -q's link width retold: "8x current, 16x max", its field names kept in a
        # sentence of another language ("Current が 8x で、Max は 16x"); lspci's own mark
        # ("LnkSta: ... Width x8 (downgraded)")
        # (the current width below the maximum, either said first: "Max 16x and Current 8x")
        r"|\b(?:(?:1|2|4|8)x current\b[^.;\n]{0,12}\b16x|(?:1|2|4)x current\b[^.;\n]{0,12}\b8x)"
        r" max\b"
        # ("the max link width is 16x but the current link width is 8x")
        r"|\bCurrent\b[^.;\n]{0,20}\b(?:(?:1|2|4|8)x\b[^.;\n]{0,20}\bMax\b[^.;\n]{0,20}\b16x"
        r"|(?:1|2|4)x\b[^.;\n]{0,20}\bMax\b[^.;\n]{0,20}\b8x)\b"
        r"|\bMax\b[^.;\n]{0,20}\b(?:16x\b[^.;\n]{0,20}\bCurrent\b[^.;\n]{0,20}\b(?:1|2|4|8)x"
        r"|8x\b[^.;\n]{0,20}\bCurrent\b[^.;\n]{0,20}\b(?:1|2|4)x)\b"
        r"|\bWidth x(?:1|2|4|8)\b[^.;\n]{0,12}\(downgraded\)",
        in_question=True,
    ),
    # the hardware a GPU's link runs through was changed or is suspect ("the vendor replaced
    # one of the risers", "after reseating GPU 3"): a link through it may train narrow
    "pcie_hardware": cue(r"\b(?:PCIe )?risers?\b|\bre-?seat(?:ed|ing)?\b", in_question=True),
    # the GPUs' NVLink down or unused ("NV links inactive", "communicating via PCIe instead of
    # NVLink"): the reporter names the link itself
    "nvlink_unused": cue(NVLINK_UNUSED),
    # the machine suspended and resumed under the driver (signs.driver.SUSPEND), not denied
    "after_suspend": cue(rf"{NOT_SAID}(?:{SUSPEND.pattern})"),
    # the job's own kernels, or memory touched outside its bounds ("our custom CUDA kernel",
    # "writes past the end of a buffer"): a fault of the code, not of the GPU
    "own_kernel": cue(
        rf"{NOT_SAID}\b(?:custom|our|my|own|hand-written|handwritten) (?:CUDA|triton|fused|GPU) "
        r"(?:kernels?|extensions?|ops?)\b"
        r"|\b(?:writes?|wrote|reads?|index\w*|access\w*) (?:past|beyond|outside) (?:the )?"
        r"(?:end|bounds?|size)\b|\bout[- ]of[- ]bounds (?:write|read|access|index)\w*"
    ),
    # the parameters differ between ranks: each built its model from other code or config
    # ("the ranks build their models from different configs", "parameter shapes differ")
    "model_differs": cue(
        r"\b(?:param\w*|weights?|models?|shapes?|layers?)\b[^.;\n]{0,30}\b(?:differ|different"
        r"|mismatch\w*|not the same)\b[^.;\n]{0,30}\b(?:between|across|on|per) (?:the )?"
        r"(?:ranks|processes|workers|GPUs|nodes)\b"
        r"|\b(?:ranks|processes|workers)\b[^.;\n]{0,30}\b(?:build|create|construct|load)\w*"
        r"[^.;\n]{0,30}\bdifferent (?:models?|configs?|architectures?|checkpoints?)\b"
        # DDP's own check, retold (prose.PARAMS_DIFFER)
        rf"|{PARAMS_DIFFER}",
        unless=rx(
            r"\b(?:do|does|did)(?: not|n't) (?:differ|mismatch)|\bnot (?:different|mismatch)"
        ),
    ),
    # a launcher that starts a worker per GPU around a script that spawns its own ("torchrun
    # ... and inside the script mp.spawn"): each worker starts a world of its own; not one
    # launcher swapped for the other ("replaced mp.spawn with torchrun")
    "nested_launch": cue(
        rf"\b{LAUNCHER}\b[^\n]{{0,120}}\b{SPAWN}|\b{SPAWN}[^\n]{{0,120}}\b{LAUNCHER}\b",
        # (nor vLLM told the launcher starts its workers: distributed_executor_backend=
        # "external_launcher")
        unless=rx(
            r"\b(?:instead|replac\w*|switch\w*|rather than|migrat\w*|moved?|convert\w*)\b"
            r"|\bexternal_launcher\b"
        ),
    ),
}
