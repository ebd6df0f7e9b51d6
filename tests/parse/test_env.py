"""env: dumps, exports, inline command prefixes, Python and YAML settings, and what is not one."""

from __future__ import annotations

import pytest

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.host import EnvVar, ShellVariable
from nccl_doctor.parse.env import EnvParser
from tests.helpers import FORMATS, fixture_text, of_type, parse_stream


def parse(text: str) -> list[Fact]:
    return parse_stream(EnvParser(), text)


def env(text: str) -> list[tuple[int, str, str | None, str]]:
    return [(v.cite.line, v.name, v.value, v.form) for v in of_type(parse(text), EnvVar)]


DUMP = """\
$ env | grep -E 'NCCL|CUDA'
NCCL_DEBUG=INFO
NCCL_IB_HCA=mlx5_0,mlx5_1
NCCL_SOCKET_IFNAME=^lo,docker0
LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu
CUDA_VISIBLE_DEVICES=
[rank3]:TORCH_NCCL_BLOCKING_WAIT=1
"""


def test_env_dump() -> None:
    assert env(DUMP) == [
        (2, "NCCL_DEBUG", "INFO", "dump"),
        (3, "NCCL_IB_HCA", "mlx5_0,mlx5_1", "dump"),
        (4, "NCCL_SOCKET_IFNAME", "^lo,docker0", "dump"),
        (5, "LD_LIBRARY_PATH", "/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu", "dump"),
        (6, "CUDA_VISIBLE_DEVICES", "", "dump"),
        (7, "TORCH_NCCL_BLOCKING_WAIT", "1", "dump"),
    ]
    assert of_type(parse(DUMP), EnvVar)[-1].rank == 3


EXPORTS = """\
export NCCL_DEBUG=INFO
export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE="1"
declare -x MASTER_ADDR="10.0.0.1"
setenv NCCL_SOCKET_IFNAME eth0
ENV NCCL_VERSION 2.18.1
ENV NCCL_DEBUG=WARN TORCH_NCCL_ASYNC_ERROR_HANDLING=1
export LD_PRELOAD
"""


def test_exports() -> None:
    assert env(EXPORTS) == [
        (1, "NCCL_DEBUG", "INFO", "export"),
        (2, "NCCL_P2P_DISABLE", "1", "export"),
        (2, "NCCL_IB_DISABLE", "1", "export"),
        (3, "MASTER_ADDR", "10.0.0.1", "export"),
        (4, "NCCL_SOCKET_IFNAME", "eth0", "export"),
        (5, "NCCL_VERSION", "2.18.1", "export"),
        (6, "NCCL_DEBUG", "WARN", "export"),
        (6, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "export"),
    ]


INLINE = """\
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET torchrun --nproc_per_node=8 train.py
user@gpu01:~/proj$ CUDA_VISIBLE_DEVICES=0,1 python -m torch.distributed.run --nproc_per_node=2 x.py
(base) root@node:/w# NCCL_P2P_LEVEL=NVL ./all_reduce_perf -b 8 -e 1G
mpirun -np 16 -x NCCL_IB_HCA=mlx5 -x LD_LIBRARY_PATH -x NCCL_DEBUG=INFO ./all_reduce_perf
docker run --gpus all -e NCCL_DEBUG=INFO --env=NCCL_SHM_DISABLE=1 nvcr.io/nvidia/pytorch:24.01-py3
srun --export=ALL,NCCL_DEBUG=INFO python train.py
sudo -E env NCCL_DEBUG=TRACE python t.py
CUDA_LAUNCH_BLOCKING=1 python train.py
"""


def test_inline_prefixes_and_options() -> None:
    assert env(INLINE) == [
        (1, "NCCL_DEBUG", "INFO", "inline"),
        (1, "NCCL_DEBUG_SUBSYS", "INIT,NET", "inline"),
        (2, "CUDA_VISIBLE_DEVICES", "0,1", "inline"),
        (3, "NCCL_P2P_LEVEL", "NVL", "inline"),
        (4, "NCCL_IB_HCA", "mlx5", "inline"),
        (4, "NCCL_DEBUG", "INFO", "inline"),
        (5, "NCCL_DEBUG", "INFO", "inline"),
        (5, "NCCL_SHM_DISABLE", "1", "inline"),
        (6, "NCCL_DEBUG", "INFO", "inline"),
        (7, "NCCL_DEBUG", "TRACE", "inline"),
        (8, "CUDA_LAUNCH_BLOCKING", "1", "inline"),
    ]


# a statement of assignments before no command keeps them in the shell; ``export NAME`` then
# exports one; a later statement can set a command's environment; a sentence is not a shell
SHELL = """\
user@box:~$ CUDA_VISIBLE_DEVICES=1,2,3 ; echo $CUDA_VISIBLE_DEVICES
$ NCCL_DEBUG=INFO
$ export NCCL_DEBUG
cd /work && NCCL_P2P_DISABLE=1 torchrun --nproc_per_node 2 train.py
NCCL_IB_DISABLE=1; it works now
export NCCL_SOCKET_IFNAME
"""


def test_shell_variables_are_not_the_environment() -> None:
    facts = parse(SHELL)
    shell = [(v.cite.line, v.name, v.value) for v in of_type(facts, ShellVariable)]
    assert shell == [(1, "CUDA_VISIBLE_DEVICES", "1,2,3"), (2, "NCCL_DEBUG", "INFO")]
    assert env(SHELL) == [
        (3, "NCCL_DEBUG", "INFO", "export"),
        (4, "NCCL_P2P_DISABLE", "1", "inline"),
    ]


PYTHON = """\
os.environ["NCCL_DEBUG"] = "INFO"
    os.environ['MASTER_PORT'] = str(port)
os.environ["NCCL_P2P_DISABLE"] = '1'  # works around the hang
os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
os.environ.update({"MASTER_ADDR": "localhost", "WORLD_SIZE": "2"})
os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = 1
"""


def test_python_settings() -> None:
    assert env(PYTHON) == [
        (1, "NCCL_DEBUG", "INFO", "python"),
        (2, "MASTER_PORT", None, "python"),
        (3, "NCCL_P2P_DISABLE", "1", "python"),
        (4, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "python"),
        (5, "MASTER_ADDR", "localhost", "python"),
        (5, "WORLD_SIZE", "2", "python"),
        (6, "CUDA_DEVICE_MAX_CONNECTIONS", "1", "python"),
    ]


YAML = """\
        env:
        - name: NCCL_SOCKET_IFNAME
          value: "eth0"
        - name: NCCL_IB_DISABLE
        - name: POD_NAME
        - {name: NCCL_DEBUG, value: INFO}
"""


def test_kubernetes_env_list() -> None:
    assert env(YAML) == [
        (2, "NCCL_SOCKET_IFNAME", "eth0", "yaml"),
        (6, "NCCL_DEBUG", "INFO", "yaml"),
    ]


ECHOED = """\
$ echo $LD_LIBRARY_PATH
/sw/apps/nccl/2.18.3-cuda12.1/lib:/sw/apps/cuda/12.1/lib64
user@node1:~$ echo "${NCCL_SOCKET_IFNAME}"
ib0
$ echo $NCCL_DEBUG
$ python train.py
echo $CUDA_VISIBLE_DEVICES is what I printed
"""


def test_an_echoed_variable_and_the_value_it_printed() -> None:
    # (not an echo whose next line is another command, nor one inside a sentence)
    assert env(ECHOED) == [
        (
            2,
            "LD_LIBRARY_PATH",
            "/sw/apps/nccl/2.18.3-cuda12.1/lib:/sw/apps/cuda/12.1/lib64",
            "echo",
        ),
        (4, "NCCL_SOCKET_IFNAME", "ib0", "echo"),
    ]


NOT_ENV = """\
torchrun --nproc_per_node=8 --master_port=29500 train.py
see https://host/x?NCCL_DEBUG=INFO&a=1
I set NCCL_P2P_DISABLE=1 and it worked
NCCL_P2P_DISABLE=1 fixed it for me
# NCCL_DEBUG=INFO
node1:123:456 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0
[rank0]: TORCH_NCCL_ASYNC_ERROR_HANDLING: 3
nccl_debug=info python x.py
if [ "$NCCL_DEBUG" == "INFO" ]; then
"""


def test_prose_options_urls_and_comments_are_not_settings() -> None:
    assert env(NOT_ENV) == []


def test_other_kinds_are_not_consumed() -> None:
    for kind in ("nvidia-smi", "ibstat", "xid", "torchrun", "topo", "nccl-log"):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            parser = EnvParser()
            for line in lines_of(text, path.name):
                if parser.open or any(a in line.raw for a in parser.anchors):
                    assert not parser.feed(line), (path.name, line.raw)
            assert parser.take() + parser.finish() == [], path.name


# a command quoted whole as Markdown inline code is the command; a setting quoted inside a
# sentence, or alone with no command after it, sets nothing
CODE_SPANS = """\
``NCCL_SHM_DISABLE=1 CUDA_LAUNCH_BLOCKING=1 torchrun --standalone --nproc_per_node=6 x.py``
`NCCL_DEBUG=INFO python train.py`
The error goes away with `NCCL_SHM_DISABLE=1`.
`NCCL_P2P_DISABLE=1`
"""


def test_commands_quoted_as_inline_code() -> None:
    assert env(CODE_SPANS) == [
        (1, "NCCL_SHM_DISABLE", "1", "inline"),
        (1, "CUDA_LAUNCH_BLOCKING", "1", "inline"),
        (2, "NCCL_DEBUG", "INFO", "inline"),
    ]


def test_mpirun_export_in_an_nccl_tests_paste() -> None:
    text = fixture_text("nccl-tests/h200-dranet-mpijob-allreduce-openmpi-warnings.txt")
    assert env(text) == [(2, "LD_LIBRARY_PATH", "/usr/local/nvidia/lib64", "inline")]


@pytest.mark.parametrize("text", [DUMP, EXPORTS, INLINE, PYTHON, YAML, NOT_ENV, CODE_SPANS])
def test_anchors_lose_nothing(text: str) -> None:
    """Fed only the anchored lines (as the reader does) or every line: the same facts."""
    every = EnvParser()
    facts: list[Fact] = []
    for line in lines_of(text):
        every.feed(line)
        facts.extend(every.take())
    facts.extend(every.finish())
    assert parse(text) == facts
