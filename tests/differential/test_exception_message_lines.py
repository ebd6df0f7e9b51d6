"""An exception whose first message line names nothing is looked up by its whole message."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

FRAMES = """\
Traceback (most recent call last):
  File "/workspace/train.py", line 88, in <module>
    state, metrics = p_train_step(state, batch)
  File "/usr/local/lib/python3.11/site-packages/jax/_src/traceback_util.py", line 177, in reraise_with_filtered_traceback
    return fun(*args, **kwargs)
"""  # noqa: E501

XLA_NCCL_UNLOADABLE = (
    FRAMES
    + "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: "
    "run time error: custom call 'xla.gpu.all_reduce' failed:\n"
    "external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) failed: "
    "Unable to load NCCL library. Multi-GPU collectives will not work.;\n"
    "current tracing scope: all-reduce-start; current profiling annotation:\n"
)

XLA_UNNAMED = (
    FRAMES
    + "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: "
    "run time error: custom call 'xla.gpu.all_reduce' failed:\n"
    "current tracing scope: all-reduce-start; current profiling annotation:\n"
)


def test_the_cause_below_a_first_line_that_names_none_opens_its_class(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, XLA_NCCL_UNLOADABLE)
    assert report.hypotheses[0].symptom == "a shared library could not be loaded"
    assert report.top(1) == ["nccl.version_mismatch"]


def test_a_message_that_names_no_cause_anywhere_stays_generic(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, XLA_UNNAMED)
    assert (
        report.hypotheses[0].symptom
        == "a rank failed with an error the catalogue does not classify"
    )
