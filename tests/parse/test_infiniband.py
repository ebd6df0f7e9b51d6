"""ibstatus, ibstat, ibv_devinfo and ibdev2netdev: every fixture, variants and negatives."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.net import IbPort, NetDevMap
from nccl_doctor.parse.base import BlockParser
from nccl_doctor.parse.infiniband import (
    Ibdev2netdevParser,
    IbstatParser,
    IbstatusParser,
    IbvDevinfoParser,
)
from tests.helpers import blocks, fixture_text, of_type, parse_blocks

EXAMPLE = Path(__file__).parents[2] / "examples" / "h200-cuda-999" / "ibstatus.txt"


def _ports(parser: BlockParser, text: str) -> list[IbPort]:
    return of_type(parse_blocks(parser, text), IbPort)


# -- ibstatus ---------------------------------------------------------------------


def test_ibstatus_roce_after_topo_legend() -> None:
    text = fixture_text("ibstatus/roce-100g-edr-after-topo-legend.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(IbstatusParser(), text)] == [(16, 32)]
    mlx0, mlx1 = _ports(IbstatusParser(), text)
    assert (mlx0.tool, mlx0.device, mlx0.port) == ("ibstatus", "mlx5_0", 1)
    assert (mlx0.state, mlx0.state_code, mlx0.phys_state, mlx0.phys_state_code) == (
        "ACTIVE",
        4,
        "LinkUp",
        5,
    )
    assert (mlx0.rate_gbits_s, mlx0.link_width, mlx0.link_speed) == (100.0, "4X", "EDR")
    assert mlx0.rate_text == "100 Gb/sec (4X EDR)"
    assert mlx0.link_layer == "Ethernet"
    assert (mlx0.base_lid, mlx0.sm_lid) == (0, 0)
    assert mlx0.default_gid == "fe80:0000:0000:0000:8ae9:a4ff:fe9c:7f1a"
    assert mlx0.cite.line == 20  # the state line
    assert mlx1.device == "mlx5_1"


def test_ibstatus_h200_example_down_disabled_last_cut() -> None:
    text = EXAMPLE.read_bytes().decode("utf-8", errors="replace")
    ports = _ports(IbstatusParser(), text)
    assert [p.device for p in ports] == [
        "mlx5_11",
        "mlx5_2",
        "mlx5_3",
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
    ]
    assert {(p.state, p.phys_state) for p in ports} == {("DOWN", "Disabled")}
    mlx11, mlx2 = ports[0], ports[1]
    assert (mlx11.base_lid, mlx11.rate_gbits_s, mlx11.link_speed, mlx11.link_layer) == (
        65535,
        10.0,
        "SDR",
        "InfiniBand",
    )
    assert (mlx2.rate_gbits_s, mlx2.link_speed, mlx2.link_layer) == (40.0, "QDR", "Ethernet")
    last = ports[-1]
    assert (last.phys_state, last.phys_state_code, last.rate_gbits_s) == ("Disabled", 3, None)


def test_ibstatus_old_without_link_layer_and_unknown_values() -> None:
    text = (
        "Infiniband device 'mthca0' port 1 status:\n"
        "\tdefault gid:\t fe80:0000:0000:0000:0002:c902:0020:13d9\n"
        "\tbase lid:\t 0x3\n"
        "\tsm lid:\t\t 0x1\n"
        "\tstate:\t\t 2: INIT\n"
        "\tphys state:\t 5: LinkUp\n"
        "\trate:\t\t 2.5 Gb/sec (1X SDR)\n"
        "\n"
        "Infiniband device 'mthca0' port 2 status:\n"
        "\tdefault gid:\t unknown\n"
        "\tstate:\t\t unknown\n"
        "\trate:\t\t 10\n"
    )
    one, two = _ports(IbstatusParser(), text)
    assert (one.state, one.base_lid, one.sm_lid, one.rate_gbits_s, one.link_width) == (
        "INIT",
        3,
        1,
        2.5,
        "1X",
    )
    assert one.link_layer is None
    assert (two.port, two.default_gid, two.state, two.rate_gbits_s) == (2, None, None, None)


# -- ibstat -----------------------------------------------------------------------


def test_ibstat_sriov_vf_down_but_linkup() -> None:
    text = fixture_text("ibstat/cx6-mt4124-sriov-pod-down-linkup-lid65535.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(IbstatParser(), text)] == [(2, 18)]
    (port,) = _ports(IbstatParser(), text)
    assert (port.tool, port.device, port.port) == ("ibstat", "mlx5_7", 1)
    assert (port.state, port.state_code, port.phys_state) == ("DOWN", None, "LinkUp")
    assert (port.rate_gbits_s, port.base_lid, port.sm_lid, port.lmc) == (200.0, 65535, 1, 0)
    assert (port.ca_type, port.vendor_part_id, port.firmware_version) == (
        "MT4124",
        4124,
        "20.28.4000",
    )
    assert port.port_guid == "0x9aecdde4e1e642ba"
    assert port.sys_image_guid == "0x043f720300df3e00"
    assert port.capability_mask == "0x2651ec48"
    assert port.link_layer == "InfiniBand"
    assert port.cite.line == 10


def test_ibstat_cx6dx_roce_two_cas() -> None:
    ports = _ports(IbstatParser(), fixture_text("ibstat/cx6dx-mt4125-roce-100g-2port.txt"))
    assert [(p.device, p.state, p.rate_gbits_s, p.link_layer) for p in ports] == [
        ("mlx5_0", "ACTIVE", 100.0, "Ethernet"),
        ("mlx5_1", "ACTIVE", 100.0, "Ethernet"),
    ]
    assert {p.firmware_version for p in ports} == {"22.32.2004"}
    assert ports[1].node_guid == "0x0c42a103001dd12b"


def test_ibstat_polling_four_space_indent_redacted_guids() -> None:
    (port,) = _ports(
        IbstatParser(), fixture_text("ibstat/cx7-ib-down-polling-redacted-guids-4space-indent.txt")
    )
    assert (port.device, port.state, port.phys_state, port.rate_gbits_s) == (
        "mlx5_10",
        "DOWN",
        "Polling",
        10.0,
    )
    assert (port.base_lid, port.sm_lid) == (868, 334)
    assert (port.node_guid, port.sys_image_guid, port.port_guid) == (None, None, None)
    assert port.ca_type == "MT4129"


def test_ibstat_truncated_mlx5_10_disabled() -> None:
    text = fixture_text("ibstat/cx7-roce-mt4129-cx6-down-disabled-truncated.txt")
    ports = _ports(IbstatParser(), text)
    assert [p.device for p in ports] == ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert (ports[0].rate_gbits_s, ports[0].ca_type, ports[0].base_lid) == (200.0, "MT4129", 0)
    last = ports[2]
    assert (last.state, last.phys_state, last.ca_type, last.firmware_version) == (
        "DOWN",
        "Disabled",
        "MT4125",
        "22.31.1014",
    )
    assert (last.rate_gbits_s, last.link_layer) == (None, None)


def test_ibstat_single_port_form_and_fdr10() -> None:
    text = (
        "CA: 'mlx4_0'\n"
        "Port 1:\n"
        "State: Initializing\n"
        "Physical state: LinkUp\n"
        "Rate: 40 (FDR10)\n"
        "Base lid: 0\n"
        "SM lid: 0\n"
        "Link layer: InfiniBand\n"
    )
    (port,) = _ports(IbstatParser(), text)
    assert (port.device, port.state, port.rate_gbits_s, port.link_speed) == (
        "mlx4_0",
        "INIT",
        40.0,
        "FDR10",
    )


def test_ibstat_filtered_to_ca_and_rate_lines() -> None:
    """``ibstat | grep -e "CA '" -e Rate``: each CA's port, unnumbered, with its rate."""
    text = "CA 'mlx5_0'\n\t\tRate: 400\nCA 'mlx5_5'\n\t\tRate: 200\nCA 'mlx5_6'\n\t\tRate: 400\n"
    ports = _ports(IbstatParser(), text)
    assert [(p.device, p.port, p.state, p.rate_gbits_s) for p in ports] == [
        ("mlx5_0", None, None, 400.0),
        ("mlx5_5", None, None, 200.0),
        ("mlx5_6", None, None, 400.0),
    ]


def test_ibstat_behind_a_parallel_shells_host() -> None:
    """``pdsh -w gn[11-12] "ibstat | grep ..."``: ``gn11: `` before each line (a host without a
    dash, which the line reader leaves) names the port's host; the cited line keeps it."""
    text = (
        "gn11: CA 'mlx5_0'\ngn11: \t\tRate: 100\ngn11: CA 'mlx5_1'\ngn11: \t\tRate: 100\n"
        "gn12: CA 'mlx5_1'\ngn12: \t\tRate: 25\n"
    )
    ports = _ports(IbstatParser(), text)
    assert [(p.host, p.device, p.rate_gbits_s) for p in ports] == [
        ("gn11", "mlx5_0", 100.0),
        ("gn11", "mlx5_1", 100.0),
        ("gn12", "mlx5_1", 25.0),
    ]
    assert ports[2].cite.text == "gn12: \t\tRate: 25"
    # a key of ibstat's own is never taken for a host, nor a word before a line of another tool
    assert _ports(IbstatParser(), "CA 'mlx5_0'\n\tState: Active\n\tRate: 200\n")[0].host is None
    assert _ports(IbstatParser(), "worker: starting training\nnode: CA is fine\n") == []


# -- ibv_devinfo ------------------------------------------------------------------


def test_ibv_devinfo_infiniband_fragment_starts_inside_port() -> None:
    text = fixture_text("ibv_devinfo/cx7-infiniband-lids-partial.txt")
    orphan, mlx3 = _ports(IbvDevinfoParser(), text)
    assert (orphan.device, orphan.port, orphan.state, orphan.base_lid) == (
        None,
        None,
        "ACTIVE",
        1691,
    )
    assert (mlx3.tool, mlx3.device, mlx3.port) == ("ibv_devinfo", "mlx5_3", 1)
    assert (mlx3.state, mlx3.state_code, mlx3.base_lid, mlx3.sm_lid, mlx3.lmc) == (
        "ACTIVE",
        4,
        1690,
        1,
        0,
    )
    assert (mlx3.active_mtu, mlx3.max_mtu, mlx3.link_layer) == (4096, 4096, "InfiniBand")
    assert (mlx3.vendor_part_id, mlx3.firmware_version, mlx3.board_id) == (
        4126,
        "28.37.1700",
        "MT_0000000970",
    )
    assert mlx3.node_guid == "0x2dc3190f3d851cb6"
    assert mlx3.transport == "InfiniBand"
    assert mlx3.cite.line == 20


def test_ibv_devinfo_roce_fragment_starting_at_max_mtu() -> None:
    text = fixture_text("ibv_devinfo/h100-roce-cx7-starts-mid-port.txt")
    assert [(b[0].number, b[-1].number) for b in blocks(IbvDevinfoParser(), text)] == [(1, 29)]
    orphan, mlx2 = _ports(IbvDevinfoParser(), text)
    assert (orphan.device, orphan.state, orphan.link_layer) == (None, None, "Ethernet")
    assert (mlx2.device, mlx2.state, mlx2.vendor_part_id, mlx2.firmware_version) == (
        "mlx5_2",
        "ACTIVE",
        4129,
        "28.42.1000",
    )
    assert mlx2.link_layer == "Ethernet"


def test_ibv_devinfo_port_down_and_header_without_port() -> None:
    ports = _ports(
        IbvDevinfoParser(), fixture_text("ibv_devinfo/mixed-cx6dx-cx7-roce-partial-middle.txt")
    )
    (mlx12,) = ports  # mlx5_13 is cut before its port block
    assert (mlx12.device, mlx12.state, mlx12.state_code, mlx12.active_mtu) == (
        "mlx5_12",
        "DOWN",
        1,
        1024,
    )
    assert (mlx12.vendor_part_id, mlx12.sys_image_guid) == (4125, "0xa088c20300309a0c")


def test_ibv_devinfo_verbose_rate_and_phys_state() -> None:
    text = (
        "hca_id:\tmlx5_0\n"
        "\ttransport:\t\t\tInfiniBand (0)\n"
        "\tfw_ver:\t\t\t\t20.31.1014\n"
        "\tvendor_part_id:\t\t\t4123\n"
        "\tphys_port_cnt:\t\t\t1\n"
        "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
        "\tdevice_cap_flags:\t\t0xed721c36\n"
        "\t\t\t\t\tBAD_PKEY_CNTR\n"
        "\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_INIT (2)\n"
        "\t\t\tmax_mtu:\t\t4096 (5)\n"
        "\t\t\tactive_mtu:\t\t4096 (5)\n"
        "\t\t\tsm_lid:\t\t\t0\n"
        "\t\t\tport_lid:\t\t65535\n"
        "\t\t\tport_lmc:\t\t0x00\n"
        "\t\t\tlink_layer:\t\tInfiniBand\n"
        "\t\t\tactive_width:\t\t4X (2)\n"
        "\t\t\tactive_speed:\t\t50.0 Gbps (64)\n"
        "\t\t\tphys_state:\t\tLINK_UP (5)\n"
        "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0c42:a103:0003:b2a4\n"
    )
    (port,) = _ports(IbvDevinfoParser(), text)
    assert (port.state, port.phys_state, port.phys_state_code) == ("INIT", "LinkUp", 5)
    assert (port.rate_gbits_s, port.link_width, port.base_lid) == (200.0, "4X", 65535)


# -- ibdev2netdev -----------------------------------------------------------------

NETDEV = """\
mlx5_0   port  1  ==>  ibp26s0        (Down)
mlx5_1 port 1 ==> enp27s0f0np0 (Up)
0000:02:00.5 mlx5_2 (MT4116 - NA)  fw 12.23.1020 port 1 (DOWN  ) ==> ib2 (Down)
0000:b8:00.1 mlx5_13 (MT4123 - MCX653106A-ECAT) ConnectX-6 VPI adapter card, 100Gb/s (HDR100, \
EDR IB and 100GbE), dual-port QSFP56 fw 20.26.4012 port 1 (ACTIVE) ==> ib4 (Up) (o2ib)
0000:0c:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI fw 20.31.1014 port 1 (ACTIVE) \
==> ib0 (Up)
mlx4_0 port 1 <===> ib0
"""


def test_ibdev2netdev_plain_verbose_and_old_forms() -> None:
    maps = of_type(parse_blocks(Ibdev2netdevParser(), NETDEV), NetDevMap)
    assert [(m.device, m.port, m.netdev, m.netdev_up) for m in maps] == [
        ("mlx5_0", 1, "ibp26s0", False),
        ("mlx5_1", 1, "enp27s0f0np0", True),
        ("mlx5_2", 1, "ib2", False),
        ("mlx5_13", 1, "ib4", True),
        ("mlx5_0", 1, "ib0", True),
        ("mlx4_0", 1, "ib0", None),
    ]
    vf, card, hdr = maps[2], maps[3], maps[4]
    assert (vf.pci_address, vf.ca_type, vf.part_number, vf.description, vf.port_state) == (
        "0000:02:00.5",
        "MT4116",
        None,
        None,
        "DOWN",
    )
    assert card.description is not None
    assert card.description.endswith("dual-port QSFP56")
    assert (card.firmware_version, card.part_number) == ("20.26.4012", "MCX653106A-ECAT")
    assert (hdr.description, hdr.firmware_version, hdr.port_state) == (
        "ConnectX-6 VPI",
        "20.31.1014",
        "ACTIVE",
    )
    assert maps[1].cite.line == 2


def test_ibdev2netdev_stops_at_prose() -> None:
    text = "$ ibdev2netdev\nmlx5_3 port 1 ==> net1 (Down)\n[root@pod /]# ifconfig\n"
    assert [(b[0].number, b[-1].number) for b in blocks(Ibdev2netdevParser(), text)] == [(2, 2)]


# -- negatives --------------------------------------------------------------------

OTHER = [
    "topo/a100-nv12-17nic-bond-mlx5-legend.txt",
    "nvlink/h800-8links-per-gpu-elided-middle.txt",
    "collect_env/vllm-4x-t4-old-lscpu-layout-kvm.txt",
]


@pytest.mark.parametrize("relative", OTHER)
@pytest.mark.parametrize(
    "parser", [IbstatusParser(), IbstatParser(), IbvDevinfoParser(), Ibdev2netdevParser()]
)
def test_other_kinds_do_not_start_blocks(parser: BlockParser, relative: str) -> None:
    assert blocks(parser, fixture_text(relative)) == []


@pytest.mark.parametrize(
    ("parser", "relative"),
    [
        (IbstatParser(), "ibstatus/roce-100g-edr-after-topo-legend.txt"),
        (IbvDevinfoParser(), "ibstat/cx6dx-mt4125-roce-100g-2port.txt"),
        (IbstatusParser(), "ibv_devinfo/cx7-infiniband-lids-partial.txt"),
        (IbstatusParser(), "ibstat/cx7-roce-mt4129-cx6-down-disabled-truncated.txt"),
    ],
)
def test_ib_tools_do_not_read_each_other(parser: BlockParser, relative: str) -> None:
    assert blocks(parser, fixture_text(relative)) == []
