"""The node gate: ``check --gate`` turns a diagnosis of one node into a verdict per check.

:mod:`~nccl_doctor.gate.checks` says which findings each check owns and what
it must have read, :mod:`~nccl_doctor.gate.ladder` picks the repair ladder's
rung for a finding, :mod:`~nccl_doctor.gate.verdict` builds the verdict and
its JSON (``docs/gate.md``).
"""
