# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this
# Shared by prolog.sh and epilog.sh (sourced; install it beside them).
# Sets PATH (Slurm gives prologs none), reads /etc/default/nccl-doctor, and
# defines: node, job, doctor, dir, deadline, log MESSAGE, run ARGS... (nccl-doctor
# under the whole-run deadline), and gate_args (the `check --gate` argv).
# The caller sets hook=prolog|epilog first.

hook=${hook:-gate}
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
    echo "nccl-doctor $hook: $*" >&2
    if command -v logger >/dev/null 2>&1; then
        logger -t nccl-doctor -- "$hook job $job node $node: $*" 2>/dev/null || true
    fi
}

run() {
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 5 "$deadline" "$doctor" "$@"
    else
        "$doctor" "$@"
    fi
}

# why RC: the words for an exit status of nccl-doctor that is not its verdict
why() {
    case $1 in
        124 | 137) echo "did not finish within ${deadline}s" ;;
        127) echo "not found ($doctor)" ;;
        *) echo "failed (exit $1)" ;;
    esac
}

gate_args=(check --gate --gate-node "$node" --timeout "${NCCL_DOCTOR_GATE_READ_TIMEOUT:-5}"
           --gate-fail-on "${NCCL_DOCTOR_GATE_FAIL_ON:-critical}")
if [ "${NCCL_DOCTOR_GATE_FAIL_UNKNOWN:-0}" = 1 ]; then
    gate_args+=(--gate-fail-unknown)
fi
if [ -n "${NCCL_DOCTOR_GATE_FROM:-}" ]; then
    gate_args+=(--from "$NCCL_DOCTOR_GATE_FROM")
fi
if [ -n "${NCCL_DOCTOR_GATE_ARGS:-}" ]; then
    read -r -a extra <<<"$NCCL_DOCTOR_GATE_ARGS"
    gate_args+=("${extra[@]}")
fi
