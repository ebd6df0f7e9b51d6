"""Signs read by the driver rules (``rules/driver``): the driver stack, containers and WSL."""

from __future__ import annotations

from nccl_doctor.facts.driver import WSL_KERNEL as _WSL_KERNEL
from nccl_doctor.facts.signs import sign

_V = r"\d{3}\.\d{1,3}(?:\.\d{1,3})?"

# -- shared by several driver rules ----------------------------------------

CONTAINER_CUE = sign(
    "driver.container_cue",
    r"\b(?:docker|podman|containerd|kubernetes|kubectl|k8s|enroot|pyxis|apptainer|singularity"
    r"|nvidia-container-(?:cli|toolkit|runtime)|--gpus\b|in(?:side)? (?:a |the )?container"
    r"|NGC|nvcr\.io|/\.dockerenv)"
    # Chinese: container
    r"|容器",
    "the job ran in a container (a runtime, an orchestrator, an NGC image, or a person saying so)",
)
CUDA_DRIVER_VERSION = sign(
    "driver.cuda_driver_version",
    r"\bcudaDriverVersion (?P<version>\d{4,5})\b",
    "the CUDA driver API version NCCL found (12020 is CUDA 12.2): what the driver supports",
)
TOOL_PREFIX = sign(
    "driver.tool_prefix",
    r"^\s*(?:[\w.-]+: |\[rank\d+\]:|[\w.]+(?:Error|Exception|Warning)\b)",
    "a line a tool printed (`tool: message`, `[rankN]:`, `SomeError`) though it reads like prose",
    case=True,
)

# -- driver.container ------------------------------------------------------

STUB_LIBRARY = sign(
    "driver.stub_library",
    r"CUDA driver is a stub library|CUDA_ERROR_STUB_LIBRARY|cudaErrorStubLibrary",
    "CUDA loaded the toolkit's link stub libcuda instead of the real driver (error 34)",
    case=True,
)
TOOLKIT_ERROR = sign(
    "driver.toolkit_error",
    r"could not select device driver \"[^\"]*\" with capabilities: \[\[gpu\]\]"
    # libnvidia-container's configure step (src/cli/configure.c) names the step that failed;
    # its 'requirement error' (the image needs a newer CUDA) is driver.too_old's
    r"|nvidia-container-cli: (?:(?:initialization|container|detection|device|mount|ldcache"
    r"|permission) error|error parsing)"
    r"|unknown or invalid runtime name: nvidia|Unknown runtime specified nvidia"
    r"|nvidia-container-runtime[^\n]{0,40}(?:not found|no such file)"
    # the toolkit's runtime could not start (internal/runtime/runtime.go)
    r"|failed to create NVIDIA Container Runtime",
    "the container runtime (NVIDIA Container Toolkit) could not hand the container its GPUs",
)
CDI_UNRESOLVED = sign(
    "driver.cdi_unresolved",
    # the toolkit's runtime in CDI mode (internal/modifier/cdi/registry.go, the vendored
    # container-device-interface pkg/cdi/cache.go): no CDI spec names the device asked for
    r"failed to inject CDI devices|unresolvable CDI devices",
    "the runtime found no CDI spec for the GPUs asked for (nvidia-ctk cdi generate never ran, "
    "or ran before the driver changed)",
    case=True,
)
NO_DRIVER = sign(
    "driver.no_driver",
    r"Found no NVIDIA driver on your system|nvidia-smi: (?:command )?not found"
    r"|lib(?:cuda|nvidia-ml)\.so(?:\.1)?: cannot open shared object file"
    r"|/dev/nvidia(?:-uvm|ctl|\d)\W[^\n]{0,60}No such file|cannot access '?/dev/nvidia"
    # an NGC image's entrypoint banner where the container got no driver; docker exec of a
    # tool the toolkit mounts only with the GPUs
    r"|The NVIDIA Driver was not detected|\"?nvidia-smi\"?: executable file not found",
    "no NVIDIA driver, driver library or device node where the job ran",
)
NO_DEVICE = sign(
    "driver.no_device",
    r"no CUDA GPUs are available|no CUDA-capable device is detected"
    r"|ProcessGroupNCCL is only supported with GPUs",
    "CUDA saw no GPU at all (none passed in, none visible)",
)
DOCKER_RUN = sign(
    "driver.docker_run",
    r"\bdocker run\b",
    "a `docker run` command is shown (its flags say whether GPUs were passed in)",
)
GPU_FLAGS = sign(
    "driver.gpu_flags",
    r"--gpus|--runtime[= ]nvidia|/dev/nvidia|NVIDIA_VISIBLE_DEVICES",
    "a container start that passes GPUs in (--gpus, the nvidia runtime, device nodes)",
    case=True,
)
RANK_PREFIX = sign(
    "driver.rank_prefix",
    r"^\s*\[rank(?P<rank>\d+)\]",
    "the `[rankN]` prefix torchrun puts on a rank's line: which rank printed it",
    case=True,
)

# -- driver.cuda_mismatch --------------------------------------------------

TOO_OLD = sign(
    "driver.too_old",
    r"CUDA driver version is insufficient|driver on your system is too old"
    # (PyTorch's warning as people retell it: "the NVIDIA driver on the system is too old",
    # "the driver on these nodes is too old")
    r"|driver (?:on|of|in) (?:the|this|these|our|that|those) (?:\w{1,15} ){0,2}?"
    r"(?:system|machine|server|node|host)s? (?:is|was|are) too old"
    r"|forward compatibility was attempted|COMPAT_NOT_SUPPORTED_ON_DEVICE"
    r"|cudaErrorInsufficientDriver|cudaErrorCompatNotSupportedOnDevice"
    r"|UNSUPPORTED_PTX_VERSION|PTX was compiled with an unsupported toolchain"
    r"|unsatisfied condition: cuda\s*>=?\s*\d|cudaErrorCallRequiresNewerDriver",
    "the CUDA runtime needs a newer driver (errors 35, 36, 222, 804 by message or name)",
)
NEED_CUDA = sign(
    "driver.need_cuda",
    r"unsatisfied condition: cuda\s*>=?\s*(?P<cuda>\d{1,2}\.\d{1,2})",
    "the container toolkit refused the image: it requires at least this CUDA from the driver",
)
FOUND_VERSION = sign(
    "driver.found_version",
    r"too old \(found version (?P<version>\d{4,5})\)",
    "the CUDA driver API version PyTorch found when it said the driver is too old",
)
COMPAT_WORD = sign(
    "driver.compat_word",
    r"compat",
    "the line speaks of CUDA forward compatibility (cuda-compat, error 804)",
)
PTX_WORD = sign(
    "driver.ptx_word",
    r"ptx",
    "the line speaks of PTX (code a newer toolchain built than the driver can JIT, error 222)",
)
PROSE_DRIVER = sign(
    "driver.prose_driver",
    r"driver\D{0,40}?\b(?P<version>[3-9]\d\d(?:\.\d{1,3}){0,2})\b",
    "a driver version named in words (`driver 470.82`, `driver version: 535`)",
)
PROSE_CUDA = sign(
    "driver.prose_cuda",
    # (an image's tag too: "pytorch:2.4.0-cuda12.4-cudnn9-runtime")
    r"\bcuda(?:\D{0,20}?\b)?(?P<version>1[0-3]\.\d)\b",
    "a CUDA release named in words (`CUDA 12.1`, `cuda version 11.8`)",
)

# -- driver.uvm ------------------------------------------------------------

UVM_MISSING = sign(
    "driver.uvm_missing",
    r"/dev/nvidia-uvm\W[^\n]{0,80}?(?:No such file|not found|does not exist|missing|cannot open)"
    r"|(?:cannot access|No such file or directory|failed to open|cannot open)[^\n]{0,40}"
    r"/dev/nvidia-uvm\b",
    "the unified-memory device node /dev/nvidia-uvm does not exist",
)
#: /dev/nvidia-uvm or the nvidia_uvm module said to be missing, in a person's words (English,
#: Russian, Spanish, Portuguese, German, French, Vietnamese, Indonesian, Japanese, Korean,
#: Chinese). The differential's cue and driver.uvm read it.
UVM_SAID_MISSING = sign(
    "driver.uvm_said_missing",
    r"/dev/nvidia-uvm\b[^.;\n]{0,30}\b(?:is |was )?(?:missing|absent|not (?:there|present"
    r"|exist\w*|found)|does(?:n't| not) exist|no such file)"
    r"|\bno /dev/nvidia-uvm\b"
    # in other languages: "но нет nvidia-uvm", "no hay /dev/nvidia-uvm", "kein
    # /dev/nvidia-uvm", "nvidia-uvm がない", "nvidia-uvm 이 없습니다"
    r"|(?:(?<![А-Яа-яЁё])нет|\bno hay|\bnão há|\bkein\w{0,2}|\bpas de|\bkhông có|\btidak ada) "
    r"(?:/dev/)?nvidia-uvm\b"
    r"|nvidia-uvm\s?(?:が|は)?(?:ない|無い|ありません|存在しない)|nvidia-uvm\s?(?:이|가)?\s?없"
    # the module itself not loaded ("lsmod lists nvidia, nvidia_drm, but no nvidia_uvm",
    # "nvidia_uvm is not loaded"; Chinese "没有 nvidia_uvm", "缺少 nvidia-uvm")
    r"|\b(?:no|without|nothing (?:called|named)) (?:/dev/)?nvidia[-_]uvm\b"
    # ("the two nvidia-uvm entries are simply not there")
    r"|\bnvidia[-_]uvm\b[^.;\n]{0,30}\b(?:is |was |are |were )?(?:simply |just )?"
    r"(?:not loaded|missing|absent|not there|gone)"
    r"|(?:没有|缺少|缺了|少了|找不到)\s?(?:/dev/)?nvidia[-_]uvm",
    "a person saying /dev/nvidia-uvm or the nvidia_uvm module is missing",
)
UVM_MODULE = sign(
    "driver.uvm_module",
    r"modprobe:[^\n]{0,40}(?:FATAL|ERROR)[^\n]{0,80}nvidia[-_]uvm"
    r"|could not insert '?nvidia[-_]uvm|nvidia[-_]uvm:[^\n]{0,60}"
    r"(?:Unknown symbol|disagrees about version|failed|error)"
    r"|Module nvidia[-_]uvm not found|nvidia-modprobe[^\n]{0,60}uvm[^\n]{0,60}(?:fail|error)",
    "the nvidia_uvm kernel module failed to load",
)
#: A line of ``ls -l /dev/nvidia*``: a character device of the driver (``nvidia0``,
#: ``nvidiactl``, ``nvidia-uvm``, ``nvidia-modeset``, ``nvidia-caps``...), by its name.
DEV_LISTED = sign(
    "driver.dev_listed",
    r"^\s{0,8}c[rwx-]{9}[.+]?\s[^\n]{0,120}?\s/dev/(?P<node>nvidia[\w-]{0,20})\s*$",
    "a line of a listing of the driver's device nodes (ls -l /dev/nvidia*)",
    case=True,
)
#: A line of a plain ``ls /dev/nvidia*``: the driver's device nodes side by side, by path.
DEV_LISTED_BARE = sign(
    "driver.dev_listed_bare",
    r"^\s{0,8}(?P<nodes>/dev/nvidia[\w-]{0,20}(?:\s{1,8}/dev/nvidia[\w-]{0,20}){1,40})\s*$",
    "a line of a plain listing of the driver's device nodes (ls /dev/nvidia*)",
    case=True,
)
#: A line of ``lsmod``: an NVIDIA kernel module, its size and its use count.
LSMOD_NVIDIA = sign(
    "driver.lsmod",
    r"^\s{0,8}(?P<module>nvidia(?:_[a-z]{2,12})?)\s+\d{3,10}\s+\d{1,4}\b",
    "lsmod's line of an NVIDIA kernel module (name, size, users)",
    case=True,
)
FIRST_999 = sign(
    "driver.first_999",
    r"cuInit[^\n]{0,60}(?:CUDA_ERROR_UNKNOWN|\b999\b|unknown error)"
    r"|CUDA unknown error - this may be due to an incorrectly set up environment"
    r"|cudaGetDeviceCount\(\)[^\n]{0,200}Error 999"
    r"|CUDA initialization: CUDA unknown error"
    r"|CUDA initiali[sz]ation\b[^.\n]{0,40}?\bCUDA unknown error"
    # retold: torch's warning in other words ("a warning about a CUDA unknown error and an
    # incorrectly set up environment"), the error at the first CUDA call
    r"|unknown error[^\n]{0,60}\bincorrectly set up environment"
    r"|\b(?:the )?(?:very )?first (?:\.cuda\(\)|CUDA|cuda) call\b[^.\n]{0,40}?"
    r"(?:unknown error|\b999\b)"
    r"|(?:unknown error|\b999\b)[^.\n]{0,60}?\b(?:the )?(?:very )?first (?:\.cuda\(\)|CUDA|cuda) "
    r"call\b",
    "CUDA's very first call (cuInit, the device count) failed with error 999 'unknown error'",
)
#: Chinese: the machine went to sleep, hibernated or stood by, then woke (not a process).
SLEPT_ZH = r"进(?:入)?了?(?:睡眠|休眠|待机)|(?:唤醒|休眠唤醒)(?:以后|之后|后)"
#: Japanese: sleep, suspend, hibernation; Korean: sleep mode, power-saving mode, hibernation.
SLEPT_JA_KO = r"スリープ|サスペンド|休止状態|ハイバネーション|절전\s?모드|슬립\s?모드|최대\s?절전"
SUSPEND = sign(
    "driver.suspend",
    r"\b(?:suspend(?:ed|ing|sion)?|hibernat\w*|sleep mode|standby|"
    r"resum(?:e|ed|ing) from (?:suspend|sleep|hibernation|standby)|after (?:it )?resuming"
    r"|(?:wak(?:e|es|ing)|woke) (?:up )?from (?:sleep|suspend|hibernation|standby)"
    r"|lid (?:closed|open)"
    # ("the machine went to sleep over the weekend", "after it woke up")
    r"|(?:machine|computer|workstation|laptop|PC|box|server|system|it) "
    r"(?:went|goes|had gone|has gone) (?:in)?to sleep"
    r"|after (?:it |the machine )?(?:woke|wakes) up)\b"
    # (and in Chinese: "sleep mode", "standby state" too)
    rf"|{SLEPT_ZH}|(?:睡眠|休眠|待机)(?:模式|状态)|{SLEPT_JA_KO}",
    "the machine was suspended or hibernated and resumed (which can leave nvidia_uvm broken)",
)

# -- driver.version_mismatch -----------------------------------------------

MISMATCH_MESSAGE = sign(
    "driver.mismatch_message",
    r"Driver/library version mismatch|API mismatch: the client has the version"
    r"|unsupported display driver / cuda driver combination|SYSTEM_DRIVER_MISMATCH"
    r"|cudaErrorSystemDriverMismatch",
    "a tool says the kernel module and the user-space driver are different versions",
)
HOST_SMI_FAILS = sign(
    "driver.host_smi_fails",
    r"(?:\bnvidia-smi (?:on|in|from) the host|\bhost(?:'s)? nvidia-smi"
    r"|\b(?:on|in) the host(?: itself| too| as well)?,? nvidia-smi)\b[^.;\n]{0,60}?"
    r"\b(?:broken|breaks|fails?|failed|failing|errors?|mismatch)\b",
    "the host's own nvidia-smi (not the container's) is said to fail",
)
MODULE_VERSION = sign(
    "driver.module_version",
    rf"NVRM version: NVIDIA UNIX [^\n]{{0,500}}?Kernel Module\s+(?P<version>{_V})",
    "the loaded kernel module's version (/proc/driver/nvidia/version)",
)
PACKAGE_VERSION = sign(
    "driver.package_version",
    rf"^\s*(?:ii|hi|iU|iF)\s+(?P<package>(?:lib)?nvidia[\w.-]*?)(?::\w+)?\s+(?P<version>{_V})",
    "an installed NVIDIA package and its version (a `dpkg -l` row): the user-space driver",
)
NVML_VERSION = sign(
    "driver.nvml_version",
    rf"NVML library version:?\s*(?P<version>{_V})",
    "the NVML library's version (the user-space driver)",
)
UPGRADE = sign(
    "driver.upgrade",
    r"(?:Upgrade:|upgrade |Updated:?|Installed:?)\s",
    "a package manager's log line that upgrades or installs packages (apt's history.log, yum)",
)
PACKAGE_MOVE = sign(
    "driver.package_move",
    rf"(?P<package>(?:lib)?nvidia[\w.-]{{0,100}}?)(?::\w{{1,40}})?"
    rf"[\s(]+(?P<old>{_V})[^,\s)]{{0,100}}(?:,\s*|\s+)(?P<new>{_V})",
    "an NVIDIA package moved from one version to another (on an upgrade line: see the rule)",
)
REBOOTED = sign(
    "driver.rebooted",
    r"\b(?:reboot(?:ed|ing)?|restart(?:ed|ing)? (?:the )?(?:machine|server|node|system))\b",
    "the machine was (or was to be) rebooted: a reload of the kernel module was tried",
)
UNATTENDED = sign(
    "driver.unattended",
    r"unattended-upgrade",
    "the upgrade was an unattended one (Ubuntu's unattended-upgrades)",
)

# -- driver.wsl ------------------------------------------------------------

WSL_KERNEL = sign(
    "driver.wsl_kernel",
    _WSL_KERNEL.pattern,
    "the release of a WSL2 kernel (`5.10.16.3-microsoft-standard-WSL2`)",
)
WSL = sign(
    "driver.wsl",
    # (WSL said not used: "we are not using WSL", "native Linux, not WSL")
    r"microsoft-standard|/usr/lib/wsl/|(?<!not )(?<!not using )(?<!no )\bWSL ?2?\b|/dev/dxg",
    "the job runs under Windows Subsystem for Linux (a WSL kernel, its libcuda or /dev/dxg)",
)
MICROSOFT = sign(
    "driver.microsoft",
    r"microsoft",
    "the line names Microsoft (a WSL kernel string a tool printed names it)",
)
WSL_NO_DRIVER = sign(
    "driver.wsl_no_driver",
    r"Found no NVIDIA driver|libcuda\.so(?:\.1)?: cannot open|no CUDA-capable device"
    r"|no CUDA GPUs are available|CUDA_ERROR_NO_DEVICE"
    r"|couldn't communicate with the NVIDIA driver",
    "CUDA found no driver or no device (under WSL: the Windows driver's libcuda is not reached)",
)
WSL_P2P = sign(
    "driver.wsl_p2p",
    r"peer access is not supported|cudaIpc\w{0,40}[^\n]{0,60}(?:fail|error|not supported)"
    r"|transport/p2p\.cc[^\n]{0,80}(?:fail|error|WARN)|Error while creating shared memory"
    r"|NCCL WARN[^\n]{0,120}(?:P2P|IPC|SHM)|operation not supported",
    "a peer-to-peer, CUDA IPC or shared-memory path failed (WSL provides none of them)",
)
