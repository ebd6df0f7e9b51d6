"""Property tests: the lookups never raise, whatever text they get."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nccl_doctor.knowledge import cuda_errors, nccl_env, nccl_results, nccl_versions, xid

_NAMES = st.sampled_from([v.name for v in nccl_env.VARS])
_TEXT = st.text(max_size=80)


@settings(max_examples=200, deadline=None)
@given(name=st.one_of(_NAMES, _TEXT), value=_TEXT)
def test_env_checks_never_raise(name: str, value: str) -> None:
    problem = nccl_env.validate(name, value)
    assert problem is None or (isinstance(problem, str) and problem)
    hint = nccl_env.harm(name, value)
    assert hint is None or isinstance(hint, str)
    near = nccl_env.closest(name)
    assert near is None or nccl_env.lookup(near) is not None
    assert isinstance(nccl_env.is_known_family(name), bool)


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_lookups_never_raise(text: str) -> None:
    xid.xid_info(text)
    cuda_errors.by_code(text)
    cuda_errors.by_name(text)
    cuda_errors.by_message(text)
    nccl_results.result(text)
    nccl_results.from_message(text)
    version = nccl_versions.parse_version(text)
    assert version is None or len(version) == 3
    assert isinstance(nccl_versions.known_issues(text), tuple)
    nccl_versions.bundled_nccl(text)


@settings(max_examples=100, deadline=None)
@given(code=st.integers(min_value=-(10**12), max_value=10**12))
def test_numeric_lookups_never_raise(code: int) -> None:
    xid.xid_info(code)
    cuda_errors.by_code(code)
    nccl_results.result(code)
    nccl_versions.version_from_code(code)
