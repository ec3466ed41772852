"""The scripted bases: the situations they are built to reach, and their integers moved
inside a range a SUT declares."""

from __future__ import annotations

import pytest

from fencepost.harness.bases import BASES
from fencepost.harness.protocol import INTEGER_RANGES
from fencepost.harness.schedule import LOST_UNTIL_END, Answer


def _integers(name: str) -> list[int]:
    setup = BASES[name].setup
    return [
        ev.at
        for epoch in setup.epochs
        for part in epoch.partitions
        for ev in part.events
        if isinstance(ev.at, int)
    ]


def test_the_wide_base_needs_more_than_64_bits_and_more_than_a_double() -> None:
    found = _integers("publisher-wide")
    assert any(at > 2**63 - 1 for at in found)
    assert any(float(at) == float(at + 1) and at + 1 in found for at in found), (
        "two neighbouring coordinates a double cannot tell apart"
    )


@pytest.mark.parametrize("declared", ["int53", "int64"])
@pytest.mark.parametrize("name", sorted(BASES))
def test_every_base_fits_a_declared_range_and_keeps_its_shape(declared: str, name: str) -> None:
    limits = INTEGER_RANGES[declared]
    assert limits is not None
    low, high = limits
    base = BASES[name]
    moved = base.within((low, high))
    inside = [
        ev.at
        for epoch in moved.setup.epochs
        for part in epoch.partitions
        for ev in part.events
        if isinstance(ev.at, int)
    ]
    assert all(low <= at <= high for at in inside)
    original = _integers(name)
    # The same events in the same order, and distinct positions stay distinct.
    assert sorted(range(len(inside)), key=inside.__getitem__) == sorted(
        range(len(original)), key=original.__getitem__
    )
    assert len(set(inside)) == len(set(original))
    assert moved.schedule == base.schedule
    if all(low <= at <= high for at in original):
        assert moved is base


def test_no_declared_range_leaves_a_base_as_written() -> None:
    assert BASES["publisher-wide"].within(None) is BASES["publisher-wide"]


@pytest.mark.parametrize("name", ["publisher-millis", "publisher-fence", "checkpointer-budget"])
def test_the_budget_bases_lose_every_call_until_the_request_ends(name: str) -> None:
    assert Answer("w1", LOST_UNTIL_END) in BASES[name].schedule or any(
        isinstance(step, Answer) and step.mode == LOST_UNTIL_END for step in BASES[name].schedule
    )
