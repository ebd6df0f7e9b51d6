"""c10d's C++ messages (ProcessGroupNCCL, NCCLUtils, ProcessGroupGloo, TCPStore, socket, DDP's
reducer): the table ``mine_torch.py`` reads. See :mod:`torch_entries` for the fields.

What each entry's class and ids say is the mechanism of the code that prints it: the
watchdog aborts a process whose collective timed out (``aborted``, the hang first); a
rank waiting on the store for rank 0's ncclUniqueId waits on a rank that crashed or is
still busy; a socket warning for one address family is followed by the next family's
attempt (``info``: only the final failure is one).
"""

from __future__ import annotations

from torch_entries import C10D, Assert, Cpp

PG = C10D + "ProcessGroupNCCL.cpp"
NU = C10D + "NCCLUtils.cpp"
GLOO = C10D + "ProcessGroupGloo.cpp"
SOCK = C10D + "socket.cpp"
STORE = C10D + "TCPStore.cpp"
RED = C10D + "reducer.cpp"
HANG = ("app.hang",)
TEARDOWN = ("app.hang", "launch.rank_crash")
PEER_GONE = ("launch.rank_crash", "net.unreachable")
#: a warning for one address c10d tries; the next address or family follows
NEXT_ADDRESS = "one address of several c10d tries: a failure only when 'failed to ... any' follows"

CPP: tuple[Cpp, ...] = (
    # --- ProcessGroupNCCL: the watchdog, its timeouts and the teardown after them
    Cpp("torch.pgnccl.log_prefix", PG, "[PG ID {pg_id:d} PG GUID {pg_guid}({pg_desc}) Rank {rank:d}] ",
        ("[PG ID ", " PG GUID ", ") Rank "), "info", level="info",
        note="ProcessGroupNCCL's log prefix (logPrefix()) since 2.6; earlier releases print '[Rank N] ' or '[PG N Rank N] '"),
    Cpp("torch.pgnccl.watchdog_timeout", PG,
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq:d}, OpType={op}, "
        "NumelIn={numel_in:d}, NumelOut={numel_out:d}, Timeout(ms)={timeout_ms:d}) ran for "
        "{ran_ms:d} milliseconds before timing out.",
        ("Watchdog caught collective operation timeout: ", "WorkNCCL(", "SeqNum=", ", NumelIn=",
         ", Timeout(ms)=", " milliseconds before timing out."), "collective_timeout", HANG),
    Cpp("torch.pgnccl.watchdog_timeout_legacy", PG,
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq:d}, OpType={op}, "
        "TensorShape={shape}, Timeout(ms)={timeout_ms:d}) ran for {ran_ms:d} milliseconds before "
        "timing out.",
        ("collective operation timeout: ", "WorkNCCL(", "OpType=", ", TensorShape=", ", Timeout(ms)=",
         " milliseconds before timing out."), "collective_timeout", HANG,
        pattern=r"collective operation timeout: WorkNCCL\((?:SeqNum=(?P<seq>\d{1,20}), )?"
        r"OpType=(?P<op>\w{1,40})(?:, TensorShape=(?P<shape>[^\n)]{0,200}?))?, "
        r"Timeout\(ms\)=(?P<timeout_ms>\d{1,20})\) ran for (?P<ran_ms>\d{1,20}) milliseconds "
        r"before timing out\.",
        fields=("seq", "op", "shape", "timeout_ms", "ran_ms"), absent=(", NumelIn=",),
        example="[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
        "OpType=ALLREDUCE, TensorShape=[1048576], Timeout(ms)=1800000) ran for 1800537 "
        "milliseconds before timing out.",
        note="torch 1.x: the work's tensor shape, no element counts; SeqNum since 1.11; the watchdog "
        "('Watchdog caught') and a blocking wait ('Caught') print the same work, with its "
        "TensorShape when it has outputs"),
    Cpp("torch.pgnccl.blocking_wait_timeout", PG, "Work {work} timed out in blocking wait",
        (" timed out in blocking wait",), "collective_timeout", HANG,
        note="2.1-2.4 add ' (NCCL_BLOCKING_WAIT=1).', later releases '.'"),
    Cpp("torch.pgnccl.wait_timeout_legacy", PG, "Work {work} timed out in call to wait().",
        (" timed out in call to wait().",), "collective_timeout", HANG,
        note="torch 1.10-2.0: a blocking wait (NCCL_BLOCKING_WAIT=1) ran past the timeout"),
    Cpp("torch.pgnccl.timeout_at_work", PG,
        "[Rank {rank:d}] Timeout at NCCL work: {seq:d}, last enqueued NCCL work: {enqueued:d}, last "
        "completed NCCL work: {completed:d}.", ("Timeout at NCCL work: ", ", last enqueued NCCL work: "),
        "collective_timeout", HANG,
        note="2.2-2.5: the work that timed out, and how far this rank got: a rank whose last "
        "enqueued work is behind the others' took another path or is stuck"),
    Cpp("torch.pgnccl.failure_detected", PG,
        "{prefix} failure detected by watchdog at work sequence id: {seq:d} PG status: last enqueued "
        "work: {enqueued:d}, last completed work: {completed:d}",
        (" failure detected by watchdog at work sequence id: ", " PG status: last enqueued work: "),
        "aborted", TEARDOWN, note="2.6+: follows the timeout or the NCCL error the watchdog found"),
    Cpp("torch.pgnccl.exception_detected", PG,
        "{prefix}Exception (either an error or timeout) detected by watchdog at work: {seq:d}, last "
        "enqueued NCCL work: {enqueued:d}, last completed NCCL work: {completed:d}.",
        ("Exception (either an error or timeout) detected by watchdog at work: ",), "aborted", TEARDOWN,
        note="2.2-2.5 spelling of torch.pgnccl.failure_detected"),
    Cpp("torch.pgnccl.async_teardown", PG,
        "Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
        "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        ("Some NCCL operations have failed or timed out. Due to the ",), "aborted", TEARDOWN,
        note="follows the watchdog's timeout or NCCL error"),
    Cpp("torch.pgnccl.take_process_down", PG,
        "To avoid data inconsistency, we are taking the entire process down.",
        ("To avoid data inconsistency, we are taking the entire process down.",), "aborted", TEARDOWN),
    Cpp("torch.pgnccl.comm_aborted", PG,
        "NCCL communicator was aborted on rank {rank:d}. Original reason for failure was: {reason}",
        ("NCCL communicator was aborted on rank ", " Original reason for failure was: "), "aborted",
        ("launch.rank_crash", "app.hang"), relays=True),
    Cpp("torch.pgnccl.comm_aborted_legacy", PG, "NCCL communicator was aborted on rank {rank:d}.",
        ("NCCL communicator was aborted on rank ",), "aborted", ("launch.rank_crash", "app.hang"),
        absent=(" Original reason for failure was: ",),
        note="torch 1.9: without the original reason; 1.8 prints 'NCCL communicator was aborted.'"),
    Cpp("torch.pgnccl.comm_error_set", PG,
        "NCCL communicator encountered error set by ProcessGroupNCCL: {error}",
        ("NCCL communicator encountered error set by ProcessGroupNCCL: ",), "aborted", TEARDOWN,
        note="a collective on a communicator the watchdog already aborted: the first error is earlier", relays=True),
    Cpp("torch.pgnccl.async_exception", PG,
        "[Rank {rank:d}] found async exception when checking for NCCL errors: {what}",
        ("found async exception when checking for NCCL errors: ",), "aborted", TEARDOWN, relays=True),
    Cpp("torch.pgnccl.peer_aborted", PG,
        "[Rank {rank:d}] Found key in store: {key}, from rank: {other_rank:d}. This means that rank has "
        "aborted its NCCL communicators previously and is not in a healthy state.",
        ("Found key in store: ", "This means that rank has aborted its NCCL communicators previously"),
        "aborted", ("launch.rank_crash", "app.hang"),
        note="torch 1.10-2.0: another rank aborted its communicators first: its own error is the cause"),
    Cpp("torch.pgnccl.remote_error", PG,
        "{prefix} remote error detected from rank: {other_rank:d}",
        (" remote error detected from rank: ",), "aborted", ("launch.rank_crash", "app.hang"),
        note="2.8+ (TORCH_NCCL_PROPAGATE_ERROR): another rank's failure, signalled through the store"),
    Cpp("torch.pgnccl.watchdog_terminated", PG,
        "Process group watchdog thread terminated with exception: {what}",
        ("Process group watchdog thread terminated with exception: ",), "aborted", TEARDOWN, relays=True),
    Cpp("torch.pgnccl.watchdog_terminated_legacy", PG,
        "[Rank {rank:d}] NCCL watchdog thread terminated with exception: {what}",
        ("NCCL watchdog thread terminated with exception: ",), "aborted", TEARDOWN,
        note="torch 1.8-2.1 spelling of torch.pgnccl.watchdog_terminated", relays=True),
    Cpp("torch.pgnccl.watchdog_stuck", PG,
        "ProcessGroupNCCL's watchdog got stuck for {seconds:d} seconds without making progress in "
        "monitoring enqueued collectives.",
        ("ProcessGroupNCCL's watchdog got stuck for ",), "hang", HANG,
        note="the heartbeat monitor; it aborts the process after TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"),
    Cpp("torch.pgnccl.heartbeat_timeout", PG,
        "Heartbeat monitor timed out! Process will be terminated after dumping debug info.",
        ("Heartbeat monitor timed out! Process will be terminated after dumping debug info.",), "hang",
        HANG, note="2.2-2.5: the watchdog itself stopped (a CUDA or NCCL call that never returns)"),
    Cpp("torch.pgnccl.terminating", PG,
        "Terminating the process after attempting to dump debug info, due to {reason}.",
        ("Terminating the process after attempting to dump debug info, due to ",), "aborted",
        TEARDOWN, note="2.6+: the heartbeat monitor ends the process (a timeout or a stuck watchdog)"),
    Cpp("torch.pgnccl.dump_signal", PG,
        "Received a dump signal due to a collective timeout from {source} and we will try our best "
        "to dump the debug info.",
        ("Received a dump signal due to a collective timeout from ",), "collective_timeout", HANG,
        note="printed on the ranks that did not time out themselves: a cascade"),
    Cpp("torch.pgnccl.dump_signal_observed", PG,
        "Observed flight recorder dump signal from another rank via TCPStore.",
        ("Observed flight recorder dump signal from another rank via TCPStore.",),
        "collective_timeout", HANG, note="another rank timed out first: a cascade"),
    Cpp("torch.pgnccl.desync_lagging", PG,
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        ("the lagging/dead/mismatched ranks that caused the desync are:",), "desync",
        ("app.collective_mismatch", "app.hang")),
    # --- ProcessGroupNCCL: communicator set-up
    Cpp("torch.pgnccl.unique_id_store", PG,
        "[{rank:d}] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
        "key-value store by key '{key}', but store->get('{key_2}') got error: {error}",
        (("] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value "
          "store by key '"), "', but store->get('", "') got error: "), "collective_timeout",
        ("app.hang", "launch.rank_crash"),
        note="the first collective: the other ranks wait on the store for rank 0's ncclUniqueId, "
        "and rank 0 never reached it (still busy before it, or crashed); the store itself worked "
        "for the rendezvous"),
    Cpp("torch.pgnccl.unique_id_roots", PG,
        "[{rank:d}] is setting up NCCL communicators and retrieving ncclUniqueId from roots via "
        "TCPStore by key '{key}', but got error: {error}",
        ("] is setting up NCCL communicators and retrieving ncclUniqueId from roots via TCPStore by key '",),
        "collective_timeout", ("app.hang", "launch.rank_crash"),
        note="2.8+: the scalable initialisation's form of torch.pgnccl.unique_id_store"),
    Cpp("torch.pgnccl.no_gpus", PG, "ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
        ("ProcessGroupNCCL is only supported with GPUs, no GPUs found!",), "cuda_device",
        ("cuda.device_visibility",)),
    Cpp("torch.pgnccl.devices_unknown", PG,
        "Not able to create/get the NCCL Communicator since the GPU devices are not known",
        ("Not able to create/get the NCCL Communicator since the GPU devices are not known",),
        "cuda_device", ("cuda.device_visibility",)),
    Cpp("torch.pgnccl.device_constrained", PG,
        "Tensor found on device {device} but backend constrained to {bound}",
        ("Tensor found on device ", " but backend constrained to "), "cuda_device",
        ("cuda.device_visibility",),
        note="init_process_group(device_id=...) bound this rank to one GPU; a tensor is on another"),
    Cpp("torch.pgnccl.cpu_tensor", PG, "Tensors must be CUDA and dense",
        ("Tensors must be CUDA and dense",), "app_error",
        note="a CPU (or sparse) tensor given to the NCCL backend: the job's own code"),
    Cpp("torch.pgnccl.one_device_per_thread", PG,
        "Expecting one tensor only but got multiple. You are probably using multiple devices under "
        "one thread.", (("Expecting one tensor only but got multiple. You are probably using multiple "
                         "devices under one thread."),), "app_error"),
    Cpp("torch.pgnccl.barrier_device_guess", PG,
        "using GPU {device:d} to perform barrier as devices used by this process are currently "
        "unknown.", (" to perform barrier as devices used by this process are currently unknown.",),
        "info", ("cuda.device_visibility",), level="warning"),
    Cpp("torch.pgnccl.guessing_device", PG,
        "Guessing device ID based on global rank. This can cause a hang if rank to GPU mapping is "
        "heterogeneous.", ("Guessing device ID based on global rank",), "info",
        ("cuda.device_visibility",), level="warning"),
    Cpp("torch.pgnccl.destroy_not_called", PG,
        "WARNING: destroy_process_group() was not called before program exit, which can leak "
        "resources.", ("WARNING: destroy_process_group() was not called before program exit",), "info",
        level="warning", note="harmless at exit (2.6+): the job ended without tearing its groups down"),
    Cpp("torch.c10d.env_deprecated", C10D + "Utils.hpp",
        "Environment variable {old} is deprecated; use {new} instead",
        ("Environment variable ", " is deprecated; use "), "info", level="warning",
        note="NCCL_BLOCKING_WAIT / NCCL_ASYNC_ERROR_HANDLING... renamed TORCH_NCCL_*: still read"),
    # --- NCCLUtils: C10D_NCCL_CHECK and the sentence it adds for each ncclResult_t
    Cpp("torch.nccl.error_in", C10D + "NCCLUtils.hpp",
        "NCCL error in: {file}:{line:d}, {error}, NCCL version {nccl_version}",
        ("NCCL error in: ",), "info",
        pattern=r"NCCL error in: (?P<file>[^\n:]{1,200}):(?P<line>\d{1,10}), "
        r"(?P<error>[^\n,]{0,200}?), NCCL version (?P<nccl_version>[\w.+-]{1,40})",
        fields=("file", "line", "error", "nccl_version"),
        note="C10D_NCCL_CHECK; the error text is ncclGetErrorString's (knowledge.nccl_results), "
        "the next line the torch_detail sentence (torch.nccl.detail.*)"),
    Cpp("torch.nccl.timeout_in", C10D + "NCCLUtils.hpp", "NCCL timeout in: {file}:{line:d}",
        ("NCCL timeout in: ",), "comm_init",
        note="C10D_CHECK_TIMEOUT: a non-blocking NCCL call (communicator init, split, finalize) "
        "still in progress past TORCH_NCCL_NONBLOCKING_TIMEOUT"),
    Cpp("torch.nccl.detail.unhandled_cuda", NU,
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        ("ncclUnhandledCudaError: Call to CUDA function failed.",), "nccl_unhandled_cuda"),
    Cpp("torch.nccl.detail.system", NU,
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error.", ("ncclSystemError: System call (e.g. socket, malloc)",), "nccl_system"),
    Cpp("torch.nccl.detail.system_legacy", NU,
        "ncclSystemError: System call (socket, malloc, munmap, etc) failed.",
        ("ncclSystemError: System call (socket, malloc, munmap, etc) failed.",), "nccl_system"),
    Cpp("torch.nccl.detail.internal", NU,
        "ncclInternalError: Internal check failed.", ("ncclInternalError: Internal check failed.",),
        "nccl_internal", ("nccl.internal",),
        note="torch 1.x goes on: ' This is either a bug in NCCL or due to memory corruption'"),
    Cpp("torch.nccl.detail.invalid_argument", NU,
        "ncclInvalidArgument: Invalid value for an argument.",
        ("ncclInvalidArgument: Invalid value for an argument.",), "nccl_invalid"),
    Cpp("torch.nccl.detail.invalid_argument_legacy", NU,
        "ncclInvalidArgument: Invalid value for an argument (such as invalid pointer, device count, "
        "ip:host pair, etc).", ("ncclInvalidArgument: Invalid value for an argument (such as",),
        "nccl_invalid"),
    Cpp("torch.nccl.detail.invalid_usage", NU,
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",), "nccl_invalid"),
    Cpp("torch.nccl.detail.invalid_usage_legacy", NU,
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library (such as too many "
        "async ops, too many collectives at once, mixing streams in a group, etc).",
        ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library (such as",),
        "nccl_invalid"),
    Cpp("torch.nccl.detail.remote", NU,
        "ncclRemoteError: A call failed possibly due to a network error or a remote process "
        "exiting prematurely.", ("ncclRemoteError: A call failed possibly due to a network error",),
        "nccl_remote", ("launch.rank_crash", "net.ib_transport")),
    # --- ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    Cpp("torch.c10d.collective_mismatch", C10D + "ProcessGroupWrapper.cpp",
        "Detected mismatch between collectives on ranks. Rank {rank:d} is running collective: "
        "{collective}, but Rank {other_rank:d} is running collective: {other_collective}.",
        ("Detected mismatch between collectives on ranks. Rank ", " is running collective: ",
         ", but Rank "), "desync", ("app.collective_mismatch",)),
    # --- ProcessGroupGloo and its device factory
    Cpp("torch.gloo.full_mesh_failed", GLOO, "Gloo connectFullMesh failed with {what}",
        ("Gloo connectFullMesh failed with ",), "connection", ("net.unreachable", "net.socket_interface"),
        note="2.1+: gloo's pairs to every peer could not be opened (the pair's error follows)"),
    Cpp("torch.gloo.monitored_barrier", GLOO,
        "[Rank {rank:d}]: Rank {other_rank:d} failed to pass monitoredBarrier in {ms:d} ms",
        (" failed to pass monitoredBarrier in ",), "collective_timeout", ("app.hang", "launch.rank_crash"),
        note="monitored_barrier names the ranks that did not arrive: stuck, slow or dead"),
    Cpp("torch.gloo.no_address", C10D + "GlooDeviceFactory.cpp",
        "Unable to find address for: {interface}", ("Unable to find address for: ",), "connection",
        ("net.socket_interface",),
        note="GLOO_SOCKET_IFNAME names an interface without an address on this host"),
    Cpp("torch.gloo.hostname_unresolved", C10D + "GlooDeviceFactory.cpp",
        "Unable to resolve hostname to a (local) address",
        ("Unable to resolve hostname to a (local) address",), "connection",
        ("net.socket_interface", "net.unreachable"),
        note="gloo binds to what the host name resolves to: no entry in /etc/hosts or DNS"),
    # --- the store and its sockets
    Cpp("torch.c10d.socket_connect_timeout", SOCK,
        "The client socket has timed out after {timeout:w} while trying to connect to ({host}, "
        "{port:d}).", ("The client socket has timed out after {} while trying to connect to ({}, {}).",),
        "store_timeout", ("net.unreachable", "launch.rendezvous")),
    Cpp("torch.c10d.socket_connect_any_failed", SOCK,
        "The client socket has failed to connect to any network address of ({host}, {port:d}).",
        ("The client socket has failed to connect to any network address of ({}, {}).",),
        "store_timeout", ("net.unreachable", "launch.rendezvous")),
    Cpp("torch.c10d.socket_connect_failed", SOCK,
        "The client socket has failed to connect to {address:w} {error}.",
        ("The client socket has failed to connect to {} {}.",), "store_timeout", ("net.unreachable",)),
    Cpp("torch.c10d.socket_listen_failed", SOCK,
        "The server socket has failed to listen on any local network address.",
        ("The server socket has failed to listen on any local network address.",), "store_timeout",
        ("launch.port_in_use",), note="the bind error follows (EADDRINUSE: the port is taken)"),
    Cpp("torch.c10d.socket_bind_failed", SOCK,
        "The server socket has failed to bind to {address:w} {error}.",
        ("The server socket has failed to bind to {} {}.",), "store_timeout", ("launch.port_in_use",)),
    Cpp("torch.c10d.socket_server_init", SOCK, "The server socket cannot be initialized on {address:w} {error}.",
        ("The server socket cannot be initialized on {} {}.",), "info", level="warning",
        note=NEXT_ADDRESS + " (errno 97 is a host without IPv6)"),
    Cpp("torch.c10d.socket_client_init", SOCK,
        "The client socket cannot be initialized to connect to {address:w} {error}.",
        ("The client socket cannot be initialized to connect to {} {}.",), "info", level="warning",
        note=NEXT_ADDRESS),
    Cpp("torch.c10d.socket_resolve", SOCK,
        "The {family}network addresses of ({host}, {port:d}) cannot be retrieved (gai error: {gai:d} - "
        "{gai_text}).", ("network addresses of ({}, {}) cannot be retrieved (gai error: {} - {}).",),
        "info", level="warning",
        note=NEXT_ADDRESS + ": the other family (IPv4 after IPv6) is tried next"),
    Cpp("torch.c10d.store_client_retry", STORE,
        "TCP client failed to connect/validate to host {host}:{port:d} - retrying (try={attempt:d}, "
        "timeout={timeout_ms:d}ms, delay={delay_ms:d}ms): {error}",
        (("TCP client failed to connect/validate to host {}:{} - retrying (try={}, timeout={}ms, "
          "delay={}ms): {}"),), "info", level="warning",
        note="2.6+: the store's server is not up yet (rank 0 starts later); the client retries "
        "until its timeout, and only 'timed out' is a failure"),
    Cpp("torch.c10d.store_client_timeout", STORE,
        "TCP client failed to connect/validate to host {host}:{port:d} - timed out (try={attempt:d}, "
        "timeout={timeout_ms:d}ms): {error}",
        ("TCP client failed to connect/validate to host {}:{} - timed out (try={}, timeout={}ms): {}",),
        "store_timeout", ("net.unreachable", "launch.rendezvous"),
        note="2.6+: no store server answered at MASTER_ADDR:MASTER_PORT before the timeout"),
    Cpp("torch.c10d.recv_closed", C10D + "Utils.hpp",
        "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or "
        "crash?", ("Failed to recv, got 0 bytes. Connection was likely closed.",), "store_timeout",
        ("launch.rank_crash",),
        note="the store's server (rank 0 or the agent) closed the connection: its process ended"),
    Cpp("torch.c10d.send_closed", C10D + "Utils.hpp",
        "Failed to send, sent 0 bytes. Connection was likely closed. Did the remote server shutdown or "
        "crash?", ("Failed to send, sent 0 bytes. Connection was likely closed.",), "store_timeout",
        ("launch.rank_crash",)),
    Cpp("torch.c10d.store_wait_timeout", STORE, "wait timeout after {timeout_ms:d}ms, keys: {keys}",
        ("wait timeout after {}ms, keys: {}",), "store_timeout", ("launch.rendezvous", "app.hang")),
    Cpp("torch.c10d.store_clients_timeout", STORE,
        "Timed out after {seconds:d} seconds waiting for clients. {joined:d}/{expected:d} clients joined.",
        ("Timed out after {} seconds waiting for clients. {}/{} clients joined.",), "store_timeout",
        ("launch.rendezvous",), note="the store's server waited for every worker; some never connected"),
    Cpp("torch.c10d.key_timeout", C10D + "FileStore.cpp", "Timeout waiting for key: {key}",
        ("Timeout waiting for key: ",), "store_timeout", ("launch.rendezvous", "app.hang")),
    Cpp("torch.c10d.socket_timeout", C10D + "Utils.hpp", "Socket Timeout", ("Socket Timeout",),
        "store_timeout", ("launch.rendezvous", "net.unreachable")),
    Cpp("torch.c10d.store_wait_timeout_legacy", STORE, "Wait timeout", ("Wait timeout",),
        "store_timeout", ("launch.rendezvous",)),
    Cpp("torch.c10d.connect_timeout_legacy", C10D + "Utils.cpp",
        "connect() timed out. Original timeout was {timeout_ms:d} ms.", ("connect() timed out.",),
        "store_timeout", ("net.unreachable", "launch.rendezvous"),
        note="torch <= 1.10: a client could not reach the store before the timeout"),
    # --- DDP's reducer and comm checks
    Cpp("torch.ddp.unfinished_reduction", RED,
        "Expected to have finished reduction in the prior iteration before starting a new one.",
        ("Expected to have finished reduction in the prior iteration",), "ddp_usage",
        ("app.unused_params",)),
    Cpp("torch.ddp.no_grad_params", RED,
        "Parameter indices which did not receive grad for rank {rank:d}: {indices}",
        ("Parameter indices which did not receive grad for rank ",), "ddp_usage", ("app.unused_params",)),
    Cpp("torch.ddp.ready_twice", RED, "Expected to mark a variable ready only once.",
        ("Expected to mark a variable ready only once.",), "ddp_usage", ("app.unused_params",),
        note="a parameter's gradient hook fired twice in one iteration: shared or reused parameters, "
        "reentrant checkpointing"),
    Cpp("torch.ddp.static_graph_changed", RED,
        "Your training graph has changed in this iteration, e.g., one parameter is unused in first "
        "iteration, but then got used in the second iteration. this is not compatible with "
        "static_graph set to True.", ("Your training graph has changed in this iteration",),
        "ddp_usage", ("app.unused_params",)),
    Cpp("torch.ddp.nothing_unused", RED,
        "find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
        "parameters in the forward pass.",
        ("find_unused_parameters=True was specified in DDP constructor",), "info", level="warning",
        note="a performance note, not a failure"),
    Cpp("torch.ddp.grad_strides", RED, "Grad strides do not match bucket view strides.",
        ("Grad strides do not match bucket view strides.",), "info", level="warning",
        note="a performance note (an extra copy per bucket), not a failure"),
    Cpp("torch.ddp.param_count_mismatch", C10D + "comm.cpp",
        "DDP expects same model across all ranks, but Rank {rank:d} has {count:d} params, while "
        "rank {other_rank:d} has inconsistent {other_count:d} params.",
        ("DDP expects same model across all ranks, but Rank ", " params, while rank ", " has inconsistent "),
        "ddp_usage", ("app.param_mismatch",)),
    Cpp("torch.ddp.param_size_mismatch", C10D + "comm.cpp",
        "params[{index:d}] in this process with sizes {sizes} appears not to match sizes of the "
        "same param in process 0.", (" appears not to match sizes of the same param in process 0.",),
        "ddp_usage", ("app.param_mismatch",)),
    Cpp("torch.ddp.param_stride_mismatch", C10D + "comm.cpp",
        "params[{index:d}] in this process with sizes {sizes} appears not to match strides of the "
        "same param in process 0.", (" appears not to match strides of the same param in process 0.",),
        "ddp_usage", ("app.param_mismatch",)),
    # --- the process group's backend for a tensor's device (2.0+)
    Cpp("torch.c10d.no_backend_for_device", C10D + "ProcessGroup.cpp",
        "No backend type associated with device type {device_type}",
        ("No backend type associated with device type ",), "app_error",
        note="a collective on a tensor whose device the group has no backend for: CPU tensors on a "
        "group made for 'nccl' alone (or GPU tensors on a gloo one); the job's own code"),
    # --- torch.distributed.rpc: an RPC got no answer in its timeout
    Cpp("torch.rpc.timeout", "torch/csrc/distributed/rpc/rpc_agent.h",
        "RPC ran for more than set timeout ({timeout_ms} ms) and will now be marked with an error",
        ("RPC ran for more than set timeout (",), "collective_timeout",
        ("app.hang", "launch.rank_crash", "net.unreachable"),
        note="the callee never answered: stuck in its own work, dead, or unreachable"),
)  # fmt: skip

ASSERTS: tuple[Assert, ...] = ()
