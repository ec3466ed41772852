"""The ``sync`` level's verdict as arithmetic over rows (docs/conformance-protocol.md).

An incremental-sync tool is judged by what a data engineer cares about: after the
world has quiesced and the tool has run to completion, how many rows of the
source the destination holds zero times (**lost**) and more than once
(**duplicated**), and whether the coverage its state claimed was ever more than
the destination held (**honest coverage**). Everything here is a pure function
over plain values (row ids, cursor values, the commits the destination applied,
the claims the tool made), so it is independent of the world that produced
them: the harness's late-commit world (``fencepost.harness.late_world``) hands
its ground truth and its destination's log over, and the verdict is computed
here, the same way for any producer.

Guarantees, each pinned by ``tests/judge/test_rows.py`` with a broken variant:

- :func:`replay_commits`: ``append`` adds one copy per record, ``merge`` leaves
  exactly one copy of each row it names (an upsert on the primary key), and a
  merged record that was already held counts as one **absorbed** re-read;
- :func:`delivery`: a ground-truth row with no copy is lost, one with more than
  one copy is duplicated (``extra`` counts the copies beyond the first);
- :func:`covered_rows` reads a claim with the cut semantics of
  docs/semantics.md section 2 (``before x``: every value below ``x``;
  ``through x``: every value up to and including ``x``; nothing: no row),
  plus the rows named at exactly ``x``;
- :func:`dishonest_claims` compares a claim with the ground truth, rows that
  commit later included: a claim covering a row the destination does not hold
  is reported with the row, because a tool resuming from that claim never
  reads the row again;
- :func:`broken_properties`: lost rows break ``no_lost_rows``; a dishonest
  claim ``honest_coverage``; duplicates break ``exactly_once`` only for a tool
  that declared exactly-once delivery.

Cost: linear in the rows and commit records handed in (claims: rows x claims).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from enum import Enum

from fencepost.vocabulary.rules import ROW_PROPERTIES


class RowProperty(Enum):
    """The properties of the ``sync`` level, by their one name."""

    NO_LOST_ROWS = "no_lost_rows"
    HONEST_COVERAGE = "honest_coverage"
    EXACTLY_ONCE = "exactly_once"


#: What breaking each property means, in a data engineer's words (the vocabulary's text).
ROW_MEANING: Mapping[RowProperty, str] = {prop: ROW_PROPERTIES[prop.value] for prop in RowProperty}

#: The order in which broken properties are reported: what a user loses first.
ROW_PRIORITY: tuple[RowProperty, ...] = (
    RowProperty.NO_LOST_ROWS,
    RowProperty.HONEST_COVERAGE,
    RowProperty.EXACTLY_ONCE,
)

#: The write modes of a commit.
MODES: tuple[str, ...] = ("append", "merge")


@dataclass(frozen=True, slots=True)
class TruthRow:
    """One row of the source as it will ever exist: id, partition and cursor value."""

    id: str
    partition: str
    at: int


@dataclass(frozen=True, slots=True)
class AppliedCommit:
    """One commit the destination applied: the row ids it wrote and how."""

    records: tuple[str, ...]
    mode: str


@dataclass(frozen=True)
class Holding:
    """What the destination holds after its applied commits: copies per row id."""

    copies: Mapping[str, int]
    #: Records merged onto a row the destination already held (re-reads, not duplicates).
    absorbed: int = 0

    def held(self) -> frozenset[str]:
        """The row ids with at least one copy."""
        return frozenset(r for r, n in self.copies.items() if n > 0)


def replay_commits(commits: Iterable[AppliedCommit]) -> Holding:
    """The destination after ``commits``, in order (see the module docstring).

    A ``merge`` collapses whatever copies a row had to exactly one, as a
    delete-and-insert on the primary key does; the record counts as absorbed
    when the row was held before. An unknown mode is a ``ValueError`` (the
    caller's mistake: the protocol has two).
    """
    copies: dict[str, int] = {}
    absorbed = 0
    for commit in commits:
        if commit.mode not in MODES:
            raise ValueError(f"unknown commit mode {commit.mode!r}; one of {', '.join(MODES)}")
        for record in commit.records:
            held = copies.get(record, 0)
            if commit.mode == "append":
                copies[record] = held + 1
            else:
                if held > 0:
                    absorbed += 1
                copies[record] = 1
    return Holding(copies, absorbed)


@dataclass(frozen=True)
class Delivery:
    """Lost and duplicated rows of the ground truth, and the re-reads merge absorbed."""

    #: Ground-truth rows with no copy, in (partition, at, id) order.
    lost: tuple[TruthRow, ...]
    #: Row id -> its copies, for ground-truth rows held more than once, in (partition, at, id)
    #: order.
    duplicated: Mapping[str, int] = field(default_factory=dict)
    absorbed: int = 0

    @property
    def extra(self) -> int:
        """Copies beyond the first, over every duplicated row."""
        return sum(n - 1 for n in self.duplicated.values())


def _order(row: TruthRow) -> tuple[str, int, str]:
    return (row.partition, row.at, row.id)


def delivery(truth: Iterable[TruthRow], holding: Holding) -> Delivery:
    """Count each ground-truth row's copies: zero is lost, more than one duplicated."""
    rows = sorted(truth, key=_order)
    lost = tuple(r for r in rows if holding.copies.get(r.id, 0) == 0)
    duplicated = {r.id: holding.copies[r.id] for r in rows if holding.copies.get(r.id, 0) > 1}
    return Delivery(lost, duplicated, holding.absorbed)


@dataclass(frozen=True, slots=True)
class Claim:
    """What a tool's state claims for one partition: the cut's downset plus ``plus``.

    ``at`` None is the cut *nothing* (no row); ``kind`` is ``before`` or
    ``through``; ``plus`` names rows at exactly ``at`` also covered (``before`` only).
    """

    partition: str
    at: int | None
    kind: str = "before"
    plus: tuple[str, ...] = ()


def in_downset(claim: Claim, at: int) -> bool:
    """Whether the cut of ``claim`` covers the cursor value ``at`` (docs/semantics.md section 2)."""
    if claim.at is None:
        return False
    if claim.kind == "through":
        return at <= claim.at
    return at < claim.at


def covered_rows(claim: Claim, truth: Iterable[TruthRow]) -> tuple[TruthRow, ...]:
    """The ground-truth rows of the claim's partition that the claim covers."""
    named = set(claim.plus)
    return tuple(
        r
        for r in sorted(truth, key=_order)
        if r.partition == claim.partition and (in_downset(claim, r.at) or r.id in named)
    )


@dataclass(frozen=True, slots=True)
class Overclaim:
    """One way a claim says more than is true: a covered row not held, or a bad name.

    ``row`` is the row not held (None when the claim names something that is not
    there: an unknown partition, or a ``plus`` id that is no row at the cut's
    coordinate); ``problem`` says it in words.
    """

    partition: str
    row: TruthRow | None
    problem: str


def dishonest_claims(
    claims: Iterable[Claim], truth: Sequence[TruthRow], held: Set[str], partitions: Set[str]
) -> tuple[Overclaim, ...]:
    """Every way ``claims`` exceed what the destination ``held`` (see the module docstring).

    ``partitions`` are the source's partitions, those holding no row included: a
    partition that appears empty is listed by the source, and a claim on it that covers
    nothing (``before`` its first possible value) is honest. Only a partition the source
    never has is an overclaim by name. Costs O(claims x rows).
    """
    out: list[Overclaim] = []
    for claim in claims:
        if claim.partition not in partitions:
            out.append(
                Overclaim(
                    claim.partition,
                    None,
                    f"claims coverage of partition {claim.partition!r}, which the source does "
                    "not have",
                )
            )
            continue
        at_cut = {r.id for r in truth if r.partition == claim.partition and r.at == claim.at}
        for name in claim.plus:
            if claim.kind != "before" or name not in at_cut:
                out.append(
                    Overclaim(
                        claim.partition,
                        None,
                        f"names {name!r} in plus, which is no row of {claim.partition} at the "
                        "cut's coordinate",
                    )
                )
        for row in covered_rows(claim, truth):
            if row.id not in held:
                out.append(Overclaim(claim.partition, row, f"covers {row.id}, not held"))
    return tuple(out)


def broken_properties(
    result: Delivery, overclaims: Sequence[Overclaim], exactly_once: bool
) -> tuple[RowProperty, ...]:
    """The properties broken, in :data:`ROW_PRIORITY` order."""
    broken = set()
    if result.lost:
        broken.add(RowProperty.NO_LOST_ROWS)
    if overclaims:
        broken.add(RowProperty.HONEST_COVERAGE)
    if exactly_once and result.duplicated:
        broken.add(RowProperty.EXACTLY_ONCE)
    return tuple(p for p in ROW_PRIORITY if p in broken)
