"""The reporter's words: the prose signatures, weighed below machine output.

People describe what a log would show ("it hangs", "just says killed",
"bandwidth is only 33 GB/s", "7 extra processes on GPU0") and what they
tried ("works with NCCL_P2P_DISABLE=1", "works with gloo", "fine with NCCL
2.18"). Two tables hold those words, each row with its reason:

- :data:`PROSE_SYMPTOMS`: sentences that name a failure's class. They open a
  symptom only where no machine output (a typed failure, a catalogued
  message) does: a log outranks a paraphrase of it.
- :data:`CUES`: sentences that discriminate between causes (a workaround
  that worked, where and when it fails); :mod:`.context` turns them into
  shifts.

Only prose lines (:func:`nccl_doctor.facts.store.is_prose`) are read here;
machine output is never matched against these words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import harmless_message
from nccl_doctor.facts.store import Facts
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


def _rx(pattern: str) -> LazyPattern[str]:
    # compiled when a prose line may hold its words: a log of machine output holds none
    return LazyPattern(pattern, FLAGS)


_NUM = r"\d{1,3}(?:\.\d{1,3}){1,2}"
#: What, said just before a failure word, says there was none ("no errors", "did not crash",
#: "0 files failed", "without any error").
_NONE_BEFORE = _rx(
    r"(?:\bno|\bnot|n't|\bnever|\bwithout(?: any)?|\b0|\bzero|\bnone of the|\bnothing)"
    r" (?:[\w-]{1,30} )?$"
)
#: An error that is a measure, not a failure ("validation error 0.087", "word error rate").
_MEASURE_AFTER = _rx(r" ?(?:%|[:=]? {0,3}[-+]?\d{0,6}\.\d|[:=]? {0,3}\d{1,3} ?%)")
#: A failure word that names a mechanism or a measure, not an event ("CUDA error checking
#: enabled", "error handling", "failure rate", "fault tolerance").
_ATTRIBUTE_AFTER = _rx(
    r"[ -](?:checking|checks?|handling|handlers?|reporting|correction|correcting|detection"
    r"|tolerance|tolerant|threshold|budget|feedback|propagation|injection|analysis|domains?"
    r"|rates?|ratios?|bars?|modes?|policy|policies|semantics)\b"
)
#: Words the failure pattern matches that name no failure.
_NOT_EVENTS = frozenset({"failover", "failsafe", "failback", "failures_allowed"})
_MEASURE_BEFORE = _rx(
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


#: Not right after a negation ("not an inter-node job", "never ran multi-node").
_NOT_SAID = r"(?<!not )(?<!not a )(?<!not an )(?<!never )(?<!never ran )(?<!no )(?<!without )"

#: The reporter says it fails, in any words; the last resort of :data:`PROSE_SYMPTOMS`.
_FAILURE = ProseSymptom(
    "failure",
    _rx(
        r"\b(?:fail\w*|crash\w*|errors?|dies|died|kills?|abort\w*|broken|breaks)\b"
        r"|\b(?:does ?n[o']t|do ?n[o']t|not|stops?|stopped) work(?:s|ing)?\b"
        # a job that exits silently; a version mismatch said as the failure
        r"|\bexit(?:s|ed)?\b.{0,20}\bwithout (?:any )?(?:message|error|output|log)"
        r"|\bversions? mismatch\w*"
        # a non-zero exit ("exits with exit code 1", "non-zero exit status")
        r"|\bexit(?:s|ed)? (?:with )?(?:exit )?(?:code|status)(?: ?[:=])? ?-?[1-9]\d{0,2}\b"
        r"|\bnon-?zero exit (?:status|code)\b"
        # an exception raised, or the job that cannot start ("unable to run on 2 GPUs")
        r"|\bexceptions?\b|\b(?:raises?|raised|throws?|threw) (?:an? )?\w*Error\b"
        r"|\b(?:unable to|can ?not|can't|could ?n[o']t|won't|not able to) (?:run|start|launch"
        r"|train|initiali[sz]e|init|connect|communicate|load|use (?:multiple|more than one|all)"
        r" GPUs)\b"
        # Chinese: an error is reported, error (not an error rate), failed, crashed, cannot
        # train / run / start / connect...
        # (not "无报错" / "没有报错": no error was reported)
        r"|(?<!无)(?<!没有)(?<!没)报错|错误(?!率)|失败|崩溃|无法(?:训练|运行|启动|使用|正常|进行|完成|连接|通信|初始化)"
        # Japanese: failed, an error comes up / occurs (not "エラーは出ません": none does),
        # ended abnormally, crashes
        r"|失敗|エラーが(?:出|発生)|異常終了|クラッシュ|落ちて"
    ),
    "the reporter says it fails, with no message the catalogue knows",
    # a program's hint or a condition ("if auto-resume does not work, ...", "提示: ...")
    _rx(
        r"^\s*(?:tips?|hint|note|提示)\s*[:：]"
        r"|\b(?:if|whether|in case)\b[^.;]{0,60}\b(?:does ?n[o']t|do ?n[o']t|not) work"
    ),
    _says_failure,
)

#: In order: the first class whose words appear opens the symptom.
#: Every rank computes on one GPU, the others idle (the one_gpu_does_all cue, and a sign of
#: the gpu_imbalance class): "only GPU 0 has load", "all 8 processes run on GPU 0".
_ONE_GPU_DOES_ALL = (
    r"\bonly (?:the )?(?:GPU ?#?0|GPU:0|cuda:0|first GPU|one GPU|a single GPU|one card)\b"
    r"[^.\n]{0,30}\b(?:has|had|have|gets?|got|shows?|showed|is|was|are|were)\b[^.\n]{0,20}"
    r"\b(?:load\w*|busy|used|utili[sz]\w*|working|running|active|activity|memory)"
    r"|\b(?:all|every|both) (?:the )?(?:\d+ )?(?:processes|ranks|workers|procs)\b[^.\n]{0,30}"
    r"\b(?:on|use|uses|using|to) (?:the )?(?:GPU ?#?0|GPU:0|cuda:0|first GPU)\b"
    r"|\beverything (?:runs |goes |is )?(?:on|to) (?:the )?(?:GPU ?#?0|cuda:0|first GPU)\b"
    r"|只有(?:0号|第一张|一张)(?:卡|显卡|GPU)"
)

PROSE_SYMPTOMS: tuple[ProseSymptom, ...] = (
    ProseSymptom(
        "collective_timeout",
        _rx(
            r"\bwatchdog\b.{0,60}\b(?:time[sd]? ?out|timeout|abort)"
            r"|\bcollective[- ]time ?out|\bNCCL (?:collective )?time ?out"
        ),
        "the reporter names the watchdog's collective timeout",
    ),
    ProseSymptom(
        "collective_timeout",
        _rx(
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
        _rx(
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
    ),
    ProseSymptom(
        "killed",
        _rx(
            r"\b(?:says|said|prints?|printed|shows?|got|gets|was|were|being|just)\s+killed\b"
            r"|\bOOM[- ]kill"
            # Chinese: "just killed", "killed appears", "was killed" (the shell's word, quoted)
            r"|(?:直接|就|被|出现|显示|提示)\s?killed\b"
            # "caused exited -9", "exits with return code = -9", "signal 9": SIGKILL by its number
            r"|\bexit(?:ed|s)?\b.{0,25}(?<![\w.-])-9\b|\bsignal 9\b|\bSIGKILL\b"
        ),
        "the reporter says the process was killed (the shell's 'Killed': SIGKILL)",
    ),
    ProseSymptom(
        "bus_error",
        _rx(r"\bbus error\b|\bSIGBUS\b"),
        "the reporter says a process died of a bus error (SIGBUS)",
        # the kernel's PCIe AER report (kernel.aer.*) is no signal: its own class, or harmless
        unless=_rx(r"\bPCIe Bus Error\b"),
    ),
    ProseSymptom(
        "crashed",
        _rx(r"\bseg(?:mentation )?fault\w{0,10}|\bSIGSEGV\b"),
        "the reporter says a process crashed natively (segfault)",
    ),
    ProseSymptom(
        "aborted",
        _rx(
            r"\bSIGABRT\b|\bsignal 6\b|\bexit\w*\b.{0,25}(?<![\w.-])-6\b"
            r"|\bterminate called after throwing\b"
        ),
        "the reporter says a process aborted (SIGABRT: a C++ exception, an assert, the watchdog)",
    ),
    ProseSymptom(
        "store_timeout",
        _rx(
            r"\bTCP connect\(\)|\bconnect\(\) (?:error|fail\w*)|\bconnection refused\b"
            r"|\brendezvous\b.{0,40}\b(?:fail\w*|time[sd]? ?out)"
            r"|\b(?:init\w*|init_process_group|rendezvous|store)\b.{0,30}"
            r"\b(?:time[sd]? ?out|timeout)\b"
        ),
        "the reporter says connecting to the store or the rendezvous failed",
    ),
    ProseSymptom(
        "collective_timeout",
        _rx(
            r"\b(?:DDP|NCCL|all_?reduce|all_?gather|reduce_scatter|broadcast|barrier|collective"
            r"|training|job)\b.{0,40}(?<!not )(?<!n't )(?<!never )"
            r"\b(?:times? ?out|timed ?out|timeout)\b"
        ),
        "the reporter says the job or a collective timed out",
        counts=_not_negated,
    ),
    ProseSymptom(
        "cuda_device",
        _rx(
            r"\bdevice_count\(\)\s*(?:shows|returns|gives|reports|is|=|==)\s*(?:only )?"
            r"(?:0|1|one|zero)\b"
            r"|\b(?:sees?|detects?|shows?|finds?|lists?) only (?:one|1|a single) (?:GPU|device)\b"
        ),
        "the reporter says CUDA enumerates fewer GPUs than the machine has",
    ),
    ProseSymptom(
        "gpu_imbalance",
        _rx(
            r"\b(?:extra|additional|more|other)\s+(?:\d+\s+)?process\w*\b.{0,40}\bGPU ?#?0\b"
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
            rf"|{_ONE_GPU_DOES_ALL}"
        ),
        "the reporter sees the job's processes or memory on GPU 0 (or GPUs it did not ask for)",
    ),
    ProseSymptom(
        "ddp_usage",
        _rx(
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
        _rx(
            r"\b(?:wrong|incorrect|corrupt\w*|garbage|inconsistent) (?:results?|values?|outputs?"
            r"|data|gradients?|sums?)\b|\bdata corruption\b|\bsilent(?:ly)? corrupt\w*"
            r"|\bresults? (?:are|is|were|was) (?:wrong|incorrect|corrupted|garbage)\b"
            r"|#wrong\b.{0,30}\b[1-9]|\bOut of bounds values\s*:\s*[1-9]"
        ),
        "the reporter says a collective returned wrong values",
        counts=_not_negated,
    ),
    ProseSymptom(
        "slow",
        _rx(
            r"\b(?:slow|low|poor|degraded|reduced)\b.{0,40}"
            r"\b(?:bandwidth|busbw|bus bw|performance|throughput)"
            r"|\b(?:bandwidth|busbw|performance|throughput)\b.{0,40}"
            r"\b(?:is|was|only|drops?)\b.{0,20}\b(?:low|slow|only|\d{1,3} ?%)"
            r"|\bperformance degradation\b"
            r"|\b(?:performance|bandwidth|busbw|throughput|speed)\b.{0,20}"
            r"\b(?:degrad(?:es|ed|ing)|drops?|dropped|decreas(?:es|ed))\b"
            r"|\b(?:slower|longer) than (?:on |with )?(?:one|1|a single|single)\b"
            r"|\bslower and slower\b|\b(?:is|runs?|gets?|getting|became|becomes?) (?:very |much |"
            r"extremely |really |so )?slow(?:er)?\b"
        ),
        "the reporter says the job or a benchmark is slow (a bandwidth problem, no error)",
    ),
    ProseSymptom(
        "hang",
        _rx(
            r"\b(?:hangs?|hanging|hung|freez\w*|frozen|stuck\w*|no progress|deadlock\w*"
            r"|stall(?:s|ed)?|never (?:ends|returns|finishes)|unresponsive"
            r"|(?:stopped|stops|stop|not) responding|takes? forever)\b"
            # NCCL's kernels spin while they wait: the GPUs busy, the job not moving
            r"|\b(?:utili[sz]ation|util|usage)\b.{0,30}\b100 ?%.{0,60}"
            r"\b(?:nothing (?:happens|moves)|no (?:progress|output|logs?)"
            r"|not (?:moving|progressing))"
            # the other node (or ranks) never arrive
            r"|\b(?:node|rank|worker|process)s?\b.{0,20}\bnever (?:joins?|joined|connects?"
            r"|connected|arrives?)\b"
            # Chinese: stuck, hung, no response
            r"|卡住|卡死|挂起|无响应"
            # Japanese: hangs, freezes, (the processing) stops ("止まってしまいます")
            r"|ハング|フリーズ|固ま(?:る|って|った|り)|止ま(?:って|った|ったまま|る)"
        ),
        "the reporter says the job hangs",
        counts=_not_negated,
    ),
    _FAILURE,
)


#: Discriminating sentences: name -> the words. Read by :func:`cues_of`.
#: Work a rank does on its own path (rank_branch): evaluating, saving, running, ...
_WORK = (
    r"(?:evaluat\w*|eval|validat\w*|sav(?:e|es|ed|ing)|checkpoint\w*|run|runs|running|ran"
    r"|call\w*|execut\w*|comput\w*|perform\w*|do|does|done|doing|did|load\w*|writ\w*"
    r"|generat\w*|infer\w*|test|tests|tested|testing|process(?:es|ed|ing))"
)
#: Not right after a negation of having or using it ("I do not use early stopping").
_NOT_USED = _NOT_SAID + r"(?<!not use )(?<!n't use )(?<!not using )(?<!not have )(?<!n't have )"
#: One rank, or some.
_RANKS = (
    r"(?:rank ?0|rank zero|main process|master process|first rank|one rank|some ranks"
    r"|one of the ranks)"
)
#: One rank, or some, alone ("only on rank 0", "on the main process only"); as the subject
#: ("only rank 0 saves") the work must follow at once ("only on rank 0 and I have no idea
#: what to do" names none).
_ONLY_RANK = (
    rf"(?:only (?:on |for |in |by )?(?:the )?{_RANKS}\b"
    r"|(?:on|in) (?:the )?(?:rank ?0|main process|master process) only\b)"
)

CUES: dict[str, LazyPattern[str]] = {
    # the same code works with gloo, or on one GPU: NCCL's intra-node transport is at fault
    "nccl_only": _rx(
        r"\bworks?\b.{0,40}\b(?:with|using|on) (?:the )?`?gloo\b|\bgloo\b.{0,30}\bworks?\b"
        r"|\bworks? (?:fine |well )?(?:with|on) (?:a )?single GPU|single GPU\b.{0,30}\bworks?\b"
        r"|\bworks? (?:fine |well )?(?:with|on) (?:one|1) GPU\b"
    ),
    # the same failure with gloo too: the fault is under both backends (the store, the
    # rendezvous, the network between the hosts), not NCCL's own transports
    "gloo_fails_too": _rx(
        r"\bgloo\b.{0,40}\b(?:(?:the )?same (?:error|result|problem|issue|thing|behaviou?r)"
        r"|also (?:fails?|failed|hangs?|hung|crash\w*|errors?)|fails? too|as well"
        r"|still (?:fails?|failed|hangs?|hung|the same|errors?))"
        r"|\b(?:even|also) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|\bsame (?:error|result|problem|issue|thing) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|\bgloo\W{0,3}(?:\w+\W{0,3})?(?:还是|也)"
    ),
    # the same failure on one GPU alone: no GPU-to-GPU path (P2P, SHM, NVLink) is in use
    "one_gpu_fails_too": _rx(
        r"\b(?:even|also|too)\b.{0,20}\b(?:with|on|using) (?:a |one |only one )?(?:single|one|1)"
        r" ?(?:GPU|card)\b"
        r"|\b(?:errors?|fails?|failed|hangs?|hung|crash\w*|stuck|deadlock\w*|freez\w*)\b.{0,20}"
        r"\b(?:with|on|using) (?:a |only )?(?:single|one|1) ?(?:GPU|card)\b"
        r"|\bsingle[- ]?(?:GPU|card)\b.{0,30}\b(?:errors?|fails?|failed|hangs?|hung|crash\w*"
        r"|stuck|deadlock\w*|freez\w*)\b"
    ),
    # another job (not the job's own ranks) on the same GPUs
    "other_job_same_gpus": _rx(
        r"\b(?:two|another|other|second|several|multiple) (?:\w+ ){0,2}(?:jobs?|trainings?"
        r"|training process(?:es)?|runs|experiments?|programs?)\b.{0,40}\bsame (?:\w+ ){0,3}GPUs?\b"
    ),
    "mig": _rx(r"\bMIG\b|\bMulti-Instance GPU\b"),
    # CUDA's own peer-to-peer samples pass: the GPUs' peer access works outside NCCL
    "p2p_test_passed": _rx(
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest|simpleIPC)\b.{0,60}"
        r"\b(?:pass(?:es|ed)?|works?|worked|succe\w*|fine|ok(?:ay)?)\b"
        r"|" + _NOT_SAID + r"\b(?:successfully|succesfully) (?:tried|ran|run|tested)\b.{0,30}"
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest)\b"
    ),
    "container": _rx(
        r"\b(?:docker|container|kubernetes|k8s|pods?|singularity|apptainer|enroot)\b|容器"
    ),
    # two containers of one machine: NCCL's host identity decides what they share
    "containers_same_host": _rx(
        r"\b(?:multiple|several|two|\d+)\s+(?:docker\s+)?containers?\b.{0,60}"
        r"\bsame (?:machine|node|host|server)\b"
        r"|\bacross (?:the )?(?:docker )?containers? (?:in|on) (?:the )?same (?:machine|node|host)"
    ),
    "wsl": _rx(r"\bWSL ?2?\b|\bWindows Subsystem for Linux\b"),
    "multi_node": _rx(
        # (not "this is not an inter-node job", "we never ran multi-node")
        rf"{_NOT_SAID}\b(?:multi|inter)[- ]?node\b"
        rf"|{_NOT_SAID}\b(?:multiple|several|two|\d+) (?:\w+ )?(?:nodes|hosts|machines)\b"
        r"|\b(?:num[_-]?nodes|nnodes)\s*(?:>=?|=)\s*[2-9]|\bacross (?:the )?nodes\b"
        r"|\b(?:the )?(?:second|both) (?:nodes?|machines?|hosts?)\b"
        # Chinese: multi-machine, several machines, multi-node
        r"|多机|多台(?:机器|服务器)|多节点|多个节点"
        # Japanese: multi-node, several nodes, 2 (to 9) nodes
        r"|マルチノード|複数(?:の)?ノード|[2-9２-９]\s?ノード"
    ),
    # the host's name resolves to the loopback address: peers are told to connect to 127.0.x.1
    "loopback_host": _rx(
        r"\bgethostbyname\b.{0,80}\b127\.0\.[01]\.1\b"
        r"|\b(?:hostname|host name)\b.{0,60}\b(?:resolv\w*|points?|maps?|mapped)\b.{0,20}"
        r"\b(?:to )?(?:127\.0\.[01]\.1|localhost|loopback)\b"
    ),
    # it fails on one node only: "only on this node", "the same job on another node works fine"
    "one_node_only": _rx(
        # "only on this node", "only on node 3" (not "works only with one GPU": a count of GPUs)
        r"\bonly (?:on|with) (?:one|a single|this|that) (?:node|machine|host|server)\b"
        r"|\bonly on (?:node|machine|host|server)[ -]?\w"
        r"|\b(?:same|this) (?:job|code|script|command|program|model|config\w*)\b.{0,30}"
        r"\b(?:on|with) (?:a |an |the )?(?:different|another|other) (?:nodes?|machines?|hosts?"
        r"|servers?)\b.{0,20}\b(?:works?|worked|runs? fine|is fine|passe[sd])"
        r"|\b(?:works?|worked|runs? fine) (?:fine |well )?on (?:all )?(?:the )?(?:other|different)"
        r" (?:nodes|machines|hosts|servers)\b"
        # "3 of the replicas are running in stable state, the 4th keeps restarting": some of
        # them, in the same clause ("we train on 2 nodes, NCCL works on one" says the opposite)
        r"|\b(?:(?:\d{1,3}|two|three|four|five|six|seven) of the|all (?:the )?other|the other"
        r"|the remaining) (?:replicas|nodes|machines|hosts|servers|pods|instances)\b[^,;.\n]{0,30}"
        r"\b(?:stable|fine|healthy|normal\w*|work)"
    ),
    # some nodes fail together while each group works: the nodes are not configured alike
    "node_groups": _rx(
        r"\b(?:nodes?|hosts?)\b[^.]{0,40}\b(?:from|between)\b[^.]{0,40}\bwith\b[^.]{0,60}"
        r"\b(?:results? in|hangs?|fails?)"
        r"|\beach (?:group|pair) works\b|\b(?:groups?|pairs?) of nodes\b.{0,40}\bwork"
    ),
    # something between the hosts filters TCP: a firewall, SELinux, a cloud security group, a
    # Kubernetes network policy, a service-mesh sidecar that proxies the pods' traffic, an
    # endpoint-security product ("no firewall", "the firewall is disabled" rule it out)
    "traffic_filtered": _rx(
        r"(?<!no )(?<!without )\b(?:firewall\w*|firewall-cmd|iptables|ufw|SELinux"
        r"|security[- ]groups?|network[- ]?polic(?:y|ies)|istio|envoy|sidecar\w*|service mesh"
        r"|antivirus|endpoint security)\b"
        r"(?! (?:is|was|are|were) (?:already |also )?(?:disabled|off|down|inactive|stopped"
        r"|turned off|not (?:running|active|enabled)))"
    ),
    # NCCL builds said to differ between the job's nodes or processes
    "nccl_versions_differ": _rx(
        r"\bnccl\b.{0,20}\bversions? (?:mismatch|differ\w*|inconsisten\w*)"
        r"|\b(?:mismatch\w*|different) (?:nccl )?versions? of nccl\b"
        r"|\bdifferent nccl versions?\b"
    ),
    # a verbs call named as failing: RDMA set-up (memory registration, queue pairs)
    "verbs_call": _rx(r"\bibv_(?:reg_mr|modify_qp|create_qp|create_cq|open_device|alloc_pd)\w*"),
    "after_suspend": _rx(r"\b(?:suspend\w*|resum(?:e|ed)|hibernat\w*|woke up)\b"),
    # the failure comes and goes with a library version: a bug or a second library
    "version_said": _rx(
        rf"\b(?:works?|worked|fine|no (?:problem|issue)s?)\b.{{0,60}}\b(?:version |v)?{_NUM}\b"
        rf"|\b{_NUM}\b[^.\n]{{0,40}}\b(?:works?|worked|is fine)\b"
        r"|\bregression\b|\b(?:after|since) (?:an? )?(?:upgrad|updat)\w*"
        r"|\bdowngrad\w*\b.{0,40}\b(?:fix|work|solv)"
    ),
    # the hang comes after training ran: an application or data problem, not set-up
    "late_hang": _rx(
        r"\bend of (?:(?:an?|the|each|first|single|every) )*epoch|\bcheckpoint\w*"
        r"|\bafter (?:\d+|some|many|a few|several) (?:steps|iterations|epochs|batches|hours)"
        r"|\bran (?:clean|fine|well) for\b|\bmid[- ]training\b|\bvalidation\b|\beval(?:uation)?\b"
    ),
    # the ranks run different code: one rank (or some) takes a path the others do not, so they
    # wait in collectives it never calls ("evaluate only on rank 0", "if rank == 0: save",
    # "early stopping", "a different number of batches per rank"); "only on rank 0" names
    # such a path only beside the work done there ("the timeout is reported only on rank 0",
    # "only one rank crashes" say where the failure shows, not what the ranks run)
    "rank_branch": _rx(
        r"\b(?:if|when|while)\s+(?:the\s+)?(?:(?:global|local)[_ ])?rank\s*(?:==|!=|is|=)\s*0\b"
        # (not a print or a log line: rank 0 alone printing calls no collective)
        r"(?!\s{0,3}:\s{0,3}(?:print|log|logger|logging|wandb|tqdm|pbar|writer)\b)"
        rf"|\b{_WORK}\b[^.,;!?\n]{{0,30}}?\b{_ONLY_RANK}"
        rf"|\bonly (?:the )?{_RANKS}\s(?:\w{{1,12}}\s)?{_WORK}\b"
        r"|\bis_(?:local_)?main_process\b|\bget_rank\(\)\s*==\s*0\b"
        rf"|{_NOT_USED}\b(?:uneven|unequal|different (?:number|amount)s? of) (?:data|batches"
        rf"|samples|steps|iterations)\b|{_NOT_USED}\bearly[ -]?stopp\w*"
        # a rank with nothing to work on returns early: "any one rank has all empty validation",
        # "a rank whose shard had no images"; a collective some ranks skip or call more often
        r"|\b(?:a|one|any|some|each) (?:one )?(?:rank|gpu|process|worker|stage)s?\b[^.;\n]{0,30}"
        r"\b(?:has|had|have|gets?|got|holds?|with|whose)\b[^.;\n]{0,20}\b(?:empty|no (?:data"
        r"|samples|labels|targets|images|boxes|tokens|metrics?|batch\w*))\b"
        r"|\b(?:skip\w*|return\w* early)\b[^.;\n]{0,30}"
        r"\b(?:collectives?|all_?reduce|all_?gather\w*|reduce_scatter|broadcast\w*|barrier)\b"
        r"|\b(?:one|1|a) (?:collective|op|operation|call)s? (?:op )?behind\b"
        r"|\bdifferent (?:number|count)s? of (?:collective|all_?reduce|all_?gather|barrier)"
    ),
    # every rank computes on one GPU ("only GPU 0 has load", "all 8 processes run on GPU 0"):
    # the ranks were not given their own device (set_device missing or too late)
    "one_gpu_does_all": _rx(_ONE_GPU_DOES_ALL),
    # the hang is at start-up: connection set-up, not the application
    "startup_hang": _rx(
        r"\b(?:hang|hung|stuck|freez)\w*\b.{0,30}\b(?:at|during|on) "
        r"(?:start ?up|startup|the start|init\w*|communicator init\w*|the first collective)"
        r"|\binit\w*\b.{0,30}\bhangs?\b"
        r"|\b(?:node|rank|worker|process)s?\b.{0,20}\bnever (?:joins?|joined|connects?|connected)\b"
    ),
    # the whole machine freezes, not just the job: hardware or driver
    # ("the machine freezes", "system completely hangs"; not "a machine with 4 GPUs hangs",
    # where the job hangs on the machine)
    "system_freeze": _rx(
        r"\b(?:system|machine|computer|desktop|os)\s+"
        r"(?:(?!(?:training|job|process|program|script|run|model|server)\b)\w+\s+)?"
        r"(?:freez\w*|froze|frozen|hangs?|hung|locks? up|becomes? unresponsive)\b"
    ),
    # only a reboot or a power cycle brings the machine back ("must be rebooted by removing
    # the power"): the driver lost a GPU, not a job that waits
    "power_cycle": _rx(
        r"\bhard[- ]reboot|\bpower[- ]?cycl\w*|\b(?:removing|cutting|pulling) the power\b"
        r"|\b(?:must|had to|have to|has to|needs? to|needed to) (?:be )?reboot\w*"
        r"|\bneeds? a (?:hard )?reboot\b"
    ),
}


#: A line with a cue's words that also says it works is not that cue ("a single GPU works,
#: two GPUs hang"; "it hangs with nccl, gloo is fine").
_WORKS = _rx(r"\b(?:works?|worked|working|fine|ok|okay|normal\w*|no problems?|succeed\w*|runs)\b")
_UNLESS: dict[str, LazyPattern[str]] = {
    "gloo_fails_too": _WORKS,
    "one_gpu_fails_too": _WORKS,
    # the reboot a driver's installation asks for ("had to reboot after updating the driver")
    "power_cycle": _rx(r"\b(?:install\w*|updat\w*|upgrad\w*)\b"),
}


def said(facts: Facts, name: str) -> Cite | None:
    """The first prose line with the words of cue ``name``."""
    unless = _UNLESS.get(name)
    return next(
        (
            h.cite
            for h in facts.prose_search(CUES[name].pattern, FLAGS)
            if unless is None or not unless.search(h.cite.text)
        ),
        None,
    )


def cues_of(facts: Facts) -> dict[str, Cite]:
    """Every cue the reporter's sentences hold, with the first line that holds it."""
    out: dict[str, Cite] = {}
    for name in CUES:
        cite = said(facts, name)
        if cite is not None:
            out[name] = cite
    return out


def prose_symptom(facts: Facts) -> tuple[str, Cite, str] | None:
    """The first class the reporter's words name, its line and why (``None`` when none)."""
    for row in PROSE_SYMPTOMS:
        hits = facts.prose_search(row.pattern.pattern, FLAGS)
        cite = next(
            (
                h.cite
                for h in hits
                if row.said_in(h.cite.text) and harmless_message(h.cite.text) is None
            ),
            None,
        )
        if cite is not None:
            return row.cls, cite, row.why
    return None
