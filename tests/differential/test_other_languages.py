"""The reporter's core words in languages beyond English and Chinese (signs.languages): a hang,
slowness, a failure, a setting that made it work, several nodes, each read where the language
says it and not where it says the opposite ("не работает", "no funciona", "ohne Fehler")."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.differential.prose import prose_symptom
from nccl_doctor.signs.settings import settings_that_did_not_help, settings_that_worked
from tests.helpers import cue_says, diagnose_text, facts_text


@pytest.mark.parametrize(
    ("text", "cls"),
    [
        ("Обучение DDP на двух картах зависает на первом all_reduce.", "hang"),
        ("El entrenamiento con 2 GPUs se queda colgado en el primer all_reduce.", "hang"),
        ("DDP 2 GPU bị treo ở all_reduce đầu tiên.", "hang"),
        ("Das Training mit 4 GPUs hängt beim ersten all_reduce.", "hang"),
        ("2 GPU で学習すると最初の all_reduce で止まってしまいます。", "hang"),
        ("GPU 2장으로 학습하면 첫 all_reduce 에서 멈춥니다.", "hang"),
        ("2 GPU ile eğitim ilk all_reduce'da donuyor.", "hang"),
        ("Двухузловой all_reduce очень медленно работает, busbw 40 GB/s.", "slow"),
        ("all_reduce entre dos nodos es muy lento.", "slow"),
        ("all_reduce zwischen zwei Knoten ist sehr langsam.", "slow"),
        ("При запуске torchrun возникает ошибка в init_process_group.", "failure"),
        ("Beim Start von torchrun gibt es einen Fehler in init_process_group.", "failure"),
        ("torchrun 실행하면 init_process_group 에서 에러가 납니다.", "failure"),
    ],
)
def test_a_symptom_told_in_another_language_opens_its_class(
    tmp_path: Path, text: str, cls: str
) -> None:
    said = prose_symptom(facts_text(tmp_path, text + "\n"))
    assert said is not None
    assert said[0] == cls


@pytest.mark.parametrize(
    "text",
    [
        "Обучение на двух картах проходит без ошибок, вопрос только про предупреждение.",
        "Das Training läuft ohne Fehler durch, ich frage nur wegen der Warnung.",
        "L'entraînement se termine sans erreur, je demande seulement pour l'avertissement.",
    ],
)
def test_no_error_said_in_another_language_is_no_failure(tmp_path: Path, text: str) -> None:
    said = prose_symptom(facts_text(tmp_path, text + "\n"))
    assert said is None or said[0] != "failure"


@pytest.mark.parametrize(
    ("text", "worked"),
    [
        ("С NCCL_P2P_DISABLE=1 всё работает.", True),
        ("С NCCL_P2P_DISABLE=1 всё равно не работает.", False),
        ("Con NCCL_P2P_DISABLE=1 funciona bien.", True),
        ("Con NCCL_P2P_DISABLE=1 no funciona.", False),
        ("Mit NCCL_P2P_DISABLE=1 funktioniert es.", True),
        ("Mit NCCL_P2P_DISABLE=1 funktioniert es nicht.", False),
        ("NCCL_P2P_DISABLE=1 thì chạy được.", True),
        ("NCCL_P2P_DISABLE=1 cũng không chạy được.", False),
        ("NCCL_P2P_DISABLE=1 を付けると動きました。", True),
        ("NCCL_P2P_DISABLE=1 을 주니까 잘 돌아가요.", True),
        ("NCCL_P2P_DISABLE=1 을 줘도 안 돌아가요.", False),
        # the name right after a Chinese or Japanese character (no word boundary there), the
        # value ended at its last ASCII character
        ("我试了很多办法，设置NCCL_P2P_DISABLE=1以后8卡就能正常训练了。", True),
        ("我试了一下，设置NCCL_P2P_DISABLE=1以后还是卡住，没有任何变化。", False),
        ("いろいろ試しましたが、環境変数NCCL_P2P_DISABLE=1を付けると動きました。", True),
    ],
)
def test_a_setting_said_to_work_in_another_language(
    tmp_path: Path, text: str, worked: bool
) -> None:
    found = settings_that_worked(facts_text(tmp_path, text + "\n"))
    assert [(w.name, w.value) for w in found] == ([("NCCL_P2P_DISABLE", "1")] if worked else [])


def test_a_setting_that_did_not_help_right_after_chinese_is_read(tmp_path: Path) -> None:
    said = "我试了一下，设置NCCL_P2P_DISABLE=1以后还是卡住，没有任何变化。\n"
    found = settings_that_did_not_help(facts_text(tmp_path, said))
    assert [(w.name, w.value) for w in found] == [("NCCL_P2P_DISABLE", "1")]


@pytest.mark.parametrize(
    ("text", "multi"),
    [
        ("Обучение на двух узлах зависает.", True),
        ("El entrenamiento en varios nodos se queda colgado.", True),
        ("2노드 학습에서 멈춥니다.", True),
        ("Das Training auf zwei Knoten hängt.", True),
        ("Das Training auf einem Knoten mit zwei GPUs hängt.", False),
        ("Обучение на одной машине с двумя картами зависает.", False),
        # a count in digits starts the words too (a word's start is no letter before it)
        ("O treino em 2 nós trava na inicialização.", True),
        ("Обучение на 2 узлах зависает.", True),
        ("El entrenamiento con 2 GPUs en un nodo se queda colgado.", False),
    ],
)
def test_several_nodes_said_in_another_language(tmp_path: Path, text: str, multi: bool) -> None:
    assert context_of(facts_text(tmp_path, text + "\n")).multi_node is multi


def test_a_wsl_hang_told_in_vietnamese_with_p2p_off_working_is_wsl(tmp_path: Path) -> None:
    text = (
        "$ uname -r\n5.15.153.1-microsoft-standard-WSL2\n"
        "DDP 2 GPU trên WSL2 bị treo ở all_reduce đầu tiên, đặt NCCL_P2P_DISABLE=1 thì chạy "
        "được.\n"
    )
    assert diagnose_text(tmp_path, text).top(1) == ["driver.wsl"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Заметил, что в /dev есть nvidia0 и nvidiactl, но нет nvidia-uvm.", True),
        ("/dev には nvidia0 と nvidiactl はあるが nvidia-uvm がない。", True),
        ("/dev 에 nvidia0 은 있는데 nvidia-uvm 이 없습니다.", True),
        ("En /dev no hay /dev/nvidia-uvm.", True),
        ("В /dev есть nvidia0, nvidiactl и nvidia-uvm.", False),
    ],
)
def test_nvidia_uvm_said_missing_in_another_language(text: str, said: bool) -> None:
    assert cue_says("uvm_missing", text) is said


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "nvidia-smi -q で見ると GPU 2 だけ Link Width の Current が 8x で、Max は 16x でした。",
            True,
        ),
        ("lspci -vv でも GPU 2 の LnkSta が Width x8 で「(downgraded)」と表示されました。", True),
        (
            "nvidia-smi -q で見ると 8 枚とも Link Width の Current が 16x で、Max も 16x でした。",
            False,
        ),
    ],
)
def test_a_narrow_pcie_link_retold_in_another_language(text: str, said: bool) -> None:
    assert cue_says("pcie_downtrained", text) is said
