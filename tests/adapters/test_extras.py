"""The adapters' tools are installed where the tests run, at versions their extras allow.

.ci/run's adapter stage runs tests/adapters in the virtualenv of the README's
install (``pip install -e '.[test]'``, which pulls ``fencepost[adapters]``): the
adapter tests and conformance runs only mean something against the library
versions users get from ``pip install 'fencepost[NAME]'``. So: every adapter of
:data:`fencepost.adapters.ADAPTERS` (the one home of the set) has its extra in
pyproject.toml, the aggregate ``adapters`` extra and the test extra carry them,
and each library is importable at a version inside its extra's range.
"""

from __future__ import annotations

import importlib.util
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from fencepost.adapters import ADAPTERS

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
EXTRAS: dict[str, list[str]] = tomllib.loads(PYPROJECT.read_text())["project"][
    "optional-dependencies"
]


def requirements(extra: str) -> list[Requirement]:
    assert extra in EXTRAS, f"pyproject.toml has no extra {extra!r}"
    return [Requirement(text) for text in EXTRAS[extra]]


def test_the_adapters_extra_is_every_tool_and_the_test_extra_installs_it() -> None:
    each = sorted(str(r) for info in ADAPTERS.values() for r in requirements(info.extra))
    assert sorted(str(r) for r in requirements("adapters")) == each
    assert "fencepost[adapters]" in EXTRAS["test"]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_tool_is_installed_in_its_extras_range(name: str) -> None:
    info = ADAPTERS[name]
    assert importlib.util.find_spec(info.library) is not None, (
        f"{info.library} is not importable: install the test extra (pip install -e '.[test]')"
    )
    for requirement in requirements(info.extra):
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            pytest.fail(f"{requirement.name} is not installed (extra {info.extra!r})")
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{requirement.name} {installed} is outside {requirement.specifier} ({info.extra})"
        )
