"""The wheel installs one import name, ``fencepost``, with its data files."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (found,) = out.glob("fencepost-*.whl")
    return found


def test_only_fencepost_at_the_top_of_site_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"fencepost"}
    for sub in (
        "model",
        "impl",
        "properties",
        "scenarios",
        "commands",
        "views",
        "reports",
        "testing",
    ):
        assert f"fencepost/{sub}/__init__.py" in names, sub
    assert "fencepost/py.typed" in names


def test_every_source_file_is_shipped(wheel: Path) -> None:
    """No module or data file of a mapped folder is left out of the wheel (packages are
    listed by hand): every folder of pyproject's package-dir table, the one home of
    the folder -> package mapping (tests/test_layout.py checks it against the folders)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = {
        folder: package.replace(".", "/") for package, folder in table["package-dir"].items()
    }
    missing = []
    for folder, target in mapping.items():
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in {".py", ".toml", ".css", ".js"} or "__pycache__" in path.parts:
                continue
            shipped = f"{target}/{path.relative_to(ROOT / folder).as_posix()}"
            if shipped not in names:
                missing.append(shipped)
    assert len(mapping) > 10 and missing == []


def test_installed_package_reads_its_data_through_importlib_resources() -> None:
    from importlib.resources import files

    assert files("fencepost.scenarios").is_dir()
    assert files("fencepost.contracts").is_dir()
    assert "figure.timeline" in files("fencepost.reports").joinpath("page.js").read_text()


def test_the_pytest_plugin_is_registered(wheel: Path) -> None:
    """``pip install fencepost`` makes ``pytest --fencepost-sut`` available (pytest11)."""
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "[pytest11]\nfencepost = fencepost.testing.plugin" in text
