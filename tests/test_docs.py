"""The docs a fresh clone carries: the catalogue, and links that resolve inside the repository."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from nccl_doctor.extras import EXTRAS
from tests.knowledge._catalogue import catalogue_ids

ROOT = Path(__file__).resolve().parent.parent
#: ``[text](target)`` links and backticked paths into the repository's own folders.
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATH = re.compile(r"`((?:\.\./|docs/|examples/|scripts/|bench/|src/|tests/|\.ci/)[^`\s]*)`")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_catalogue_has_the_43_ids_of_v1() -> None:
    ids = catalogue_ids()
    assert ids is not None
    assert len(ids) == 43
    assert {"gpu.contention", "cuda.unknown_error", "launch.rank_crash", "host.resources"} <= ids


def _targets(doc: Path) -> list[Path]:
    """Where each link (relative to the doc) and each backticked path (to the root) points."""
    text = doc.read_text(encoding="utf-8")
    links = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    out = [(doc.parent / t.split("#", 1)[0]).resolve() for t in links]
    return out + [(ROOT / t).resolve() for t in _PATH.findall(text)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_and_paths_resolve_inside_the_repository(doc: Path) -> None:
    targets = _targets(doc)
    for path in targets:
        assert path.is_relative_to(ROOT), f"{doc.name} points outside the repository: {path}"
        found = list(ROOT.glob(str(path.relative_to(ROOT)))) if "*" in path.name else [path]
        assert found, f"{doc.name} points at {path}, not in a clone"
        assert found[0].exists(), f"{doc.name} points at {path}, not in a clone"


def test_readme_links_the_design_and_the_public_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = _LINK.findall(text)
    for doc in ("docs/design.md", "docs/diagnoses.md", "docs/json-report.md", "docs/probe.md"):
        assert doc in links
    assert "shared/" not in text


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_install_hints_name_the_extras_of_pyproject() -> None:
    import tomllib  # Python 3.11+

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert {name: tuple(extras[name]) for name in EXTRAS} == EXTRAS


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README's test command is .ci/run's, byte for byte (PostgreSQL started by it)."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```sh\n{ci}\n```" in readme
    assert "scripts/with-postgres .venv/bin/pytest" in ci
