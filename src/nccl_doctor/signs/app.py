"""Signs read by the application rules (``rules/app``): hangs, mismatches, DDP's checks."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

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
