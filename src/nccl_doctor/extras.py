"""The optional extras (``pyproject.toml``) and a hint that installs them anywhere.

nccl-doctor is not on PyPI, so ``pip install 'nccl-doctor[live]'`` fails for
most users; the hint names the packages themselves, which always install, and
the editable install from a checkout.
"""

from __future__ import annotations

#: Each extra's requirements, as ``[project.optional-dependencies]`` lists them.
EXTRAS: dict[str, tuple[str, ...]] = {
    "live": ("nvidia-ml-py>=12",),
    "probe": ("torch>=2.1",),
    "fleet": ("psycopg[binary]>=3.1",),
}


def install_hint(extra: str) -> str:
    """``pip install 'nvidia-ml-py>=12'`` and the checkout's ``pip install -e '.[live]'``."""
    packages = " ".join(f"'{req}'" for req in EXTRAS[extra])
    return f"pip install {packages}, or from a checkout of nccl-doctor: pip install -e '.[{extra}]'"
