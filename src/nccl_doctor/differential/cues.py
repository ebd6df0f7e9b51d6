"""The reporter's words that tell causes apart: what they tried, where and when it fails.

"Works with NCCL_P2P_DISABLE=1", "works with gloo", "only on node 3", "after
a driver update", "fails on a single GPU too": an expert's first questions
are these, and their answers weigh one cause against another. :data:`CUES`
holds the sentences, each with the reason it discriminates;
:mod:`.context` reads them once (:func:`cues_of`) and :mod:`.shifts` says
how each moves the weights. Written with :mod:`.prose`'s vocabulary, and,
like it, read on prose lines only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.differential.prose import (
    FLAGS,
    GPU_THROTTLED,
    NO_GPU_SEEN,
    NOT_SAID,
    NUM,
    NVLINK_UNUSED,
    ONE_GPU_DOES_ALL,
    UPDATE_WORDS,
    rx,
)
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.store import Facts, asked
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.signs.launch import OTHER_PORT_SAME, SAME_PORT_NAMED


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

    def said_in(self, text: str) -> bool:
        """Whether a line that holds the words says it (no ``unless`` words beside them)."""
        return self.unless is None or not self.unless.search(text)

    def says(self, text: str, match: re.Match[str]) -> bool:
        """Whether ``match``, the cue's words in ``text``, says it: not beside its ``unless``
        words, nor only asked about."""
        return self.said_in(text) and (self.in_question or not asked(text, match))


def _cue(pattern: str, unless: LazyPattern[str] | None = None, *, in_question: bool = False) -> Cue:
    return Cue(rx(pattern), unless, in_question)


#: A line with a cue's words that also says it works is not that cue ("a single GPU works,
#: two GPUs hang"; "it hangs with nccl, gloo is fine").
_WORKS = rx(r"\b(?:works?|worked|working|fine|ok|okay|normal\w*|no problems?|succeed\w*|runs)\b")
#: The same, where a denial right before the word takes it back ("it does not work with gloo
#: either" says no part works).
_WORKS_UNDENIED = rx(
    r"(?<!not )(?<!n't )(?<!never )"
    r"\b(?:works?|worked|working|fine|ok|okay|normal\w*|no problems?|succeed\w*|runs)\b"
)
#: The reboot a driver's installation asks for ("had to reboot after updating the driver").
_UPDATE = rx(UPDATE_WORDS)

#: Work a rank does on its own path (rank_branch): evaluating, saving, running, ...
_WORK = (
    r"(?:evaluat\w*|eval|validat\w*|sav(?:e|es|ed|ing)|checkpoint\w*|run|runs|running|ran"
    r"|call\w*|execut\w*|comput\w*|perform\w*|do|does|done|doing|did|load\w*|writ\w*"
    r"|generat\w*|infer\w*|test|tests|tested|testing|process(?:es|ed|ing))"
)
#: A collective by name, as people write it ("all-to-all", "allreduce", "all_gather").
_COLLECTIVE = (
    r"(?:all[-_ ]?to[-_ ]?all\w*|all[-_ ]?reduce|all[-_ ]?gather\w*|reduce[-_ ]?scatter"
    r"|broadcast|barrier)"
)
#: Not right after a negation of having or using it ("I do not use early stopping").
_NOT_USED = NOT_SAID + r"(?<!not use )(?<!n't use )(?<!not using )(?<!not have )(?<!n't have )"
#: "works" not denied right before it ("does not work", "doesn't work", "never worked").
_WORKS_SAID = r"(?<!not )(?<!n't )(?<!never )(?<!no longer )\bworks?"
#: One rank, or some.
_RANKS = (
    r"(?:rank ?0|rank zero|main process|master process|first rank|one rank|some ranks"
    r"|one of the ranks|process ?0|main rank)"
)
#: One rank, or some, alone ("only on rank 0", "on the main process only"); as the subject
#: ("only rank 0 saves") the work must follow at once ("only on rank 0 and I have no idea
#: what to do" names none).
_ONLY_RANK = (
    rf"(?:only (?:on |for |in |by )?(?:the )?{_RANKS}\b"
    r"|(?:on|in) (?:the )?(?:rank ?0|main process|master process) only\b)"
)

#: Setting one of the program's own options: a lower-case name (``filter_empty_gt``,
#: ``packing``) given a value.
_TOGGLE = (
    r"\b(?:set|sets|setting|use|using|with|disabl\w*|enabl\w*|remov\w*|chang\w*|pass\w*)\s+"
    # (not how many GPUs, nodes, ranks or workers run, nor where they meet)
    r"`?(?![a-z0-9_.]{0,40}?(?:parallel|gpu|device|node|nproc|world|rank|worker|cuda|nccl"
    r"|gloo|port|backend|master|addr))"
    r"(?-i:[a-z_][a-z0-9_.]{2,40})`?\s?(?:==?|:)\s?[`'\"]?\w"
)
#: What the setting decides: the job hangs, or works.
_OUTCOME = r"\b(?:hangs?|hung|stuck|freez\w*|waiting|deadlock\w*|works?|worked|fine|ok|okay)\b"

#: The GPUs' load as nvidia-smi shows it ("GPU-Util", "gpu utilization", "the cards' usage",
#: Chinese 利用率/占用率); not the CPU's, the memory's, a disk's or the network's, and a gap
#: beside it crosses no word of theirs.
_GPU_LOAD = (
    r"(?<!memory )(?<!mem )(?<!cpu )(?<!disk )(?<!swap )(?<!ram )(?<!network )"
    r"(?:\b(?:gpu[- ]?util\w*|volatile[- ]util\w*|utili[sz]ation|utility|util|usage|load)(?![a-z])"
    r"|利用率|占用率)"
)
_NO_CPU = r"(?:(?!cpu|memory|disk|swap|\bram\b|network)[^.;\n])"
#: The waiting GPUs read full (90-100%).
_FULL = r"(?<![\d.])(?:100|9\d)(?:\.\d+)? ?%"
#: The waiting GPUs read empty (0%).
_EMPTY = r"(?<![\d.])0(?:\.0+)? ?%"


#: Words that say a change made the job work.
_FIXED = (
    r"\b(?:fix(?:es|ed)?|solv(?:es|ed)|resolv(?:es|ed)|works?|worked|did the trick"
    # "with --ipc=host it runs", "the hang went away"
    r"|it (?:runs|ran|starts|started|trains|passes)|(?:go|goes|went) away)\b"
)
#: Words that deny it ("it still doesn't work", "did not fix it").
_NOT_FIXED = rx(r"\b(?:still|not|never|no longer)\b|n't\b")
#: A launcher that starts one worker per GPU itself, and torch.multiprocessing's spawn.
_LAUNCHER = r"(?:torchrun|torch\.distributed\.(?:run|launch)|accelerate launch|deepspeed)"
_SPAWN = r"(?:mp|multiprocessing)\.spawn\b"


def _load_reads(value: str) -> str:
    """The GPUs' load said to read ``value`` (:data:`_FULL`, :data:`_EMPTY`), the number after
    the words or before them."""
    return rf"{_GPU_LOAD}{_NO_CPU}{{0,40}}?{value}|{value}{_NO_CPU}{{0,30}}?{_GPU_LOAD}"


#: Discriminating sentences: name -> the words. Read by :func:`cues_of`. A gap between a
#: cue's words stays inside one sentence (a prose line can hold a paragraph).
CUES: dict[str, Cue] = {
    # the same code works with gloo, or on one GPU: NCCL's intra-node transport is at fault
    # (a "works" denied right before it is none: "it does not work with gloo either")
    "nccl_only": _cue(
        rf"{_WORKS_SAID}\b[^.!?;\n]{{0,40}}\b(?:with|using|on) (?:the )?`?gloo\b"
        rf"|\bgloo\b[^.!?;\n]{{0,30}}{_WORKS_SAID}\b"
        rf"|{_WORKS_SAID} (?:fine |well )?(?:with|on) (?:a )?single GPU"
        rf"|single GPU\b[^.!?;\n]{{0,30}}{_WORKS_SAID}\b"
        rf"|{_WORKS_SAID} (?:fine |well )?(?:with|on) (?:one|1) GPU\b"
    ),
    # the same failure with gloo too: the fault is under both backends (the store, the
    # rendezvous, the network between the hosts), not NCCL's own transports
    "gloo_fails_too": _cue(
        r"\bgloo\b[^.!?;\n]{0,40}\b(?:(?:the )?same (?:error|result|problem|issue|thing|behaviou?r)"
        r"|also (?:fails?|failed|hangs?|hung|crash\w*|errors?)|fails? too|as well"
        r"|still (?:fails?|failed|hangs?|hung|the same|errors?))"
        r"|\b(?:even|also) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|(?:\bnot|n't|\bnever) work\w* (?:with|using|on) (?:the )?`?gloo\b"
        r"|\bsame (?:error|result|problem|issue|thing) (?:with|using|on|for) (?:the )?`?gloo\b"
        r"|\bgloo\W{0,3}(?:\w+\W{0,3})?(?:还是|也)",
        unless=_WORKS_UNDENIED,
    ),
    # the same failure on one GPU alone: no GPU-to-GPU path (P2P, SHM, NVLink) is in use
    "one_gpu_fails_too": _cue(
        r"\b(?:even|also|too)\b[^.!?;\n]{0,20}\b(?:with|on|using) (?:a |one |only one )?"
        r"(?:single|one|1) ?(?:GPU|card)\b"
        r"|\b(?:errors?|fails?|failed|hangs?|hung|crash\w*|stuck|deadlock\w*|freez\w*)\b"
        r"[^.!?;\n]{0,20}\b(?:with|on|using) (?:a |only )?(?:single|one|1) ?(?:GPU|card)\b"
        r"|\bsingle[- ]?(?:GPU|card)\b[^.!?;\n]{0,30}\b(?:errors?|fails?|failed|hangs?|hung"
        r"|crash\w*|stuck|deadlock\w*|freez\w*)\b",
        unless=_WORKS,
    ),
    # another job (not the job's own ranks) on the same GPUs
    "other_job_same_gpus": _cue(
        r"\b(?:two|another|other|second|several|multiple) (?:\w+ ){0,2}(?:jobs?|trainings?"
        r"|training process(?:es)?|runs|experiments?|programs?)\b[^.!?;\n]{0,40}"
        r"\bsame (?:\w+ ){0,3}GPUs?\b"
        # a process, model or service not the job's ("another process uses the same GPU"):
        # two of the job's own processes on one GPU are nccl.duplicate_gpu, so only "another"
        rf"|{NOT_SAID}\b(?:another|other|a different) (?:\w+ ){{0,2}}"
        r"(?:process(?:es)?|models?|services?|users?)\b[^.!?;\n]{0,40}"
        r"\b(?:same|one of (?:the|its|my|our)) (?:\w+ ){0,3}GPUs?\b"
    ),
    # something else already holds the GPUs: another user's job, processes an earlier run left
    # behind, a display server ("another user's job was already running on GPUs 2 and 3",
    # "zombie processes from a killed run still hold memory on every GPU", "Xorg runs on the
    # same GPUs"); not once they are gone and it still fails
    "gpu_held_by_other": _cue(
        rf"{NOT_SAID}\b(?:another|other|a different) (?:user|job|person|team)(?:'s|s'?)?\b"
        r"[^.!?;\n]{0,40}\b(?:already|still) (?:running|using|occupying|on|holds?|holding)\b"
        r"[^.!?;\n]{0,20}\b(?:GPUs?|cards?)\b"
        rf"|{NOT_SAID}\b(?:zombie|leftover|left-over|stale|orphan\w*|defunct|dangling) "
        r"(?:\w+ ){0,2}process(?:es)?\b[^.!?;\n]{0,60}\b(?:GPUs?|memory|cards?)\b"
        r"|\b(?:Xorg|X server|X11|gnome-shell|display manager)\b[^.!?;\n]{0,40}"
        r"\b(?:runs|running|on) (?:on )?(?:the )?(?:same |compute |training )?GPUs?\b",
        unless=rx(r"\bstill (?:fails?|failed|hangs?|crash\w*|the same)|\beven after\b"),
    ),
    # the reporter says the port is taken ("port conflicts", "the port is already in use",
    # Chinese "端口被占用"): the bind of the store or rendezvous port failed (EADDRINUSE)
    "port_taken": _cue(
        rf"{NOT_SAID}\bports? (?:conflict|collision|clash)\w*"
        rf"|{NOT_SAID}\b(?:port|address)\b(?:(?!\bnot\b|n't\b|\bnever\b)[^.\n]){{0,30}}"
        r"\b(?:is |are |was |were |being )?"
        r"(?:already (?:in use|used|taken|occupied)|in use|taken|occupied)\b"
        r"|端口(?:被)?(?:占用|冲突)|端口已(?:被)?(?:占用|使用)"
    ),
    # two jobs launched on one machine ("two experiments in one docker image", "two copies of
    # the code at the same time"): both launchers take the same default port (not the same
    # GPUs: other_job_same_gpus)
    "jobs_share_host": _cue(
        r"\b(?:two|2|another|second|multiple|several) (?:\w+ ){0,2}(?:jobs?|trainings?"
        r"|experiments?|copies|runs|instances|programs|scripts|tasks)\b[^.\n]{0,60}"
        r"\b(?:(?:on|in) (?:the )?(?:same|one) (?:machine|node|host|server|docker|container|image)"
        r"|at the same time|simultaneously|in parallel|concurrently)\b",
        unless=rx(r"\bsame (?:\w+ ){0,3}GPUs?\b"),
    ),
    # MIG in use ("using MIG instances", "NCCL with MIG", a MIG-<uuid> device), not ruled out
    # ("not MIG parted", "MIG disabled")
    "mig": _cue(
        rf"{NOT_SAID}\bMIG\b(?! (?:is |was )?(?:disabled|off|not enabled))|\bMulti-Instance GPU\b"
        r"|\bMIG-[0-9a-f]{8}-",
        in_question=True,
    ),
    # CUDA's own peer-to-peer samples pass: the GPUs' peer access works outside NCCL
    "p2p_test_passed": _cue(
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest|simpleIPC)\b[^.!?;\n]{0,60}"
        r"\b(?:pass(?:es|ed)?|works?|worked|succe\w*|fine|ok(?:ay)?)\b"
        r"|" + NOT_SAID + r"\b(?:successfully|succesfully) (?:tried|ran|run|tested)\b"
        r"[^.!?;\n]{0,30}"
        r"\b(?:simpleP2P|p2pBandwidthLatencyTest)\b"
    ),
    # (not denied: "bare metal, no container", "not inside docker", "outside containers")
    "container": _cue(
        rf"{NOT_SAID}(?<!not in )(?<!not inside )(?<!not in a )(?<!outside )(?<!outside of )"
        r"(?<!not using )(?<!not use )(?<!not a )"
        r"\b(?:docker|containers?|kubernetes|k8s|pods?|singularity|apptainer|enroot)\b|容器",
        in_question=True,
    ),
    # nvidia-smi works where CUDA does not: NVML needs only the control and GPU device nodes
    # and the kernel module that matches its library, CUDA also the unified-memory node
    # (/dev/nvidia-uvm) ("nvidia-smi works fine", "nvidia-smi ok", "nvidia-smi shows all 8
    # GPUs"); not an account of before ("nvidia-smi worked until I updated", "used to work")
    "smi_works": _cue(
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
    "no_gpu_seen": _cue(NO_GPU_SEEN),
    # the containers are Kubernetes pods: each pod's address is routable across the cluster
    # (its network plugin gives a flat network), unlike a Docker bridge address
    "kubernetes": _cue(
        rf"{NOT_SAID}\b(?:kubernetes|k8s|kubectl|kubeflow|PyTorchJob|kuberay|jobset|volcano|GKE"
        r"|EKS|AKS)\b"
        rf"|{NOT_SAID}\bpods?\b",
        in_question=True,
    ),
    # two containers of one machine: NCCL's host identity decides what they share
    "containers_same_host": _cue(
        r"\b(?:multiple|several|two|\d+)\s+(?:docker\s+)?containers?\b[^.!?;\n]{0,60}"
        r"\bsame (?:machine|node|host|server)\b"
        r"|\bacross (?:the )?(?:docker )?containers? (?:in|on) (?:the )?same (?:machine|node|host)",
        in_question=True,
    ),
    "wsl": _cue(
        rf"{NOT_SAID}\bWSL ?2?\b|{NOT_SAID}\bWindows Subsystem for Linux\b", in_question=True
    ),
    "multi_node": _cue(
        # (not "this is not an inter-node job", "we never ran multi-node")
        rf"{NOT_SAID}\b(?:multi|inter)[- ]?node\b"
        rf"|{NOT_SAID}\b(?:multiple|several|two|\d+) (?:\w+ )?(?:nodes|hosts|machines)\b"
        rf"|{NOT_SAID}\bmore than (?:one|1) (?:node|host|machine|server)\b"
        rf"|{NOT_SAID}\bmulti[- ]?(?:machine|server|host)\b"
        r"|\b(?:two|three|four|eight|[2-9]|\d{2,4})-(?:node|machine|host)\b"
        r"|\bacross (?:two|several|multiple|\d+) (?:servers|machines|hosts|nodes)\b"
        r"|\b(?:on|with) (?:a )?single (?:node|machine)\b[^.!?;\n]{0,30}\bbut\b[^.!?;\n]{0,30}"
        r"\b(?:two|several|multiple|more|\d+)\b"
        r"|\b(?:num[_-]?nodes|nnodes)\s*(?:>=?|=)\s*[2-9]|\bacross (?:the )?nodes\b"
        r"|\b(?:the )?(?:second|both) (?:nodes?|machines?|hosts?)\b"
        # Chinese: multi-machine, several machines, multi-node
        r"|多机|多台(?:机器|服务器)|多节点|多个节点"
        # Japanese: multi-node, several nodes, 2 (to 9) nodes
        r"|マルチノード|複数(?:の)?ノード|[2-9２-９]\s?ノード",
        in_question=True,
    ),
    # the host's name resolves to the loopback address: peers are told to connect to 127.0.x.1
    "loopback_host": _cue(
        # (a call's line keeps its dots: gethostbyname(socket.gethostname()) returned 127.0.1.1)
        r"\bgethostbyname\b.{0,80}\b127\.0\.[01]\.1\b"
        r"|\b(?:hostname|host name)\b[^.!?;\n]{0,60}\b(?:resolv\w*|points?|maps?|mapped)\b"
        r"[^.!?;\n]{0,20}"
        r"\b(?:to )?(?:127\.0\.[01]\.1|localhost|loopback)\b"
    ),
    # it fails on one node only: "only on this node", "the same job on another node works fine"
    "one_node_only": _cue(
        # "only on this node", "only on node 3" (not "works only with one GPU": a count of GPUs)
        r"\bonly (?:on|with) (?:one|a single|this|that) (?:node|machine|host|server)\b"
        r"|\bonly on (?:node|machine|host|server)[ -]?\w"
        r"|\bonly (?:fails|happens|occurs|hangs|crashes) on (?:node|machine|host|server)[ -]?\w"
        r"|\bonly (?:one|a single) (?:node|machine|host|server) (?:has|shows|sees|hits)\b"
        r"|\b(?:same|this) (?:job|code|script|command|program|model|config\w*)\b[^.!?;\n]{0,30}"
        r"\b(?:on|with) (?:a |an |the )?(?:different|another|other) (?:nodes?|machines?|hosts?"
        r"|servers?)\b[^.!?;\n]{0,20}\b(?:works?|worked|runs? fine|is fine|passe[sd])"
        r"|\b(?:works?|worked|runs? fine) (?:fine |well )?on (?:all )?(?:the )?(?:other|different)"
        r" (?:nodes|machines|hosts|servers)\b"
        # "3 of the replicas are running in stable state, the 4th keeps restarting": some of
        # them, in the same clause ("we train on 2 nodes, NCCL works on one" says the opposite)
        r"|\b(?:(?:\d{1,3}|two|three|four|five|six|seven) of the|all (?:the )?other|the other"
        r"|the remaining) (?:replicas|nodes|machines|hosts|servers|pods|instances)\b[^,;.\n]{0,30}"
        r"\b(?:stable|fine|healthy|normal\w*|work)"
    ),
    # some nodes fail together while each group works: the nodes are not configured alike
    "node_groups": _cue(
        r"\b(?:nodes?|hosts?)\b[^.]{0,40}\b(?:from|between)\b[^.]{0,40}\bwith\b[^.]{0,60}"
        r"\b(?:results? in|hangs?|fails?)"
        r"|\beach (?:group|pair) works\b|\b(?:groups?|pairs?) of nodes\b[^.!?;\n]{0,40}\bwork"
    ),
    # something between the hosts filters TCP: a firewall, SELinux, a cloud security group, a
    # Kubernetes network policy, a service-mesh sidecar that proxies the pods' traffic, an
    # endpoint-security product ("no firewall", "the firewall is disabled" rule it out)
    "traffic_filtered": _cue(
        rf"{NOT_SAID}\b(?:firewall\w*|firewall-cmd|iptables|ufw|SELinux"
        r"|security[- ]groups?|network[- ]?polic(?:y|ies)|istio|envoy|sidecar\w*|service mesh"
        r"|antivirus|endpoint security)\b"
        r"(?! (?:is|was|are|were) (?:already |also )?(?:disabled|off|down|inactive|stopped"
        r"|turned off|not (?:running|active|enabled)))"
    ),
    # NCCL builds said to differ between the job's nodes or processes
    "nccl_versions_differ": _cue(
        r"\bnccl\b[^.!?;\n]{0,20}\bversions? (?:mismatch|differ\w*|inconsisten\w*)"
        r"|\b(?:mismatch\w*|different) (?:nccl )?versions? of nccl\b"
        r"|\bdifferent nccl versions?\b"
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
    "inherited_setting": _cue(
        r"\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}\b[^.;\n]{0,80}(?:\.bashrc|\.profile|\.bash_profile"
        r"|nccl\.conf|\b(?:from|for) (?:an? |the |our |my )?(?:old|older|previous|other|another"
        r"|different) (?:cluster|machine|node|server|system|setup|image|environment)\b"
        r"|\bleft ?over\b)"
        r"|(?:\.bashrc|\.bash_profile|nccl\.conf)\b[^.;\n]{0,60}\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}"
        # set by someone else ("someone exported NCCL_IB_DISABLE=1 in the job script")
        r"|\b(?:someone|somebody|a colleague|the admins?|the previous (?:user|owner)"
        r"|another user)\b[^.;\n]{0,30}\b(?:set|exported|added|put)\b[^.;\n]{0,30}"
        r"\b(?:TORCH_)?NCCL_[A-Z0-9_]{2,40}"
    ),
    # the RDMA adapters may pin only a little memory: ulimit -l (memlock) below what the queue
    # pairs and registered buffers need ("ulimit -l is 64", "max locked memory 65536")
    "memlock_small": _cue(
        # (not "--ulimit memlock=-1": -1 is unlimited)
        # (not a number denied: "ulimit -l is not 64, it is unlimited")
        r"\bulimit -l\b[^.;\n\d-]{0,20}(?<!not )\b\d{1,6}\b(?! ?(?:G|GB))"
        r"|\bmemlock\b[^.;\n\d-]{0,30}(?<!not )\b\d{1,6}\b(?! ?(?:G|GB))"
        r"|\bmax locked memory\s+\(kbytes, -l\)\s+\d{1,6}\b",
        in_question=True,
    ),
    # the NVSwitch fabric's manager named: it must run, at the driver's own version, before
    # CUDA starts on an HGX board (802, "system not yet initialized")
    "fabric_manager_said": _cue(
        rf"{NOT_SAID}\b(?:nvidia-)?fabric ?manager\b|{NOT_SAID}\bnv-fabricmanager\b",
        # (not one said to run: "is running fine", "State: Completed, Status: Success"; "is not
        # running", "inactive (dead)" is the failure itself)
        unless=rx(r"(?<!not )(?<!n't )(?<!never )\b(?:running|active)\b|\bStatus: Success\b"),
    ),
    # the job works on the host's network, not the pods' or the containers' own ("with
    # hostNetwork: true it works", "--network=host fixed it"): the overlay's addresses or
    # interfaces are what NCCL and the store could not use
    "host_network_fixes": _cue(
        r"\b(?:hostNetwork:? ?true|--net(?:work)?[= ]host|host network(?:ing)?)\b[^.;\n]{0,40}"
        r"\b(?:works?|worked|fix\w*|solv\w*|resolv\w*|fine)\b"
        r"|\b(?:works?|worked|fix\w*|solv\w*|fine)\b[^.;\n]{0,40}"
        r"\b(?:hostNetwork:? ?true|--net(?:work)?[= ]host|host network(?:ing)?)",
        unless=_NOT_FIXED,
    ),
    # not every node joined: the others wait in the rendezvous ("only one of the two nodes
    # started", "waits at rendezvous forever")
    "rendezvous_wait": _cue(
        r"\b(?:wait\w*|stuck|hangs?|hung|blocked)\b[^.;\n]{0,15}\b(?:at|in|on|for) (?:the )?"
        r"rendezvous\b"
        r"|\bonly (?:one|\d+) of the (?:two |\d+ )?(?:nodes|machines|hosts)\b[^.;\n]{0,20}"
        r"\b(?:started|joined|came up|is running|connected)\b"
    ),
    # one node's software changed and the other's not ("after upgrading PyTorch on only one
    # of the two nodes"): the nodes now run different builds
    "one_node_changed": _cue(
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
    "other_nccl_loaded": _cue(
        rf"{NOT_SAID}\bLD_PRELOAD\w*\b[^\n]{{0,80}}\bnccl|\bsystem(?:'s)? (?:NCCL|libnccl)\b"
    ),
    # two of the job's own processes on one GPU: one communicator cannot hold two ranks on a
    # device ("colocated on the same GPU", "a duplicated GPU", "two processes per card", more
    # processes than GPUs, the trainer defaulting to cuda:0 that a server already uses);
    # another user's or job's process there is gpu.contention (other_job_same_gpus), and
    # "the two processes run on the same GPU" alone is the ranks' mapping (prose's
    # gpu_imbalance: set_device missing, cuda.device_visibility)
    "ranks_share_gpu": _cue(
        r"\bcolocat\w*\b[^.;\n]{0,60}\b(?:same|one) (?:GPU|card|device)\b"
        r"|\b(?:same|one) (?:GPU|card|device)\b[^.;\n]{0,60}\bcolocat\w*"
        r"|\bduplicated? (?:GPUs?|cards?|devices?)\b"
        r"|\bmore (?:processes|ranks|workers) than (?:there are )?(?:GPUs|cards|devices)\b"
        r"|\b(?:two|2|several|multiple) (?:processes|ranks|workers) (?:per|on each|on every"
        r"|on one|on a single) (?:GPU|card|device)\b|\btwo per (?:GPU|card|device)\b"
        r"|\b(?:lands?|landed|ends? up|defaults?(?: to)?|falls? back to)(?: on)? "
        r"(?:cuda:0|GPU ?0|device 0)\b[^.;\n]{0,40}\balready\b"
        r"|\bsame (?:GPU|device|card) as (?:the |a |an |one )?(?:vLLM|rank|server|worker|actor"
        r"|trainer|inference|rollout|generation|engine)",
        unless=rx(r"\b(?:another|other) (?:user|people|team|job)|\bnot (?:on )?the same\b"),
    ),
    # the parameters differ between ranks: each built its model from other code or config
    # ("the ranks build their models from different configs", "parameter shapes differ")
    "model_differs": _cue(
        r"\b(?:param\w*|weights?|models?|shapes?|layers?)\b[^.;\n]{0,30}\b(?:differ|different"
        r"|mismatch\w*|not the same)\b[^.;\n]{0,30}\b(?:between|across|on|per) (?:the )?"
        r"(?:ranks|processes|workers|GPUs|nodes)\b"
        r"|\b(?:ranks|processes|workers)\b[^.;\n]{0,30}\b(?:build|create|construct|load)\w*"
        r"[^.;\n]{0,30}\bdifferent (?:models?|configs?|architectures?|checkpoints?)\b",
        unless=rx(
            r"\b(?:do|does|did)(?: not|n't) (?:differ|mismatch)|\bnot (?:different|mismatch)"
        ),
    ),
    # two hosts that say the same name: NCCL tells hosts apart by their hostname (with the
    # boot id) and takes the ranks of both for one machine ("containers share a hostname")
    "same_hostname": _cue(
        r"\b(?:same|identical|duplicate\w*) (?:host ?names?|hostnames?)\b"
        r"|\b(?:host ?names?|hostnames?) (?:are|is|were|was) (?:the same|identical)\b",
        unless=rx(r"\bnot (?:the same|identical)\b|\bdifferent\b"),
    ),
    # it works once the container runs privileged: the pod lacked device nodes or
    # capabilities (IPC lock, the RDMA or GPU devices) the library asks for
    "privileged_works": _cue(
        r"\b(?:--)?privileged(?::? ?true)?\b[^.;\n]{0,40}"
        + _FIXED
        + r"|"
        + _FIXED
        + r"[^.;\n]{0,40}\b(?:--)?privileged\b"
        r"|\bnon-?privileged\b[^.;\n]{0,60}\b(?:fails?|failed|errors?|crash\w*)\b",
        unless=rx(r"\bnot (?:work|fix|help|solv)\w*|n't (?:work|fix|help|solv)\w*|\bstill\b"),
    ),
    # one process sets an NCCL variable the others do not ("vLLM sets NCCL_CUMEM_ENABLE=0
    # in its workers while the trainer keeps the default"): the communicator's members
    # disagree on how to allocate or talk
    "setting_differs": _cue(
        r"\bNCCL_[A-Z0-9_]{2,40}\b[^.;\n]{0,80}\b(?:while|whereas|but) (?:the |its )?"
        r"(?:other|trainer|server|rest|nodes?|workers?|ranks?|client)\b[^.;\n]{0,40}"
        r"\b(?:not|default|keeps?|without|unset|does(?:n't| not))\b"
    ),
    # the job's own kernels, or memory touched outside its bounds ("our custom CUDA kernel",
    # "writes past the end of a buffer"): a fault of the code, not of the GPU
    "own_kernel": _cue(
        rf"{NOT_SAID}\b(?:custom|our|my|own|hand-written|handwritten) (?:CUDA|triton|fused|GPU) "
        r"(?:kernels?|extensions?|ops?)\b"
        r"|\b(?:writes?|wrote|reads?|index\w*|access\w*) (?:past|beyond|outside) (?:the )?"
        r"(?:end|bounds?|size)\b|\bout[- ]of[- ]bounds (?:write|read|access|index)\w*"
    ),
    # a RoCE port's GID said to change or to be the wrong one ("the gid index changed from 3
    # to 4", "wrong GID index"): the queue pairs address their peers by it (NCCL warns "GID
    # table changed", and a forced NCCL_IB_GID_INDEX makes ibv_modify_qp fail with EINVAL)
    "gid_trouble": _cue(
        r"\bGID(?:[ _-]?index(?:es)?| tables?| entr(?:y|ies))?\b[^.;\n]{0,40}"
        rf"{NOT_SAID}\b(?:chang\w*|moved?|wrong|incorrect|invalid|mismatch\w*|shift\w*)\b"
        r"|\b(?:wrong|incorrect|invalid|changed|mismatched) (?:RoCE )?GID\b"
        # only link-local (RoCE v1) GIDs where the fabric routes RoCE v2 over IPv4
        r"|\blink[- ]local\b[^.;\n]{0,40}\bGIDs?\b|\bGIDs?\b[^.;\n]{0,40}\blink[- ]local\b"
        r"|\bRoCE ?v1\b",
        unless=rx(r"(?:\b(?:not|never)|n't) (?:chang|mov|wrong|differ)\w*|\bsame\b"),
    ),
    # the ranks wait in the job's own code, not in a collective ("stuck inside our own logging
    # call", "py-spy shows every rank waiting on the DataLoader queue", "NCCL shows nothing
    # pending")
    "stuck_in_own_code": _cue(
        r"\b(?:stuck|hangs?|hung|waits?|waiting|blocked|sits?)\b[^.;\n]{0,30}\b(?:in|inside|on|at) "
        r"(?:our|my|the job's|the user's|their) own\b"
        r"|\bpy-?spy\b[^.;\n]{0,80}\b(?:DataLoader|data ?loader|queue|lock|mutex|GIL|our|my)\b"
        rf"|{NOT_SAID}\bnothing (?:is )?(?:pending|in flight|enqueued)\b",
        unless=rx(r"\b(?:not|never)\b|n't\b"),
    ),
    # the unified-memory module or its device node said missing, or reloading it said to fix
    # it ("/dev/nvidia-uvm is missing", "modprobe nvidia-uvm fixed it"): CUDA needs both,
    # nvidia-smi neither
    "uvm_missing": _cue(
        r"/dev/nvidia-uvm\b[^.;\n]{0,30}\b(?:is |was )?(?:missing|absent|not (?:there|present"
        r"|exist\w*|found)|does(?:n't| not) exist|no such file)"
        r"|\bno /dev/nvidia-uvm\b"
    ),
    "uvm_reload_worked": _cue(
        r"\b(?:modprobe|reload\w*|re-?insert\w*|load\w*)\b[^.;\n]{0,20}\bnvidia[-_]uvm\b"
        rf"[^.;\n]{{0,40}}{_FIXED}",
        unless=_NOT_FIXED,
    ),
    # the GPUs' clocks held down by heat or a power cap (prose.GPU_THROTTLED)
    "gpu_throttled": _cue(GPU_THROTTLED, in_question=True),
    # a GPU's PCIe link trained below its width or generation ("x4 instead of x16", "Gen1
    # instead of Gen4", "the link downgraded")
    "pcie_downtrained": _cue(
        r"\bx(?:1|2|4|8)\b[^.;\n]{0,40}\b(?:instead of|rather than|not|vs\.?|expected|should be"
        r"|out of)\b[^.;\n]{0,10}\bx(?:8|16)\b"
        r"|\bGen ?[1-3]\b[^.;\n]{0,40}\b(?:instead of|rather than|not|vs\.?|expected|should be)\b"
        r"[^.;\n]{0,10}\bGen ?[3-6]\b"
        r"|\b(?:PCIe|link)\b[^.;\n]{0,30}\b(?:downgraded|downtrained|degraded|down-trained)\b",
        in_question=True,
    ),
    # a launcher that starts a worker per GPU around a script that spawns its own ("torchrun
    # ... and inside the script mp.spawn"): each worker starts a world of its own; not one
    # launcher swapped for the other ("replaced mp.spawn with torchrun")
    "nested_launch": _cue(
        rf"\b{_LAUNCHER}\b[^\n]{{0,120}}\b{_SPAWN}|\b{_SPAWN}[^\n]{{0,120}}\b{_LAUNCHER}\b",
        unless=rx(r"\b(?:instead|replac\w*|switch\w*|rather than|migrat\w*|moved?|convert\w*)\b"),
    ),
    # an RDMA port said down, polling (no link partner) or flapping, in ibstat's words or the
    # reporter's ("State: Down", "Physical state: Polling", "the IB link flaps")
    "ib_port_down": _cue(
        r"\b(?:port |physical |link )?state:\s*(?:Down|Polling|Disabled)\b"
        # (not ip's "qdisc mq state DOWN mode DEFAULT": an Ethernet interface's)
        r"|\b(?:port|physical|link) state (?:is |was |as |shows? |shown as )?(?:Down|Polling"
        r"|Disabled)\b"
        r"|\b(?:IB |InfiniBand |RoCE |HCA )?(?:link|port)s? (?:keeps? )?flapp\w*"
        r"|\bflapp\w* (?:IB |InfiniBand |RoCE )?(?:links?|ports?)\b|\blink[ -]flaps?\b"
    ),
    # a verbs call named as failing: RDMA set-up (memory registration, queue pairs)
    "verbs_call": _cue(r"\bibv_(?:reg_mr|modify_qp|create_qp|create_cq|open_device|alloc_pd)\w*"),
    # the GPUDirect RDMA stack named: the peer-memory kernel module that lets a NIC (or
    # gdrcopy's CPU mappings) reach GPU memory, or GPUDirect RDMA itself
    "gdr_stack": _cue(
        rf"{NOT_SAID}\b(?:nv_peer_mem(?:ory)?|nvidia[_-]peermem|gdrcopy|gdrdrv|gdr_copy)\b"
        rf"|{NOT_SAID}\bGPU ?Direct[ -]RDMA\b",
        in_question=True,
    ),
    "after_suspend": _cue(rf"{NOT_SAID}\b(?:suspend\w*|resum(?:e|ed)|hibernat\w*|woke up)\b"),
    # the failure comes and goes with a library version: a bug or a second library
    "version_said": _cue(
        rf"\b(?:works?|worked|fine|no (?:problem|issue)s?)\b[^.!?;\n]{{0,60}}"
        rf"\b(?:version |v)?{NUM}\b"
        rf"|\b{NUM}\b[^.\n]{{0,40}}\b(?:works?|worked|is fine|fix(?:es|ed)|solv(?:es|ed)"
        r"|(?:go|goes|went) away)\b"
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
    # the GPUs' NVLink down or unused ("NV links inactive", "communicating via PCIe instead of
    # NVLink"): the reporter names the link itself
    "nvlink_unused": _cue(NVLINK_UNUSED),
    # the hang comes after training ran: an application or data problem, not set-up
    "late_hang": _cue(
        r"\bend of (?:(?:an?|the|each|first|single|every) )*epoch|\bcheckpoint\w*"
        r"|\bafter (?:\d+|some|many|a few|several) (?:steps|iterations|epochs|batches|hours)"
        r"|\bran (?:clean|fine|well) for\b|\bmid[- ]training\b|\bvalidation\b|\beval(?:uat\w*)?\b"
        # saving the model or the trainer's state ("stuck in accelerator.save_state(...)",
        # "hangs when saving the model"): a checkpoint by another name
        r"|\bsave_(?:state|checkpoint|model|pretrained)\b"
        r"|\bsav(?:e|es|ing) (?:the )?(?:model|state|weights)\b"
        # the first steps ran: their collectives completed ("freezes after the first step")
        r"|\bafter (?:the )?(?:first|1st|one|a) (?:training |train )?(?:step|iteration|batch)\b"
        # it ran a while first ("after about 2 hours", "after 3 days of training", "runs for a
        # while and then hangs", "in the middle of an epoch", "randomly during training")
        # (hours or days: "after 30 minutes" is as often the process group's timeout itself)
        r"|\bafter (?:about |around |roughly |~ ?)?\d{1,4} ?(?:hours?|hrs?|days?)\b"
        r"|\bruns? (?:fine |normally |ok )?for (?:a while|some time|hours|days)\b"
        r"|\b(?:in the )?middle of (?:an? |the )?(?:epoch|training|run)\b|\bmid-?epoch\b"
        r"|\brandomly during (?:the )?training\b"
        # a named epoch or step past the first ("after epoch 0, epoch 1 was stuck", "stays stuck
        # on iteration 999", "in the second epoch", "在第二个 epoch 卡在")
        r"|\bafter (?:the )?(?:epoch|step|iteration) \d+|\bepoch \d+ (?:was|is|got|gets) stuck\b"
        # the first epoch ran ("hangs forever after the first train+val epoch")
        r"|\bafter (?:the )?(?:first|1st|one) (?:[\w+/-]{1,20} ){0,2}?epoch\b"
        # (not "freezes in Epoch 1/24": Keras counts epochs from 1)
        r"|\b(?:stuck|hangs?|hung|freez\w*) (?:on|at|in) (?:iteration|step|epoch) (?:[2-9]|[1-9]\d)"
        r"|\b(?:second|third|next|last|later) epoch\b|第[二三四五六七八九十\d]+个? ?(?:epoch|轮)"
    ),
    # NCCL's own communicator set-up hangs ("freezes at NCCL init", "stuck in
    # ncclCommInitRank"): the ranks met at the store already; NCCL's bootstrap connects them
    # over its own sockets next
    "nccl_init_hang": _cue(
        r"\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,30}\b(?:at|during|on|in|when|while) "
        r"(?:the )?(?:NCCL(?:'s)? (?:comm(?:unicator)? )?init\w*|ncclCommInit\w*"
        r"|(?:the )?communicator init\w*|(?:creating|initiali[sz]ing) (?:the )?(?:NCCL )?"
        r"communicator)"
        r"|\bncclCommInit\w*\b[^.!?;\n]{0,30}\b(?:hangs?|hung|never returns|stuck)\b"
    ),
    # what made it work names the cause, like a setting does (signs.settings): the container
    # given shared memory, the store moved to another port, the ranks given equal batches
    "shm_fix_worked": _cue(
        rf"(?:--ipc[= ]host|--shm-size|\bshm_size|/dev/shm|\bhostIPC:? ?true)\b[^.;\n]{{0,40}}"
        rf"{_FIXED}|{_FIXED}[^.;\n]{{0,40}}(?:--ipc[= ]host|--shm-size|\bshm_size\b"
        r"|\bhostIPC:? ?true\b)"
        r"|\b(?:increas|enlarg|rais|bigger|larger|mor)\w* (?:the )?(?:/dev/shm|shm|shared memory)\b"
        rf"[^.;\n]{{0,40}}{_FIXED}",
        unless=_NOT_FIXED,
    ),
    "port_change_worked": _cue(
        r"\b(?:chang\w*|switch\w*|another|different|other|new)\b[^.;\n]{0,30}"
        rf"(?:--master[_-]port|MASTER_PORT|\bport)\b[^.;\n]{{0,40}}{_FIXED}",
        unless=_NOT_FIXED,
    ),
    "even_batches_worked": _cue(
        rf"(?:\bdrop_last\s*=\s*True|\bJoin\(|\bjoin context|even_batches)[^.;\n]{{0,60}}{_FIXED}"
        rf"|{_FIXED}[^.;\n]{{0,40}}(?:\bdrop_last\s*=\s*True|\bJoin\()",
        unless=_NOT_FIXED,
    ),
    # the port changed and the bind failed the same: the job binds its own port twice
    "other_port_same": _cue(OTHER_PORT_SAME.pattern, unless=rx(SAME_PORT_NAMED.pattern)),
    # the memory those processes take is what the reporter complains of ("extra gpu memory on
    # rank 0", "occupy memory", "limits the batch size", Chinese 显存)
    "memory_said": _cue(
        r"\b(?:GPU |extra |more |the )?memory\b(?! (?:bandwidth|clock|controller|errors?|ECC)\b)"
        r"|\bbatch[ _]size\b|\bout of memory\b|\bOOM\b|显存"
    ),
    # the ranks run different code: one rank (or some) takes a path the others do not, so they
    # wait in collectives it never calls ("evaluate only on rank 0", "if rank == 0: save",
    # "early stopping", "a different number of batches per rank"); "only on rank 0" names
    # such a path only beside the work done there ("the timeout is reported only on rank 0",
    # "only one rank crashes" say where the failure shows, not what the ranks run)
    "rank_branch": _cue(
        # (an attribute's owner may come first: "if self.global_rank == 0", "if args.local_rank")
        r"\b(?:if|when|while)\s+(?:the\s+)?(?:\w{1,30}\.){0,2}(?:(?:global|local)[_ ])?rank"
        r"\s*(?:==|!=|is|=)\s*0\b"
        # (not a print or a log line: rank 0 alone printing calls no collective)
        r"(?!\s{0,3}:\s{0,3}(?:print|log|logger|logging|wandb|tqdm|pbar|writer)\b)"
        # (a call's own dots are no sentence's end: "call `trainer.log_dir` only in process 0")
        rf"|\b{_WORK}\b(?:[^.,;!?\n]|\.(?=\w)){{0,30}}?\b{_ONLY_RANK}"
        rf"|\bonly (?:the )?{_RANKS}\s(?:\w{{1,12}}\s)?{_WORK}\b"
        r"|\bis_(?:local_)?main_process\b|\bget_rank\(\)\s*==\s*0\b"
        # the frameworks' own rank-0 guards: Lightning's @rank_zero_only and is_global_zero,
        # Hugging Face's is_world_process_zero, the scripts' `local_rank in [-1, 0]`
        r"|\brank_zero_only\b|\bis_global_zero\b|\bis_(?:world|local)_process_zero\b"
        r"|\blocal_rank\s+in\s+[\[(]\s*-1\s*,\s*0\s*[\])]"
        rf"|{_NOT_USED}\b(?:uneven|unequal|different (?:number|amount)s? of) (?:data|batches"
        rf"|samples|steps|iterations)\b|{_NOT_USED}\bearly[ -]?stopp\w*"
        # a rank with nothing to work on returns early: "any one rank has all empty validation",
        # "a rank whose shard had no images"; a collective some ranks skip or call more often
        r"|\b(?:a|one|any|some|each) (?:one )?(?:rank|gpu|process|worker|stage)s?\b[^.;\n]{0,30}"
        r"\b(?:has|had|have|gets?|got|holds?|with|whose)\b[^.;\n]{0,20}\b(?:empty|no (?:data"
        r"|samples|labels|targets|images|boxes|tokens|metrics?|batch\w*))\b"
        # "ranks that have no data", "some nodes have no samples", "a worker received no shards"
        r"|\b(?:ranks?|gpus?|process(?:es)?|workers?|nodes?|stages?)\b (?:that |which )?"
        r"(?:have|has|had|gets?|got|receiv\w*) no (?:data|samples|shards|batch\w*)\b"
        # a rank whose data ends first ("one rank runs out of data before the others")
        r"|\b(?:one|a|some) (?:rank|gpu|process|worker)s? (?:runs?|ran) out of (?:data|batches"
        r"|samples)\b|\bfewer (?:batches|samples|steps|iterations) than the others\b"
        # the data split unevenly across the ranks (Chinese: the data is unbalanced)
        r"|数据(?:不平衡|不均衡|不均匀)"
        r"|\b(?:skip\w*|return\w* early)\b[^.;\n]{0,30}"
        r"\b(?:collectives?|all_?reduce|all_?gather\w*|reduce_scatter|broadcast\w*|barrier)\b"
        r"|\b(?:one|1|a) (?:collective|op|operation|call)s? (?:op )?behind\b"
        r"|\bdifferent (?:number|count)s? of (?:collective|all_?reduce|all_?gather|barrier)"
        # the ranks said to have issued different collectives ("2 trainers sent out
        # mismatched collectives, one doing all-to-all, the other doing all-reduce")
        rf"|{_NOT_USED}\bmis-?match\w* collective"
        r"|\bcollectives? (?:calls? |ops? )?(?:were |are |was |is )?mis-?match\w*"
        r"|\b(?:ranks?|trainers?|workers?|processes) (?:\w+ ){0,3}(?:called|call|calling|issued"
        r"|issuing|ran|running|in) different collectives\b"
        r"|\bone (?:rank |trainer |process |worker )?(?:is |was )?"
        rf"(?:doing|calling|in|issuing|running) (?:an? )?{_COLLECTIVE}[^.;\n]{{0,40}}"
        r"\bthe other\w* (?:\w+ )?(?:doing|calling|in|issuing|running)\b"
    ),
    # the hang comes and goes with a setting of the program's own (a lower-case name = value:
    # "when I set `filter_empty_gt=False` it keeps waiting", "stuck if set packing=false"): the
    # program's path, or its data, decides whether the ranks meet; not NCCL's, the launcher's
    # or the GPUs' settings (upper-case variables, parallel sizes, devices, ports, workers)
    "own_setting_decides": _cue(
        rf"{_TOGGLE}[^\n]{{0,120}}?{_OUTCOME}|{_OUTCOME}[^\n]{{0,120}}?{_TOGGLE}"
    ),
    # the hang is at a barrier the code calls (dist.barrier(), Accelerate's main_process_first
    # or wait_for_everyone): every rank must reach it, and one that took another path never
    # does (not the store's own barrier of start-up, "store based barrier")
    "barrier_said": _cue(
        r"\b(?:dist|distributed|torch\.distributed)\.barrier\b|(?<![\w.])barrier\(\)"
        r"|\b(?:local_)?main_process_first\b|\bwait_for_everyone\b"
        r"|\b(?:at|in|on|calling|call to|reach\w*) (?:the |a )?(?<!based )barrier\b"
    ),
    # every rank computes on one GPU ("only GPU 0 has load", "all 8 processes run on GPU 0"):
    # the ranks were not given their own device (set_device missing or too late)
    "one_gpu_does_all": _cue(ONE_GPU_DOES_ALL),
    # the hang is at start-up: connection set-up, not the application
    "startup_hang": _cue(
        r"\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,30}\b(?:at|during|on|when|while) "
        r"(?:the )?(?:very )?(?:start ?up|startup|the start|beginning|init\w*"
        r"|communicator init\w*|the first collective|(?:DDP|process group) init\w*"
        r"|(?:creating|initiali[sz]ing|setting up) (?:the )?(?:process group|DDP|distributed))"
        r"|\binit\w*\b[^.!?;,\n]{0,30}\bhangs?\b"
        r"|\b(?:node|rank|worker|process)s?\b[^.!?;\n]{0,20}"
        r"\bnever (?:joins?|joined|connects?|connected)\b"
        # it never reaches the training ("never gets past initialization", "before the first
        # step", "right after loading the model, before training starts")
        r"|\bnever (?:gets?|got|goes|went|makes? it) (?:past|beyond|through) (?:the )?init\w*"
        r"|\b(?:hang|hung|stuck|freez)\w*\b[^.!?;\n]{0,40}\bbefore (?:the )?(?:first "
        r"(?:step|iteration|batch|epoch)|training (?:starts|begins)|any (?:step|output))"
        r"|\b(?:stuck|hangs?|hung|freez\w*) (?:at|in|on) (?:`)?(?:model ?= ?)?DDP\("
        r"|\bthe first (?:all_?reduce|collective|barrier|broadcast|iteration|step|batch)\b"
        r"[^.!?;\n]{0,20}\bnever (?:returns|completes|finishes|ends)",
        # start-up said to pass ("initialization completes, the hang is in epoch 3")
        unless=rx(
            r"\b(?:init\w*|start ?up)\b[^.!?;,\n]{0,12}(?<!not )(?<!n't )(?<!never )"
            r"\b(?:completes?|completed|finish(?:es|ed)?|succeed(?:s|ed)?|pass(?:es|ed)?"
            r"|works?|is fine)\b"
        ),
    ),
    # the stuck job's GPUs read full: its ranks wait inside launched NCCL kernels, which poll
    # for their peers' data (measured: an all_reduce whose peer never joins reads 100% for as
    # long as it waits, tests/fixtures/captured/spin-h100) ("GPU utilization stays at 100%",
    # "GPUs at 100% but nothing moves"); not the CPU's load
    "gpus_full": _cue(
        _load_reads(_FULL)
        + r"|\b(?:gpus?|cards?)\b[^.;\n]{0,30}\bfully (?:occupied|utili[sz]ed|loaded|busy)\b",
        unless=rx(_load_reads(_EMPTY)),
    ),
    # the stuck job's GPUs read empty: no kernel runs, its ranks wait on the host (the store,
    # the bootstrap, connection set-up, the job's own code) (measured: a rank blocked in the
    # c10d store reads 0%, tests/fixtures/captured/spin-h100) ("GPU usage drops to 0%",
    # "the GPUs sit idle")
    "gpus_idle": _cue(
        _load_reads(_EMPTY)
        + rf"|{_GPU_LOAD} (?:drops?|dropped|goes|went|fell|falls) (?:down )?to (?:zero|0)\b"
        r"|\b(?:gpus?|cards?) (?:are|were|is|was|go|went|sits?|sat|stays?|stayed) "
        r"(?:all |completely )?idle\b",
        unless=rx(_load_reads(_FULL)),
    ),
    # the whole machine freezes, not just the job: hardware or driver
    # ("the machine freezes", "system completely hangs"; not "a machine with 4 GPUs hangs",
    # where the job hangs on the machine)
    "system_freeze": _cue(
        r"\b(?:system|machine|computer|desktop|os)\s+"
        r"(?:(?!(?:training|job|process|program|script|run|model|server)\b)\w+\s+)?"
        r"(?:freez\w*|froze|frozen|hangs?|hung|locks? up|becomes? unresponsive)\b",
        # "running with 2 processes on an 8-GPU machine hangs", "4 GPUs of one machine hangs":
        # the run hangs on the machine
        unless=rx(
            r"\b(?:on|in|of) (?:an? |the |my |our |one |this |that )?(?:[\w-]+ )?"
            r"(?:system|machine|computer|desktop)\s+(?:freez\w*|froze|frozen|hangs?|hung)\b"
        ),
    ),
    # only a reboot or a power cycle brings the machine back ("must be rebooted by removing
    # the power"): the driver lost a GPU, not a job that waits
    "power_cycle": _cue(
        r"\bhard[- ]reboot|\bpower[- ]?cycl\w*|\b(?:removing|cutting|pulling) the power\b"
        r"|\b(?:must|had to|have to|has to|needs? to|needed to) (?:be )?reboot\w*"
        r"|\bneeds? a (?:hard )?reboot\b",
        unless=_UPDATE,
    ),
}


def said(facts: Facts, name: str) -> Cite | None:
    """The first prose line that says cue ``name``."""
    cue = CUES[name]
    return next(
        (
            h.cite
            for h in facts.prose_search(cue.pattern.pattern, FLAGS)
            if cue.says(h.cite.text, h.match)
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
