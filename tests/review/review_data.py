"""Shared helpers for the review tests: the data folder and text variants of contracts."""

from __future__ import annotations

from pathlib import Path

from fencepost.contracts import Contract, parse_contract

DATA = Path(__file__).parent / "data"
#: The clean starting point `fencepost contracts init` writes (shipped in the package).
MINIMAL = Path(__file__).parents[2] / "contracts" / "templates" / "minimal.toml"


def variant(text: str, *edits: tuple[str, str]) -> str:
    """``text`` with each ``(old, new)`` replaced once; every ``old`` must be present.

    Failing loudly when ``old`` is missing keeps a test from passing on an
    unchanged (and so trivially clean) contract.
    """
    for old, new in edits:
        assert text.count(old) == 1, f"edit target not found exactly once: {old!r}"
        text = text.replace(old, new)
    return text


def minimal_variant(*edits: tuple[str, str]) -> Contract:
    """The minimal clean contract with ``edits`` applied, parsed."""
    return parse_contract(variant(MINIMAL.read_text(encoding="utf-8"), *edits), "variant.toml")
