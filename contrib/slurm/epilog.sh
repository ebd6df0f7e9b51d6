#!/bin/bash
# nccl-doctor Slurm epilog: check this node after a job and drain it when it is broken.
#
# Install (slurm.conf on every node):  Epilog=/etc/slurm/nccl-doctor/epilog.sh
# The job that just ran may have broken the GPU (an Xid, a lost GPU, a pending
# row remap): this gates the node again, keeps the verdict, and when the
# verdict blocks it drains the node with nccl-doctor's reason (the check id
# and its evidence) through `nccl-doctor gate plan --target slurm --apply`.
# It exits 0 then, so Slurm keeps that reason; if the drain itself fails
# (scontrol missing or refused) it exits 1 and Slurm drains the node with
# its own "Epilog error" reason instead. A failing or slow nccl-doctor never
# drains the node unless NCCL_DOCTOR_GATE_STRICT=1.
#
# Settings: as prolog.sh (NCCL_DOCTOR, NCCL_DOCTOR_GATE_FAIL_ON, _FAIL_UNKNOWN,
# _TIMEOUT, _READ_TIMEOUT, _DIR, _FROM, _STRICT, _ARGS), and
#   NCCL_DOCTOR_GATE_BUNDLES     a folder to keep each failing check's bundle in (optional)
set -u

hook=epilog
here=${BASH_SOURCE[0]%/*}  # no dirname: PATH is not set yet
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
# shellcheck source-path=SCRIPTDIR source=gate-common.sh
. "$here/gate-common.sh" || exit 0
args=("${gate_args[@]}")
if [ -z "${NCCL_DOCTOR_GATE_FROM:-}" ] && [ -n "${NCCL_DOCTOR_GATE_BUNDLES:-}" ] \
    && mkdir -p "$NCCL_DOCTOR_GATE_BUNDLES" 2>/dev/null; then
    args+=(-o "$NCCL_DOCTOR_GATE_BUNDLES/$node-job$job.tgz")
fi

verdict=$(mktemp "${TMPDIR:-/tmp}/nccl-doctor-gate.XXXXXX") || { log "mktemp failed"; exit 0; }
trap 'rm -f "$verdict"' EXIT

run "${args[@]}" >"$verdict"
rc=$?
kept=$verdict
if [ -s "$verdict" ] && mkdir -p "$dir" 2>/dev/null && cp "$verdict" "$dir/$node.json" 2>/dev/null; then
    kept="$dir/$node.json"
fi

if [ "$rc" = 0 ]; then
    exit 0
fi
if [ "$rc" != 1 ]; then
    if [ "${NCCL_DOCTOR_GATE_STRICT:-0}" = 1 ]; then
        log "nccl-doctor $(why "$rc"); NCCL_DOCTOR_GATE_STRICT=1: draining through Slurm"
        exit 1
    fi
    log "nccl-doctor $(why "$rc"); node left as it is"
    exit 0
fi

log "node blocked after job $job; verdict in $kept; draining"
plan=(gate plan "$verdict" --target slurm --apply --fail-on "${NCCL_DOCTOR_GATE_FAIL_ON:-critical}")
if [ "${NCCL_DOCTOR_GATE_FAIL_UNKNOWN:-0}" = 1 ]; then
    plan+=(--fail-unknown)
fi
if run "${plan[@]}" >&2; then
    exit 0
fi
log "drain with nccl-doctor's reason failed; exiting 1 so Slurm drains the node"
exit 1
