"""The prose vocabulary: how a symptom row is written, and the phrases several rows and the
cues share (a denial before a word, an update, a board's NVLink unused...)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from nccl_doctor.facts.told import FLAGS, denied, resolved
from nccl_doctor.parse._lazy import LazyPattern


def rx(pattern: str) -> LazyPattern[str]:
    """A prose pattern (:data:`~nccl_doctor.facts.told.FLAGS`), compiled when first used."""
    # compiled when a prose line may hold its words: a log of machine output holds none
    return LazyPattern(pattern, FLAGS)


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
        """Whether ``text`` says what the row names: one match that counts and that its
        sentence does not say is over (:func:`resolved`), and no ``unless``."""
        if self.unless is not None and self.unless.search(text):
            return False
        return any(
            (self.counts is None or self.counts(text, m)) and not resolved(text, m)
            for m in self.pattern.finditer(text)
        )


NUM = r"\d{1,3}(?:\.\d{1,3}){1,2}"
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


def says_failure(text: str, match: re.Match[str]) -> bool:
    """Whether one failure word of a sentence reports a failure (not none, not a measure)."""
    before = text[max(0, match.start() - 40) : match.start()]
    word = match.group().lower()
    if denied(text, match.start()) or word in _NOT_EVENTS:
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
    # a GPU as hot as its slowdown threshold (85-119 C: where data-centre and consumer boards
    # start to hold their clocks down), in one clause with the GPU or its temperature
    r"|\b(?:gpus?|cards?|temp\w*)\b[^.;\n]{0,40}?(?<![\d.])(?:8[5-9]|9\d|1[01]\d) ?"
    r"(?:°\s?C|C|degrees)(?![a-z])"
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


#: The ranks built different models, in DDP's words or the reporter's ("DDP expects same model
#: across all ranks", "params[0] sizes don't match those in process 0", "a parameter count
#: mismatch", "rank 0 has one more param", Chinese "params[0] de size he process 0 bu yi
#: zhi"): a symptom of DDP's usage (the ddp_usage row) and words of the model_differs cue.
PARAMS_DIFFER = (
    r"\bexpects? (?:the )?same model across (?:all )?ranks\b"
    r"|\bparams?\[\d{1,4}\][^.;\n]{0,60}\b(?:sizes?|shapes?)\b"
    r"|\bparam(?:eter)?s?\b[^.;\n]{0,20}\b(?:count|number|sizes?|shapes?)s?\b[^.;\n]{0,20}"
    r"(?:\bmismatch\w*|\bdiffer\w*|\b(?:do ?n[o']t|does ?n[o']t|not) match)"
    r"|\bone (?:more|fewer|less) param(?:eter)?s?\b"
    # (not "I tried different parameters for the backend")
    r"|\bdifferent number of param(?:eter)?s\b"
    r"|\bdifferent param(?:eter)?s (?:on|across|between|per|in) (?:the |each |every |other )?"
    r"(?:ranks?|process(?:es)?|GPUs?|workers?)\b"
    r"|(?:参数|params?\[\d{1,4}\])[^\u3002\uff1b\n]{0,30}不一致"
)
