"""The nccl-log stream parser: every fixture, inline samples of other versions, negatives."""

from __future__ import annotations

import pytest

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.nccl import (
    NcclChannels,
    NcclCommInit,
    NcclCommLayout,
    NcclCudaDriver,
    NcclEnvSetting,
    NcclErrorChain,
    NcclEvent,
    NcclGdr,
    NcclIbDevice,
    NcclInitTiming,
    NcclNet,
    NcclPlugin,
    NcclTransport,
    NcclVersion,
    NcclWarn,
)
from nccl_doctor.parse.nccl_log import NcclLogParser
from tests.helpers import FORMATS, fixture_text, of_type, parse_stream


def parse(text: str) -> list:
    """All facts of ``text`` through a fresh parser."""
    return parse_stream(NcclLogParser(), text)


def fixture(name: str) -> list:
    return parse(fixture_text(f"nccl-log/{name}"))


# -- fixtures --------------------------------------------------------------


def test_bootstrap_many_interfaces_mlx4_roce() -> None:
    facts = fixture("bootstrap-many-veth-virbr-interfaces-mlx4-roce.txt")
    boot = [n for n in of_type(facts, NcclNet) if n.role == "bootstrap"]
    assert len(boot) == 1
    b = boot[0]
    assert b.host == "gpu-dev006"
    assert b.pid == 25486
    assert b.device == 0
    assert len(b.interfaces) == 16
    assert b.interfaces[0] == ("enp7s0", "10.10.112.56<0>")
    assert b.interfaces[1] == ("virbr0", "192.168.122.1<0>")
    assert b.interfaces[2] == ("vethee19468", "fe80::4463:98ff:fe1a:66c9%vethee19468<0>")
    assert not b.truncated
    assert b.cite.line == 7
    ib = next(n for n in of_type(facts, NcclNet) if n.role == "ib")
    assert ib.ib_devices == (("mlx4_0", 1, "RoCE"),)
    assert (ib.oob_interface, ib.oob_address) == ("enp7s0", "10.10.112.56<0>")
    assert ib.relaxed_ordering is False
    selected = next(n for n in of_type(facts, NcclNet) if n.role == "selected")
    assert selected.net == "IB"
    plugin = of_type(facts, NcclPlugin)[0]
    assert (plugin.plugin_type, plugin.name, plugin.loaded, plugin.internal) == (
        "NET",
        "libnccl-net.so",
        False,
        True,
    )
    # the app's own prints before NCCL's lines are not this kind's
    assert min(f.cite.line for f in facts) == 7


def test_h100_ib_completion_error_4_with_chains() -> None:
    facts = fixture("h100-multihost-ib-warn-error4-vendor81-interleaved.txt")
    warns = of_type(facts, NcclWarn)
    assert [w.host for w in warns] == ["H100-2", "H100-1"]
    w = warns[0]
    assert (w.file, w.source_line) == ("transport/net_ib.cc", 1295)
    assert (w.pid, w.tid, w.device) == (19989, 20082, 1)
    assert w.ib_status == 4
    assert w.ib_status_name == "IBV_WC_LOC_PROT_ERR"
    assert w.ib_opcode == 32564
    assert w.ib_vendor_err == 81
    assert w.ib_request == "Send"
    assert w.peer == "fe80::966d:ae03:8b:df78%ib0<53249>"
    assert w.message.startswith("NET/IB : Got completion from peer")
    chains = of_type(facts, NcclErrorChain)
    assert len(chains) == 2
    c = chains[0]
    assert c.frames == (("transport/net.cc", 1008, 6), ("proxy.cc", 679, 6), ("proxy.cc", 858, 6))
    assert (c.result_code, c.result_name, c.thread) == (6, "ncclRemoteError", "Proxy Thread")
    assert c.warn_file == "transport/net_ib.cc:1295"
    assert c.warn_message == w.message
    assert c.cite.line == 2
    assert (c.host, c.pid, c.tid) == ("H100-2", 19989, 20082)
    assert chains[1].host == "H100-1"
    assert chains[1].cite.line == 7


def test_k8s_ib_plugin_status_12_gids() -> None:
    facts = fixture("k8s-ib-plugin-warn-status12-vendor129-ipv6-gid.txt")
    warns = of_type(facts, NcclWarn)
    assert len(warns) == 3
    w = warns[0]
    assert (w.file, w.source_line) == ("ib_plugin.c", 1615)
    assert w.host == "kp-ddp-worker-0"
    assert (w.ib_status, w.ib_status_name) == (12, "IBV_WC_RETRY_EXC_ERR")
    assert (w.ib_opcode, w.ib_vendor_err, w.ib_request) == (0, 129, "Recv")
    assert w.peer == "10.216.210.236<54862>"
    assert w.local_gid == "fd00:1148:9000:5000:4:200:3:ff22"
    assert w.remote_gid == "fd00:1148:9000:5000:4:200:3:ff1f"
    assert warns[1].ib_opcode == 32616
    assert warns[2].peer == "10.216.210.236<49892>"
    chains = of_type(facts, NcclErrorChain)
    assert len(chains) == 3
    assert chains[0].thread == "Progress Thread"
    assert chains[0].frames[0] == ("transport/net.cc", 1302, 6)
    # the stored excerpt ends before the last chain reached its thread's top
    assert chains[2].thread is None
    assert len(chains[2].frames) == 2
    assert chains[2].warn_file == "ib_plugin.c:1615"


def test_mpirun_tag_output_roce_ten_nics() -> None:
    facts = fixture("mpirun-tag-output-roce-10nic-profiler-plugin.txt")
    ibs = [n for n in of_type(facts, NcclNet) if n.role == "ib"]
    assert len(ibs) == 2  # two processes, one line each
    ib = ibs[0]
    assert ib.rank == 2  # from [1,2]<stdout>:
    assert ib.host == "aiplatform-wlf2-ge78-70"
    assert len(ib.ib_devices) == 10
    assert ib.ib_devices[9] == ("mlx5_9", 1, "RoCE")
    assert ib.relaxed_ordering is True
    assert (ib.oob_interface, ib.oob_address) == ("bond0", "10.82.177.33<0>")
    prof = of_type(facts, NcclPlugin)[0]
    assert (prof.plugin_type, prof.name, prof.loaded) == ("PROFILER", "libnccl-profiler.so", False)
    init = of_type(facts, NcclCommInit)[0]
    assert init.phase == "start"
    assert init.function == "ncclCommInitRank"
    assert (init.comm_rank, init.nranks, init.cuda_dev, init.nvml_dev) == (0, 4, 0, 0)
    assert (init.bus_id_raw, init.bus_id) == ("19000", "00000000:19:00.0")
    assert init.comm_id == "0xd37e70d13f797e7e"
    assert init.comm == "0x55fa0e00e740"
    assert init.rank == 0
    assert (init.host, init.pid) == ("aiplatform-wlf2-ge78-72", 58070)


def test_nccl_247_socket_banner_and_env() -> None:
    facts = fixture("nccl-2.4.7-two-nodes-net-socket-ib0-interleaved.txt")
    versions = of_type(facts, NcclVersion)
    assert len(versions) == 1
    v = versions[0]
    assert v.banner is True
    assert (v.version, v.cuda_version, v.version_text) == ("2.4.7", "10.0", "2.4.7+cuda10.0")
    assert (v.major, v.minor, v.patch) == (2, 4, 7)
    assert v.cite.line == 5
    sockets = [n for n in of_type(facts, NcclNet) if n.role == "socket"]
    assert len(sockets) == 8
    assert {s.host for s in sockets} == {"master_node", "secondary_node"}
    assert sockets[0].interfaces == (("ib0", "192.168.11.1<0>"),)
    assert any(s.interfaces == (("ib0", "192.168.11.2<0>"),) for s in sockets)
    env = of_type(facts, NcclEnvSetting)
    assert len(env) == 4
    assert {(e.name, e.value) for e in env} == {("NCCL_IB_DISABLE", "0")}
    assert {e.pid for e in env} == {20, 21, 22, 23}
    plugins = of_type(facts, NcclPlugin)
    assert all(p.loaded is False and p.name == "libnccl-net.so" for p in plugins)
    ib = next(n for n in of_type(facts, NcclNet) if n.role == "ib")
    assert ib.ib_devices == (("mlx5_0", 1, "IB"),)


def test_nccl_256_old_ring_lines_fold_into_one_transport() -> None:
    facts = fixture("nccl-2.5.6-rank-bracket-prefix-old-ring-tree-format.txt")
    transports = of_type(facts, NcclTransport)
    assert len(transports) == 1
    t = transports[0]
    assert (t.transport, t.kind, t.comm_rank) == ("P2P/IPC", "P2P", 155)
    assert t.peer_ranks == (153, 154, 157)
    assert t.lines == 3
    assert t.rank == 155  # the [155] launcher prefix
    assert t.cite.line == 8
    ib = next(n for n in of_type(facts, NcclNet) if n.role == "ib")
    assert [d[2] for d in ib.ib_devices] == ["IB", "IB", "IB", "RoCE", "IB"]
    boot = next(n for n in of_type(facts, NcclNet) if n.role == "bootstrap")
    assert boot.interfaces == (("eth0", "10.100.62.64<0>"),)


def test_gin_ras_comm_init_rank_config() -> None:
    facts = fixture("nccl-gin-ras-commInitRankConfig-redacted-ip.txt")
    inits = of_type(facts, NcclCommInit)
    assert [i.comm_rank for i in inits] == [5, 3, 2, 1]
    i = inits[0]
    assert i.function == "ncclCommInitRankConfig"
    assert (i.nranks, i.cuda_dev, i.nvml_dev) == (8, 5, 5)
    assert (i.bus_id_raw, i.bus_id) == ("97000", "00000000:97:00.0")
    assert i.rank == 5
    assert {x.comm_id for x in inits} == {"0x673ba095326ff9de"}
    ib = next(n for n in of_type(facts, NcclNet) if n.role == "ib")
    assert ib.oob_address == "x.x.x.x<0>"
    assert ib.relaxed_ordering is True
    plugins = {(p.plugin_type, p.name, p.loaded) for p in of_type(facts, NcclPlugin)}
    assert ("GIN", "GIN_IB_GDAKI", True) in plugins
    assert ("RMA", "GIN_IB_PROXY", True) in plugins
    assert ("NET", "IB", True) in plugins
    assert ("GIN", "libnccl-gin.so", False) in plugins


def test_torch_lines_mentioning_nccl_version_are_not_consumed() -> None:
    text = (FORMATS.parents[2] / "examples" / "h200-cuda-999" / "train.log").read_text(
        errors="replace"
    )
    parser = NcclLogParser()
    taken = [line for line in lines_of(text) if _offer(parser, line)]
    assert taken == []
    assert parser.finish() == []


def _offer(parser: NcclLogParser, line) -> bool:
    if not any(a in line.raw for a in parser.anchors):
        return False
    took = parser.feed(line)
    assert parser.take() == [] or took
    return took


# -- inline samples of other versions -------------------------------------

INIT_2_19 = """\
node1:1234:1234 [0] NCCL INFO cudaDriverVersion 12020
node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation
NCCL version 2.19.3+cuda12.3
node1:1234:1300 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1
node1:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>
node1:1234:1300 [0] NCCL INFO Using non-device net plugin version 0
node1:1234:1300 [0] NCCL INFO Using network IB
node1:1234:1300 [0] NCCL INFO comm 0x55d0c0a0b0c0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x7d8c4b7a1e2f3a4b - Init START
node1:1234:1300 [0] NCCL INFO Setting affinity for GPU 0 to ffff,ffffffff
node1:1234:1300 [0] NCCL INFO NVLS multicast support is not available on dev 0
node1:1234:1300 [0] NCCL INFO comm 0x55d0c0a0b0c0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
node1:1234:1300 [0] NCCL INFO Channel 00/02 :    0   7   6   5   4   3   2   1   8  15  14  13  12  11  10   9
node1:1234:1300 [0] NCCL INFO Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8
node1:1234:1300 [0] NCCL INFO P2P Chunksize set to 131072
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
node1:1234:1300 [0] NCCL INFO Channel 01/0 : 9[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 7[7] via P2P/IPC/read
node1:1234:1300 [0] NCCL INFO Channel 01/0 : 0[0] -> 7[7] via P2P/IPC/read
node1:1234:1300 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 3 <= 4), read 1
node1:1234:1300 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 18000 / HCA 0 (distance 3 <= 4), read 1
node1:1234:1300 [0] NCCL INFO Connected all rings
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0/GDRDMA
node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0(1)/GDRDMA
node1:1234:1300 [0] NCCL INFO Connected all trees
node1:1234:1300 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL
node1:1234:1300 [0] NCCL INFO comm 0x55d0c0a0b0c0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0x7d8c4b7a1e2f3a4b - Init COMPLETE
"""  # noqa: E501


def test_init_sequence_2_19() -> None:
    facts = parse(INIT_2_19)
    assert of_type(facts, NcclCudaDriver)[0].version == 12020
    assert of_type(facts, NcclCudaDriver)[0].version_text == "12.2"
    v = of_type(facts, NcclVersion)[0]
    assert (v.version, v.cuda_version, v.banner) == ("2.19.3", "12.3", True)
    boot = next(n for n in of_type(facts, NcclNet) if n.role == "bootstrap")
    assert boot.interfaces == (("eth0", "10.0.0.1<0>"),)
    plugin = of_type(facts, NcclPlugin)[0]
    assert (plugin.name, plugin.loaded, plugin.internal) == ("libnccl-net.so", False, True)
    env = {e.name: e.value for e in of_type(facts, NcclEnvSetting)}
    assert env == {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_P2P_LEVEL": "NVL"}
    phases = [(i.phase, i.comm_rank, i.nranks) for i in of_type(facts, NcclCommInit)]
    assert phases == [("start", 0, 16), ("complete", 0, 16)]
    assert of_type(facts, NcclCommInit)[0].function is None
    layout = of_type(facts, NcclCommLayout)[0]
    assert (layout.n_nodes, layout.local_ranks, layout.local_rank, layout.mnnvl) == (2, 8, 0, 0)
    assert layout.comm == "0x55d0c0a0b0c0"
    events = [(e.event, e.detail) for e in of_type(facts, NcclEvent)]
    assert ("nvls-support", (("available", "0"), ("dev", "0"))) in events
    assert ("connected-rings", ()) in events
    assert ("connected-trees", ()) in events
    gdr = of_type(facts, NcclGdr)
    assert len(gdr) == 1  # the same line twice in one process is one fact
    assert (gdr[0].enabled, gdr[0].gpu, gdr[0].hca, gdr[0].read) == (True, "18000", "0", True)
    assert (gdr[0].distance, gdr[0].distance_limit) == (3, 4)
    by = {(t.transport, t.direction): t for t in of_type(facts, NcclTransport)}
    assert set(by) == {
        ("NET/IB/0/GDRDMA", "receive"),
        ("P2P/IPC/read", None),
        ("NET/IB/0(1)/GDRDMA", "send"),
    }
    recv = by[("NET/IB/0/GDRDMA", "receive")]
    assert (recv.comm_rank, recv.peer_ranks, recv.lines) == (0, (8, 9), 3)
    assert (recv.kind, recv.net, recv.net_dev, recv.gdr) == ("NET", "IB", 0, True)
    p2p = by[("P2P/IPC/read", None)]
    assert (p2p.peer_ranks, p2p.lines, p2p.gdr) == ((1, 7), 3, False)
    send = by[("NET/IB/0(1)/GDRDMA", "send")]
    assert (send.net_dev, send.proxy_rank) == (0, 1)


NEWER = """\
host-a:100:100 [2] NCCL INFO NCCL version 2.28.3+cuda12.9
host-a:100:100 [2] NCCL INFO Bootstrap: Using ib0:10.1.2.3<0>
host-a:100:100 [2] NCCL INFO Bootstrap: Using mlx5_0:1
host-a:100:100 [2] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 context=0x5612a0 pciPath=/sys/devices/pci0000:00/0000:00:01.0 ar=1
host-a:100:100 [2] NCCL INFO ncclCommSplit comm 0x7f00aa001000 rank 2 nranks 4 cudaDev 2 nvmlDev 2 busId 3f000 parent 0x7f00aa000800 splitCount 1 color 1 key 2- Init START
host-a:100:100 [2] NCCL INFO GPU Direct RDMA Enabled for GPU 3 / HCA 0 (distance 3 <= 4), read 1 mode Default
host-a:100:100 [2] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
host-a:100:100 [2] NCCL INFO Channel 00/1 : 2[2] -> 3[3] via P2P/CUMEM/read
host-a:100:100 [2] NCCL INFO Channel 00 : 2[2] -> 1[1] via SHM/direct/direct
host-a:100:100 [2] NCCL INFO ncclCommSplit comm 0x7f00aa001000 rank 2 nranks 4 cudaDev 2 nvmlDev 2 busId 3f000 parent 0x7f00aa000800 splitCount 1 color 1 key 2 - Init COMPLETE
host-a:100:100 [2] NCCL INFO Init timings - ncclCommSplit: rank 2 nranks 4 total 0.52 (kernels 0.00, alloc 0.01, bootstrap 0.02, allgathers 0.01, topo 0.30, graphs 0.05, connections 0.10, rest 0.03)
host-a:100:100 [2] NCCL INFO comm 0x7f00aa001000 rank 2 nranks 4 cudaDev 2 busId 3f000 - Abort COMPLETE
host-a:100:100 [2] NCCL INFO comm 0x7f00aa001000 rank 2 nranks 4 cudaDev 2 busId 3f000 - Destroy COMPLETE
"""  # noqa: E501


def test_split_timings_abort_2_28() -> None:
    facts = parse(NEWER)
    v = of_type(facts, NcclVersion)[0]
    assert (v.version, v.cuda_version, v.banner) == ("2.28.3", "12.9", False)
    inits = of_type(facts, NcclCommInit)
    assert [i.phase for i in inits] == ["start", "complete", "abort", "destroy"]
    s = inits[0]
    assert s.function == "ncclCommSplit"
    assert (s.parent_comm, s.split_count, s.color, s.key) == ("0x7f00aa000800", 1, 1, 2)
    assert s.bus_id == "00000000:3F:00.0"
    assert s.comm_id is None
    assert inits[2].cuda_dev == 2
    assert inits[2].nvml_dev is None
    timing = of_type(facts, NcclInitTiming)[0]
    assert (timing.function, timing.comm_rank, timing.nranks, timing.total_s) == (
        "ncclCommSplit",
        2,
        4,
        0.52,
    )
    assert dict(timing.phases_s)["topo"] == 0.30
    assert len(timing.phases_s) == 8
    boots = [n for n in of_type(facts, NcclNet) if n.role == "bootstrap"]
    assert boots[0].interfaces == (("ib0", "10.1.2.3<0>"),)
    assert boots[1].ib_devices == (("mlx5_0", 1, None),)
    assert boots[1].interfaces == ()
    dev = of_type(facts, NcclIbDevice)[0]
    assert (dev.index, dev.name, dev.dev_name, dev.port, dev.link_layer) == (
        0,
        "mlx5_0",
        "uverbs0",
        1,
        "IB",
    )
    assert (dev.provider, dev.speed_mbits_s, dev.adaptive_routing) == ("Mlx5", 400000, True)
    gdr = of_type(facts, NcclGdr)[0]
    assert (gdr.gpu, gdr.mode, gdr.read) == ("3", "Default", True)
    rings = next(e for e in of_type(facts, NcclEvent) if e.event == "connected-rings")
    assert rings.detail == (("pxn", "0"), ("gdr", "1"))
    kinds = {t.transport: t.kind for t in of_type(facts, NcclTransport)}
    assert kinds == {"P2P/CUMEM/read": "P2P", "SHM/direct/direct": "SHM"}


OLD_2_4 = """\
gpu1:300:300 [0] NCCL INFO nranks 8
gpu1:300:310 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/IB/0/GDRDMA
gpu1:300:310 [0] NCCL INFO Ring 00 : 7 -> 0 [receive] via NET/IB/0
gpu1:300:310 [0] NCCL INFO Ring 01 : 0[0] -> 1[1] via P2P/direct pointer
gpu1:300:310 [0] NCCL INFO Ring 00 : 0[0] -> 3[3] via direct shared memory
gpu1:300:310 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 'mlx5_0' (no module or not supported by GPU)
gpu1:300:310 [0] NCCL INFO comm 0x7f4a2c001c20 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE

gpu1:300:320 [0] include/socket.h:390 NCCL WARN Connect to 10.0.0.2<43210> failed : Connection refused
gpu1:300:320 [0] NCCL INFO include/socket.h:412 -> 2
gpu1:300:320 [0] NCCL INFO bootstrap.cc:95 -> 2
gpu1:300:320 [0] NCCL INFO init.cc:679 -> 2 [Async thread]
gpu1:300:300 [0] NCCL INFO init.cc:815 -> 2
"""  # noqa: E501


def test_old_2_4_formats() -> None:
    facts = parse(OLD_2_4)
    init = of_type(facts, NcclCommInit)
    assert (init[0].phase, init[0].nranks, init[0].comm_rank) == ("init", 8, None)
    assert (init[1].phase, init[1].cuda_dev, init[1].nvml_dev, init[1].bus_id) == (
        "complete",
        0,
        0,
        None,
    )
    by = {(t.transport, t.direction): t for t in of_type(facts, NcclTransport)}
    assert by[("NET/IB/0/GDRDMA", "send")].peer_ranks == (1,)
    assert by[("NET/IB/0", "receive")].comm_rank == 0
    assert by[("NET/IB/0", "receive")].peer_ranks == (7,)
    assert by[("NET/IB/0", "receive")].gdr is False
    assert by[("P2P/direct pointer", None)].kind == "P2P"
    assert by[("direct shared memory", None)].kind == "SHM"
    gdr = of_type(facts, NcclGdr)[0]
    assert (gdr.enabled, gdr.net, gdr.gpu, gdr.hca, gdr.hca_name) == (
        False,
        "IB",
        "0[0]",
        "0",
        "mlx5_0",
    )
    assert gdr.reason == "no module or not supported by GPU"
    warn = of_type(facts, NcclWarn)[0]
    assert (warn.file, warn.source_line) == ("include/socket.h", 390)
    assert (warn.call, warn.peer, warn.os_error, warn.errno) == (
        "connect",
        "10.0.0.2<43210>",
        "Connection refused",
        111,
    )
    chains = of_type(facts, NcclErrorChain)
    assert len(chains) == 2
    assert chains[0].frames[-1] == ("init.cc", 679, 2)
    assert (chains[0].thread, chains[0].result_name) == ("Async thread", "ncclSystemError")
    assert chains[0].warn_message == "Connect to 10.0.0.2<43210> failed : Connection refused"
    # the main thread's frame is a chain of its own, with no WARN of its thread
    assert chains[1].frames == (("init.cc", 815, 2),)
    assert chains[1].tid == 300
    assert chains[1].warn_message is None


WARNS = """\
h:1:2 [0] init.cc:598 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1c000
h:1:2 [0] NCCL INFO init.cc:1142 -> 5
h:1:3 [1] misc/shmutils.cc:87 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-AbCdEf (size 9637888), error: No space left on device (28)
h:1:3 [1] NCCL INFO misc/shmutils.cc:56 -> 2 (No space left on device)
h:1:4 [2] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory
h:1:5 [3] include/alloc.h:127 NCCL WARN Cuda failure 999 'unknown error'
h:1:5 [3] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'
h:1:6 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.3<52345> failed : Software caused connection abort
h:1:6 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer ng3-ib.example.org<51159>
h:1:7 [4] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes
h:1:8 [5] transport/nvls.cc:166 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 : CUDA error 401 'the operation cannot be performed in the present state'.
h:1:9 [6] transport/net_ib.cc:2543 NCCL WARN NET/IB: Got completion from peer 10.1.1.2<41234> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) reqSize=524288 vendor_err=129 req_type=Send localGid ::ffff:10.1.1.1 remoteGids::ffff:10.1.1.2 hca mlx5_3
h:1:10 [7] transport/net_ib.cc:95 NCCL WARN NET/IB : mlx5_1:1 async fatal event: local catastrophic error
h:1:11 [0] misc/ibvwrap.cc:66 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110
nccl_net_ofi_domain_get_ep:969 NCCL WARN NET/OFI Creating new endpoint for domain 0x7f9befa99380 failed: Invalid argument
"""  # noqa: E501


def test_warn_details() -> None:
    warns = of_type(parse(WARNS), NcclWarn)
    assert len(warns) == 13
    dup = warns[0]
    assert dup.ranks == (1, 0)
    assert (dup.bus_id_raw, dup.bus_id) == ("1c000", "00000000:1C:00.0")
    shm = warns[1]
    assert (shm.path, shm.size_bytes, shm.os_error, shm.errno) == (
        "/dev/shm/nccl-AbCdEf",
        9637888,
        "No space left on device",
        28,
    )
    reg = warns[2]
    assert (reg.call, reg.os_error, reg.errno) == ("ibv_reg_mr", "Cannot allocate memory", 12)
    assert (warns[3].cuda_error_code, warns[3].cuda_error) == (999, "unknown error")
    assert (warns[4].cuda_error_code, warns[4].cuda_error) == (None, "out of memory")
    conn = warns[5]
    assert (conn.call, conn.peer, conn.os_error, conn.errno) == (
        "connect",
        "10.0.0.3<52345>",
        "Software caused connection abort",
        103,
    )
    assert warns[6].peer == "ng3-ib.example.org<51159>"
    assert (warns[7].path, warns[7].size_bytes) == ("/dev/shm/nccl-fjwOOB", 5967876)
    nvls = warns[8]
    assert (nvls.cuda_error_code, nvls.size_bytes) == (401, 1073741824)
    assert nvls.file == "transport/nvls.cc"
    wc = warns[9]
    assert (wc.ib_status, wc.ib_status_name, wc.ib_opcode) == (12, "IBV_WC_RETRY_EXC_ERR", 1)
    assert (wc.ib_vendor_err, wc.ib_request, wc.ib_hca) == (129, "Send", "mlx5_3")
    assert (wc.local_gid, wc.remote_gid) == ("::ffff:10.1.1.1", "::ffff:10.1.1.2")
    assert wc.peer == "10.1.1.2<41234>"
    assert warns[10].ib_hca == "mlx5_1:1"
    assert (warns[11].call, warns[11].os_error, warns[11].errno) == (
        "ibv_modify_qp",
        "Connection timed out",
        110,
    )
    ofi = warns[12]
    assert (ofi.file, ofi.source_line) == ("nccl_net_ofi_domain_get_ep", 969)
    assert ofi.host is None
    chains = of_type(parse(WARNS), NcclErrorChain)
    assert [c.result_code for c in chains] == [5, 2]
    assert "Duplicate GPU" in (chains[0].warn_message or "")
    assert chains[1].os_error == "No space left on device"


#: aws-ofi-nccl's WARNs (its macros print the function and line, then ``NET/OFI``), in the
#: formats of its source at 1.7, 1.16, 1.21 and 1.4, with values made up
OFI_WARNS = """\
ip-10-0-1-12:1234:1345 [0] register_mr_buffers:577 NCCL WARN NET/OFI Unable to register memory (type = 2) for device 0. RC: -14, Error: Bad address
ip-10-0-1-12:1234:1345 [1] reg_mr_base:1633 NCCL WARN NET/OFI Couldn't register memory region with regattr. RC: -12, ERROR: Cannot allocate memory
ip-10-0-1-12:1234:1370 [3] process_err_completion:1109 NCCL WARN NET/OFI Request 0x7f3a2c01d8e0 completed with error. RC: 5. Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed)). Completed length: 0, Request: { dev: 1, size: 0 }
ip-10-0-1-12:1234:1371 [4] process_err_completion:261 NCCL WARN NET/OFI Request 0x7f3a2c01d8f0 (SEND) completed with error: err: 5, flags: 2, prov_errno: 15, strerror: Unreachable remote - never received a response, len: 0
ip-10-0-1-12:1234:1372 [5] ofi_process_cq:330 NCCL WARN NET/OFI Request 0x7f3a2c01d900 completed with error. RC: 5. Error: Input/output error. Completed length: 0, Request: { dev: 0 }
ip-10-0-1-12:1234:1373 [6] nccl_net_ofi_rdma_init:7800 NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data available
"""  # noqa: E501


def test_libfabric_plugin_warns() -> None:
    warns = of_type(parse(OFI_WARNS), NcclWarn)
    assert [(w.call, w.os_error, w.errno) for w in warns[:2]] == [
        ("fi_mr_regattr", "Bad address", 14),
        ("fi_mr_regattr", "Cannot allocate memory", 12),
    ]
    assert [(w.prov_errno, w.prov_error) for w in warns[2:5]] == [
        (4126, "Unresponsive receiver (reachable by EFA device but handshake failed)"),
        (15, "Unreachable remote - never received a response"),
        (None, "Input/output error"),
    ]
    assert (warns[2].file, warns[2].source_line) == ("process_err_completion", 1109)
    last = warns[5]
    assert (last.call, last.prov_errno, last.prov_error) == (None, None, None)
    assert last.message == "NET/OFI OFI fi_getinfo() call failed: No data available"


MISC = """\
h:1:1 [0] NCCL INFO NET/IB : No device found.
h:1:1 [0] NCCL INFO NET/Socket : Using [0]enp2s0f0:130.245.67.30<0> [1]vethfe5f4ae:fe80::d850:75ff:fe81:4b74%vethfe5f4ae<0> [2]ve
h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)
h:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v7 symbol.
h:1:1 [0] NCCL INFO NET/Plugin: Loaded coll plugin SHARP (v5)
h:1:1 [0] NCCL INFO TUNER/Plugin: Using internal tuner plugin.
h:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
h:1:1 [0] NCCL INFO Using network AWS Libfabric
h:1:1 [0] NCCL INFO Invalid value abc for NCCL_NTHREADS, using default 512.
h:1:1 [0] NCCL INFO NCCL_COLLNET_ENABLE set by environment to 1.
h:1:1 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 2. You can repress this message with NCCL_IGNORE_DISABLED_P2P=1.
h:1:1 [0] NCCL INFO Call to connect returned Connection refused, retrying
h:1:1 [0] NCCL INFO socketStartConnect: connect to 10.0.0.3<52345> returned Connection refused, retrying (1/34) after sleep for 100 msec
h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)
h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'
h:1:1 [0] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 801 'operation not supported'. Proceeding without NVLS support.
h:1:1 [0] NCCL INFO rank 3 nranks 8
"""  # noqa: E501


def test_misc_info_lines() -> None:
    facts = parse(MISC)
    nets = of_type(facts, NcclNet)
    assert (nets[0].no_device, nets[0].role) == (True, "ib")
    sock = nets[1]
    assert sock.role == "socket"
    assert [i[0] for i in sock.interfaces] == ["enp2s0f0", "vethfe5f4ae"]
    assert sock.truncated is True  # the pasted list was cut after "[2]ve"
    assert (nets[2].role, nets[2].net) == ("selected", "AWS Libfabric")
    plugins = [
        (p.plugin_type, p.name, p.version, p.loaded, p.internal) for p in of_type(facts, NcclPlugin)
    ]
    assert plugins == [
        ("NET", "AWS Libfabric", "v7", True, None),
        ("NET", None, None, None, None),
        ("COLLNET", "SHARP", "v5", True, None),
        ("TUNER", None, None, False, True),
        ("NET", "libnccl-net.so", None, False, True),
    ]
    env = of_type(facts, NcclEnvSetting)
    assert (env[0].name, env[0].value, env[0].invalid, env[0].default_value) == (
        "NCCL_NTHREADS",
        "abc",
        True,
        "512",
    )
    assert (env[1].name, env[1].value) == ("NCCL_COLLNET_ENABLE", "1")
    events = {e.event: dict(e.detail) for e in of_type(facts, NcclEvent)}
    assert events["p2p-disabled"] == {"gpus": "1,2"}
    assert events["nvls-bind-failed"]["cuda_error_code"] == "801"
    retries = [dict(e.detail) for e in of_type(facts, NcclEvent) if e.event == "connect-retry"]
    assert retries[0] == {"call": "connect", "os_error": "Connection refused", "errno": "111"}
    assert retries[1]["peer"] == "10.0.0.3<52345>"
    gdr = of_type(facts, NcclGdr)
    assert (gdr[0].enabled, gdr[0].hca, gdr[0].hca_name, gdr[0].reason) == (
        False,
        "0",
        "mlx5_0",
        "no module",
    )
    assert (gdr[1].enabled, gdr[1].hca_name, gdr[1].reason) == (True, "mlx5_1", None)
    old = of_type(facts, NcclCommInit)[0]
    assert (old.phase, old.comm_rank, old.nranks, old.rank) == ("init", 3, 8, 3)


@pytest.mark.parametrize(
    ("line", "host", "pid", "device"),
    [
        # cloud log collector prefix the reader does not know
        (
            (
                "  | 2025-05-16T16:39:59.220-07:00 | ip-10-36-29-253:80:2551 [0] NCCL INFO "
                "Channel 02/0 : 1[1] -> 0[0] via P2P/CUMEM/read"
            ),
            "ip-10-36-29-253",
            80,
            0,
        ),
        # host:pid:tid stripped by the poster, [dev] kept
        ("[4] NCCL INFO Ring 00 : 12[41000] -> 11[2d000] via P2P/IPC", None, None, 4),
        # NCCL_DEBUG_TIMESTAMP_FORMAT
        (
            (
                "[2024-05-01 10:00:00] node7:42:43 [3] NCCL INFO "
                "Channel 00/0 : 3[3] -> 2[2] via P2P/IPC"
            ),
            "node7",
            42,
            3,
        ),
    ],
)
def test_prefixes(line: str, host: str | None, pid: int | None, device: int) -> None:
    transports = of_type(parse(line + "\n"), NcclTransport)
    assert len(transports) == 1
    t = transports[0]
    assert (t.host, t.pid, t.device) == (host, pid, device)


@pytest.mark.parametrize(
    "line",
    [
        (
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
            "c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
            "NCCL version 2.26.2"
        ),
        (
            "[rank0]:[I1209 12:18:13.664 ProcessGroupNCCL.cpp:987] ProcessGroupNCCL environments: "
            "NCCL version: 2.26.2, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3"
        ),
        "NCCL version: 2.19.3-cuda12.2_1.0-1",
        "Getting this error while pretraining. Using NCCL version 2.19.3.",
        '  File "/usr/lib/python3/site-packages/foo.c:12", line 3, in bar',
        "I0101 00:00:00.000 123 foo.cc:45] something unrelated -> 3",
        "print('the NCCL INFO level is verbose')",
    ],
)
def test_not_nccl_lines_are_left(line: str) -> None:
    parser = NcclLogParser()
    (only,) = lines_of(line)
    assert parser.feed(only) is False
    assert parser.take() == []
    assert parser.finish() == []


def test_other_kinds_fixtures_are_not_consumed() -> None:
    for kind in ("nvidia-smi", "ibstat", "xid", "nccl-tests", "torchrun", "topo"):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            parser = NcclLogParser()
            for line in lines_of(text, path.name):
                if not any(a in line.raw for a in parser.anchors):
                    continue
                took = parser.feed(line)
                # nccl-tests output may hold NCCL's own banner, which is this kind's
                assert not took or "NCCL version" in line.raw, (path.name, line.raw)
            facts = parser.take() + parser.finish()
            assert all(isinstance(f, NcclVersion) for f in facts), path.name


def test_repeated_lines_of_one_process_are_emitted_once() -> None:
    text = "h:1:1 [0] NCCL INFO Using network IB\n" * 5 + "h:2:1 [1] NCCL INFO Using network IB\n"
    nets = of_type(parse(text), NcclNet)
    assert [(n.pid, n.cite.line) for n in nets] == [(1, 1), (2, 6)]


def test_chain_restarts_when_a_frame_repeats() -> None:
    text = "h:1:1 [0] NCCL INFO a.cc:1 -> 3\nh:1:1 [0] NCCL INFO b.cc:2 -> 3\n" * 2
    chains = of_type(parse(text), NcclErrorChain)
    assert [c.cite.line for c in chains] == [1, 3]
    assert all(len(c.frames) == 2 for c in chains)


CHANNELS = """\
vm:592:592 [0] NCCL INFO 64 coll channels, 64 collnet channels, 0 nvls channels, 64 p2p channels, 64 p2p channels per peer
node1:4101:4190 [0] NCCL INFO 24 coll channels, 24 nvls channels, 32 p2p channels, 2 p2p channels per peer
node1:4102:4191 [1] NCCL INFO 2 coll channels, 2 p2p channels, 2 p2p channels per peer
"""  # noqa: E501 -- NCCL's lines as printed (2.28.9 on the H200; older forms with fewer kinds)


def test_channel_counts_per_kind_as_printed() -> None:
    found = of_type(parse(CHANNELS), NcclChannels)
    assert [(c.coll, c.collnet, c.nvls, c.p2p, c.p2p_per_peer) for c in found] == [
        (64, 64, 0, 64, 64),
        (24, None, 24, 32, 2),
        (2, None, None, 2, 2),
    ]
    assert [(c.host, c.pid, c.device) for c in found] == [
        ("vm", 592, 0),
        ("node1", 4101, 0),
        ("node1", 4102, 1),
    ]


@pytest.mark.parametrize(
    "text",
    [
        *(
            p.read_bytes().decode("utf-8", errors="replace")
            for p in sorted((FORMATS / "nccl-log").glob("*.txt"))
        ),
        CHANNELS,
        INIT_2_19,
        NEWER,
        OLD_2_4,
        WARNS,
        MISC,
    ],
)
def test_anchors_lose_nothing(text: str) -> None:
    """Fed only the anchored lines (as the reader does) or every line: the same facts."""
    every = NcclLogParser()
    facts = []
    for line in lines_of(text):
        every.feed(line)
        facts.extend(every.take())
    facts.extend(every.finish())
    assert parse(text) == facts


def test_the_ib_transports_own_echo_of_nccl_ib_hca_is_a_setting() -> None:
    # net_ib.cc prints the device list itself ("set to", not "set by environment to")
    facts = parse(
        "node1:1234:1300 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1\n"
        "node1:1234:1300 [0] NCCL INFO P2P Chunksize set to 131072\n"
    )
    env = [(e.name, e.value) for e in of_type(facts, NcclEnvSetting)]
    assert env == [("NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1")]
