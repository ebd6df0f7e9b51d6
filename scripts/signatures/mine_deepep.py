"""Write ``deepep.jsonl``: DeepEP's kernel-side timeouts (the MoE expert-parallel library over
NVLink and NVSHMEM that SGLang, vLLM and Megatron run), read from its own source.

Usage: ``python scripts/signatures/mine_deepep.py`` (a git mirror of deepseek-ai/DeepEP under
``/work/.mirror``; another root as the first argument).

DeepEP's dispatch and combine kernels spin on flags a peer's GPU writes; when ~100 s of clock
cycles pass without the peer's tokens (``NUM_TIMEOUT_CYCLES``), a thread prints which kernel,
which rank and (in the low-latency kernels) which source rank it waited for, then calls
``trap()``: the CUDA context is lost, and what the framework raises next (``unspecified launch
failure``) is that trap, not a GPU fault. The peer never sent: it is stuck elsewhere or dead,
the ranks disagree on the call, or the path between them (NVLink inside a node; RDMA through
NVSHMEM between nodes) does not deliver. The low-latency kernels with a mask buffer mark the
source rank as failed and go on (a warning). The host side throws after the same wait
(``DeepEP error: CPU recv timeout``) when the counts a dispatch starts from never came. Read at two points of its history: the 1.1.0
release line (``csrc/kernels``) and 1.2.1, which moved the kernels to ``csrc/kernels/legacy``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import first_line, write_jsonl
from gitsrc import format_calls
from keeps import Keep, Seen, rows

#: the commits read (the repository tags 1.2.1 alone) and the release each is
TAGS = ("ab0a3dd", "dd758ca")
_RELEASE = {"ab0a3dd": "1.1.0", "dd758ca": "1.2.1"}
_CLASS = "deepep_timeout"
#: inside a node the peers' data comes over NVLink (or PCIe P2P)
_INTRA = ("app.hang", "launch.rank_crash", "gpu.nvlink")
#: between nodes, through NVSHMEM's RDMA transports
_INTER = ("app.hang", "launch.rank_crash", "net.ib_config", "net.gdr")
_WAITED = "a peer's tokens never arrived within DeepEP's ~100 s timeout, then the kernel trapped"

KEEP = (
    Keep("deepep.intranode.dispatch_receivers_timeout", r"^DeepEP timeout for dispatch receivers",
         _CLASS, _INTRA, f"intranode dispatch: {_WAITED}"),
    Keep("deepep.intranode.dispatch_senders_timeout", r"^DeepEP timeout for dispatch senders",
         _CLASS, _INTRA, f"intranode dispatch: the receivers' buffer never freed; {_WAITED}"),
    Keep("deepep.intranode.combine_receivers_timeout", r"^DeepEP timeout for combine receivers",
         _CLASS, _INTRA, f"intranode combine: {_WAITED}"),
    Keep("deepep.intranode.combine_senders_timeout", r"^DeepEP timeout for combine senders",
         _CLASS, _INTRA, f"intranode combine: the receivers' buffer never freed; {_WAITED}"),
    Keep("deepep.barrier.timeout_check_failed", r"^DeepEP timeout check failed", _CLASS, _INTRA,
         "DeepEP's barrier between the node's GPUs: a peer never reached it within ~100 s"),
    Keep("deepep.internode.dispatch_rdma_sender_timeout", r"^DeepEP dispatch RDMA sender timeout",
         _CLASS, _INTER, f"internode dispatch over RDMA: {_WAITED}"),
    Keep("deepep.internode.rdma_coordinator_timeout", r"^DeepEP RDMA sender coordinator timeout",
         _CLASS, _INTER, f"internode dispatch over RDMA: {_WAITED}"),
    Keep("deepep.internode.dispatch_nvl_receiver_timeout",
         r"^DeepEP dispatch NVL receiver timeout, channel: %d, RDMA: %d, nvl: %d, src NVL",
         _CLASS, _INTER, f"internode dispatch, the NVLink hop after RDMA: {_WAITED}"),
    Keep("deepep.internode.dispatch_nvl_receiver_timeout_from_rdma",
         r"^DeepEP dispatch NVL receiver timeout, channel: %d, RDMA: %d, nvl: %d, src RDMA",
         _CLASS, _INTER, f"internode dispatch, the NVLink hop after RDMA: {_WAITED}"),
    *(
        Keep(f"deepep.internode.{kind}_forwarder_{check}_timeout",
             rf"^DeepEP {kind} forwarder (?:timeout )?\({words}\)", _CLASS, _INTER,
             f"internode {kind}, forwarding between RDMA and NVLink: {_WAITED}")
        for kind, check, words in (
            ("dispatch", "nvl_check", "NVL check"), ("dispatch", "rdma_check", "RDMA check"),
            ("dispatch", "rdma_meta", "RDMA meta"), ("combine", "nvl_check", "NVL check"),
            ("combine", "rdma_check", "RDMA check"),
        )
    ),
    Keep("deepep.internode.combine_nvl_sender_timeout", r"^DeepEP combine NVL sender timeout",
         _CLASS, _INTER, f"internode combine: {_WAITED}"),
    Keep("deepep.internode.combine_rdma_receiver_timeout",
         r"^DeepEP combine RDMA receiver timeout", _CLASS, _INTER,
         f"internode combine: {_WAITED}"),
    # the host side: it waits for the counts the notify kernel gathers from every peer
    Keep("deepep.cpu.recv_timeout", r"^DeepEP error: CPU recv timeout", _CLASS, _INTER,
         "the host waited ~100 s for the token counts every peer's GPU sends before a "
         "dispatch: a peer never sent them"),
    Keep("deepep.cpu.dispatch_timeout", r"^DeepEP error: timeout \(dispatch CPU\)", _CLASS,
         _INTER, "the host waited ~100 s for the token counts every peer's GPU sends before a "
         "dispatch: a peer never sent them"),
    Keep("deepep.low_latency.dispatch_receive_timeout",
         r"^Warning: DeepEP timeout for dispatch receive", _CLASS, _INTER,
         "low-latency dispatch: the tokens of src_rank never arrived within ~100 s; without a "
         "mask buffer the kernel traps, with one that rank is masked as failed"),
    Keep("deepep.low_latency.combine_receive_timeout",
         r"^Warning: DeepEP timeout for combine receive", _CLASS, _INTER,
         "low-latency combine: the results of src_rank never arrived within ~100 s; without a "
         "mask buffer the kernel traps, with one that rank is masked as failed"),
    Keep("deepep.low_latency.barrier_timeout", r"^Warning: DeepEP timeout for barrier", _CLASS,
         _INTER, "low-latency barrier: dst_rank never answered within ~100 s"),
)  # fmt: skip


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    mirror = root / "deepseek-ai+DeepEP" / "repo"
    seen: dict[tuple[str, str], Seen] = {}
    for tag in TAGS:
        for call in format_calls(mirror, tag, ("csrc",), ("printf", "std::runtime_error")):
            line = first_line(call.format.text).rstrip()
            keep = next((k for k in KEEP if re.search(k.anchor, line)), None)
            if keep is not None:
                item = seen.setdefault((keep.id, line), Seen(keep, line, call.format.args, {}))
                item.where.setdefault(tag, []).append(f"{call.path}:{call.line}")
    missing = {k.id for k in KEEP} - {s.keep.id for s in seen.values()}
    if missing:
        raise SystemExit(f"not found at any commit read: {sorted(missing)}")
    print(write_jsonl("deepep", rows("deepep", seen, TAGS, _RELEASE.__getitem__)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
