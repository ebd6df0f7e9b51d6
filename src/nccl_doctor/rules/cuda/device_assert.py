"""A GPU kernel hit a device-side assertion; that rank's CUDA context is dead.

What it means
-------------
A CUDA kernel checked a condition and it was false: PyTorch's kernels print
``<file>.cu:<line>: ... Assertion `<condition>` failed.`` (an index outside
a tensor, a class label outside ``[0, n_classes)``, a token id past the
embedding size) and the CUDA error 710 ``device-side assert triggered``
follows. The error is sticky: every later CUDA call of that process fails
the same way, including NCCL's.

Why it matters
--------------
The rank that asserted dies, usually inside the next collective
(``unhandled cuda error ... Cuda failure 'device-side assert triggered'``),
and the other ranks then fail with connection errors or hang in their
collective until the watchdog fires. Those later errors are the cascade; the
bug is in the data or the model of the rank that asserted.

Evidence
--------
The kernel's ``Assertion ... failed`` line, ``device-side assert triggered``
from PyTorch (``CUDA error:``), from NCCL (``Cuda failure``) or the CUDA
names ``cudaErrorAssert`` / ``CUDA_ERROR_ASSERT``.

Fix
---
Rerun the failing rank with ``CUDA_LAUNCH_BLOCKING=1`` (or on the CPU) to get
the Python line of the failing kernel, then check the inputs it indexes with:
labels against the number of classes, indices against the tensor size, token
ids against the vocabulary. The other ranks' errors need no fix of their own.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.cuda._common import (
    cascade,
    dedupe,
    hits,
    hosts_of,
    matching_errors,
    nccl_saw,
    ranks_of,
    who,
)
from nccl_doctor.signs.cuda import DEVICE_ASSERT, KERNEL_LINE

RULE = Rule(
    id="cuda.device_assert",
    title="A GPU kernel hit a device-side assertion",
    severity=Severity.CRITICAL,
    explains=(
        "launch.rank_crash",
        "app.hang",
        "cuda.illegal_access",
        "cuda.unknown_error",
        "nccl.internal",
        "net.unreachable",
        "gpu.xid",
    ),
)

#: What a failing kernel usually means, by words (lower case) of the kernel source
#: file or the assertion's condition, as the parser read them.
_HINTS = (
    (("binarycrossentropy", "input_val >= zero"), "BCE inputs outside [0, 1]"),
    (("loss", "nll", "crossentropy"), "a class label outside [0, n_classes)"),
    (("embedding",), "a token/index id at or past the embedding size"),
    (("index", "scatter", "gather"), "an index outside the tensor's size"),
    (("distributions", "multinomial"), "invalid probabilities (NaN, inf or negative) for sampling"),
)


def _hint(assert_: CudaError | None) -> str | None:
    if assert_ is None:
        return None
    where = f"{assert_.kernel_file or ''} {assert_.assertion or ''}".lower()
    return next((text for words, text in _HINTS if any(w in where for w in words)), None)


def check(facts: Facts) -> list[Finding]:
    """Device-side assertions, with the rank that hit them."""
    asserts = [e for e in facts.of(CudaError) if e.kind == "device_assert"]
    rest = [e for e in facts.of(CudaError) if e.kind != "device_assert"]
    named = set(matching_errors(facts, DEVICE_ASSERT, rest))
    errors = [e for e in rest if e.code == 710 or e in named]
    lines, machine = hits(facts, DEVICE_ASSERT)
    if not asserts and not errors and not lines:
        return []
    machine = machine or bool(asserts or errors)
    direct: list[Fact] = [*asserts, *errors]
    ranks = ranks_of(facts, DEVICE_ASSERT, direct, [h for h in lines if not h.prose])
    hosts = hosts_of(direct, lines)
    first = asserts[0] if asserts else None
    where = ""
    if first is not None:
        name = (first.kernel_file or "").rsplit("/", 1)[-1]
        line = next((h.match["line"] for h in facts.seen_on(KERNEL_LINE, [first])), None)
        where = f" in {name}{':' + line if line else ''}"
        if first.assertion:
            where += f" (`{first.assertion[:120]}`)"
    summary = f"{who(ranks, hosts).capitalize()} hit a device-side assertion{where}"
    if len(asserts) > 1:
        summary += f", {len(asserts)} assertion lines"
    hint = _hint(first)
    if hint:
        summary += f"; this kernel usually asserts on {hint}"
    report = nccl_saw(facts, DEVICE_ASSERT)
    if report is not None:
        summary += (
            "; the CUDA context is now unusable, so NCCL's next call failed with "
            f"'{report.reason or 'unhandled cuda error'}'"
        )
    others = [r for r in facts.ranks if r not in ranks]
    if ranks and others:
        summary += cascade(others)
    target = f"rank {ranks[0]}" if ranks else "the failing rank"
    fix = [
        (
            f"Rerun {target} with CUDA_LAUNCH_BLOCKING=1 (or the same batch on the CPU) to get the "
            "Python line of the failing kernel"
        ),
        (
            f"Check the inputs that kernel indexes with{': ' + hint if hint else ''} "
            "on the CPU (e.g. `index.min() >= 0 and index.max() < size`)"
        ),
        "Build/run with TORCH_USE_CUDA_DSA=1 for device-side assertion details",
        "Treat the other ranks' connection errors and timeouts as the cascade of this one",
    ]
    evidence: list[Fact | Cite] = [*asserts[:1], *errors[:2], *(h.cite for h in lines[:2])]
    if report is not None:
        evidence.append(report)
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=dedupe(evidence),
            ranks=ranks,
            hosts=hosts,
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.HIGH if machine else Confidence.LOW,
        )
    ]
