"""docs/ci.md as a script: its workflow's steps run as written, in a clean copy.

The guide promises that its GitHub Actions workflow, its GitLab job and its
pre-commit configuration work when copied (issue 23). The fast tests check that
the three say the same thing and name commands and options that exist; the slow
one runs the workflow's ``run:`` steps one after the other, as GitHub runs them
(``bash -eo pipefail``, the job's ``env``), in a fresh git repository holding the
guide's ``.pre-commit-config.yaml`` and a contract, with a clean copy of this
repository (its tracked and new files, what a commit would hold) at
``third_party/fencepost`` where the submodule would be, and a fresh virtual
environment on ``PATH`` standing for ``actions/setup-python``. Nothing is
fetched from the network: the wheel is built from the copy, its dependencies and
pre-commit come from the configured package index.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from fencepost.cli import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "ci.md"
SUBMODULE = "third_party/fencepost"


def _block(header: str) -> dict[str, Any]:
    """The one ```yaml block of the guide whose first line is ``# <header>``, parsed."""
    text = GUIDE.read_text()
    blocks = re.findall(rf"```yaml\n(# {re.escape(header)}\n.*?)```", text, re.DOTALL)
    assert len(blocks) == 1, f"docs/ci.md: expected one yaml block headed '# {header}'"
    parsed = yaml.safe_load(blocks[0])
    assert isinstance(parsed, dict)
    return parsed


def _job() -> dict[str, Any]:
    job = _block(".github/workflows/conformance.yml")["jobs"]["conform"]
    assert isinstance(job, dict)
    return job


def _commands(script: str) -> list[str]:
    """The logical command lines of a shell step: continuations joined, blanks squeezed."""
    joined = script.replace("\\\n", " ")
    return [" ".join(line.split()) for line in joined.splitlines() if line.strip()]


def test_the_gitlab_job_runs_the_github_steps_with_the_same_variables() -> None:
    job = _job()
    github = [c for step in job["steps"] if "run" in step for c in _commands(step["run"])]
    gitlab = _block(".gitlab-ci.yml")["conformance"]
    assert [" ".join(c.split()) for c in gitlab["script"]] == github
    assert {k: gitlab["variables"][k] for k in job["env"]} == job["env"]
    assert gitlab["variables"]["GIT_SUBMODULE_STRATEGY"] == "recursive"
    assert gitlab["artifacts"]["when"] == "always"
    assert gitlab["artifacts"]["reports"]["junit"] == "fencepost-junit.xml"


def test_no_step_installs_from_pypi_or_names_a_placeholder() -> None:
    text = GUIDE.read_text()
    assert "OWNER" not in text
    assert not re.search(r"^\s*(- )?(python -m )?pip install fencepost\b", text, re.M)
    install = next(s for s in _job()["steps"] if s.get("name", "").startswith("Install"))
    assert '"$FENCEPOST_SRC"' in install["run"] and "dist/fencepost-*.whl" in install["run"]


def _known_options(command: str) -> set[str]:
    found = main.get_command(click.Context(main), command)
    assert found is not None, command
    return {opt for param in found.params for opt in param.opts}


def test_the_pre_commit_hooks_name_real_commands_and_files() -> None:
    config = _block(".pre-commit-config.yaml")
    (repo,) = config["repos"]
    assert repo["repo"] == "local"  # nothing for pre-commit to fetch
    hooks = {hook["id"]: hook for hook in repo["hooks"]}
    assert set(hooks) == {"fencepost-review", "fencepost-conform"}
    for hook in hooks.values():
        assert hook["language"] == "system"
        words = shlex.split(hook["entry"])
        assert words[0] == "fencepost"
        ours = words[2 : words.index("--")] if "--" in words else words[2:]
        options = [w for w in ours if w.startswith("--")]
        assert set(options) <= _known_options(words[1]), hook["id"]
    review = hooks["fencepost-review"]
    files = re.compile(review["files"])
    assert files.search("contracts/kafka.toml") and files.search("x/my.contract.toml")
    assert not files.search("pyproject.toml")
    conform = shlex.split(hooks["fencepost-conform"]["entry"])
    sut = conform[conform.index("--") + 1 :]
    assert sut[1].startswith(SUBMODULE + "/")
    assert (ROOT / sut[1].removeprefix(SUBMODULE + "/")).is_file()
    assert hooks["fencepost-conform"]["pass_filenames"] is False


def _clean_copy(dest: Path) -> None:
    """The repository's tracked and new (not ignored) files: what a commit would hold."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is left out
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _git(project: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", *args],
        cwd=project,
        check=True,
        capture_output=True,
    )


@pytest.mark.slow
def test_the_workflow_steps_run_as_written(tmp_path: Path) -> None:
    job = _job()
    project = tmp_path / "project"
    _clean_copy(project / SUBMODULE)
    config = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", GUIDE.read_text(), re.S)
    assert config is not None
    (project / ".pre-commit-config.yaml").write_text(config.group(1))
    (project / "contracts").mkdir()
    shutil.copy2(ROOT / "contracts" / "kafka.toml", project / "contracts" / "kafka.toml")
    # the submodule's files are not the project's (a gitlink lists none of them)
    (project / ".gitignore").write_text(f"/{SUBMODULE}/\n")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-q", "-m", "a project with fencepost as a submodule")

    venv = tmp_path / "setup-python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "GITHUB_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(job["env"])
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["NO_COLOR"] = "1"

    uploaded: list[str] = []
    for step in job["steps"]:
        if "uses" in step:  # checkout and setup-python are the folders above
            if step["uses"].startswith("actions/upload-artifact"):
                uploaded += step["with"]["path"].split()
            continue
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, (
            f"step {step['name']!r} exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
        )
        if step["name"] == "fencepost conform":
            assert "CONFORMANT" in done.stdout
        if step["name"].startswith("pre-commit"):
            assert re.search(r"fencepost review \(provider contracts\)\.+Passed", done.stdout)
            assert re.search(r"fencepost conform \(algebra.*\)\.+Passed", done.stdout)
    assert uploaded == ["fencepost-junit.xml", "fencepost-report.html", "fencepost-report/"]
    for path in uploaded:
        assert (project / path).exists(), path
