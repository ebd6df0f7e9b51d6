"""Signs read by the application rules (``rules/app``): hangs, mismatches, DDP's checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nccl_doctor.facts.signs import sign

if TYPE_CHECKING:
    from nccl_doctor.facts.store import Facts, Hit

# -- a hang: the watchdog's message where no parser took it whole -------------------------------
WATCHDOG_CAUGHT = sign(
    "app.watchdog_caught",
    r"(?:Watchdog caught|Caught) collective operation timeout",
    "the watchdog's collective-timeout message, wherever it is (quoted, wrapped, pasted)",
)
TIMEOUT_RAN = sign(
    "app.timeout_ran",
    r"(?:Timeout\(ms\)|ut\(ms\)|\(ms\))=(?P<limit_ms>\d{1,12})\)? ran for (?P<ran_ms>\d{1,15}) "
    r"milliseconds",
    "the timeout and run time of a watchdog message whose start was cut or wrapped away",
    case=True,
)
OP_TYPE = sign(
    "app.op_type",
    r"OpType=(?P<op>\w{1,40})",
    "the collective a WorkNCCL(...) description names (OpType=ALLREDUCE)",
)
TIMEOUT_MS = sign(
    "app.timeout_ms",
    r"Timeout\(ms\)=(?P<ms>\d{1,12})",
    "the collective timeout a WorkNCCL(...) description names",
)
RAN_FOR = sign(
    "app.ran_for",
    r"ran for (?P<ms>\d{1,15}) milliseconds before timing out",
    "how long a timed-out collective ran, as the watchdog says it",
)
NUMEL_IN = sign(
    "app.numel_in",
    r"NumelIn=(?P<numel>\d{1,15})",
    "the input element count a WorkNCCL(...) description names (1: a barrier-like sync)",
)
CHECK_TIMEOUT_FRAME = sign(
    "app.check_timeout_frame",
    r"WorkNCCL::checkTimeout\b",
    "the watchdog's timeout check in a C++ stack (the collective's own line may be missing)",
)
GLOO_WAIT = sign(
    "app.gloo_wait",
    r"Timed out waiting \d{1,12} ?ms for (?:recv|send) operation",
    "gloo's collective timing out while it waited for a peer's data",
    case=True,
)
PROGRESS_ELAPSED = sign(
    "app.progress_elapsed",
    r"\[(?:(?P<hours>\d{1,6}):)?(?P<minutes>\d{1,2}):(?P<seconds>\d\d)<",
    "the time a tqdm progress bar has run ([32:05<...)",
)
CHECKPOINT_WORDS = sign(
    "app.checkpoint_words",
    r"checkpoint\w{0,40}|saving|save_\w{1,40}|storing|torch\.save",
    "a person saying a checkpoint was being saved",
)
INIT_WORDS = sign(
    "app.init_words",
    r"initiali|init_process|rendezvous",
    "the line speaks of initialisation or the rendezvous (a hang there is the launch's)",
)
RANK_GUARD = sign(
    "app.rank_guard",
    r"if\s{1,10}(?:\(\s{0,10})?(?:args\.|self\.)?(?:local_rank|rank|global_rank)\s{0,10}"
    r"(?:==|!=|in|not in|<|>)",
    "code branching on the rank (if args.local_rank == 0:)",
    case=True,
)
COLLECTIVE_CALL = sign(
    "app.collective_call",
    r"\b(?:barrier|all_reduce|all_gather\w{0,40}|broadcast|reduce_scatter)\s{0,10}\(",
    "code calling a collective (barrier(, all_reduce(, broadcast( ...)",
    case=True,
)

# -- torch's flight-recorder analyser (fr_trace / torchfrtrace), its text report -----------------
# (tools/flight_recorder/components/builder.py, utils.py: one report per collective not every
# rank joined, printed three ways as the tool changed: 2.4's one line "... for group G
# collective C Missing ranks are {..}", 2.5's "... collective N at entry E", 2.6's "...,
# sequence number: N"; the missing ranks on a line of their own below the last two)
FR_NOT_JOINED = sign(
    "app.fr_not_joined",
    r"Not all ranks joining collective(?:, sequence number: (?P<seq>\d{1,12})"
    r"| (?P<seq2>\d{1,12}) at entry \d{1,12}| for group (?P<group>\S{1,200}) collective "
    r"(?P<op>\S{1,80}))",
    "torch's flight-recorder analyser (fr_trace) reports a collective not every rank joined",
    case=True,
)
FR_MISSING_RANKS = sign(
    "app.fr_missing_ranks",
    r"(?:missing ranks: |Missing ranks are )\{(?P<ranks>\d{1,7}(?:, \d{1,7}){0,4095})\}",
    "the ranks fr_trace found missing from that collective",
    case=True,
)
FR_COLLECTIVE = sign(
    "app.fr_collective",
    r"^collective: (?P<op>[\w:]{1,80})$",
    "the collective an fr_trace report is about (nccl:all_reduce)",
    case=True,
)

#: the analyser's verdict on a collective the ranks did not issue alike
#: (flight_recorder/components/types.py MatchInfo, EntryState.log: "error msg: Culprit rank 1;
#: Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: 'broadcast' does not match
#: found collective type: 'all_reduce'"); its type, size or dtype differs on the culprit rank
#: (COLLECTIVE_STATE_MISMATCH, one rank further along, and UNDECIDED say no such thing)
FR_MATCH_ERROR = sign(
    "app.fr_match_error",
    r"Culprit rank (?P<rank>\d{1,7}); Error type: "
    r"(?P<kind>COLLECTIVE_TYPE_MISMATCH|SIZE_OR_SYNTAX_MISMATCH|COLLECTIVE_DTYPE_MISMATCH)"
    r"(?:, (?P<detail>[^,\n]{1,200}))?",
    "torch's flight-recorder analyser found a rank's collective differs from the others'",
    case=True,
)

# -- ranks issued different collectives --------------------------------------------------------
COLLECTIVE_MISMATCH = sign(
    "app.collective_mismatch",
    r"Detected mismatch between collectives on ranks",
    "PyTorch's debug wrapper found the ranks' collective fingerprints differ",
)
FINGERPRINT = sign(
    "app.fingerprint",
    r"Rank (?P<rank>\d{1,7}) is running (?:inconsistent )?collective: "
    r"CollectiveFingerPrint\((?P<fields>[^)]{0,200})",
    "the collective one rank ran, as the debug wrapper's fingerprint names it",
)
#: ProcessGroupWrapper's words (TORCH_DISTRIBUTED_DEBUG=DETAIL) when the barrier it runs before
#: every collective fails; gloo's own ``Ranks 2, 3 failed to pass monitoredBarrier`` without
#: them is a monitored_barrier() the job called itself: ranks late, stuck or dead, no mismatch
MONITORED_BARRIER = sign(
    "app.monitored_barrier",
    r"Monitored Barrier encountered error",
    "the debug wrapper's monitored barrier before a collective failed",
)
BARRIER_MISSED_BY = sign(
    "app.barrier_missed_by",
    r"Ranks? (?P<ranks>[\d, ]{1,2000}) failed to pass monitoredBarrier(?: in (?P<ms>\d{1,15}) ms)?",
    "the ranks that never reached the monitored barrier (ProcessGroupGloo::monitoredBarrier)",
)
#: monitoredBarrier(wait_all_ranks=False): the root waits on ranks 1, 2, ... in order and gives
#: up at the first that does not answer; the ranks it got are listed after
BARRIER_TIMED_OUT = sign(
    "app.barrier_timed_out",
    r"Rank (?P<rank>\d{1,7}) timed out in monitoredBarrier after (?P<ms>\d{1,15}) ms",
    "the monitored barrier's root gave up waiting on the next rank in order",
)
BARRIER_PROCESSED = sign(
    "app.barrier_processed",
    r"Successfully processed ranks: (?P<ranks>[\d, ]{1,2000})|"
    r"No ranks successfully processed in monitoredBarrier",
    "the ranks the monitored barrier's root heard from before it gave up",
)
MISMATCH_CONTEXT = sign(
    "app.mismatch_context",
    r"evaluat\w{0,40}|checkpoint\w{0,40}|only (?:on )?(?:the )?(?:master|rank 0)",
    "a person placing the mismatch in evaluation, checkpointing or rank-0-only code",
)

# -- the model differs across ranks -------------------------------------------------------------
PARAM_MISMATCH = sign(
    "app.param_mismatch",
    r"appears not to match (?:sizes|strides) of the same param in process"
    r"|DDP expects same model across all ranks",
    "DDP's cross-rank parameter check found a difference",
)
PARAM_SHAPES = sign(
    "app.param_shapes",
    r"(?:\[(?P<own>\d{1,7})\]:\s{0,10})?params?\[(?P<index>\d{1,7})\]\s{1,10}in this process "
    r"with (?P<what>sizes|strides) \[(?P<dims>[^\]]{0,80})\] appears not to "
    r"match (?:sizes|strides) of the same param in process (?P<peer>\d{1,7})",
    "the parameter, its sizes or strides on this rank and the process it differs from",
)
PARAM_COUNT = sign(
    "app.param_count",
    r"Rank (?P<rank>\d{1,7}) has (?P<count>\d{1,12}) params, while rank (?P<other>\d{1,7}) has "
    r"inconsistent (?P<other_count>\d{1,12}) params",
    "two ranks' parameter counts, as DDP's check reports them",
)


def unfilled_gathers(facts: Facts) -> list[Hit]:
    """DDP's count check reading 0 parameters from a peer that the asking rank has more of.

    The counts arrive by an all-gather (torch/csrc/distributed/c10d/comm.cpp), and a rank with
    no trainable parameter stops before it (DistributedDataParallel "is not needed when a
    module doesn't have any parameter that requires a gradient"): a 0 is the gather's buffer
    never filled, the job's first collective having moved no data.
    """
    return [
        hit
        for hit in facts.seen(PARAM_COUNT)
        if int(hit.match["other_count"]) == 0 < int(hit.match["count"])
    ]


# -- parameters that received no gradient --------------------------------------------------------
REDUCTION_UNFINISHED = sign(
    "app.reduction_unfinished",
    r"Expected to have finished reduction in the prior iteration",
    "DDP's reducer had not finished the previous iteration (a parameter got no gradient)",
)
NO_GRAD_NAMES = sign(
    "app.no_grad_names",
    r"Parameters which did not receive grad for rank (?P<rank>\d{1,7}):\s{0,10}(?P<names>.{1,400})",
    "the parameters of one rank that received no gradient, by name",
)
NO_GRAD_INDICES = sign(
    "app.no_grad_indices",
    r"Parameter indices which did not receive grad for rank (?P<rank>\d{1,7}):\s{0,10}"
    r"(?P<indices>[\d ]{1,400})",
    "the indices of the parameters of one rank that received no gradient",
)
READY_TWICE = sign(
    "app.ready_twice",
    r"Expected to mark a variable ready only once",
    "DDP marked a parameter ready twice in one backward pass (reentrant backward)",
)
