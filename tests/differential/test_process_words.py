"""What the job's processes share or differ in, told in words (session 48's battery).

Two of the job's own ranks on one GPU (colocated trainer and inference workers, more
processes than GPUs); the GPUs already held by someone else (another user's job, an earlier
run's leftovers, a display server); models that differ between ranks; hosts that say the same
name; a pod that works only privileged; two builds or two NCCL settings side by side; the
job's own kernels; a device-side assertion or an illegal access named in words; ranks that
wait forever; a RoCE GID that changed or is the wrong one; and (the eighth battery, hangs
told in words) a port state shown down, what made a hang go away, one node rebuilt, ranks
waiting in the job's own code, an Xid named in a sentence. Each reading has the sentences
that must leave it silent, and each diagnosis case runs the whole pipeline on the sentence
written as a report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.signs.settings import settings_that_did_not_help, settings_that_worked
from tests.helpers import critical_ids, cue_says, diagnose_text, facts_text


def _top(tmp_path: Path, text: str, k: int = 3) -> list[str]:
    return diagnose_text(tmp_path, text).top(k)


# -- two of the job's own ranks on one GPU -------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "In colocated mode the actor's rank 0 and one vLLM worker sit on the same GPU.",
        "NCCL error for duplicated GPU when the trainer shares a card with the server",
        "We start more processes than GPUs by mistake.",
        "two processes per GPU",
        "the trainer lands on cuda:0, which the server already uses",
        "the client runs on the same GPU as the vLLM worker",
    ],
)
def test_the_jobs_own_ranks_on_one_gpu_are_said(said: str) -> None:
    assert cue_says("ranks_share_gpu", said)


@pytest.mark.parametrize(
    "said",
    [
        "Another user's process is on the same GPU.",  # gpu.contention
        "the two processes are not on the same GPU",
        "We start 4 processes on a 4-GPU node.",
        "Running with 2 processes on an 8-GPU machine hangs at init.",
        "We colocate the reward model on a separate node.",
        "are both ranks on the same GPU?",
        "the two processes are running on the same GPU",  # the mapping: device_visibility
    ],
)
def test_ranks_on_their_own_gpus_are_not_said_to_share(said: str) -> None:
    assert not cue_says("ranks_share_gpu", said)


def test_colocated_ranks_put_the_duplicate_gpu_first(tmp_path: Path) -> None:
    text = (
        "In colocated mode the actor's rank 0 and one vLLM worker sit on the same GPU, and the "
        "weight sync group fails with an NCCL error."
    )
    assert _top(tmp_path, text)[0] == "nccl.duplicate_gpu"
    # the failure alone, with nothing said of where the ranks sit, does not
    plain = "The weight sync group between the actor and the vLLM workers fails with an NCCL error."
    assert "nccl.duplicate_gpu" not in _top(tmp_path, plain)


# -- the GPUs already held by something else ----------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Another user's job was already running on GPUs 2 and 3.",
        "Zombie python processes from a killed earlier run still hold memory on every GPU.",
        "leftover processes on the GPUs",
        "Xorg is running on the same GPUs as the training",
        (
            "there was a python process from another lab member's account holding about 31 GB on "
            "GPU 2"
        ),
    ],
)
def test_gpus_held_by_something_else_are_said(said: str) -> None:
    assert cue_says("gpu_held_by_other", said)


@pytest.mark.parametrize(
    "said",
    [
        "There are no zombie processes on the GPUs.",
        "I killed the leftover processes on the GPUs and it still fails the same way.",
        "no other job was already running on the GPUs",
        "Xorg is not installed on this server.",
        "there is no process from another user's account holding memory on the GPUs",
        "my own process holds 31 GB on GPU 2",
    ],
)
def test_gpus_free_of_others_are_not_said_held(said: str) -> None:
    assert not cue_says("gpu_held_by_other", said)


def test_leftover_processes_put_contention_first(tmp_path: Path) -> None:
    text = (
        "Zombie python processes from a killed earlier run still hold memory on every GPU; the "
        "new DDP run fails at startup."
    )
    assert _top(tmp_path, text)[0] == "gpu.contention"


# -- models that differ, hosts that share a name, a pod that works privileged --------------------


def test_models_that_differ_between_ranks_put_the_parameter_check_first(tmp_path: Path) -> None:
    text = "The parameter shapes differ between ranks, and DDP fails at construction."
    assert cue_says("model_differs", text)
    assert _top(tmp_path, text)[0] == "app.param_mismatch"
    assert not cue_says("model_differs", "The parameters do not differ between ranks.")
    assert not cue_says("model_differs", "We load different checkpoints for evaluation.")


def test_hosts_with_one_name_put_host_identity_first(tmp_path: Path) -> None:
    text = "Two containers on one host have the same hostname, and the job hangs at init."
    assert cue_says("same_hostname", text)
    assert _top(tmp_path, text)[0] == "nccl.host_identity"
    assert not cue_says("same_hostname", "The hostnames are not the same.")
    assert not cue_says("same_hostname", "each pod has a different hostname, the same image")


def test_a_pod_that_works_privileged_puts_the_container_first(tmp_path: Path) -> None:
    text = (
        "NVSHMEM's initialization fails in our Kubernetes pod with an error; the same image "
        "works with privileged: true."
    )
    assert cue_says("privileged_works", text)
    assert _top(tmp_path, text)[0] == "driver.container"
    assert not cue_says("privileged_works", "--privileged does not help, it still fails.")
    assert not cue_says("privileged_works", "The pod is privileged.")


# -- two builds or two settings side by side ----------------------------------------------


def test_two_builds_side_by_side_put_the_version_mismatch_first(tmp_path: Path) -> None:
    text = (
        "The trainer uses torch's bundled NCCL 2.21 while the vLLM server loads NCCL 2.26 from "
        "its own wheel; the weight broadcast between them hangs."
    )
    assert cue_says("nccl_versions_differ", text)
    assert _top(tmp_path, text)[0] == "nccl.version_mismatch"
    # an upgrade names two versions too; the same versions everywhere name none that differ
    assert not cue_says("nccl_versions_differ", "upgrading NCCL 2.18 to NCCL 2.21 fixes it")
    assert not cue_says("nccl_versions_differ", "torch 2.3 but the same NCCL 2.20 on both nodes")


def test_one_process_with_its_own_nccl_setting_puts_the_setting_first(tmp_path: Path) -> None:
    text = (
        "vLLM sets NCCL_CUMEM_ENABLE=0 in its workers while the trainer keeps the default, and "
        "the weight sync between them crashes."
    )
    assert cue_says("setting_differs", text)
    assert _top(tmp_path, text)[0] == "nccl.env"
    assert not cue_says("setting_differs", "NCCL_P2P_DISABLE=1 is set, but the job still hangs")


def test_a_setting_someone_else_exported_is_inherited() -> None:
    assert cue_says("inherited_setting", "Someone exported NCCL_IB_DISABLE=1 in the job script.")
    assert not cue_says("inherited_setting", "I exported NCCL_IB_DISABLE=1 in the job script.")


# -- kernel faults in words ----------------------------------------------------------------------


def test_a_device_side_assert_in_words_is_the_assertion(tmp_path: Path) -> None:
    text = (
        "The training crashes after a few iterations with a device-side assert; the tokenizer's "
        "vocabulary is larger than the model's embedding size."
    )
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["cuda.device_assert"]
    assert critical_ids(report) == []  # words, not the message itself


def test_the_advice_every_cuda_error_carries_is_no_assertion(tmp_path: Path) -> None:
    text = (
        "The job fails with an NCCL error. Compile with `TORCH_USE_CUDA_DSA` to enable "
        "device-side assertions."
    )
    assert "cuda.device_assert" not in _top(tmp_path, text)


def test_an_illegal_access_in_our_own_kernel_is_the_codes_fault(tmp_path: Path) -> None:
    text = (
        "Our custom CUDA kernel writes past the end of a buffer and the job dies with an "
        "illegal memory access during the all_reduce."
    )
    assert _top(tmp_path, text)[0] == "cuda.illegal_access"
    # a fault with nothing said of the code weighs the GPU's memory as much
    plain = "The job dies with an illegal memory access during the all_reduce."
    assert _top(tmp_path, plain)[0] == "gpu.ecc"
    assert not cue_says("own_kernel", "We run no custom CUDA kernels.")
    assert not cue_says("own_kernel", "our kernel is 5.15 and the driver 535")


def test_no_illegal_access_is_no_fault(tmp_path: Path) -> None:
    text = "compute-sanitizer finds no illegal memory access, but the job hangs at all_reduce."
    assert "cuda.illegal_access" not in _top(tmp_path, text)


# -- ranks that wait forever --------------------------------------------------------------


def test_ranks_that_wait_in_a_collective_forever_hang(tmp_path: Path) -> None:
    text = (
        "Only rank 0 runs the evaluation, which calls all_gather, and the other ranks wait in "
        "the next training all_reduce forever."
    )
    report = diagnose_text(tmp_path, text)
    assert report.hypotheses[0].symptom.startswith("the job hangs")
    assert report.top(1) == ["app.collective_mismatch"]


# -- a RoCE GID that moved ----------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "the ConnectX-7 gid index changed from 3 to 4 (show_gids)",
        "we think the wrong GID index is used on one node",
        "the GID table changed while the job ran",
    ],
)
def test_a_gid_that_changed_or_is_wrong_is_said(said: str) -> None:
    assert cue_says("gid_trouble", said)


@pytest.mark.parametrize(
    "said",
    [
        "GID index 3 is RoCE v2 and the same on all nodes",
        "the GID index did not change",
        "export NCCL_IB_GID_INDEX=3",
    ],
)
def test_a_gid_that_stayed_is_not_said_to_change(said: str) -> None:
    assert not cue_says("gid_trouble", said)


def test_a_moved_gid_puts_the_rdma_setup_first(tmp_path: Path) -> None:
    text = (
        "The two-node job fails with an NCCL error at the first all_reduce over RoCE; the GID "
        "index on node 2 changed after the switch was replaced."
    )
    assert _top(tmp_path, text)[0] == "net.ib_config"


# -- hangs told in words (battery 8) ------------------------------------------------------


def test_a_port_state_shown_down_is_said() -> None:
    assert cue_says("ib_port_down", "ibstat on node 7 shows the port state as Down")
    assert not cue_says("ib_port_down", "ibstat shows the port state as Active")


@pytest.mark.parametrize(
    "said",
    [
        "with --ipc=host it runs",
        "adding hostIPC: true to the pod spec fixes it",
        "the hang went away after --shm-size=8g",
    ],
)
def test_shared_memory_that_made_it_run_is_said(said: str) -> None:
    assert cue_says("shm_fix_worked", said)


@pytest.mark.parametrize(
    "said",
    ["with --ipc=host it still hangs", "hostIPC: true does not help"],
)
def test_shared_memory_that_did_not_help_is_not_said_to_work(said: str) -> None:
    assert not cue_says("shm_fix_worked", said)


def test_a_setting_with_which_the_job_starts_worked(tmp_path: Path) -> None:
    def worked(text: str) -> list[str]:
        return [s.name for s in settings_that_worked(facts_text(tmp_path, text))]

    said = (
        "NCCL hangs at communicator init since the driver update; with NCCL_NVLS_ENABLE=0 it "
        "starts."
    )
    assert worked(said) == ["NCCL_NVLS_ENABLE"]
    assert _top(tmp_path, "On our H100 nodes " + said)[0] == "nccl.nvls"
    assert worked("We set NCCL_NVLS_ENABLE=0 and it starts with the same hang.") == []


def test_one_node_rebuilt_is_said() -> None:
    assert cue_says("one_node_changed", "After we rebuilt the container on node 2 only, it hangs")
    assert not cue_says("one_node_changed", "After we rebuilt the container on every node")


def test_a_version_that_made_the_hang_go_away_is_said() -> None:
    assert cue_says("version_said", "upgrading to 2.18.3 made the hang go away")
    assert not cue_says("version_said", "the hang did not go away")


def test_link_local_gids_are_trouble() -> None:
    assert cue_says("gid_trouble", "show_gids lists only IPv6 link-local GIDs for index 0")
    assert not cue_says("gid_trouble", "show_gids lists RoCE v2 IPv4 GIDs at index 3")


@pytest.mark.parametrize(
    "said",
    [
        "every rank gets stuck inside our own logging call to wandb",
        "py-spy dump shows the main thread waiting on the DataLoader queue",
        "NCCL shows nothing pending",
    ],
)
def test_ranks_waiting_in_their_own_code_are_said(said: str) -> None:
    assert cue_says("stuck_in_own_code", said)


@pytest.mark.parametrize(
    "said",
    [
        "py-spy shows every rank inside ncclAllReduce",
        "it does not hang in our own code",
        "two collectives are pending in NCCL",
    ],
)
def test_ranks_waiting_in_a_collective_are_not_said_in_own_code(said: str) -> None:
    assert not cue_says("stuck_in_own_code", said)


def test_ranks_stuck_in_their_own_code_put_the_application_first(tmp_path: Path) -> None:
    text = (
        "Every rank gets stuck inside our own logging call to wandb on the first step; the GPUs "
        "are idle and NCCL shows nothing pending."
    )
    assert _top(tmp_path, text)[0] == "app.hang"


def test_an_xid_named_in_a_sentence_is_read_as_words(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, "The training hangs and dmesg shows NVRM: Xid 79 on one GPU at the same moment."
    )
    # (the fault the driver coded comes before how the job then ended: the Xid's class)
    assert report.hypotheses[0].symptom == "the driver logged a GPU fault (Xid)"
    assert report.top(1) == ["gpu.lost"]
    # the driver's own line quoted in a sentence is still the driver's line
    quoted = diagnose_text(
        tmp_path,
        "The training hangs and dmesg shows NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, "
        "GPU has fallen off the bus.",
    )
    assert "gpu.lost" in critical_ids(quoted)


# -- a contracted denial ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Setting NCCL_P2P_DISABLE=1 didn't help.",
        "Setting NCCL_P2P_DISABLE=1 doesn't work, same hang.",
    ],
)
def test_a_setting_that_didnt_help_is_no_setting_that_worked(tmp_path: Path, said: str) -> None:
    """'n't' ends a word: the denial of "didn't help" has no word boundary before it."""
    facts = facts_text(tmp_path, said)
    assert settings_that_worked(facts) == ()
    assert [s.name for s in settings_that_did_not_help(facts)] == ["NCCL_P2P_DISABLE"]


def test_a_p2p_hang_that_the_switch_did_not_help_leaves_p2p_down(tmp_path: Path) -> None:
    text = "DDP on 4 GPUs hangs at the first all_reduce. Setting NCCL_P2P_DISABLE=1 didn't help."
    report = diagnose_text(tmp_path, text)
    assert report.hypotheses[0].symptom.startswith("the job hangs")
    # read as a setting that worked, P2P came first; as one that changed nothing, it drops
    assert "nccl.p2p" not in report.top(4)
    assert _top(tmp_path, "DDP on 4 GPUs hangs at the first all_reduce.", 1) == ["nccl.p2p"]
