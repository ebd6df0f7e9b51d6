"""The reporter's words: the prose signatures, weighed below machine output.

People describe what a log would show ("it hangs", "just says killed",
"bandwidth is only 33 GB/s", "7 extra processes on GPU0") and what they
tried ("works with NCCL_P2P_DISABLE=1", "works with gloo", "fine with NCCL
2.18"). Two tables hold those words, each row with its reason:

- :data:`PROSE_SYMPTOMS`, here: sentences that name a failure's class. They
  open a symptom only where no machine output (a typed failure, a catalogued
  message) does: a log outranks a paraphrase of it.
- :data:`.cues.CUES`: sentences that discriminate between causes (a
  workaround that worked, where and when it fails); :mod:`.context` turns
  them into shifts.

Both are written with this module's vocabulary (:func:`rx`, :data:`FLAGS`,
:data:`NOT_SAID`).

Only prose lines (:func:`nccl_doctor.facts.store.is_prose`) are read here;
machine output is never matched against these words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import harmless_message
from nccl_doctor.facts.notices import notices_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.knowledge.python_exceptions import APP_EXCEPTIONS, IMPORT_EXCEPTIONS
from nccl_doctor.parse._lazy import LazyPattern


@dataclass(frozen=True, slots=True)
class ProseSymptom:
    """A sentence shape that names a symptom class, and why it does."""

    cls: str
    pattern: LazyPattern[str]
    why: str
    #: a line that also holds these words does not count (a program's tip, a condition)
    unless: LazyPattern[str] | None = None
    #: whether one match of ``pattern`` in a line says so (``None``: every match does)
    counts: Callable[[str, re.Match[str]], bool] | None = None

    def said_in(self, text: str) -> bool:
        """Whether ``text`` says what the row names (one match that counts, no ``unless``)."""
        if self.unless is not None and self.unless.search(text):
            return False
        if self.counts is None:
            return True
        return any(self.counts(text, m) for m in self.pattern.finditer(text))


#: ASCII word boundaries: in "gloo出现connection refused" the Chinese characters are word
#: characters to Unicode, which would hide the boundary before "connection".
FLAGS = re.IGNORECASE | re.ASCII


def rx(pattern: str) -> LazyPattern[str]:
    """A prose pattern (:data:`FLAGS`), compiled when first used."""
    # compiled when a prose line may hold its words: a log of machine output holds none
    return LazyPattern(pattern, FLAGS)


NUM = r"\d{1,3}(?:\.\d{1,3}){1,2}"
#: What, said just before a failure word, says there was none ("no errors", "did not crash",
#: "0 files failed", "without any error").
_NONE_BEFORE = rx(
    r"(?:\bno|\bnot|n't|\bnever|\bwithout(?: any)?|(?<!non-)(?<!non )\bzero|\bnone of the"
    r"|\bnothing"
    # a count of none ("0 stalls"), not an index ("process 0 waits forever", "GPU 0 hangs")
    r"|(?<!process )(?<!rank )(?<!gpu )(?<!node )(?<!device )(?<!worker )(?<!card )\b0)"
    # (a word or two between: "no process was killed", "we never see a deadlock")
    r" (?:[\w-]{1,30} ){0,2}$"
)
#: An error that is a measure, not a failure ("validation error 0.087", "word error rate").
_MEASURE_AFTER = rx(r" ?(?:%|[:=]? {0,3}[-+]?\d{0,6}\.\d|[:=]? {0,3}\d{1,3} ?%)")
#: A failure word that names a mechanism or a measure, not an event ("CUDA error checking
#: enabled", "error handling", "failure rate", "fault tolerance").
_ATTRIBUTE_AFTER = rx(
    r"[ -](?:checking|checks?|handling|handlers?|reporting|correction|correcting|detection"
    r"|tolerance|tolerant|threshold|budget|feedback|propagation|injection|analysis|domains?"
    r"|rates?|ratios?|bars?|modes?|policy|policies|semantics)\b"
)
#: Words the failure pattern matches that name no failure.
_NOT_EVENTS = frozenset({"failover", "failsafe", "failback", "failures_allowed"})
_MEASURE_BEFORE = rx(
    r"\b(?:validation|val|train(?:ing)?|test|eval\w*|word|char\w*|token|mean|squared|absolute"
    r"|relative|reconstruction|prediction|quantization|approximation|rounding|top-?\d"
    r"|classification|bit|frame|phone|label|standard|numerical|fp\d{1,2}|bf16) $"
)


def _not_negated(text: str, match: re.Match[str]) -> bool:
    """Whether a word of a sentence is said, not denied ("it does not hang", "no stalls")."""
    return not _NONE_BEFORE.search(text[max(0, match.start() - 40) : match.start()])


def _says_failure(text: str, match: re.Match[str]) -> bool:
    """Whether one failure word of a sentence reports a failure (not none, not a measure)."""
    before = text[max(0, match.start() - 40) : match.start()]
    word = match.group().lower()
    if _NONE_BEFORE.search(before) or word in _NOT_EVENTS:
        return False
    if _ATTRIBUTE_AFTER.match(text, match.end()):
        return False
    if word.startswith("error"):
        return not (_MEASURE_BEFORE.search(before) or _MEASURE_AFTER.match(text, match.end()))
    return True


#: The word right after it not denied ("does not work", "doesn't time out", "never fails").
UNDENIED = r"(?<!not )(?<!n't )(?<!never )"
#: Not right after a negation ("not an inter-node job", "never ran multi-node").
NOT_SAID = (
    r"(?<!not )(?<!not a )(?<!not an )(?<!never )(?<!never ran )(?<!no )(?<!without )"
    # "we are not on Kubernetes", "not in a container", "we do not use MIG"
    r"(?<!not on )(?<!not in )(?<!not use )(?<!not using )(?<!n't use )(?<!n't using )"
)
#: Installing, updating or upgrading something: a reboot it asks for, or how things were
#: before it, is no symptom of now.
UPDATE_WORDS = r"\b(?:install\w*|updat\w*|upgrad\w*)\b"
#: The GPUs' clocks held down: throttled by heat or a power cap, in nvidia-smi's words ("HW
#: Slowdown", "SW Power Cap") or the reporter's ("the clocks drop to 800 MHz").
GPU_THROTTLED = (
    rf"{NOT_SAID}\b(?:GPU |clock |thermal |power )?throttl(?:ed|es|ing)\b"
    # (not nvidia-smi -q's "HW Slowdown                 : Not Active", nor "... is Not Active")
    r"|\b(?:HW|SW) (?:Thermal |Power Brake )?(?:Slowdown|Power Cap)\b"
    r"(?![ \t]{0,40}:?[ \t]{0,4}(?:is |was )?Not Active)"
    r"|\bthermal slowdown\b|\bclocks? (?:drops?|dropped|falls?|fell|go(?:es)? down)\b"
)
#: The process sees no GPU at all: CUDA counts none ("device_count() returns 0", "torch sees no
#: GPU", "no CUDA devices found") or nvidia-smi is not there (a container without the driver).
NO_GPU_SEEN = (
    r"\bdevice_count\(\)\s*(?:shows|returns|gives|reports|is|=|==)\s*(?:0|zero)\b"
    r"|\b(?:sees?|detects?|finds?|recogni[sz]es?|shows?|lists?|reports?) (?:no|zero|0) "
    r"(?:(?:CUDA |NVIDIA )?GPUs?|(?:CUDA|NVIDIA|CUDA-capable) devices?)\b"
    # (not "no device found" alone: NCCL says that of a network device)
    r"|\bno (?:(?:CUDA |NVIDIA )?GPUs?|(?:CUDA|NVIDIA|CUDA-capable) devices?) "
    r"(?:(?:is|are|was|were) )?(?:found|detected|visible|available)\b"
    r"|\bnvidia-smi\b[`'\":]{0,2} (?:is )?(?:not found|command not found|no such file)"
)

#: The reporter says it fails, in any words; the last resort of :data:`PROSE_SYMPTOMS`.
_FAILURE = ProseSymptom(
    "failure",
    rx(
        r"\b(?:fail\w*|crash\w*|errors?|dies|died|kills?|abort\w*|broken|breaks)\b"
        # "when Ray sets it, things break"
        r"|\b(?:things|everything|it all|stuff) (?:will |would )?break\b"
        r"|\b(?:does ?n[o']t|do ?n[o']t|not|stops?|stopped) work(?:s|ing)?\b"
        # an attempt that did not succeed ("I've been unsuccessful", "tried, without success")
        r"|\bunsuccessful\w*|\b(?:without|with no|no) success\b"
        # trouble met ("I'm having trouble with two GPUs", "we ran into issues when ...")
        r"|\b(?:having|have|had|ran into|run(?:ning)? into|hit(?:ting)?|fac(?:e|ing)"
        r"|encounter\w*|experienc\w*) (?:some |a |an |the same |similar |strange |weird )?"
        r"(?:trouble|problems?|issues?|difficult(?:y|ies))\b"
        # a job that exits silently; a version mismatch said as the failure
        r"|\bexit(?:s|ed)?\b.{0,20}\bwithout (?:any )?(?:message|error|output|log)"
        # it ends before its time ("exits immediately on 2 nodes", "the processes terminate
        # unexpectedly", "torchrun quits after a few seconds", "the run is killed as soon as
        # all_reduce starts", "the workers go down one after another", "blows up")
        r"|\b(?:exits?|exited|quits?|terminat(?:es?|ed)|shuts? down|dies) (?:immediately"
        r"|right away|at once|unexpectedly|abruptly|early|prematurely|suddenly"
        r"|after (?:a few|some|\d{1,4}) seconds)\b"
        r"|\b(?:unexpectedly|abruptly|suddenly|prematurely) (?:exits?|exited|quits?|quit"
        r"|terminat(?:es?|ed)|ends?|ended|stops?|stopped)\b"
        # (not stopped by its user: "was killed by me with Ctrl-C"; not a machine taken down
        # on purpose: "the nodes go down for maintenance"; not a loss that diverges)
        r"|\b(?:is|was|gets|got|are|were|get) (?:\w+ )?(?:killed|interrupted)\b"
        r"(?! by (?:me|us|the user|hand|ctrl|keyboard))"
        r"|\b(?:workers?|ranks?|process(?:es)?|nodes?|jobs?|pods?) (?:go|goes|went|going) down\b"
        r"(?! for (?:maintenance|a reboot|updates?|an upgrade))"
        r"|(?<!loss )(?<!losses )(?<!norm )(?<!gradient )(?<!gradients )(?<!memory )"
        r"\b(?:blows? up|blew up)\b"
        r"|\bversions? mismatch\w*"
        # a non-zero exit ("exits with exit code 1", "non-zero exit status")
        r"|\bexit(?:s|ed)? (?:with )?(?:exit )?(?:code|status)(?: ?[:=])? ?-?[1-9]\d{0,2}\b"
        r"|\bnon-?zero exit (?:status|code)\b"
        # an exception raised, or the job that cannot start ("unable to run on 2 GPUs")
        r"|\bexceptions?\b|\b(?:raises?|raised|throws?|threw) (?:an? )?\w*Error\b"
        r"|\b(?:unable to|can ?not|can't|could ?n[o']t|won't|not able to) (?:run|start|launch"
        r"|train|initiali[sz]e|init|connect|communicate|load|use (?:multiple|more than one|all)"
        r" GPUs)\b"
        # a GPU that cannot join ("I could not add the 10th gpu to the strategy")
        r"|\b(?:unable to|can ?not|can't|could ?n[o']t|not able to) add (?:the |a |another |more )?"
        r"(?:\d{1,3}(?:st|nd|rd|th)? |\w+ )?GPUs?\b"
        # the same, said of the job ("the other one cannot be trained", "it still didn't run")
        r"|\b(?:can ?not|can't|could ?n[o']t|won't) be (?:trained|run|started|launched)\b"
        r"|\b(?:did ?n[o']t|does ?n[o']t|never) (?:run|start)s?\b"
        # Chinese: an error is reported, error (not an error rate), failed, crashed, cannot
        # train / run / start / connect...
        # (not "无报错" / "没有报错" / "不报错": no error was reported)
        r"|(?<!无)(?<!没有)(?<!没)(?<!不)报错|错误(?!率)|失败|崩溃|无法(?:训练|运行|启动|使用|正常|进行|完成|连接|通信|初始化)"
        # cannot get it going, exits at once, died, crashed ("起不来", "启动不了", "跑不起来",
        # "直接退出", "挂了", "崩了")
        r"|起不来|(?:启动|运行|训练|跑)不(?:了|起来)|跑不起来|直接退出|自动退出|挂了|崩了"
        # Japanese: failed, an error comes up / occurs (not "エラーは出ません": none does),
        # ended abnormally, crashes
        r"|失敗|エラーが(?:出|発生)|異常終了|クラッシュ|落ちて"
    ),
    "the reporter says it fails, with no message the catalogue knows",
    # a program's hint or a condition ("if auto-resume does not work, ...", "提示: ...")
    rx(
        r"^\s*(?:tips?|hint|note|提示)\s*[:：]"
        r"|\b(?:if|whether|in case)\b[^.;]{0,60}\b(?:does ?n[o']t|do ?n[o']t|not) work"
    ),
    _says_failure,
)

#: In order: the first class whose words appear opens the symptom.
#: Every rank computes on one GPU, the others idle (the one_gpu_does_all cue, and a sign of
#: the gpu_imbalance class): "only GPU 0 has load", "all 8 processes run on GPU 0".
ONE_GPU_DOES_ALL = (
    r"\bonly (?:the )?(?:GPU ?#?0|GPU:0|cuda:0|first GPU|one GPU|a single GPU|one card)\b"
    r"[^.\n]{0,30}\b(?:has|had|have|gets?|got|shows?|showed|is|was|are|were)\b[^.\n]{0,20}"
    r"\b(?:load\w*|busy|used|utili[sz]\w*|working|running|active|activity|memory)"
    r"|\b(?:all|every|both) (?:the )?(?:\d+ )?(?:processes|ranks|workers|procs)\b[^.\n]{0,30}"
    r"\b(?:on|use|uses|using|to) (?:the )?(?:GPU ?#?0|GPU:0|cuda:0|first GPU)\b"
    r"|\beverything (?:runs |goes |is )?(?:on|to) (?:the )?(?:GPU ?#?0|cuda:0|first GPU)\b"
    r"|只有(?:0号|第一张|一张)(?:卡|显卡|GPU)"
)

#: The GPUs' NVLink said to be down or unused (the nvlink_unused cue, and a sign of the slow
#: class): "NV links inactive", "not using NVLink but communicating via PCIe".
NVLINK_UNUSED = (
    r"\bnv ?links?\b[^.\n]{0,40}?\b(?:(?:is|are|were|was|shows?|shown|showing|as) )?"
    r"(?:inactive|not active|down|missing|disabled|not (?:being )?used|not working"
    r"|not detected|not present)\b"
    r"|\bnot (?:using|used|use|going through|over) (?:the )?nv ?links?\b"
    # (not "no NVLink": a board of PCIe cards, where no link can be down)
    r"|\binstead of (?:the )?nv ?links?\b"
)

PROSE_SYMPTOMS: tuple[ProseSymptom, ...] = (
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
        counts=lambda text, _match: _FAILURE.said_in(text),
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
        counts=_not_negated,
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
        counts=_not_negated,
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
        counts=_not_negated,
        # the kernel's PCIe AER report (kernel.aer.*) is no signal: its own class, or harmless
        unless=rx(r"\bPCIe Bus Error\b"),
    ),
    ProseSymptom(
        "crashed",
        rx(r"\bseg(?:mentation )?fault\w{0,10}|\bSIGSEGV\b"),
        "the reporter says a process crashed natively (segfault)",
        counts=_not_negated,
    ),
    ProseSymptom(
        "aborted",
        rx(
            r"\bSIGABRT\b|\bsignal 6\b|\bexit\w*\b.{0,25}(?<![\w.-])-6\b"
            r"|\bterminate called after throwing\b"
        ),
        "the reporter says a process aborted (SIGABRT: a C++ exception, an assert, the watchdog)",
        counts=_not_negated,
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
        counts=_not_negated,
    ),
    ProseSymptom(
        "collective_timeout",
        rx(
            r"\b(?:DDP|NCCL|all_?reduce|all_?gather|reduce_scatter|broadcast|barrier|collective"
            rf"|training|jobs?)\b.{{0,40}}{UNDENIED}"
            r"\b(?:times? ?out|timed ?out|timeout)\b"
        ),
        "the reporter says the job or a collective timed out",
        counts=_not_negated,
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
        counts=_not_negated,
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
        counts=_not_negated,
    ),
    # a kernel's own assertion, in words ("crashes with a device-side assert"); not the
    # advice every CUDA error of PyTorch's carries ("compile with TORCH_USE_CUDA_DSA to enable
    # device-side assertions")
    ProseSymptom(
        "cuda_assert",
        rx(r"(?<!enable )(?<!enabling )(?<!enables )\bdevice[- ]side assert(?:ion)?s?\b"),
        "the reporter names a device-side assertion (a kernel checked its index or value)",
        counts=_not_negated,
    ),
    # a kernel fault, in words ("dies with an illegal memory access")
    ProseSymptom(
        "cuda_fault",
        rx(r"\billegal (?:memory )?(?:access|address)(?:es)?\b|\bmisaligned address\b"),
        "the reporter names a kernel fault (an illegal memory access): the context is lost",
        counts=_not_negated,
    ),
    ProseSymptom(
        "gpu_imbalance",
        rx(
            r"\b(?:extra|additional|more|other)\s+(?:\d+\s+)?process\w*\b.{0,40}\bGPU ?#?0\b"
            # "several processes on the gpu 0", "multiple processes on the rank 0 devices",
            # "8 extra processes who occupy memory of the same one gpu"
            r"|\b(?:multiple|several|many|extra|additional|\d+)\s+(?:extra\s+)?process(?:es)?\s+"
            r"on (?:the )?(?:GPU ?#?0|rank ?0(?:'s)? (?:GPU|device|card)s?|master (?:GPU|device))\b"
            r"|\b(?:extra|additional)\s+(?:\d+\s+)?process\w*\b.{0,40}\b(?:memory|space)\b.{0,20}"
            r"\b(?:the )?same (?:one )?(?:GPU|card|device)\b"
            r"|\bprocess\w*\b.{0,100}\b(?:memory|space)\b.{0,20}\bon GPU[ /#]?0\b"
            r"|\b(?:unbalanced|imbalanced|uneven)\b.{0,20}\b(?:GPU )?(?:memory|load|usage)"
            r"|\bprocess\w* on (?:the )?(?:unused|other|all) GPUs\b"
            r"|\b(?:executed|running|runs|lands?|ends? up) on (?:the )?GPU (?:with index )?0\b"
            # "the two processes are running on the same GPU" (not "are not on the same GPU",
            # nor the question "are both ranks on the same GPU?")
            r"|\b(?:two|both|all|multiple|several|\d+) (?:of the )?(?:processes|ranks|workers)\b"
            r"(?:(?!\bnot\b|n't\b|\bnever\b).){0,30}\b(?:on|use|using|share|sharing) (?:the )?"
            r"same (?:GPU|device|card)\b(?! ?\?)"
            # "GPU 0 gets more memory than the others"
            r"|\b(?:GPU ?#?0|0 GPU|first GPU)\b.{0,30}\b(?:more|most|higher|larger|extra)\b"
            r".{0,20}\bmemor\w*"
            # Chinese: all (processes) run on the same card / GPU
            r"|(?:都|全部|全都)(?:跑|在|分配)(?:到|在)?同一(?:张|块|个)(?:卡|显卡|GPU)"
            rf"|{ONE_GPU_DOES_ALL}"
        ),
        "the reporter sees the job's processes or memory on GPU 0 (or GPUs it did not ask for)",
    ),
    ProseSymptom(
        "ddp_usage",
        rx(
            r"\bunused param\w*|\bfind_unused_parameters\b"
            r"|\bparam\w* (?:that )?(?:were|was|are|is|aren't|weren't|not|n't|did not|didn't) "
            r"(?:not )?(?:used|contribut\w*|participat\w*) (?:in|to) (?:produc\w* )?(?:the )?loss"
            r"|\b(?:did not|didn't|do not|don't|does not|doesn't) (?:receive|get) (?:a |any )?grad"
        ),
        "the reporter names DDP's error for parameters that got no gradient",
        # the setting named beside a failure, not in a list of what the script sets
        counts=lambda text, _match: _FAILURE.said_in(text),
    ),
    ProseSymptom(
        "wrong_results",
        rx(
            r"\b(?:wrong|incorrect|corrupt\w*|garbage|inconsistent) (?:results?|values?|outputs?"
            r"|data|gradients?|sums?)\b|\bdata corruption\b|\bsilent(?:ly)? corrupt\w*"
            r"|\bresults? (?:are|is|were|was) (?:wrong|incorrect|corrupted|garbage)\b"
            r"|#wrong\b.{0,30}\b[1-9]|\bOut of bounds values\s*:\s*[1-9]"
        ),
        "the reporter says a collective returned wrong values",
        counts=_not_negated,
    ),
    # Python's own exception named: the job's code raised it about its data or logic, or an
    # import failed (a traceback pasted without its last line, the name in the title)
    ProseSymptom(
        "app_error",
        rx(rf"\b(?:{'|'.join(sorted(APP_EXCEPTIONS))})\b"),
        "the reporter names an exception the job's own code raises (a builtin about its data "
        "or logic)",
        counts=_not_negated,
    ),
    ProseSymptom(
        "library_missing",
        rx(rf"\b(?:{'|'.join(sorted(IMPORT_EXCEPTIONS))})\b"),
        "the reporter names an import that failed",
        counts=_not_negated,
    ),
    ProseSymptom(
        "slow",
        rx(
            r"\b(?:slow|low|poor|degraded|reduced)\b.{0,40}"
            r"\b(?:bandwidth|busbw|bus bw|performance|throughput)"
            r"|\b(?:bandwidth|busbw|performance|throughput)\b.{0,40}"
            r"\b(?:is|was|only|drops?)\b.{0,20}\b(?:low|slow|only|\d{1,3} ?%)"
            r"|\bperformance degradation\b"
            r"|\b(?:performance|bandwidth|busbw|throughput|speed)\b.{0,20}"
            r"\b(?:degrad(?:es|ed|ing)|drops?|dropped|decreas(?:es|ed))\b"
            r"|\b(?:slower|longer) than (?:on |with )?(?:one|1|a single|single)\b"
            # a time that grows ("the iteration time doubles with 16 GPUs", "all_reduce takes
            # 10x longer on the new cluster"); Chinese "速度很慢", "变慢"
            r"|\b(?:iteration|step|epoch|training|communication|all_?reduce|collective)s? "
            r"(?:time|latency)s? (?:doubles|doubled|triples|tripled|grows|grew|increases"
            r"|increased|jumps|jumped)\b"
            r"|\btakes? (?:\d{1,4}(?:\.\d{1,3})? ?(?:x|\u00d7|times) |much |far |way )longer\b"
            r"(?! to (?:download|load|install|compile|build|start|read|write)\b)"
            r"|速度(?:很|非常|特别|太|极)?慢|变慢|慢了很多"
            # how much slower, or than what ("0.3% slower than others", "3x slower", "slower
            # than the other nodes", "a 20% slowdown"); not nvidia-smi's "HW Slowdown" field
            r"|\b\d{1,4}(?:\.\d{1,3})? ?(?:%|x|\u00d7|times) slower\b"
            r"|\bslower than (?:the )?(?:others?|rest|expected|before|usual"
            r"|other (?:nodes?|runs?|jobs?|GPUs?|ranks?|machines?))\b"
            r"|\b(?:a|the|this|that|big|huge|significant|noticeable"
            r"|\d{1,4}(?:\.\d{1,3})? ?(?:%|x|\u00d7))[ -]slowdowns?\b"
            # "a very long time for computing each epoch"
            r"|\b(?:very|extremely|really|too|so|much) long (?:time|times)\b"
            r"|\bslower and slower\b|\b(?:is|runs?|gets?|getting|became|becomes?) (?:very |much |"
            r"extremely |really |so )?slow(?:er)?\b"
            # the GPUs talk over PCIe where NVLink should carry it
            rf"|{NVLINK_UNUSED}"
            # the GPUs' clocks held down ("clocks drop to 800 MHz", "HW Slowdown Active")
            rf"|{GPU_THROTTLED}"
        ),
        "the reporter says the job or a benchmark is slow (a bandwidth problem, no error), or "
        "that its GPUs' NVLink is down or unused",
        counts=_not_negated,
    ),
    # the whole machine turns itself off or restarts while the GPUs work ("usage is shutting
    # down system", "the PC reboots as soon as training starts"): not a job that stops, the
    # host that loses power or panics; not a reboot someone did ("after a reboot")
    ProseSymptom(
        "power_loss",
        rx(
            # the machine as the subject: powering off and rebooting are the hardware's own;
            # restarting or resetting only said of the machine ("the server restarts" is as
            # often an inference server's process)
            r"\b(?:system|machine|computer|pc|server|workstation|host|node|box)\s+"
            r"(?:\w+\s+)?(?:shuts? (?:itself )?(?:down|off)|shutting (?:itself )?(?:down|off)"
            r"|powers? (?:itself )?(?:off|down)|powered (?:itself )?(?:off|down)"
            r"|turns? (?:itself )?off|turned (?:itself )?off|reboots|rebooted)\b"
            r"|\b(?:system|machine|computer|pc|workstation|box)\s+(?:\w+\s+)?"
            r"(?:restarts|restarted|resets)\b"
            # the machine as the object ("is shutting down system", "powers the machine off");
            # not "a powerful machine", nor "turned the server on"
            r"|\b(?:shut(?:s|ting)?|power(?:s|ed|ing)?|turn(?:s|ed|ing)?) (?:down |off )"
            r"(?:the |my |our )?(?:whole |entire )?"
            r"(?:system|machine|computer|pc|server|workstation)\b"
            r"|\b(?:shut(?:s|ting)?|power(?:s|ed|ing)?|turn(?:s|ed|ing)?) (?:the |my |our )?"
            r"(?:whole |entire )?(?:system|machine|computer|pc|server|workstation) (?:down|off)\b"
            r"|自动关机|突然(?:关机|重启|断电)|直接(?:关机|重启|断电)"
        ),
        "the reporter says the whole machine powered off or restarted by itself under the job",
        # a reboot someone did, or one the driver's install asks for; "the system shuts down
        # the process" (it ended the job, not the machine)
        unless=rx(
            r"\b(?:after|before|until|needs?|need to|had to|have to|must|requir\w*|tried|try)\b"
            r"[^.;\n]{0,20}\b(?:a |the )?(?:reboot|restart|power[- ]cycle)"
            rf"|{UPDATE_WORDS}|\bdown the (?:process|job|training)\b"
            # someone did it ("I shut down the server", "we rebooted the node")
            r"|\b(?:I|we|you|they) (?:then |also |just )?(?:shut|power|turn|reboot|restart)\w*\b"
        ),
    ),
    ProseSymptom(
        "hang",
        rx(
            r"\b(?:hangs?|hanging|hung|freez\w*|frozen|stuck\w*|no progress|deadlock\w*"
            r"|stall(?:s|ed)?|never (?:ends|returns|finishes)|unresponsive"
            r"|(?:stopped|stops|stop|not) responding|takes? forever)\b"
            # it waits and nothing comes ("keeps waiting", "is always waiting", "waits forever")
            r"|\b(?:wait(?:s|ed|ing)?|blocked)\b(?: [^.!?;\n,]{0,40})? (?:forever|indefinitely"
            r"|endlessly)\b"
            r"|\b(?:keeps?|kept|(?:is|are|was|were) (?:always|still)) waiting\b"
            # nothing answers ("it stops and has no response"); set-up that never ends ("the
            # nodes don't finish connecting")
            r"|\b(?:has|had|with|gives?|gave) no response\b"
            r"|\b(?:do ?n[o']t|does ?n[o']t|did ?n[o']t|never|not) (?:finish|complete)s? "
            r"(?:connecting|initiali[sz]\w*|the (?:rendezvous|handshake))\b"
            # NCCL's kernels spin while they wait: the GPUs busy, the job not moving
            r"|\b(?:utili[sz]ation|util|usage)\b.{0,30}\b100 ?%.{0,60}"
            r"\b(?:nothing (?:happens|moves)|no (?:progress|output|logs?)"
            r"|not (?:moving|progressing))"
            # nothing comes out and nothing fails ("I run the command, but no output, no
            # error"); not a process said to end that way ("exits with no output and no error")
            r"|(?<!with )(?<!without )\bno (?:output|logs?)[ ,]{1,3}(?:and |or |nor )?no "
            r"(?:errors?|error messages?|exceptions?)\b"
            r"|(?<!with )(?<!without )\bno (?:errors?|error messages?|exceptions?)[ ,]{1,3}"
            r"(?:and |or |nor )?no (?:output|logs?)\b"
            # nothing more comes ("I launch it and nothing happens", "nothing else is printed",
            # "no further output after init_process_group", "... and then nothing."); not
            # "nothing happens to the loss", nor "and then nothing changed"
            # (not a condition: "if nothing happens, check ...", "nothing else is printed when
            # it succeeds"; nor "nothing happens to the loss", "no further output is needed")
            r"|(?<!if )(?<!when )(?<!unless )\bnothing (?:happens|happened)\b"
            r"(?! (?:to|with|if|when)\b)"
            r"|\bnothing (?:else |more |further )?(?:is |gets |was |got )?"
            r"(?:printed|shown|logged|output|comes)\b(?! (?:when|if|unless|because)\b)"
            r"|\b(?:prints?|printed|outputs?|shows?) nothing (?:else|more|further)\b"
            r"|\bno (?:further|more|additional|new) (?:output|logs?|log lines|messages|progress)\b"
            r"(?! (?:is |was )?(?:needed|required|necessary|expected)\b)"
            r"|\band then nothing(?=[.!,;]|$| (?:else |more )?(?:happens|happened|is printed"
            r"|comes))"
            # the job does not go on ("doesn't proceed past the first batch", "it does not
            # move on after the dataloader is built"); not a decision ("we will not proceed
            # with the upgrade", "not move on to multi-node"), nor "the loss does not continue
            # to drop"
            r"|\b(?:does ?n[o']t|did ?n[o']t|do ?n[o']t|won't|will not|never|not) "
            r"(?:(?:proceed|move on|go on|advance)(?=[.!,;]|$| (?:past|beyond|after|from)\b)"
            r"|make (?:any )?progress|get past|go past|go (?:any )?further"
            r"|continue (?:training|running|past|beyond|after))\b"
            # a counter that stays put ("stays at 0%", "remains at step 10")
            r"|\b(?:stays?|stayed|remains?|remained) (?:at|on) (?:0 ?%"
            r"|(?:step|iteration|epoch|batch) \d)"
            # training that never begins ("the job never starts training with 4 GPUs")
            r"|\bnever (?:starts?|begins?|began) (?:the )?(?:training|to train|iterat\w*"
            r"|the first (?:step|epoch|iteration|batch))\b"
            r"|\b(?:waits|waiting) there\b"
            # the other node (or ranks) never arrive
            r"|\b(?:node|rank|worker|process)s?\b.{0,20}\bnever (?:joins?|joined|connects?"
            r"|connected|arrives?)\b"
            # the run itself stops ("which causes the training to stop", "on 3 GPUs training
            # stops randomly"), as Japanese "止まって" below; not "I stopped the training"
            r"|\b(?:training|job|run|program) (?:to )?(?:stops?|stopped)\b"
            # it stops with nothing said ("when I try to train it just stops", "it just sits
            # there"); not "it just stops working", a failure
            r"|\bjust (?:stops|stopped|sits|sat)\b(?! working)|\b(?:sits|sat|sitting) there\b"
            # Chinese: stuck, stuck at ("卡在初始化"; not a count of cards: "两张卡在同一台机器"),
            # hung, no response
            r"|卡住|卡死|挂起|无响应|(?<![\d张块个号多单双两三四五六七八九十几显这那该每])卡[在着]"
            # no output or reaction at all, does not move, does not go on
            r"|(?:没有|无)(?:任何)?(?:输出|反应)|一直不动|不动了|没反应|不往下(?:走|跑|执行|进行)"
            # Japanese: hangs, freezes, (the processing) stops ("止まってしまいます")
            r"|ハング|フリーズ|固ま(?:る|って|った|り)|止ま(?:って|った|ったまま|る)"
        ),
        "the reporter says the job hangs",
        counts=_not_negated,
    ),
    _FAILURE,
)


#: A title's label ("Title:", "[Issue title: ...]") before the reporter's words.
_TITLE = re.compile(r"^\W*(?:issue )?title:\s*", re.IGNORECASE)


#: The words people call any alarming line by ("this error", "报错", "エラーが出"): said of
#: a notice, or of a job that completes, they name no failure of the job's own.
_ERROR_WORDS = ("error", "报错", "错误", "エラー")
#: Where a sentence quotes a message: its parts between quotes, brackets and semicolons.
_QUOTE_BREAKS = re.compile(r"[;\"'`\[\]()\u201c\u201d]+")


def _only_error_words(text: str) -> bool:
    """Whether every failure the line says is a word for an alarming line ("error"), none
    an event of the job ("fails", "crashed", "cannot start", an exception)."""
    return all(
        m.group().lower().startswith(_ERROR_WORDS)
        for m in _FAILURE.pattern.finditer(text)
        if _says_failure(text, m)
    )


def _quotes_a_notice(text: str, notices: list[str]) -> bool:
    """Whether the line is the reporter repeating a notice the evidence shows: a title that
    is the notice's words without the library's prefix, or a part of one ("how to fix this
    error; errno: 97 - Address family not supported by protocol") with no failure of its
    own beside it."""
    words = _TITLE.sub("", text).strip(" \t[]().:;\"'`").lower()
    if len(words.split()) >= 3 and any(words in line for line in notices):
        return True
    parts = (p.strip(" \t.:,").lower() for p in _QUOTE_BREAKS.split(text))
    quoted = any(len(p.split()) >= 4 and any(p in line for line in notices) for p in parts)
    return quoted and _only_error_words(text)


#: The reporter says the job does its work anyway ("the training completes but ...", "works
#: fine, uses all 8 GPUs", "training proceeds correctly, but emits these messages"). Not a
#: condition of it ("works fine with NCCL_P2P_DISABLE=1", "runs fine till the end", "runs
#: fine on one GPU"): that is a workaround or a contrast, a cue for a cause.
_RUNS_ANYWAY = rx(
    r"(?:\b(?:training|the job|the run|the program|everything|it)(?: still)? |^\W*)"
    r"(?:completes|finish(?:es)? as expected|(?:works?|runs?|proceeds?) (?:fine|correctly"
    r"|normally|as expected)|runs? to completion)\b"
    r"(?! (?:with|when|if|on|using|after|under|for|in|without|only|at|by|once|except|until"
    r"|till|as long)\b)"
)


#: Said before it in the sentence, a success is a contrast with the failure: at a smaller
#: scale ("I checked single node training and it works fine"), elsewhere, with another
#: backend or a setting changed.
_CONTRAST_BEFORE = rx(
    r"\b(?:single|one|1|a) (?:node|machine|gpu|card|process|host|server|rank)s?\b"
    r"|\blocal(?:ly)?\b|\bgloo\b|\bon cpu\b|\b[A-Z]+_[A-Z_]+=|\bwithout\b"
    r"|\b(?:another|other|a different|old|older|previous) (?:\w+ )?(?:node|machine|server"
    r"|host|instance|cluster|version|release|image)s?\b"
)


def _succeeds(text: str, match: re.Match[str]) -> bool:
    """Whether the success a line states is the job's own: not denied, not a contrast."""
    start = max(text.rfind(".", 0, match.start()), text.rfind("!", 0, match.start())) + 1
    before = text[start : match.start()]
    return _not_negated(text, match) and not _CONTRAST_BEFORE.search(before)


def _runs_anyway(facts: Facts) -> bool:
    """Whether the reporter says the job completes, and every failure they name is a line
    they call an error: they ask what a message means, and no failure is said."""
    if not any(
        _succeeds(h.cite.text, m)
        for h in facts.prose_search(_RUNS_ANYWAY.pattern, FLAGS)
        for m in _RUNS_ANYWAY.finditer(h.cite.text)
    ):
        return False
    return all(
        _only_error_words(h.cite.text) for h in facts.prose_search(_FAILURE.pattern.pattern, FLAGS)
    )


def prose_symptom(facts: Facts) -> tuple[str, Cite, str] | None:
    """The first class the reporter's words name, its line and why (``None`` when none)."""
    notices = [n.cite.text.lower() for n in notices_of(facts)]
    for row in PROSE_SYMPTOMS:
        if row is _FAILURE and _runs_anyway(facts):
            return None
        hits = facts.prose_search(row.pattern.pattern, FLAGS)
        cite = next(
            (
                h.cite
                for h in hits
                if row.said_in(h.cite.text)
                and harmless_message(h.cite.text) is None
                and not _quotes_a_notice(h.cite.text, notices)
            ),
            None,
        )
        if cite is not None:
            return row.cls, cite, row.why
    return None
