"""What every cue is made of: :class:`Cue`, and the words several cues share (what "it works"
and "it fixed it" look like, the ranks, the collectives, the GPUs' load).

The cues themselves are grouped by what they tell (:mod:`.tried`, :mod:`.place`,
:mod:`.builds`, :mod:`.when`); :mod:`nccl_doctor.differential.cues` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.differential.prose import NOT_SAID, UNDENIED, UPDATE_WORDS, rx
from nccl_doctor.facts.store import asked, unasserted
from nccl_doctor.parse._lazy import LazyPattern


@dataclass(frozen=True, slots=True)
class Cue:
    """The words of one discriminating sentence."""

    pattern: LazyPattern[str]
    #: a line that also holds these words is not this cue ("a single GPU works, two hang")
    unless: LazyPattern[str] | None = None
    #: whether the words count in a yes/no question too: a setting or place named even when
    #: asked about ("does NCCL support MIG?" runs on MIG), not an outcome or a suspicion
    #: ("does it work with gloo?", "could it be the firewall?")
    in_question: bool = False
    #: whether the words report how something came out (it works with gloo, --shm-size fixed
    #: it): then a plan, a guess or advice before them takes them back too ("I will try
    #: --shm-size and see if it works", "another port might work", "someone suggested ...")
    outcome: bool = False

    def said_in(self, text: str) -> bool:
        """Whether a line that holds the words says it (no ``unless`` words beside them)."""
        return self.unless is None or not self.unless.search(text)

    def says(self, text: str, match: re.Match[str]) -> bool:
        """Whether ``match``, the cue's words in ``text``, says it: not beside its ``unless``
        words, nor only asked about."""
        if not self.said_in(text):
            return False
        if self.outcome:
            return not unasserted(text, match)
        return self.in_question or not asked(text, match)


def cue(
    pattern: str,
    unless: LazyPattern[str] | None = None,
    *,
    in_question: bool = False,
    outcome: bool = False,
) -> Cue:
    return Cue(rx(pattern), unless, in_question, outcome)


def outcome(pattern: str, unless: LazyPattern[str] | None = None) -> Cue:
    """A cue that reports how something came out (see :attr:`Cue.outcome`)."""
    return cue(pattern, unless, outcome=True)


#: A line with a cue's words that also says it works is not that cue ("a single GPU works,
#: two GPUs hang"; "it hangs with nccl, gloo is fine").
WORK_WORDS = r"\b(?:works?|worked|working|fine|ok|okay|normal\w*|no problems?|succeed\w*|runs)\b"
WORKS = rx(WORK_WORDS)
#: The same, where a denial right before the word takes it back ("it does not work with gloo
#: either" says no part works).
WORKS_UNDENIED = rx(UNDENIED + WORK_WORDS)
#: The reboot a driver's installation asks for ("had to reboot after updating the driver").
UPDATE = rx(UPDATE_WORDS)

#: Work a rank does on its own path (rank_branch): evaluating, saving, running, ...
WORK = (
    r"(?:evaluat\w*|eval|validat\w*|sav(?:e|es|ed|ing)|checkpoint\w*|run|runs|running|ran"
    r"|call\w*|execut\w*|comput\w*|perform\w*|do|does|done|doing|did|load\w*|writ\w*"
    r"|generat\w*|infer\w*|test|tests|tested|testing|process(?:es|ed|ing))"
)
#: A collective by name, as people write it ("all-to-all", "allreduce", "all_gather").
COLLECTIVE = (
    r"(?:all[-_ ]?to[-_ ]?all\w*|all[-_ ]?reduce|all[-_ ]?gather\w*|reduce[-_ ]?scatter"
    r"|broadcast|barrier)"
)
#: Not right after a negation of having or using it ("I do not use early stopping").
NOT_USED = NOT_SAID + r"(?<!not have )(?<!n't have )"
#: "works" not denied right before it ("does not work", "doesn't work", "never worked").
WORKS_SAID = UNDENIED + r"(?<!no longer )\bworks?"
#: One rank, or some.
RANKS = (
    r"(?:rank ?0|rank zero|main process|master process|first rank|one rank|some ranks"
    r"|one of the ranks|process ?0|main rank)"
)
#: One rank, or some, alone ("only on rank 0", "on the main process only"); as the subject
#: ("only rank 0 saves") the work must follow at once ("only on rank 0 and I have no idea
#: what to do" names none).
ONLY_RANK = (
    rf"(?:only (?:on |for |in |by )?(?:the )?{RANKS}\b"
    r"|(?:on|in) (?:the )?(?:rank ?0|main process|master process) only\b)"
)

#: Setting one of the program's own options: a lower-case name (``filter_empty_gt``,
#: ``packing``) given a value.
TOGGLE = (
    r"\b(?:set|sets|setting|use|using|with|disabl\w*|enabl\w*|remov\w*|chang\w*|pass\w*)\s+"
    # (not how many GPUs, nodes, ranks or workers run, nor where they meet)
    r"`?(?![a-z0-9_.]{0,40}?(?:parallel|gpu|device|node|nproc|world|rank|worker|cuda|nccl"
    r"|gloo|port|backend|master|addr))"
    r"(?-i:[a-z_][a-z0-9_.]{2,40})`?\s?(?:==?|:)\s?[`'\"]?\w"
)
#: What the setting decides: the job hangs, or works.
OUTCOME = r"\b(?:hangs?|hung|stuck|freez\w*|waiting|deadlock\w*|works?|worked|fine|ok|okay)\b"

#: The GPUs' load as nvidia-smi shows it ("GPU-Util", "gpu utilization", "the cards' usage",
#: Chinese 利用率/占用率); not the CPU's, the memory's, a disk's or the network's, and a gap
#: beside it crosses no word of theirs.
GPU_LOAD = (
    r"(?<!memory )(?<!mem )(?<!cpu )(?<!disk )(?<!swap )(?<!ram )(?<!network )"
    r"(?:\b(?:gpu[- ]?util\w*|volatile[- ]util\w*|utili[sz]ation|utility|util|usage|load)(?![a-z])"
    r"|利用率|占用率)"
)
NO_CPU = r"(?:(?!cpu|memory|disk|swap|\bram\b|network)[^.;\n])"
#: The waiting GPUs read full (90-100%).
FULL = r"(?<![\d.])(?:100|9\d)(?:\.\d+)? ?%"
#: The waiting GPUs read empty (0%).
EMPTY = r"(?<![\d.])0(?:\.0+)? ?%"


#: Words that say a change made the job work.
FIXED = (
    r"\b(?:fix(?:es|ed)?|solv(?:es|ed)|resolv(?:es|ed)|works?|worked|did the trick"
    # "with --ipc=host it runs", "the hang went away"
    r"|it (?:runs|ran|starts|started|trains|passes)|(?:go|goes|went) away)\b"
)
#: Words that deny it ("it still doesn't work", "did not fix it").
NOT_FIXED = rx(r"\b(?:still|not|never|no longer)\b|n't\b")
#: A launcher that starts one worker per GPU itself, and torch.multiprocessing's spawn.
LAUNCHER = r"(?:torchrun|torch\.distributed\.(?:run|launch)|accelerate launch|deepspeed)"
#: What starts workers of its own: mp.spawn, or an inference engine made with tensor
#: parallelism (vLLM's ``LLM(..., tensor_parallel_size=4)``, SGLang's ``Engine(...,
#: tp_size=2)``), a worker per GPU (not a training framework's tensor-parallel size, whose
#: ranks the launcher starts).
SPAWN = (
    r"(?:(?:mp|multiprocessing)\.spawn\b"
    r"|\b(?:LLM\([^)\n]{0,200}?\btensor_parallel_size|Engine\([^)\n]{0,200}?\btp_size)"
    r"\s?=\s?[2-9])"
)


def load_reads(value: str) -> str:
    """The GPUs' load said to read ``value`` (:data:`FULL`, :data:`EMPTY`), the number after
    the words or before them."""
    return rf"{GPU_LOAD}{NO_CPU}{{0,40}}?{value}|{value}{NO_CPU}{{0,30}}?{GPU_LOAD}"
