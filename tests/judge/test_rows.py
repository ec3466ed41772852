"""The sync level's verdict arithmetic (fencepost.judge.rows), each rule with a broken variant.

Every check below is written as a function over an implementation of the rule,
run on the real one (it must pass) and on a plausible wrong one (it must fail),
so no test here could pass against an implementation that got the rule wrong
in that way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set

import pytest

from fencepost.judge.rows import (
    AppliedCommit,
    Claim,
    Delivery,
    Holding,
    Overclaim,
    RowProperty,
    TruthRow,
    broken_properties,
    covered_rows,
    delivery,
    dishonest_claims,
    in_downset,
    replay_commits,
)

TRUTH = (
    TruthRow("r1", "main", 10),
    TruthRow("r2", "main", 20),
    TruthRow("r3", "main", 20),
    TruthRow("r4", "main", 30),
    TruthRow("e1", "eu", 5),
)

Replay = Callable[[Iterable[AppliedCommit]], Holding]


def replay_failures(replay: Replay) -> list[str]:
    """What a replay of commits must get right: append adds, merge collapses to one."""
    out = []
    h = replay(
        [
            AppliedCommit(("r1", "r2"), "append"),
            AppliedCommit(("r1",), "append"),
            AppliedCommit(("r2", "r3"), "merge"),
            AppliedCommit(("r1",), "merge"),
        ]
    )
    if h.copies.get("r1") != 1:
        out.append(f"merge must leave one copy of r1, got {h.copies.get('r1')}")
    if h.copies.get("r2") != 1 or h.copies.get("r3") != 1:
        out.append("merge of a held and a new row: one copy each")
    if h.absorbed != 2:
        out.append(f"two merged records were already held (r2, r1), got {h.absorbed}")
    twice = replay([AppliedCommit(("r4",), "append"), AppliedCommit(("r4",), "append")])
    if twice.copies.get("r4") != 2 or twice.absorbed != 0:
        out.append("two appends are two copies, none absorbed")
    return out


def _merge_adds(commits: Iterable[AppliedCommit]) -> Holding:
    """Broken: a merge adds a copy like an append (an upsert that is not one)."""
    copies: dict[str, int] = {}
    for c in commits:
        for r in c.records:
            copies[r] = copies.get(r, 0) + 1
    return Holding(copies, 0)


def _merge_keeps_extra(commits: Iterable[AppliedCommit]) -> Holding:
    """Broken: a merge onto a row held twice leaves both copies."""
    copies: dict[str, int] = {}
    absorbed = 0
    for c in commits:
        for r in c.records:
            held = copies.get(r, 0)
            if c.mode == "merge" and held:
                absorbed += 1
                continue
            copies[r] = held + 1
    return Holding(copies, absorbed)


def test_replay_append_adds_merge_collapses_and_counts_absorbed() -> None:
    assert replay_failures(replay_commits) == []
    assert replay_failures(_merge_adds)
    assert replay_failures(_merge_keeps_extra)
    with pytest.raises(ValueError, match="unknown commit mode"):
        replay_commits([AppliedCommit(("r1",), "upsert")])


Count = Callable[[Iterable[TruthRow], Holding], Delivery]


def delivery_failures(count: Count) -> list[str]:
    out = []
    d = count(TRUTH, Holding({"r1": 1, "r2": 2, "r4": 3, "stray": 5}, 4))
    if [r.id for r in d.lost] != ["e1", "r3"]:
        out.append(f"lost are the rows with no copy, in (partition, at, id) order: {d.lost}")
    if dict(d.duplicated) != {"r2": 2, "r4": 3}:
        out.append(f"duplicated are the ground-truth rows held more than once: {d.duplicated}")
    if d.extra != 3 or d.absorbed != 4:
        out.append(f"extra copies 3 and absorbed 4, got {d.extra} and {d.absorbed}")
    return out


def _one_copy_is_a_duplicate(truth: Iterable[TruthRow], holding: Holding) -> Delivery:
    """Broken: counts a row held once as duplicated."""
    right = delivery(truth, holding)
    dup = {r: n for r, n in holding.copies.items() if n >= 1}
    return Delivery(right.lost, dup, right.absorbed)


def _strays_count(truth: Iterable[TruthRow], holding: Holding) -> Delivery:
    """Broken: counts rows the source never had (and misses the lost ones' order)."""
    right = delivery(truth, holding)
    dup = {r: n for r, n in holding.copies.items() if n > 1}
    return Delivery(tuple(sorted(right.lost, key=lambda r: r.id)), dup, right.absorbed)


def test_delivery_counts_lost_and_duplicated_rows_of_the_ground_truth() -> None:
    assert delivery_failures(delivery) == []
    assert delivery_failures(_one_copy_is_a_duplicate)
    assert delivery_failures(_strays_count)


Downset = Callable[[Claim, int], bool]


def downset_failures(inside: Downset) -> list[str]:
    out = []
    cases = [
        (Claim("main", 20, "before"), 19, True),
        (Claim("main", 20, "before"), 20, False),
        (Claim("main", 20, "through"), 20, True),
        (Claim("main", 20, "through"), 21, False),
        (Claim("main", None), -(10**9), False),
    ]
    for claim, at, expected in cases:
        if inside(claim, at) is not expected:
            out.append(f"{claim} covers {at}: expected {expected}")
    return out


def test_cut_semantics_before_through_nothing() -> None:
    assert downset_failures(in_downset) == []
    assert downset_failures(lambda c, at: c.at is not None and at <= c.at)  # before as through
    assert downset_failures(lambda c, at: c.at is not None and at < c.at)  # through as before
    assert downset_failures(lambda c, at: c.at is None or at < c.at)  # nothing as everything


Covered = Callable[[Claim, Iterable[TruthRow]], tuple[TruthRow, ...]]


def covered_failures(cover: Covered) -> list[str]:
    out = []
    got = [r.id for r in cover(Claim("main", 20, "before", ("r2",)), TRUTH)]
    if got != ["r1", "r2"]:
        out.append(f"before 20 plus r2 covers r1 and r2 (not r3, nor eu's e1): {got}")
    got = [r.id for r in cover(Claim("eu", 6, "through"), TRUTH)]
    if got != ["e1"]:
        out.append(f"a claim covers its own partition only: {got}")
    return out


def test_covered_rows_are_the_downset_plus_the_named_rows_of_one_partition() -> None:
    assert covered_failures(covered_rows) == []
    assert covered_failures(
        lambda c, t: tuple(r for r in t if in_downset(c, r.at) or r.id in c.plus)
    )  # every partition
    assert covered_failures(
        lambda c, t: tuple(r for r in t if r.partition == c.partition and in_downset(c, r.at))
    )  # plus ignored


Dishonest = Callable[
    [Iterable[Claim], Sequence[TruthRow], Set[str], Set[str]], tuple[Overclaim, ...]
]
#: The source's partitions: every partition of TRUTH, and "empty", which holds no row.
PARTITIONS = {r.partition for r in TRUTH} | {"empty"}


def dishonest_failures(judge: Dishonest) -> list[str]:
    out = []
    held = {"r1", "r2"}
    if judge([Claim("main", 20, "before", ("r2",))], TRUTH, held, PARTITIONS):
        out.append("before 20 plus r2 with r1 and r2 held is honest")
    over = judge([Claim("main", 20, "through")], TRUTH, held, PARTITIONS)
    if [o.row.id for o in over if o.row is not None] != ["r3"]:
        out.append(f"through 20 covers r3 (shares 20, not held): {over}")
    late = judge([Claim("main", 31, "before")], TRUTH, held, PARTITIONS)
    if {o.row.id for o in late if o.row is not None} != {"r3", "r4"}:
        out.append("a row that commits later (r4, not held) is covered by before 31")
    if not judge([Claim("main", 20, "before", ("r4",))], TRUTH, held | {"r4"}, PARTITIONS):
        out.append("plus must name rows at exactly the cut's coordinate")
    if not judge([Claim("apac", 1, "before")], TRUTH, held, PARTITIONS):
        out.append("a claim on a partition the source does not have is refused")
    if judge([Claim("empty", 0, "before")], TRUTH, held, PARTITIONS):
        out.append("a claim covering nothing on a partition that holds no row is honest")
    return out


def _held_ids_only(
    claims: Iterable[Claim], truth: Sequence[TruthRow], held: Set[str], parts: Set[str]
) -> tuple[Overclaim, ...]:
    """Broken: judges only the rows the source has shown (visible ones), as if later commits
    did not count: here, rows above the greatest held value are skipped."""
    top = max((r.at for r in truth if r.id in held), default=0)
    return tuple(
        o for o in dishonest_claims(claims, truth, held, parts) if o.row is None or o.row.at <= top
    )


def _no_names(
    claims: Iterable[Claim], truth: Sequence[TruthRow], held: Set[str], parts: Set[str]
) -> tuple[Overclaim, ...]:
    """Broken: never questions the names a claim carries."""
    return tuple(o for o in dishonest_claims(claims, truth, held, parts) if o.row is not None)


def test_dishonest_claims_count_rows_that_commit_later_and_bad_names() -> None:
    assert dishonest_failures(dishonest_claims) == []
    assert dishonest_failures(_held_ids_only)
    assert dishonest_failures(_no_names)
    # The partitions known from the rows alone (the field bug: an empty partition that
    # appeared and was listed taken for one the source does not have).
    assert dishonest_failures(
        lambda c, t, h, parts: dishonest_claims(c, t, h, {r.partition for r in t})
    )


Broken = Callable[[Delivery, Sequence[Overclaim], bool], tuple[RowProperty, ...]]


def verdict_failures(verdict: Broken) -> list[str]:
    out = []
    lost = Delivery((TruthRow("r1", "main", 1),), {}, 0)
    dup = Delivery((), {"r1": 2}, 0)
    over = [Overclaim("main", TruthRow("r1", "main", 1), "covers r1")]
    if verdict(lost, over, False) != (RowProperty.NO_LOST_ROWS, RowProperty.HONEST_COVERAGE):
        out.append("lost rows and an overclaim: both, lost first")
    if verdict(dup, [], False) != ():
        out.append("duplicates fail nothing for an at-least-once tool")
    if verdict(dup, [], True) != (RowProperty.EXACTLY_ONCE,):
        out.append("duplicates fail exactly_once for an exactly-once tool")
    if verdict(Delivery((), {}, 9), [], True) != ():
        out.append("absorbed re-reads are no duplicates")
    return out


def test_properties_broken_follow_the_counts_and_the_declared_delivery() -> None:
    assert verdict_failures(broken_properties) == []
    assert verdict_failures(
        lambda d, o, once: broken_properties(d, o, True)
    )  # duplicates always fail
    assert verdict_failures(
        lambda d, o, once: tuple(reversed(broken_properties(d, o, once)))
    )  # wrong order
