"""c10d's messages in the catalogue (ProcessGroupNCCL, NCCLUtils, gloo, the store, DDP's reducer).

Each realistic line, shaped as torch prints it (glog prefixes, ``[rankN]:``,
exception names) at the releases the catalogue says print it, reads as its
message and the class the mechanism of the code that prints it gives.
"""

from __future__ import annotations

import pytest

from nccl_doctor.facts.catalogue import harmless, signature_of
from nccl_doctor.knowledge.signatures import by_id, load_signatures
from tests.knowledge._signature_lines import assert_reads_as

PGNCCL = "[rank3]:[E710 18:00:32.426302794 ProcessGroupNCCL.cpp:2395] "

C10D_LINES = [
    (
        PGNCCL + "[PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog at work "
        "sequence id: 59958 PG status: last enqueued work: 59998, last completed work: 59957",
        "torch.pgnccl.failure_detected",
        "aborted",
        {"seq": "59958", "enqueued": "59998", "completed": "59957"},
    ),
    (
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Exception (either an error or "
            "timeout) detected by watchdog at work: 1, last enqueued NCCL work: 1, last completed "
            "NCCL work: -1."
        ),
        "torch.pgnccl.exception_detected",
        "aborted",
        {"seq": "1", "completed": "-1"},
    ),
    (
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Timeout at NCCL work: 20, last "
            "enqueued NCCL work: 21, last completed NCCL work: 19."
        ),
        "torch.pgnccl.timeout_at_work",
        "collective_timeout",
        {"seq": "20", "enqueued": "21", "completed": "19"},
    ),
    (
        (
            "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! "
            "Process will be terminated after dumping debug info. workMetaList_.size()=1"
        ),
        "torch.pgnccl.heartbeat_timeout",
        "hang",
        {},
    ),
    (
        (
            "[rank2]:[F1030 10:00:00.000000 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID "
            "0(default_pg) Rank 2] [PG ID 0 PG GUID 0(default_pg) Rank 2] Terminating the process "
            "after attempting to dump debug info, due to collective timeout or exception."
        ),
        "torch.pgnccl.terminating",
        "aborted",
        {"reason": "collective timeout or exception"},
    ),
    (
        (
            "[E ProcessGroupNCCL.cpp:737] [Rank 2] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1803170 "
            "milliseconds before timing out."
        ),
        "torch.pgnccl.watchdog_timeout_legacy",
        "collective_timeout",
        {"seq": "7", "op": "ALLREDUCE", "timeout_ms": "1800000", "ran_ms": "1803170"},
    ),
    (
        (
            "RuntimeError: [Rank 0] Caught collective operation timeout: "
            "WorkNCCL(OpType=BROADCAST, TensorShape=[1024, 768], Timeout(ms)=60000) ran for 60044 "
            "milliseconds before timing out."
        ),
        "torch.pgnccl.watchdog_timeout_legacy",
        "collective_timeout",
        {"op": "BROADCAST", "shape": "[1024, 768]", "ran_ms": "60044"},
    ),
    (
        "RuntimeError: NCCL communicator was aborted on rank 3.",
        "torch.pgnccl.comm_aborted_legacy",
        "aborted",
        {"rank": "3"},
    ),
    (
        (
            "RuntimeError: [Rank 1] Found key in store: NCCLABORTEDCOMM:3a0b9c, from rank: 0. "
            "This means that rank has aborted its NCCL communicators previously and is not in a "
            "healthy state.. Aborting appropriate communicators"
        ),
        "torch.pgnccl.peer_aborted",
        "aborted",
        {"other_rank": "0"},
    ),
    (
        (
            "torch.distributed.DistBackendError: [7] is setting up NCCL communicator and "
            "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but "
            "store->get('0') got error: wait timeout after 600000ms, keys: "
            "//worker/attempt_0/default_pg/0//cuda//0"
        ),
        "torch.pgnccl.unique_id_store",
        "collective_timeout",
        {
            "key": "0",
            "error": "wait timeout after 600000ms, keys: //worker/attempt_0/default_pg/0//cuda//0",
        },
    ),
    (
        (
            "torch.distributed.DistBackendError: [12] is setting up NCCL communicators and "
            "retrieving ncclUniqueId from roots via TCPStore by key '0', but got error: Socket "
            "Timeout"
        ),
        "torch.pgnccl.unique_id_roots",
        "collective_timeout",
        {"key": "0", "error": "Socket Timeout"},
    ),
    (
        (
            "RuntimeError: Not able to create/get the NCCL Communicator since the GPU devices are "
            "not known"
        ),
        "torch.pgnccl.devices_unknown",
        "cuda_device",
        {},
    ),
    (
        "RuntimeError: Tensor found on device cuda:1 but backend constrained to cuda:0",
        "torch.pgnccl.device_constrained",
        "cuda_device",
        {"device": "cuda:1", "bound": "cuda:0"},
    ),
    ("RuntimeError: Tensors must be CUDA and dense", "torch.pgnccl.cpu_tensor", "app_error", {}),
    (
        (
            "torch.distributed.DistBackendError: NCCL timeout in: "
            "../torch/csrc/distributed/c10d/NCCLUtils.cpp:149"
        ),
        "torch.nccl.timeout_in",
        "comm_init",
        {"line": "149"},
    ),
    (
        "ncclSystemError: System call (socket, malloc, munmap, etc) failed.",
        "torch.nccl.detail.system_legacy",
        "nccl_system",
        {},
    ),
    (
        (
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library (such as too "
            "many async ops, too many collectives at once, mixing streams in a group, etc)."
        ),
        "torch.nccl.detail.invalid_usage_legacy",
        "nccl_invalid",
        {},
    ),
    (
        (
            "RuntimeError: Gloo connectFullMesh failed with "
            "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"
        ),
        "torch.gloo.full_mesh_failed",
        "connection",
        {},
    ),
    (
        "RuntimeError: [Rank 0]: Rank 3 failed to pass monitoredBarrier in 30000 ms",
        "torch.gloo.monitored_barrier",
        "collective_timeout",
        {"other_rank": "3", "ms": "30000"},
    ),
    (
        (
            "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
            "ifa != nullptr. Unable to find address for: eth0"
        ),
        "torch.gloo.no_address",
        "connection",
        {"interface": "eth0"},
    ),
    (
        (
            "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was "
            "likely closed. Did the remote server shutdown or crash?"
        ),
        "torch.c10d.recv_closed",
        "store_timeout",
        {},
    ),
    (
        "RuntimeError: Timeout waiting for key: default_pg/0//cuda//0 after 1800000 ms",
        "torch.c10d.key_timeout",
        "store_timeout",
        {},
    ),
    (
        "RuntimeError: connect() timed out. Original timeout was 1800000 ms.",
        "torch.c10d.connect_timeout_legacy",
        "store_timeout",
        {"timeout_ms": "1800000"},
    ),
    (
        (
            "RuntimeError: Expected to mark a variable ready only once. This error is caused by "
            "one of the following reasons: 1) Use of a module parameter outside the `forward` "
            "function."
        ),
        "torch.ddp.ready_twice",
        "ddp_usage",
        {},
    ),
    (
        (
            "RuntimeError: Your training graph has changed in this iteration, e.g., one parameter "
            "is unused in first iteration, but then got used in the second iteration. this is not "
            "compatible with static_graph set to True."
        ),
        "torch.ddp.static_graph_changed",
        "ddp_usage",
        {},
    ),
    (
        (
            "[E1030 10:30:00.000 TCPStore.cpp:346] [c10d] TCP client failed to connect/validate "
            "to host 10.1.4.12:29500 - timed out (try=412, timeout=1800000ms): The client socket "
            "has failed to connect to [node0]:29500 (errno: 111 - Connection refused)."
        ),
        "torch.c10d.store_client_timeout",
        "store_timeout",
        {"host": "10.1.4.12", "port": "29500", "attempt": "412", "timeout_ms": "1800000"},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), C10D_LINES)
def test_c10d_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


@pytest.mark.parametrize(
    ("line", "inner"),
    [
        (
            (
                "RuntimeError: NCCL communicator encountered error set by ProcessGroupNCCL: [Rank "
                "1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600040 "
                "milliseconds before timing out."
            ),
            "torch.pgnccl.watchdog_timeout",
        ),
        (
            (
                "[E ProcessGroupNCCL.cpp:828] [Rank 2] NCCL watchdog thread terminated with "
                "exception: CUDA error: an illegal memory access was encountered"
            ),
            "cuda.error.illegal_address",
        ),
    ],
)
def test_a_message_that_relays_another_is_read_as_the_one_it_relays(line: str, inner: str) -> None:
    sig = signature_of(line)
    assert sig is not None
    assert sig.id == inner


@pytest.mark.parametrize(
    "line",
    [
        # c10d tries each address of each family; a warning per failed attempt
        (
            "[W1030 10:00:00.000 TCPStore.cpp:343] [c10d] TCP client failed to connect/validate "
            "to host 10.1.4.12:29500 - retrying (try=0, timeout=1800000ms, delay=496ms): The "
            "client socket has failed to connect to [node0]:29500 (errno: 111 - Connection "
            "refused)."
        ),
        (
            "[W socket.cpp:601] [c10d] The IPv6 network addresses of (user, 53821) cannot be "
            "retrieved (gai error: -3 - Temporary failure in name resolution)."
        ),
        (
            "[W socket.cpp:436] [c10d] The server socket cannot be initialized on [::]:22010 "
            "(errno: 97 - Address family not supported by protocol)."
        ),
        (
            "[W socket.cpp:663] [c10d] The client socket cannot be initialized to connect to "
            "[node1]:29500 (errno: 111 - Connection refused)."
        ),
        (
            "[W Utils.hpp:135] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is "
            "deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)"
        ),
        (
            "[rank0]:[W reducer.cpp:1389] Warning: find_unused_parameters=True was specified in "
            "DDP constructor, but did not find any unused parameters in the forward pass."
        ),
    ],
)
def test_a_harmless_warning_reads_as_no_failure_whatever_error_it_quotes(line: str) -> None:
    assert signature_of(line) is None


def test_harmless_warnings_are_the_torch_info_warnings() -> None:
    quiet = {s.id for s in load_signatures() if harmless(s)}
    assert "torch.c10d.socket_resolve" in quiet
    assert "torch.c10d.socket_connect_failed" not in quiet  # the final failure is one
    assert all(by_id()[i].symptom == "info" for i in quiet)


def test_the_releases_read_reach_back_to_torch_1_8_with_each_releases_source_path() -> None:
    teardown = by_id()["torch.pgnccl.async_teardown"]
    assert teardown.versions.first == "1.8.1"
    # c10d moved from torch/lib to torch/csrc/distributed in 1.10
    assert teardown.where[0] == "torch/lib/c10d/ProcessGroupNCCL.cpp@v1.8.1,v1.9.1"
    assert teardown.where[1].startswith("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v1.10.2,")
    legacy = by_id()["torch.pgnccl.watchdog_timeout_legacy"]
    assert (legacy.versions.first, legacy.versions.last) == ("1.8.1", "2.0.1")
    assert by_id()["torch.pgnccl.watchdog_timeout"].versions.first == "2.1.2"
