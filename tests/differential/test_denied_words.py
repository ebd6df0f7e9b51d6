"""A cue denied in the reporter's own sentence stays silent; said plainly, it is read.

Session 48 swept every cue with a sentence that denies it ("bare metal, no container", "we
are not on Kubernetes", "native Linux, not WSL", "it does not work with gloo either", "no
throttling: HW Slowdown is Not Active", "initialization completes, the hang is in epoch 3")
and found these read as said: a trust defect, each now silent, with the plain sentence beside
it that must still be read. The same for the prose symptoms ("there is no OOM" opens no
class), for yes/no questions ("does it work with gloo?" asks about an outcome and says none,
while "does NCCL support MIG?" still names where the job runs), and for an outcome planned,
guessed or advised ("I will try --shm-size and see if it works", "another port might work").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.signs.settings import settings_that_worked
from tests.helpers import cue_says, diagnose_text, facts_text


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("container", "We run on bare metal, no container."),
        ("container", "This is not inside docker; it runs directly on the host."),
        (
            "container",
            "Without docker it works, but I need the training outside containers anyway.",
        ),
        ("mig", "MIG is disabled on all GPUs."),
        ("smi_works", "nvidia-smi does not work either."),
        ("other_job_same_gpus", "No other process is using the same GPUs."),
        ("port_taken", "The port is not in use, I checked with netstat."),
        ("traffic_filtered", "The firewall is disabled on both nodes."),
        ("traffic_filtered", "There is no firewall between the nodes."),
        ("nccl_only", "It does not work with gloo either."),
        ("one_gpu_fails_too", "A single GPU works fine."),
        ("gpus_full", "GPU utilization is 0% while it hangs."),
        ("ran_before", "It hangs right at the start, not after hours."),
        ("multi_node", "It is a single node job, not multi-node."),
        ("kubernetes", "We are not on Kubernetes, just plain Slurm."),
        (
            "containers_same_host",
            "Each container runs on its own host, never two on the same machine.",
        ),
        ("wsl", "This is native Linux, not WSL."),
        ("multi_node", "Everything runs on one node."),
        ("loopback_host", "The hostname resolves to the right IP, not to 127.0.1.1."),
        ("one_node_only", "It fails on every node, not only one."),
        ("nccl_versions_differ", "All nodes have the same NCCL version 2.21.5."),
        ("memlock_small", "ulimit -l is unlimited on all nodes."),
        ("fabric_manager_said", "There is no NVSwitch, so no fabric manager is needed."),
        ("rendezvous_wait", "All nodes joined the rendezvous quickly."),
        ("other_nccl_loaded", "We do not preload any other NCCL."),
        ("nvlink_unused", "NVLink is active on all links."),
        ("ran_before", "It hangs immediately at startup."),
        ("nccl_init_hang", "NCCL init completes fine; it hangs later in training."),
        ("startup_hang", "Initialization completes, the hang is in the middle of epoch 3."),
        ("gpus_full", "GPU utilization drops to 0% when it hangs."),
        ("gpus_idle", "GPU utilization stays at 100% while it hangs."),
        ("system_freeze", "The system does not freeze, only the job hangs."),
        ("power_cycle", "No reboot was needed; restarting the job was enough."),
        ("after_suspend", "The machine was never suspended."),
        ("gdr_stack", "We do not use GPUDirect RDMA."),
        ("verbs_call", "No verbs call fails in the log."),
        ("version_said", "The NCCL version did not matter."),
        ("mig", "We do not use MIG."),
        ("p2p_test_passed", "simpleP2P fails with wrong results."),
        ("smi_works", "nvidia-smi fails too."),
        ("no_gpu_seen", "torch sees all 8 GPUs."),
        ("rank_branch", "All ranks run the same code path."),
        ("barrier_said", "We do not call any barrier."),
        ("one_gpu_does_all", "Every GPU has its own process and load."),
        ("jobs_share_host", "Only one job runs on the machine."),
        ("port_taken", "No port conflict: netstat shows port 29500 free."),
        ("ib_port_down", "All IB ports are Active and LinkUp."),
        ("gpu_throttled", "No throttling: HW Slowdown is Not Active."),
        ("pcie_downtrained", "All GPUs link at x16 Gen4 as expected."),
    ],
)
def test_a_denied_cue_is_silent(cue: str, said: str) -> None:
    assert not cue_says(cue, said)


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("container", "The job runs in a docker container with 4 GPUs."),
        ("container", "Inside the k8s pod it fails."),
        ("container", "Without docker it works, but inside docker it fails."),
        ("nccl_only", "NCCL does not work, gloo works."),
        ("nccl_only", "It works with gloo."),
        ("gloo_fails_too", "It does not work with gloo either."),
        ("kubernetes", "Our job runs on Kubernetes with 4 pods."),
        ("wsl", "I run it under WSL2 on Windows 11."),
        ("fabric_manager_said", "The fabric manager is not running on the HGX node."),
        ("after_suspend", "After the laptop resumed from suspend CUDA fails."),
        ("startup_hang", "It hangs at init of the process group."),
        ("startup_hang", "NCCL init hangs on the second node."),
        ("mig", "We use MIG instances on the A100."),
        ("gdr_stack", "nvidia-peermem is not loaded."),
        ("gpu_throttled", "The GPUs are throttled by heat."),
        ("gpu_throttled", "HW Slowdown : Active"),
    ],
)
def test_the_same_cue_said_plainly_is_read(cue: str, said: str) -> None:
    assert cue_says(cue, said)


def test_a_denied_container_does_not_weigh_shared_memory(tmp_path: Path) -> None:
    """The whole pipeline: 'no container' said beside an NCCL system error leaves the reasons
    for /dev/shm and the container's devices unsaid."""
    text = (
        "Training on 2 GPUs fails with ncclSystemError: unhandled system error. We run on bare "
        "metal, no container, not on Kubernetes."
    )
    report = diagnose_text(tmp_path, text)
    reasons = [r for h in report.hypotheses for r in h.for_]
    assert report.hypotheses
    assert not any("container" in r for r in reasons)
    inside = diagnose_text(
        tmp_path, "Training on 2 GPUs fails with ncclSystemError: unhandled system error in docker."
    )
    assert any("container" in r for h in inside.hypotheses for r in h.for_)


@pytest.mark.parametrize(
    "said",
    [
        "There is no OOM and memory usage is at 40%.",
        "No segfault, no core dump.",
        "There was no bus error.",
        "We never see a deadlock with gloo.",
        "No process was killed.",
        "The rendezvous did not time out; all nodes joined.",
        "It is not slow; throughput is as expected.",
        "nvidia-smi shows all 8 GPUs and no ECC errors.",
        "The job does not hang; it finishes in 2 hours.",
    ],
)
def test_a_denied_symptom_opens_nothing(tmp_path: Path, said: str) -> None:
    """The whole pipeline on a sentence that denies the symptom: no class, no finding."""
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses == ()
    assert report.findings == ()


@pytest.mark.parametrize(
    ("said", "first"),
    [
        ("Rank 2 ran out of GPU memory at step 300.", "gpu.oom"),
        ("The run dies with a segfault in libnccl after an hour.", None),
        ("The training process was killed after an hour.", None),
        ("The rendezvous timed out after 900 seconds on the second node.", None),
        ("The job crashed and nvidia-smi shows 3 uncorrectable ECC errors on GPU 5.", "gpu.ecc"),
        (
            "No ECC errors on GPUs 0-6, but GPU 7 shows uncorrectable ECC errors and the job dies.",
            "gpu.ecc",
        ),
    ],
)
def test_the_same_symptom_said_plainly_opens_its_class(
    tmp_path: Path, said: str, first: str | None
) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses or report.findings
    if first is not None:
        assert report.top(1) == [first]


# -- a yes/no question asks, it does not say ----------------------------------------------------


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("traffic_filtered", "Could this be caused by the firewall?"),
        ("port_taken", "Is the port already in use?"),
        ("fabric_manager_said", "Do I need the fabric manager?"),
        ("ranks_share_gpu", "Can two ranks share the same GPU as the vLLM worker?"),
        ("gid_trouble", "Could the GID index be wrong?"),
        ("inherited_setting", "Should I put NCCL_SOCKET_IFNAME in my .bashrc?"),
        ("shm_fix_worked", "Would --shm-size fix it?"),
        ("nccl_only", "Does it work with gloo?"),
        ("one_gpu_fails_too", "Does it fail with a single GPU too?"),
        ("gpu_held_by_other", "Are there zombie processes on the GPUs?"),
        ("model_differs", "Do the models differ between ranks?"),
        ("same_hostname", "Do the containers have the same hostname?"),
    ],
)
def test_an_outcome_or_suspicion_asked_about_is_not_said(cue: str, said: str) -> None:
    assert not cue_says(cue, said)


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("container", "Is it related to docker?"),
        ("mig", "Does NCCL support MIG?"),
        ("wsl", "Is WSL supported?"),
        ("memlock_small", "Is ulimit -l 64 too small?"),
        # a why-question presupposes what it asks about
        ("nccl_only", "Why does it work with gloo but not with nccl?"),
        # the question is another sentence than the statement
        ("traffic_filtered", "We have a firewall between the nodes. Could that be it?"),
    ],
)
def test_a_setting_named_in_a_question_or_a_why_question_is_said(cue: str, said: str) -> None:
    assert cue_says(cue, said)


@pytest.mark.parametrize(
    "said",
    [
        "Does NCCL_P2P_DISABLE=1 help?",
        "Would NCCL_IB_DISABLE=1 fix it?",
        "Should I try NCCL_P2P_LEVEL=NVL, does that work?",
        "If I set NCCL_P2P_DISABLE=1, will it run?",
        "Does NCCL 2.18.1 with NCCL_P2P_DISABLE=1 work?",
    ],
)
def test_a_setting_asked_about_did_not_work(tmp_path: Path, said: str) -> None:
    assert settings_that_worked(facts_text(tmp_path, said)) == ()


@pytest.mark.parametrize(
    "said",
    [
        "Why does NCCL_P2P_DISABLE=1 fix it?",
        "NCCL_P2P_DISABLE=1 fixes it. Is that safe for performance?",
    ],
)
def test_a_setting_said_to_work_beside_a_question_worked(tmp_path: Path, said: str) -> None:
    worked = settings_that_worked(facts_text(tmp_path, said))
    assert [s.name for s in worked] == ["NCCL_P2P_DISABLE"]


def test_a_doubt_counts_in_its_own_sentence_only(tmp_path: Path) -> None:
    # a paragraph on one line: the next sentence's "still" is about another setting
    said = (
        "If I export NCCL_P2P_DISABLE=1, everything works: training runs. With "
        "NCCL_SHM_DISABLE=1 alone it still hangs.\n"
    )
    assert [s.name for s in settings_that_worked(facts_text(tmp_path, said))] == [
        "NCCL_P2P_DISABLE"
    ]
    doubted = "Even with NCCL_P2P_DISABLE=1 everything works only for a minute.\n"
    assert settings_that_worked(facts_text(tmp_path, doubted)) == ()


def test_a_doubt_counts_in_the_outcomes_own_clause_only(tmp_path: Path) -> None:
    # the reporter's reluctance or reasoning after "but"/"because" is no doubt of the outcome
    said = (
        "If I set NCCL_NVLS_ENABLE=0 the server starts and serves, but I'd rather not run with "
        "a workaround, because I don't think the fabric is broken.\n"
    )
    assert [s.name for s in settings_that_worked(facts_text(tmp_path, said))] == [
        "NCCL_NVLS_ENABLE"
    ]
    # a doubt of the outcome itself after "but" still is one
    for doubted in (
        "With NCCL_P2P_DISABLE=1 it trains, but not always.\n",
        "With NCCL_P2P_DISABLE=1 it trains, but it still hangs at epoch 3.\n",
    ):
        assert settings_that_worked(facts_text(tmp_path, doubted)) == (), doubted


def test_a_setting_that_worked_on_another_machine_did_not_here(tmp_path: Path) -> None:
    said = (
        "The compose file has NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1, same as on the old "
        "machine where everything was fine.\n"
    )
    assert settings_that_worked(facts_text(tmp_path, said)) == ()


def test_the_programs_advice_or_a_logging_switch_is_no_outcome(tmp_path: Path) -> None:
    # PyTorch's NCCL error ends in its own advice: no one ran with NCCL_DEBUG=WARN
    advice = (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
        "2.21.5\n"
    )
    assert settings_that_worked(facts_text(tmp_path, advice)) == ()
    # a logging switch changes what is printed, not the path the job takes
    diagnostic = (
        "When I run with NCCL_DEBUG=INFO, the healthy nodes list the mlx5 devices and say "
        "Using network IB.\n"
    )
    assert settings_that_worked(facts_text(tmp_path, diagnostic)) == ()
    said = "I run with NCCL_P2P_DISABLE=1 for now and training finishes.\n"
    assert [s.name for s in settings_that_worked(facts_text(tmp_path, said))] == [
        "NCCL_P2P_DISABLE"
    ]


# -- a fact denied beside a failure ------------------------------------------------------------


def test_an_xid_denied_is_no_xid(tmp_path: Path) -> None:
    failure = "Training fails with an NCCL error after an hour. "
    denied = diagnose_text(tmp_path, failure + "dmesg shows no Xid 79 or other Xid errors.")
    assert "gpu.lost" not in denied.top(3)
    said = diagnose_text(tmp_path, failure + "dmesg shows Xid 79 on one GPU.")
    assert said.top(1) == ["gpu.lost"]


def test_a_shm_size_denied_is_no_size(tmp_path: Path) -> None:
    failure = "Training fails with an NCCL error in our container. "
    denied = diagnose_text(tmp_path, failure + "/dev/shm is not 64M, it is 32G.")
    assert not any("under 512 MiB" in r for h in denied.hypotheses for r in h.for_)
    said = diagnose_text(tmp_path, failure + "/dev/shm is only 64M.")
    assert said.top(1) == ["nccl.shm"]


def test_a_switch_that_changes_nothing_did_not_help(tmp_path: Path) -> None:
    text = "Training hangs on 4 GPUs. NCCL_P2P_DISABLE=1 changes nothing."
    assert "nccl.p2p" not in diagnose_text(tmp_path, text).top(3)
    assert _top1(tmp_path, "Training hangs on 4 GPUs.") == "nccl.p2p"


def _top1(tmp_path: Path, text: str) -> str:
    return diagnose_text(tmp_path, text).top(1)[0]


@pytest.mark.parametrize(
    ("said", "finding"),
    [
        ("The GPUs are not overheating, 60C.", "gpu.thermal_power"),
        ("nvidia-peermem is loaded and working.", "net.gdr"),
        ("We are not using WSL.", "driver.wsl"),
    ],
)
def test_a_denied_or_healthy_part_beside_a_failure_makes_no_finding(
    tmp_path: Path, said: str, finding: str
) -> None:
    report = diagnose_text(tmp_path, "Training fails with an NCCL error. " + said)
    assert finding not in [f.id for f in report.findings]


@pytest.mark.parametrize(
    ("said", "finding"),
    [
        ("The GPUs overheat to 95C.", "gpu.thermal_power"),
        ("Two-node training is slow. nvidia-peermem is not loaded on the nodes.", "net.gdr"),
        ("It runs under WSL2.", "driver.wsl"),
    ],
)
def test_the_same_part_said_plainly_makes_its_finding(
    tmp_path: Path, said: str, finding: str
) -> None:
    report = diagnose_text(tmp_path, "Training fails with an NCCL error. " + said)
    assert finding in [f.id for f in report.findings]


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("memlock_small", "ulimit -l is not 64, it is unlimited."),
        ("other_nccl_loaded", "We do not use LD_PRELOAD for NCCL."),
        ("traffic_filtered", "It is not a firewall issue, the firewall is off."),
        ("uvm_missing", "/dev/nvidia-uvm is present and readable."),
        ("uvm_reload_worked", "modprobe nvidia-uvm did not fix it."),
    ],
)
def test_more_denied_cues_are_silent(cue: str, said: str) -> None:
    assert not cue_says(cue, said)


# -- what a misread line used to carry ---------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "After the machine resumed from suspend, CUDA fails with error 999 unknown error.",
        "CUDA fails in the container and /dev/nvidia-uvm does not exist there.",
        "CUDA initialization fails with error 999. After sudo modprobe nvidia-uvm it works again.",
    ],
)
def test_the_unified_memory_module_in_words_puts_uvm_first(tmp_path: Path, said: str) -> None:
    """A sentence naming nvidia_uvm beside any error word was read as the kernel's module-load
    failure; it is the reporter's words now, read for what they say of the module."""
    assert diagnose_text(tmp_path, said).top(1) == ["driver.uvm"]


# -- a plan, a guess or advice is not what happened ----------------------------------------------


@pytest.mark.parametrize(
    ("cue", "said"),
    [
        ("nccl_only", "I will test whether it works with gloo."),
        ("shm_fix_worked", "I will try --shm-size=8g and see if it works."),
        ("port_change_worked", "Someone suggested another port might work."),
        ("host_network_fixes", "Maybe hostNetwork: true would fix it."),
    ],
)
def test_an_outcome_planned_guessed_or_advised_is_not_said(cue: str, said: str) -> None:
    assert not cue_says(cue, said)


@pytest.mark.parametrize(
    "said",
    [
        "I will try NCCL_IB_DISABLE=1 tomorrow and see if it works.",
        "The docs say NCCL_SOCKET_IFNAME=eth0 usually fixes this.",
        "I'm going to test whether NCCL_P2P_DISABLE=1 helps.",
    ],
)
def test_a_setting_planned_or_advised_did_not_work(tmp_path: Path, said: str) -> None:
    assert settings_that_worked(facts_text(tmp_path, said)) == ()


@pytest.mark.parametrize(
    "said",
    [
        # a guess after the outcome is about something else
        "NCCL_P2P_DISABLE=1 fixes it, but performance might drop.",
        "Setting NCCL_P2P_DISABLE=1 fixed it for us.",
    ],
)
def test_a_setting_that_worked_beside_a_guess_worked(tmp_path: Path, said: str) -> None:
    worked = settings_that_worked(facts_text(tmp_path, said))
    assert [s.name for s in worked] == ["NCCL_P2P_DISABLE"]


def test_cudas_unknown_error_denied_opens_no_cuda_class(tmp_path: Path) -> None:
    denied = diagnose_text(tmp_path, "There is no CUDA unknown error; the training just hangs.")
    assert denied.hypotheses[0].symptom.startswith("the job hangs")
    said = diagnose_text(tmp_path, "The training fails with CUDA error 999 after a reboot.")
    assert said.hypotheses[0].symptom.startswith("CUDA returned its unknown error")
