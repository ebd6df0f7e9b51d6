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


# -- a batch script that runs the program without srun -------------------------------------------

_NO_SRUN = (
    "The job asks Slurm for two nodes with eight GPUs each (num_nodes=2, devices=8). It never "
    "starts training: after 30 minutes it dies with a store timeout. {script} On the second "
    "node nvidia-smi shows the GPUs empty.\n"
)


def test_a_batch_script_without_srun_across_nodes_is_the_rendezvous(tmp_path: Path) -> None:
    script = "In the batch script the last line is just python train.py with our arguments."
    assert cue_says("no_srun", script)
    report = diagnose_text(tmp_path, _NO_SRUN.format(script=script))
    assert report.top(1) == ["launch.rendezvous"]


def test_the_other_node_running_nothing_is_a_node_that_never_joined() -> None:
    assert cue_says("rendezvous_wait", "On the second node there is no Python process at all.")
    assert cue_says(
        "rendezvous_wait", "On the second node nothing related to my job is running at all."
    )
    assert not cue_says("rendezvous_wait", "On the second node the Python process uses 70 GB.")


def test_a_batch_script_that_then_calls_python_itself_has_no_srun() -> None:
    said = "The batch script activates the environment and then calls python train.py as is."
    assert cue_says("no_srun", said)
    assert not cue_says("no_srun", said.replace("then calls python", "then calls srun python"))


def test_srun_in_the_batch_script_is_no_missing_srun(tmp_path: Path) -> None:
    script = "In the batch script the last line is srun python train.py with our arguments."
    assert not cue_says("no_srun", script)
    assert report_top(tmp_path, _NO_SRUN.format(script=script)) != ["launch.rendezvous"]


def test_a_batch_script_without_srun_on_one_node_is_no_missing_node(tmp_path: Path) -> None:
    text = (
        "On a single node with 8 GPUs the batch script just runs python train.py (it spawns "
        "the workers itself); training hangs at the first all_reduce.\n"
    )
    assert cue_says("no_srun", text)
    assert report_top(tmp_path, text) != ["launch.rendezvous"]


def report_top(tmp_path: Path, text: str) -> list[str]:
    return diagnose_text(tmp_path, text).top(1)


def test_no_srun_said_in_korean_japanese_chinese() -> None:
    assert cue_says(
        "no_srun", "스크립트 마지막 줄에서 바로 torchrun 을 실행합니다. srun 은 안 붙였어요."
    )
    assert cue_says("no_srun", "バッチスクリプトでは srun を使わずに torchrun を直接呼んでいます。")
    assert cue_says("no_srun", "sbatch 脚本里没有用 srun，直接调用 torchrun。")
    assert not cue_says("no_srun", "스크립트 마지막 줄에서 srun torchrun ... 을 실행합니다.")
