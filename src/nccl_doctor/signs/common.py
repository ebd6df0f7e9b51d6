"""Signs several rule families read."""

from __future__ import annotations

from nccl_doctor.facts.signs import sign

HANG_WORDS = sign(
    "common.hang_words",
    r"\b(?:hangs?|hanging|hung|freez\w{0,20}|froze|stuck|deadlock\w{0,20}"
    r"|never (?:returns|finishes))\b",
    "a person saying the job sits there rather than dies",
)
