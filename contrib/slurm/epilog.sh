#!/bin/bash
# nccl-doctor Slurm epilog: check this node after a job and drain it when it is broken.
#
# Install (slurm.conf on every node):  Epilog=/etc/slurm/nccl-doctor-epilog.sh
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

PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
if [ -r /etc/default/nccl-doctor ]; then
    # shellcheck source=/dev/null
    . /etc/default/nccl-doctor
fi

node=${SLURMD_NODENAME:-$(hostname -s)}
job=${SLURM_JOB_ID:-none}
doctor=${NCCL_DOCTOR:-nccl-doctor}
dir=${NCCL_DOCTOR_GATE_DIR:-/var/lib/nccl-doctor/gate}
deadline=${NCCL_DOCTOR_GATE_TIMEOUT:-30}

log() {
    echo "nccl-doctor epilog: $*" >&2
    if command -v logger >/dev/null 2>&1; then
        logger -t nccl-doctor -- "epilog job $job node $node: $*" 2>/dev/null || true
    fi
}

run() {
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 5 "$deadline" "$doctor" "$@"
    else
        "$doctor" "$@"
    fi
}

args=(check --gate --gate-node "$node" --timeout "${NCCL_DOCTOR_GATE_READ_TIMEOUT:-5}"
      --gate-fail-on "${NCCL_DOCTOR_GATE_FAIL_ON:-critical}")
if [ "${NCCL_DOCTOR_GATE_FAIL_UNKNOWN:-0}" = 1 ]; then
    args+=(--gate-fail-unknown)
fi
if [ -n "${NCCL_DOCTOR_GATE_FROM:-}" ]; then
    args+=(--from "$NCCL_DOCTOR_GATE_FROM")
elif [ -n "${NCCL_DOCTOR_GATE_BUNDLES:-}" ] && mkdir -p "$NCCL_DOCTOR_GATE_BUNDLES" 2>/dev/null; then
    args+=(-o "$NCCL_DOCTOR_GATE_BUNDLES/$node-job$job.tgz")
fi
if [ -n "${NCCL_DOCTOR_GATE_ARGS:-}" ]; then
    read -r -a extra <<<"$NCCL_DOCTOR_GATE_ARGS"
    args+=("${extra[@]}")
fi

verdict=$(mktemp "${TMPDIR:-/tmp}/nccl-doctor-gate.XXXXXX") || { log "mktemp failed"; exit 0; }
trap 'rm -f "$verdict"' EXIT

run "${args[@]}" >"$verdict"
rc=$?
kept=$verdict
if [ -s "$verdict" ] && mkdir -p "$dir" 2>/dev/null && cp "$verdict" "$dir/$node.json" 2>/dev/null; then
    kept="$dir/$node.json"
fi

case $rc in
    0) exit 0 ;;
    1) ;;
    124 | 137) why="did not finish within ${deadline}s" ;;
    127) why="not found ($doctor)" ;;
    *) why="failed (exit $rc)" ;;
esac
if [ "$rc" != 1 ]; then
    if [ "${NCCL_DOCTOR_GATE_STRICT:-0}" = 1 ]; then
        log "nccl-doctor $why; NCCL_DOCTOR_GATE_STRICT=1: draining through Slurm"
        exit 1
    fi
    log "nccl-doctor $why; node left as it is"
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
