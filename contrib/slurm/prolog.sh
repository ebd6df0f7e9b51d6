#!/bin/bash
# nccl-doctor Slurm prolog: gate this node before a job starts on it.
#
# Install (slurm.conf on every node):  Prolog=/etc/slurm/nccl-doctor/prolog.sh
#                                      PrologEpilogTimeout=60   (optional)
# Slurm drains a node whose prolog exits non-zero and requeues the job
# (https://slurm.schedmd.com/prolog_epilog.html), so this script exits 1 only
# when the node's verdict blocks (CRITICAL by default). It exits 0 when
# nccl-doctor itself fails, is missing or runs out of time, unless
# NCCL_DOCTOR_GATE_STRICT=1: a broken tool must not drain a healthy fleet.
#
# gate-common.sh must be beside this script (it is sourced).
# Settings (environment, e.g. in /etc/default/nccl-doctor, read if present):
#   NCCL_DOCTOR                  the nccl-doctor command (default: found on PATH)
#   NCCL_DOCTOR_GATE_FAIL_ON     critical (default) or warning
#   NCCL_DOCTOR_GATE_FAIL_UNKNOWN=1  also block when a check could not read (GPU partitions)
#   NCCL_DOCTOR_GATE_TIMEOUT     whole-run deadline in seconds (default 30)
#   NCCL_DOCTOR_GATE_READ_TIMEOUT  deadline of each read (default 5)
#   NCCL_DOCTOR_GATE_DIR         where verdicts are kept (default /var/lib/nccl-doctor/gate)
#   NCCL_DOCTOR_GATE_FROM        gate a saved bundle or verdict instead of the live node
#   NCCL_DOCTOR_GATE_STRICT=1    exit 1 when nccl-doctor fails or times out
#   NCCL_DOCTOR_GATE_ARGS        more arguments for `nccl-doctor check --gate`
set -u

hook=prolog
here=${BASH_SOURCE[0]%/*}  # no dirname: PATH is not set yet
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
# shellcheck source-path=SCRIPTDIR source=gate-common.sh
. "$here/gate-common.sh" || exit 0
args=("${gate_args[@]}")

verdict=$(mktemp "${TMPDIR:-/tmp}/nccl-doctor-gate.XXXXXX") || { log "mktemp failed; not gating"; exit 0; }
trap 'rm -f "$verdict"' EXIT

run "${args[@]}" >"$verdict"
rc=$?

if [ -s "$verdict" ] && mkdir -p "$dir" 2>/dev/null; then
    cp "$verdict" "$dir/$node.json" 2>/dev/null || log "cannot write $dir/$node.json"
fi

case $rc in
    0) exit 0 ;;
    1)
        log "node blocked; verdict in $dir/$node.json; Slurm drains it and requeues job $job"
        exit 1 ;;
esac
if [ "${NCCL_DOCTOR_GATE_STRICT:-0}" = 1 ]; then
    log "nccl-doctor $(why "$rc"); NCCL_DOCTOR_GATE_STRICT=1: blocking the node"
    exit 1
fi
log "nccl-doctor $(why "$rc"); not gating this job (NCCL_DOCTOR_GATE_STRICT=1 blocks instead)"
exit 0
