"""The layout is the architecture: one package per top-level folder, and who may import whom.

Read from the code's own imports (every ``import`` statement, at any depth of a
module, lazy ones included), never from a list kept by hand:

- each top-level folder holding an ``__init__.py`` is exactly one package of the
  ``fencepost`` namespace, mapped in pyproject's ``package-dir`` (``cli/`` is
  ``fencepost`` itself), and no folder at the root is named ``fencepost``;
- :data:`ALLOWED` says which packages each package may import; in particular
  ``model`` imports nothing of fencepost (not the checker, ``explorer``), ``impl``
  only itself, and the judge side
  (``judge``, ``harness``) nothing of the implementation, not even through another
  package (the transitive closure is checked);
- the CLI (``fencepost`` itself, ``cli/``) sits on top: nothing imports it;
- ``vocabulary`` (the names every package shares) may be imported by every package
  and imports nothing of fencepost;
- the checker (``explorer``) is handed the model through its public interface
  (:data:`MODEL_INTERFACE`, ``fencepost.model.spec``) alone: it imports no other
  module of the model and no name that interface does not export, and reaches
  into no private (underscore) attribute of anything but itself.

A planted bad import or private access makes the check fail (the ``planted`` tests).
"""

from __future__ import annotations

import ast
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package (the part after ``fencepost.``; ``""`` is the root package) -> what it may import.
ALLOWED: Mapping[str, frozenset[str]] = {
    # the names every package shares (docs/changing.md): imports nothing, not even fencepost
    "vocabulary": frozenset(),
    "model": frozenset(),
    # the checker: the model's public interface only (checker_reaches_past_the_interface)
    "explorer": frozenset({"model"}),
    "impl": frozenset(),
    "inputs": frozenset(),
    # Z3 under deterministic resource limits: the one way every query is checked
    "solver": frozenset(),
    "judge": frozenset({"inputs"}),
    "harness": frozenset({"judge", "inputs", "reports"}),
    "audit": frozenset({"judge", "inputs"}),
    "mutants": frozenset({"impl"}),
    "sut": frozenset({"impl", "mutants", "harness", "inputs"}),
    "contracts": frozenset({"impl", "inputs"}),
    "review": frozenset({"contracts", "impl", "inputs", "solver"}),
    "properties": frozenset({"model", "impl", "judge", "mutants", "inputs", "solver"}),
    "scenarios": frozenset(
        {"model", "impl", "judge", "harness", "sut", "mutants", "inputs", "properties", "solver"}
    ),
    # pure: neutral report data in, HTML or Markdown out
    "reports": frozenset(),
    # the pytest plugin and Hypothesis strategies: judge-side, never the implementation
    "testing": frozenset({"judge", "harness", "inputs", "reports"}),
    # the real sync tools behind the wire: judged, so never the judge or the harness
    "adapters": frozenset({"inputs"}),
    "": frozenset(
        {
            "model",
            "explorer",
            "impl",
            "inputs",
            "judge",
            "harness",
            "mutants",
            "sut",
            "contracts",
            "review",
            "properties",
            "scenarios",
            "reports",
            "testing",
            "audit",
            "adapters",
            "solver",
            "vocabulary",
        }
    ),
}

#: What every package may import besides its own ALLOWED: the shared names.
EVERYONE_MAY_USE = frozenset({"vocabulary"})

#: The one module of the model the checker may import: the model as pure functions.
MODEL_INTERFACE = "fencepost.model.spec"

#: Packages whose verdicts must not rest on the implementation they judge.
JUDGE_SIDE = ("judge", "harness", "testing", "audit")

#: What the judged side may take from the harness: the in-process transport only.
SUT_MAY_USE = frozenset({"fencepost.harness.transport", "fencepost.harness.protocol"})


def package_dirs(root: Path) -> dict[str, Path]:
    table = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {module: root / folder for module, folder in table["package-dir"].items()}


def package_of(module: str) -> str:
    """``fencepost.judge.cuts`` -> ``judge``; ``fencepost.commands.x`` -> ``""`` (the root)."""
    parts = module.split(".")
    if parts[0] != "fencepost" or len(parts) == 1:
        return ""
    return parts[1] if parts[1] in ALLOWED else ""


def imports_of(root: Path) -> dict[str, set[str]]:
    """module name -> the fencepost modules it imports, over every package folder."""
    found: dict[str, set[str]] = {}
    for module, folder in package_dirs(root).items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([module, *parts])
            if package_of(name) != package_of(module) and module != "fencepost":
                continue  # a subfolder mapped as its own package is read there
            tree = ast.parse(path.read_text(), str(path))
            names: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module)
                    names.update(f"{node.module}.{a.name}" for a in node.names)
            found[name] = {n for n in names if n == "fencepost" or n.startswith("fencepost.")}
    return found


def violations(root: Path) -> list[str]:
    graph = imports_of(root)
    bad: list[str] = []
    for module, targets in sorted(graph.items()):
        own = package_of(module)
        reported: set[str] = set()
        for target in sorted(targets):
            other = package_of(target)
            if other == own or any(target.startswith(r + ".") for r in reported):
                continue
            reported.add(target)
            if other == "" and target in ("fencepost",) and own != "":
                bad.append(f"{module} imports the root package {target} (the CLI sits on top)")
            elif other in EVERYONE_MAY_USE and own != "vocabulary":
                continue
            elif other not in ALLOWED[own]:
                bad.append(f"{module} imports {target}: {own or 'fencepost'} may not use {other}")
            elif (
                own == "sut"
                and other == "harness"
                and target not in SUT_MAY_USE
                and not any(target.startswith(m + ".") for m in SUT_MAY_USE)
            ):
                bad.append(f"{module} imports {target}: the SUT uses only the transport")
    # The judge side, transitively: nothing it reaches may be the implementation.
    modules = set(graph)
    for start in sorted(m for m in graph if package_of(m) in JUDGE_SIDE):
        seen, stack = {start}, [start]
        while stack:
            for target in graph.get(stack.pop(), ()):
                known = target if target in modules else target.rsplit(".", 1)[0]
                if package_of(target) in ("impl", "sut", "mutants"):
                    bad.append(f"{start} reaches {target}: the judge never borrows from the judged")
                if known in modules and known not in seen:
                    seen.add(known)
                    stack.append(known)
    return bad


def test_each_top_level_folder_is_one_package_and_none_is_named_fencepost() -> None:
    mapped = {p.relative_to(ROOT).parts[0] for p in package_dirs(ROOT).values()}
    folders = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    assert folders == mapped, (
        f"unmapped package folders {folders - mapped}, missing {mapped - folders}"
    )
    assert not (ROOT / "fencepost").exists(), "a root folder named fencepost shadows the package"
    for module, folder in package_dirs(ROOT).items():
        if module.count(".") == 1 or module == "fencepost":
            assert folder.parent == ROOT, f"{module} should be a top-level folder, is {folder}"
    # the uniform rule: fencepost.X lives in X/ (cli/ is the root package)
    for module, folder in package_dirs(ROOT).items():
        if module.count(".") == 1:
            assert folder.name == module.split(".")[1]
    assert package_dirs(ROOT)["fencepost"].name == "cli"
    assert set(ALLOWED) == {m.split(".", 1)[1] if "." in m else "" for m in package_dirs(ROOT)}


def test_imports_follow_the_layering() -> None:
    assert violations(ROOT) == []


def _planted(tmp_path: Path, package: str, text: str) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(
        ROOT, copy, ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", ".venv", "tests")
    )
    (copy / package / "planted_bad_import.py").write_text(text)
    return copy


@pytest.mark.parametrize(
    ("package", "text", "says"),
    [
        ("judge", "from fencepost.impl.cuts import Cut\n", "judge may not use impl"),
        ("model", "def f():\n    import fencepost.judge.cuts\n", "model may not use judge"),
        ("model", "from fencepost.explorer import explore\n", "model may not use explorer"),
        ("impl", "from fencepost.harness import rules\n", "impl may not use harness"),
        ("harness", "from fencepost.sut.adapter import InProcessSut\n", "harness may not use sut"),
        ("impl", "import fencepost.commands.check\n", "impl may not use"),
        ("vocabulary", "from fencepost.model import cuts\n", "vocabulary may not use model"),
        ("vocabulary", "import fencepost.inputs\n", "vocabulary may not use inputs"),
    ],
)
def test_a_planted_bad_import_fails_the_check(
    tmp_path: Path, package: str, text: str, says: str
) -> None:
    found = violations(_planted(tmp_path, package, text))
    assert any(says in v for v in found), found


def test_the_judge_may_not_reach_the_implementation_through_another_package(
    tmp_path: Path,
) -> None:
    copy = _planted(tmp_path, "inputs", "from fencepost.impl.cuts import Cut\n")
    (copy / "judge" / "planted_user.py").write_text(
        "from fencepost.inputs.planted_bad_import import Cut\n"
    )
    found = violations(copy)
    assert any("inputs may not use impl" in v for v in found)
    assert any("never borrows from the judged" in v for v in found)


def _exported(root: Path, module: str) -> set[str]:
    """The names ``module`` (a module of fencepost) lists in its ``__all__``."""
    package, _, name = module.rpartition(".")
    path = package_dirs(root)[package] / f"{name}.py"
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def checker_reaches_past_the_interface(root: Path) -> list[str]:
    """Where the checker (``explorer``) uses more of the model than its public interface.

    Read from the checker's code: every import of a ``fencepost.model`` module
    other than :data:`MODEL_INTERFACE`, every name imported from it that its
    ``__all__`` does not export, and every private attribute (``x._name``, or
    ``getattr(x, "_name")``) on anything but ``self``, at any depth.
    """
    public = _exported(root, MODEL_INTERFACE)
    bad: list[str] = []
    for path in sorted(package_dirs(root)["fencepost.explorer"].rglob("*.py")):
        where = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("fencepost.model") and alias.name != MODEL_INTERFACE:
                        bad.append(f"{where}:{node.lineno} imports {alias.name}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "fencepost.model"
            ):
                if node.module != MODEL_INTERFACE:
                    bad.append(f"{where}:{node.lineno} imports from {node.module}")
                    continue
                for alias in node.names:
                    if alias.name not in public or _private(alias.name):
                        bad.append(
                            f"{where}:{node.lineno} imports {alias.name}, which "
                            f"{MODEL_INTERFACE} does not export"
                        )
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id == "self"):
                    bad.append(f"{where}:{node.lineno} reaches into the private .{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
            ):
                bad.append(f"{where}:{node.lineno} reaches into the private {node.args[1].value}")
    return bad


def test_the_checker_uses_the_models_public_interface_only() -> None:
    assert checker_reaches_past_the_interface(ROOT) == []
    assert _exported(ROOT, MODEL_INTERFACE), "the interface exports nothing"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "from fencepost.model.machine import successors\n",
            "imports from fencepost.model.machine",
        ),
        ("def f():\n    import fencepost.model.keys\n", "imports fencepost.model.keys"),
        ("from fencepost.model.spec import _sometimes\n", "imports _sometimes"),
        ("from fencepost.model.spec import applicable\n", "imports applicable"),
        ("def f(state):\n    return state._replace(epoch=1)\n", "private ._replace"),
        ("def f(spec):\n    return spec.factored._memo\n", "private ._memo"),
        ("def f(ctx):\n    return getattr(ctx, '_views')\n", "private _views"),
    ],
)
def test_a_planted_private_access_by_the_checker_fails_the_check(
    tmp_path: Path, text: str, says: str
) -> None:
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    for folder in ("explorer", "model"):  # all the check reads
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "explorer" / "planted_private_access.py").write_text(text)
    found = checker_reaches_past_the_interface(copy)
    assert any(says in v for v in found), found
