"""nvidia-smi nvlink -s / -e: every fixture, newer drivers, NVML notes and negatives."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.topology import NvLink, NvLinkAllInactive, NvLinkErrorCount
from nccl_doctor.parse.nvlink import NvlinkParser
from tests.helpers import blocks, fixture_text, of_type, parse_blocks


def _links(text: str) -> list[NvLink]:
    return of_type(parse_blocks(NvlinkParser(), text), NvLink)


def test_a100_twelve_links_tab_space_indent_elided() -> None:
    links = _links(fixture_text("nvlink/a100-sxm4-80gb-12links-tab-indent-elided.txt"))
    assert len(links) == 12 + 12 + 1
    assert {(link.gpu_index, link.link) for link in links if link.gpu_index == 0} == {
        (0, i) for i in range(12)
    }
    assert all(link.active and link.speed_gbytes_s == 25.0 for link in links)
    first = links[0]
    assert first.gpu_name == "NVIDIA A100-SXM4-80GB"
    assert first.uuid == "GPU-ff8a40d4-abc6-08d1-f939-15848b5d4e05"
    assert (first.cite.line, first.cite.text) == (2, "\t Link 0: 25 GB/s")
    assert links[-1].gpu_index == 2


def test_h800_eight_links_and_elided_middle_gpus() -> None:
    relative = "nvlink/h800-8links-per-gpu-elided-middle.txt"
    found = blocks(NvlinkParser(), fixture_text(relative))
    assert [(b[0].number, b[-1].number) for b in found] == [(2, 30)]
    links = _links(fixture_text(relative))
    assert sorted({link.gpu_index for link in links}) == [0, 1, 7]
    assert len(links) == 24
    assert {link.speed_gbytes_s for link in links} == {26.562}
    gpu7 = [link for link in links if link.gpu_index == 7]
    assert gpu7[0].uuid == "GPU-474d838c-171f-d249-4f45-bbc01a8eb74a"
    assert gpu7[-1].link == 7


def test_v100_inactive_links_and_redacted_uuid() -> None:
    links = _links(fixture_text("nvlink/v100-sxm2-inactive-links-redacted-uuid.txt"))
    assert [(link.link, link.active) for link in links] == [
        (0, True),
        (1, True),
        (2, True),
        (3, False),
        (4, True),
        (5, False),
    ]
    assert {link.gpu_index for link in links} == {3}
    assert {link.uuid for link in links} == {None}
    assert links[3].state_text == "<inactive>"
    assert links[3].speed_gbytes_s is None
    assert links[0].speed_gbytes_s == 25.781


def test_all_links_inactive_note_per_gpu() -> None:
    text = (
        "# nvidia-smi nvlink -s\n"
        "GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-3fb142e7-7102-c7ac-bd5a-fc829e11ed84)\n"
        "NVML: Unable to retrieve NVLink information as all links are inActive\n"
        "GPU 1: NVIDIA A100-PCIE-40GB\n"
        "NVML: Unable to retrieve Nvlink information as all links are inActive\n"
    )
    facts = parse_blocks(NvlinkParser(), text)
    notes = of_type(facts, NvLinkAllInactive)
    assert [(n.gpu_index, n.uuid, n.cite.line) for n in notes] == [
        (0, "GPU-3fb142e7-7102-c7ac-bd5a-fc829e11ed84", 3),
        (1, None, 5),
    ]
    assert notes[1].gpu_name == "NVIDIA A100-PCIE-40GB"
    assert of_type(facts, NvLink) == []


def test_gb200_nvlink5_eighteen_links() -> None:
    header = "GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)\n"
    text = header + "".join(f"         Link {i}: 53.125 GB/s\n" for i in range(18))
    links = _links(text)
    assert len(links) == 18
    assert links[17].link == 17
    assert links[17].speed_gbytes_s == 53.125


def test_error_counters() -> None:
    text = (
        "GPU 2: Tesla V100-SXM2-32GB-LS (UUID: GPU-d9eeee97-c180-66de-23e0-d995387934dc)\n"
        "         Link 0: Replay Errors: 148\n"
        "         Link 0: Recovery Errors: 0\n"
        "         Link 0: CRC Errors: 65535\n"
        "\n"
        "         Link 1: Replay Errors: 0\n"
    )
    facts = parse_blocks(NvlinkParser(), text)
    counts = of_type(facts, NvLinkErrorCount)
    assert [(c.link, c.counter, c.count) for c in counts] == [
        (0, "Replay Errors", 148),
        (0, "Recovery Errors", 0),
        (0, "CRC Errors", 65535),
        (1, "Replay Errors", 0),
    ]
    assert counts[2].gpu_index == 2
    assert of_type(facts, NvLink) == []


def test_link_after_elision_has_no_gpu() -> None:
    text = (
        "GPU 0: NVIDIA H100 (UUID: GPU-aaaaaaaa-bbbb)\n"
        "\t Link 0: 26.562 GB/s\n....\n\t Link 7: <inactive>\n"
    )
    links = _links(text)
    assert [(link.gpu_index, link.link, link.active) for link in links] == [
        (0, 0, True),
        (None, 7, False),
    ]


def test_cut_speed_is_unknown() -> None:
    (link,) = _links("GPU 0: NVIDIA H100 (UUID: GPU-aaaaaaaa-bbbb)\n         Link 0: 26.5")
    assert (link.active, link.speed_gbytes_s, link.state_text) == (None, None, "26.5")


def test_ansi_and_throughput_lines() -> None:
    text = (
        "\x1b[1mGPU 0: NVIDIA H100 (UUID: GPU-aaaaaaaa-bbbb)\x1b[0m\n"
        "         Link 0: Data Tx: 1024 KiB\n"
        "         Link 0: 26.562 GB/s\n"
    )
    (link,) = _links(text)
    assert (link.gpu_index, link.speed_gbytes_s) == (0, 26.562)


@pytest.mark.parametrize(
    "relative",
    [
        "topo/b200-a4-nv18-8nic-nic-legend.txt",
        "ibstat/cx6dx-mt4125-roce-100g-2port.txt",
        "collect_env/h100-driver-580-torch-2.9.1-runpy-warning.txt",
        "ibstatus/roce-100g-edr-after-topo-legend.txt",
    ],
)
def test_other_kinds_give_no_nvlink_facts(relative: str) -> None:
    assert blocks(NvlinkParser(), fixture_text(relative)) == []


def test_gpu_list_without_links_gives_no_link_facts() -> None:
    text = "GPU 0: NVIDIA H200 (UUID: GPU-1b2c3d4e-0000-1111-2222-333344445555)\n"
    assert parse_blocks(NvlinkParser(), text) == []


def test_prose_mentioning_the_command_starts_nothing() -> None:
    text = "a good report should ask for nvidia-smi nvlink -s / -e error counters\n"
    assert blocks(NvlinkParser(), text) == []
    assert len(blocks(NvlinkParser(), "$ sudo nvidia-smi nvlink --status -i 0\n")) == 1


_GREPPED = (
    "$ nvidia-smi nvlink -s -i 5 | grep {flags}inactive\n"
    "\t Link 1: <inactive>\n\t Link 4: <inactive>\n"
)


def test_a_grep_for_inactive_links_leaves_out_links_that_run() -> None:
    links = _links(_GREPPED.format(flags=""))
    assert [(lk.gpu_index, lk.link, lk.active) for lk in links] == [
        (5, 1, False),
        (5, 4, False),
        (5, 0, True),
        (5, 2, True),
        (5, 3, True),
    ]
    assert links[2].cite.line == 1  # the command line: the grep left it out


def test_links_shown_without_a_grep_for_inactive_ones_are_all_there() -> None:
    # the GPU's own list: a link it does not show is not known to run
    (link,) = _links("$ nvidia-smi nvlink -s -i 5\n\t Link 3: <inactive>\n")
    assert (link.gpu_index, link.link, link.active) == (5, 3, False)
    # 'grep -v inactive' keeps the links that run: none are inferred
    assert [lk.active for lk in _links(_GREPPED.format(flags="-v "))] == [False, False]
