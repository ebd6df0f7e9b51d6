"""A port trained at half the rate of its host's others, read from a listing filtered to
rates (``ibstat | grep -e "CA '" -e Rate``): the slow rail of every collective. Equal rates,
or a full entry cut before its layer line beside ports of another layer, say nothing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_SLOW = "8-node all_reduce drops to half speed whenever gpu-h07 is in the allocation.\n"
_RATES = "```\n" + "".join(f"CA 'mlx5_{i}'\n\t\tRate: {{r{i}}}\n" for i in range(4)) + "```\n"


def _link(tmp_path: Path, text: str) -> list[str]:
    report = diagnose_text(tmp_path, text)
    return [f.summary for f in report.findings if f.id == "net.ib_link"]


def test_a_port_at_half_rate_in_a_filtered_listing_is_the_slow_link(tmp_path: Path) -> None:
    (summary,) = _link(tmp_path, _SLOW + _RATES.format(r0=400, r1=400, r2=200, r3=400))
    assert summary.startswith("active below the rate of their peers: mlx5_2 at 200 Gb/s.")


def test_equal_rates_say_nothing(tmp_path: Path) -> None:
    assert _link(tmp_path, _SLOW + _RATES.format(r0=400, r1=400, r2=400, r3=400)) == []


def test_a_port_cut_before_its_layer_beside_ib_ports_says_nothing(tmp_path: Path) -> None:
    """ibstatus entries of IB ports, then one cut before its link layer at 40 Gb/s (an
    Ethernet port, by its zero LIDs): no layer to compare it with."""
    entry = (
        "Infiniband device 'mlx5_{i}' port 1 status:\n"
        "        base lid:        0x{lid}\n"
        "        state:           4: ACTIVE\n"
        "        phys state:      5: LinkUp\n"
        "        rate:            {rate} Gb/sec (4X{speed}\n"
    )
    text = _SLOW + "ibstatus:\n```\n"
    for i in range(3):
        text += entry.format(i=i, lid=22 + i, rate=200, speed=" HDR)")
        text += "        link_layer:      InfiniBand\n\n"
    text += entry.format(i=3, lid=0, rate=40, speed="")
    assert _link(tmp_path, text + "```\n") == []


_PDSH = (
    "4-node job (gn09-gn12) runs 2x slower since gn12 came back from repair.\n"
    'pdsh -w gn[11-12] "ibstat | grep -E \\"^CA \'|Rate\\"" | sort\n```\n'
    "gn11: CA 'mlx5_0'\ngn11: \t\tRate: 100\ngn11: CA 'mlx5_1'\ngn11: \t\tRate: 100\n"
    "gn12: CA 'mlx5_0'\ngn12: \t\tRate: 100\ngn12: CA 'mlx5_1'\ngn12: \t\tRate: {rate}\n```\n"
)


def test_a_slow_port_behind_a_parallel_shells_hosts_is_named_with_its_host(
    tmp_path: Path,
) -> None:
    (summary,) = _link(tmp_path, _PDSH.format(rate=25))
    assert summary.startswith("active below the rate of their peers: mlx5_1 on gn12 at 25 Gb/s.")
    assert _link(tmp_path, _PDSH.format(rate=100)) == []
