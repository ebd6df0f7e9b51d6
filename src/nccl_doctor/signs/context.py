"""Signs read by :mod:`nccl_doctor.rules._context` (where in the job a failure happened)."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

COMM_INIT = sign(
    "context.comm_init",
    r"commInit|ncclCommInitRank|init\.cc|bootstrap",
    "NCCL was creating a communicator (commInit, init.cc, bootstrap)",
)
NCCL_WARN = sign(
    "context.nccl_warn",
    r"NCCL WARN",
    "NCCL printed a warning (its WARN lines say why a call failed)",
)
