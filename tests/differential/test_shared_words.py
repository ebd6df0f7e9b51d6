"""Words with one definition serving a sign and the differential: the Chinese words for
several machines, an Xid said in a sentence, NCCL_P2P_DISABLE's values. Each reads the same
sentence the same way wherever it is read."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.context import context_of
from nccl_doctor.differential.prose import prose_symptom
from nccl_doctor.signs.net import PROSE_MULTI_NODE
from tests.helpers import critical_ids, cue_says, diagnose_text, facts_text

# -- several machines, in Chinese ---------------------------------------------------------------


def test_several_machines_in_chinese_span_nodes_for_sign_and_cue(tmp_path: Path) -> None:
    text = "用多个机器训练的时候 all_reduce 卡住不动，单卡没问题。\n"  # several machines: hangs
    assert cue_says("multi_node", text)
    assert facts_text(tmp_path, text).saw(PROSE_MULTI_NODE)
    assert context_of(facts_text(tmp_path, text)).multi_node


def test_one_machine_many_cards_in_chinese_is_one_node(tmp_path: Path) -> None:
    text = "单机多卡训练的时候 all_reduce 卡住不动，单卡没问题。\n"  # one machine, many cards
    assert not cue_says("multi_node", text)
    assert not facts_text(tmp_path, text).saw(PROSE_MULTI_NODE)


# -- an Xid said in a sentence ------------------------------------------------------------------


def test_an_xid_retold_opens_the_xid_class(tmp_path: Path) -> None:
    said = prose_symptom(facts_text(tmp_path, "The job hangs and dmesg shows Xid 79 on GPU 3.\n"))
    assert said is not None
    assert said[0] == "xid"


def test_an_xid_looked_for_is_no_xid_seen(tmp_path: Path) -> None:
    text = "The job hangs; we grep dmesg for any Xid 79 after every hang and the GPUs look fine.\n"
    said = prose_symptom(facts_text(tmp_path, text))
    assert said is None or said[0] != "xid"


# -- P2P off said to work under WSL: the values the P2P workaround's reading takes -------------

_WSL = (
    "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n"
    "Training with 2 GPUs under WSL hangs at the first all_reduce. With "
    "NCCL_P2P_DISABLE={value} it works.\n"
)


def test_p2p_off_said_to_work_under_wsl_is_wsl(tmp_path: Path) -> None:
    # 'ON', as knowledge.workarounds reads NCCL_P2P_DISABLE for the P2P rule
    report = diagnose_text(tmp_path, _WSL.format(value="ON"))
    assert report.top(1) == ["driver.wsl"]
    assert "NCCL_P2P_DISABLE" in next(f for f in report.findings if f.id == "driver.wsl").summary


def test_p2p_left_on_said_to_work_under_wsl_is_not_the_workaround(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _WSL.format(value="0"))
    wsl = [f for f in report.findings if f.id == "driver.wsl"]
    assert all("NCCL_P2P_DISABLE" not in f.summary for f in wsl)
    assert "driver.wsl" not in critical_ids(report)
