"""Z3 witnesses: they exist exactly when the claim is false, and they check out by arithmetic."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import pytest
from review_data import DATA

from fencepost.contracts import (
    Adjust,
    Boundary,
    Encoding,
    Surface,
    Use,
    load_contract,
    read_contract_file,
    relation,
)
from fencepost.impl.cuts import Endpoint
from fencepost.review import witness as w
from fencepost.review.findings import Cutlike, Witness, WitnessKind, show_position
from fencepost.review.rules import review_contract

BAD = sorted(DATA.glob("*-bad.toml"))


def axis(successor: bool, kind: str = "integer", anchor: int | str = 100) -> w.Axis:
    facts = load_contract("kafka").order_facts
    if kind == "string":
        facts = replace(facts, kind=type(facts.kind)("string"), encoding=Encoding.STRING)
    return w.Axis(replace(facts, successor=successor), anchor)


def test_exact_successor_makes_through_x_and_before_x_plus_1_the_same_claim() -> None:
    exact = axis(True)
    assert w.outside(exact, Cutlike("before", 101), Cutlike("through", 100), "", "", "") is None
    assert w.outside(exact, Cutlike("through", 100), Cutlike("before", 101), "", "", "") is None
    dense = axis(False)
    found = w.outside(dense, Cutlike("before", 101), Cutlike("through", 100), "", "", "")
    assert found is not None and found.verify()
    (event,) = found.events
    assert isinstance(event.at, Fraction) and 100 < event.at < 101
    assert event.at == Fraction(201, 2)  # the readable half-way point is preferred


def test_string_witness() -> None:
    found = w.outside(
        axis(False, "string", "m"), Cutlike("through", "m"), Cutlike("before", "m"), "", "", ""
    )
    assert found is not None and found.events[0].at == "m" and found.verify()


@pytest.mark.parametrize(
    ("role", "boundary", "checkpoint", "adjust", "successor"),
    list(
        itertools.product(
            ("claim", "resume"),
            (Endpoint.BEFORE, Endpoint.THROUGH),
            (Endpoint.BEFORE, Endpoint.THROUGH),
            tuple(Adjust),
            (True, False),
        )
    ),
)
def test_z3_agrees_with_the_cut_algebra(
    role: str, boundary: Endpoint, checkpoint: Endpoint, adjust: Adjust, successor: bool
) -> None:
    """Z3 finds a witness exactly when the production cut algebra says the use overclaims."""
    surface = Surface.RECORD if role == "claim" else Surface.PARAMETER
    use = Use(role, "u", (role,), Boundary("b", surface, boundary, "m", ()), checkpoint, adjust)
    delta = {Adjust.NONE: 0, Adjust.SUCCESSOR: 1, Adjust.PREDECESSOR: -1}[adjust]
    if role == "claim":
        inner, outer = Cutlike(checkpoint.value, 100 + delta), Cutlike(boundary.value, 100)
    else:
        inner, outer = Cutlike(boundary.value, 100 + delta), Cutlike(checkpoint.value, 100)
    found = w.outside(axis(successor), inner, outer, "", "", "")
    assert (found is not None) == (relation(use, successor=successor) == "stronger")
    if found is not None:
        assert found.verify()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_every_bad_contract_has_a_verified_witness(path: object) -> None:
    findings = review_contract(read_contract_file(path))  # type: ignore[arg-type]
    witnessed = [f for f in findings if f.witness is not None]
    assert witnessed, "a -bad contract must show at least one witness"
    for f in witnessed:
        assert f.witness is not None and f.witness.verify()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_tampered_witnesses_fail_verification(path: object) -> None:
    """Teeth for verify(): move the offending event inside what is guaranteed and it fails."""
    for f in review_contract(read_contract_file(path)):  # type: ignore[arg-type]
        wit = f.witness
        if not isinstance(wit, Witness):
            continue  # sync witnesses have their own tamper tests (test_review_sync.py)
        if wit.kind is WitnessKind.OUTSIDE:
            assert wit.guarantee is not None
            safe = replace(wit.events[0], at=_inside(wit.guarantee))
            broken = replace(wit, events=(safe,))
        elif wit.kind is WitnessKind.TIE:
            broken = replace(wit, events=tuple(replace(e, seq=1) for e in wit.events))
        elif wit.kind is WitnessKind.LATE:
            broken = replace(wit, events=tuple(replace(e, time=0) for e in wit.events))
        elif wit.kind is WitnessKind.UNFINAL:
            broken = replace(wit, events=tuple(replace(e, final=True) for e in wit.events))
        elif wit.kind is WitnessKind.INCOMPARABLE:
            broken = replace(wit, events=tuple(replace(e, time=5) for e in wit.events))
        else:
            broken = replace(wit, members=tuple(e.partition for e in wit.events))
        assert not broken.verify(), (f.rule, broken)


def _inside(cut: Cutlike) -> int | str | Fraction:
    if isinstance(cut.at, str):
        return "" if cut.kind == "before" else cut.at
    return cut.at - 1


def test_positions_are_shown_in_the_providers_notation() -> None:
    pg = w.Axis(load_contract("postgresql").order_facts, 0x16B374D848)
    assert pg.show(0x16B374D848) == "16/B374D848"
    assert pg.show(Fraction(2 * 0x16B374D848 + 1, 2)) == "16/B374D848 + 1/2"
    mongo = w.Axis(load_contract("mongodb").order_facts, (5 << 32) | 1)
    assert mongo.show((5 << 32) | 1) == "Timestamp(5, 1)"
    assert show_position(Fraction(1, 3)) == "1/3"
    assert show_position(Fraction(-5, 4)) == "-1.25"
    assert show_position(Fraction(6, 3)) == "2"


def test_witnesses_respect_distinct_positions() -> None:
    """Without shared positions the late event may not sit at the signal's own coordinate."""
    found = w.late(axis(False), Cutlike("through", 100), "", "", shared=False)
    assert found is not None and found.events[1].at != 100
    shared = w.late(axis(False), Cutlike("through", 100), "", "", shared=True)
    assert shared is not None and shared.events[1].at == 100
