"""Provider contracts: what a source promises about positions, boundaries and finality.

A contract is a TOML file (``contracts/kafka.toml``; docs/contracts.md describes
every field) stating, each fact with its citation:

- the coordinate order: integer or string, whether ``succ(x)`` is exact, whether
  several events can share one position and how boundaries treat such ties;
- every boundary the API exposes, as a parameter (a resume position) or in a
  record (a claim), mapped to the cut it marks: ``before`` or ``through``;
- the claims fencepost may take finality from, and exactly what each guarantees;
- whether partitions share one order; how membership changes and is learned;
- pagination (token opacity, overlap, empty pages); caveats and unconfirmed facts.

A contract is not only documentation: it configures the runtime. :meth:`Contract.order`
builds the implementation's :class:`~fencepost.impl.orders.Order`,
:meth:`Contract.membership` the membership whose merge withholds ``incomparable``
exactly when the provider's partitions share no order, :meth:`Contract.check_claim`
decides whether a provider claim (boundary name and value) may certify a
checkpoint and as which cut, and :meth:`Contract.resume_from` turns a checkpoint
back into a provider resume position that skips nothing uncertified. The runtime
refuses what would make a claim untrue (a manufactured successor, a ``before``
boundary read as ``through``, a caught-up signal taken as finality); the review
tool (``fencepost review``) explains the same mistakes with witnesses.

Errors name the file, the line and the field: ``kinesis.toml:31: claims.x.guarantee: ...``.
"""

from __future__ import annotations

import difflib
import importlib.resources
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from enum import Enum
from pathlib import Path as FilePath
from types import MappingProxyType
from typing import TypeVar

from fencepost.impl.cuts import Cut, Endpoint, compare_cuts
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate, IntegerOrder, Order, StringOrder
from fencepost.impl.provider import Claim
from fencepost.impl.records import Membership
from fencepost.impl.tomllines import (
    KeySyntaxError,
    LineIndex,
    Path,
    format_path,
    index_lines,
    parse_path,
)

# ---------------------------------------------------------------------------
# Errors


class ContractError(InvalidValue):
    """A contract file that cannot be read, parsed or trusted, with its place.

    ``file`` and ``line`` locate the mistake (``line`` is None when the whole
    file is at fault: unreadable, missing); ``field`` is the dotted path of the
    offending field as an author writes it (``boundaries.AT_SEQUENCE_NUMBER.cut``).
    """

    def __init__(
        self, file: str, line: int | None, field: str, problem: str, value: object = None
    ) -> None:
        super().__init__(field, value, problem)
        self.file = file
        self.line = line

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return (
            f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
        )


class UnknownContract(InvalidValue):
    """A contract name that is neither a shipped contract nor a readable file."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        super().__init__(
            "contract",
            name,
            f"no shipped contract named {name!r} (known: {', '.join(known)}){hint} "
            "— pass a path ending in .toml to load your own",
        )
        self.name = name
        self.suggestion = close[0] if close else None


# ---------------------------------------------------------------------------
# The vocabulary


class CoordinateKind(Enum):
    """The kind of the order's coordinates (docs/semantics.md section 1)."""

    INTEGER = "integer"
    STRING = "string"


class Encoding(Enum):
    """How a value as the provider's API writes it becomes a coordinate.

    Each integer encoding is order-preserving: the provider's order on values is
    the integers' order on the encoded coordinates.
    """

    INTEGER = "integer"  # an integer, or a string of decimal digits (Kinesis sequence numbers)
    STRING = "string"  # the string itself, compared by code point
    LSN = "lsn"  # PostgreSQL "16/B374D848": (high << 32) | low
    HLC = "hlc"  # CockroachDB "1589215296435678000.0000000001": wall * 10**10 + logical
    RFC3339 = "rfc3339"  # "2024-05-01T12:00:00.123456789Z": nanoseconds since the epoch
    BSON_TIMESTAMP = "bson-timestamp"  # MongoDB Timestamp(t, i) as [t, i]: (t << 32) | i
    PAIR64 = "pair64"  # [sort value, tiebreaker in 0..2**64): value * 2**64 + tiebreaker


class Surface(Enum):
    """Where a boundary appears: a request parameter, or a field of a returned record."""

    PARAMETER = "parameter"
    RECORD = "record"


class Guarantee(Enum):
    """What a claim's source actually promises about the events in its downset."""

    FINAL = "final"  # every event in the downset was returned and will never change
    CAUGHT_UP = "caught-up"  # nothing newer was visible at the moment of the response
    OBSERVED = "observed"  # only the greatest position seen so far
    PROVISIONAL = "provisional"  # complete for now, but events in it may still change


class Adjust(Enum):
    """A change of coordinate between a boundary value and the cut (or back)."""

    NONE = "none"
    SUCCESSOR = "successor"  # x + 1
    PREDECESSOR = "predecessor"  # x - 1


class Occurs(Enum):
    """When a claim is made: all along, only when a partition ends, or per snapshot."""

    CONTINUOUS = "continuous"
    PARTITION_END = "partition-end"
    SNAPSHOT = "snapshot"


class Ties(Enum):
    """How boundaries treat a coordinate that several events share."""

    ATOMIC = "atomic"  # every boundary covers all or none of the events at one coordinate
    TIEBREAKER = "tiebreaker"  # the coordinate includes a tiebreaker that makes it unique


class CrossOrder(Enum):
    """Whether the partitions' coordinates lie on one shared order."""

    SHARED = "shared"
    PER_PARTITION = "per-partition"


class Frontier(Enum):
    """What the design publishes: one scalar cut, or the checkpoint vector."""

    SCALAR = "scalar"
    VECTOR = "vector"


class MembershipChange(Enum):
    """How the set of partitions changes, as a consumer sees it."""

    NONE = "none"  # fixed
    HIDDEN = "hidden"  # the provider changes internally and its claims already cover it
    ADD = "add"  # partitions are added
    SPLIT_MERGE = "split-merge"  # partitions split and merge (with parents and children)


class Discovery(Enum):
    """How a consumer learns that the membership changed."""

    NONE = "none"
    POLL = "poll"  # by listing partitions again
    IN_BAND = "in-band"  # from records in the stream (child shards at shard end)
    CALLBACK = "callback"  # from client callbacks (rebalance listeners)


class Epochs(Enum):
    """The runtime's membership epoch mechanism."""

    NONE = "none"
    PER_CHANGE = "per-change"  # a new durable epoch for every discovered change


class Lineage(Enum):
    """Whether children are read only after their parents are finished."""

    NONE = "none"
    PARENTS_FIRST = "parents-first"


class TokenKind(Enum):
    """Whether the continuation token is opaque or is itself a position."""

    OPAQUE = "opaque"
    POSITION = "position"


class Possibility(Enum):
    """Whether something can happen; ``possible`` is the conservative reading."""

    POSSIBLE = "possible"
    NEVER = "never"


#: Encodings each coordinate kind accepts (the first is the default).
ENCODINGS_OF_KIND: Mapping[CoordinateKind, tuple[Encoding, ...]] = MappingProxyType(
    {
        CoordinateKind.INTEGER: (
            Encoding.INTEGER,
            Encoding.LSN,
            Encoding.HLC,
            Encoding.RFC3339,
            Encoding.BSON_TIMESTAMP,
            Encoding.PAIR64,
        ),
        CoordinateKind.STRING: (Encoding.STRING,),
    }
)

#: Top-level fields whose facts the runtime relies on (an unconfirmed one is a warning).
LOAD_BEARING = frozenset({"order", "boundaries", "claims", "partitions", "membership", "resume"})

# ---------------------------------------------------------------------------
# Typed data


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """Who the contract is about and which version of their documentation it reads."""

    name: str
    title: str
    version: str
    summary: str | None


@dataclass(frozen=True, slots=True)
class Source:
    """A citation: a document by title, with a URL only where one was actually found."""

    id: str
    title: str
    url: str | None
    quote: str | None


@dataclass(frozen=True, slots=True)
class OrderFacts:
    """The coordinate order (docs/semantics.md section 1) and how values become coordinates."""

    name: str
    kind: CoordinateKind
    successor: bool
    comparable: bool
    resolution: str
    encoding: Encoding
    shared_positions: bool
    ties: Ties | None
    tiebreaker: str | None
    example: object
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Boundary:
    """A boundary the API exposes, mapped to the cut it marks at its value ``x``.

    For a record (a claim), ``cut`` is the downset the record speaks about. For a
    parameter (a resume position), ``cut`` is the downset a consumer resuming at
    ``x`` will *not* be sent: an inclusive start ("at x") skips ``before x``, an
    exclusive start ("after x") skips ``through x``.
    """

    name: str
    surface: Surface
    cut: Endpoint
    meaning: str
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """A claim fencepost may take finality from: which boundary, what it guarantees, how used.

    ``as_kind`` and ``adjust`` say which checkpoint cut the design derives from
    the boundary value ``v``: ``(as_kind, v)``, or at ``v + 1`` / ``v - 1``.
    """

    name: str
    boundary: str
    guarantee: Guarantee
    certifies: bool
    as_kind: Endpoint
    adjust: Adjust
    occurs: Occurs
    statement: str
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResumeRule:
    """How a checkpoint of one kind is turned back into a provider resume position."""

    checkpoint: Endpoint
    boundary: str
    adjust: Adjust


@dataclass(frozen=True, slots=True)
class PartitionFacts:
    """What a partition is called, whether partitions share an order, what is published."""

    unit: str
    order: CrossOrder
    frontier: Frontier
    statement: str | None
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MembershipFacts:
    """How the partition set changes, how a consumer learns of it, how epochs are formed."""

    changes: MembershipChange
    discovery: Discovery
    epochs: Epochs
    lineage: Lineage
    statement: str | None
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PaginationFacts:
    """Token opacity, page overlap, empty pages, and the stable event id outcomes use."""

    token: TokenKind
    overlap: Possibility
    empty_pages: Possibility
    event_id: str | None
    statement: str | None
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Caveat:
    """Something a user of the provider must know that no field captures."""

    text: str
    cite: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unconfirmed:
    """A fact the sources did not settle: the field it concerns and what is assumed meanwhile."""

    field: Path
    question: str
    assumed: str | None
    cite: tuple[str, ...]
    resolved_by: tuple[str, ...]

    @property
    def resolved(self) -> bool:
        return bool(self.resolved_by)


@dataclass(frozen=True, slots=True)
class Use:
    """One place where the design turns a boundary value into a cut or back.

    ``role`` is ``claim`` (a provider value ``v`` becomes the checkpoint cut
    ``(checkpoint, v ± adjust)``) or ``resume`` (a checkpoint cut ``(checkpoint, x)``
    becomes the parameter value ``x ± adjust``). ``where`` is the path of the
    contract entry that makes the use.
    """

    role: str
    name: str
    where: Path
    boundary: Boundary
    checkpoint: Endpoint
    adjust: Adjust


@dataclass(frozen=True, slots=True)
class ClaimDecision:
    """Whether one provider claim may certify a checkpoint, and as which cut.

    ``cut`` is the cut the contract maps the value to. ``final`` is True only
    when the claim's source guarantees finality and the mapping is true
    whatever events the provider's facts allow; otherwise ``reason`` says why
    not, and the claim may be recorded only as provisional.
    """

    claim: str
    boundary: str
    value: object
    cut: Cut
    final: bool
    reason: str

    def as_claim(self) -> Claim:
        """The provider-page claim this decision stands for."""
        return Claim(self.cut, self.final)


@dataclass(frozen=True, slots=True)
class ResumePosition:
    """Where to ask the provider to resume: a parameter boundary and its coordinate.

    ``redelivers`` is True when the position is inclusive of events the
    checkpoint already covers (they come again; outcomes are idempotent by
    event id), never the reverse: a resume position never skips an event the
    checkpoint does not cover.
    """

    boundary: str
    at: Coordinate
    redelivers: bool


@dataclass(frozen=True, eq=False)
class Contract:
    """A loaded provider contract: typed facts plus where each was written.

    Built only by :func:`load_contract` / :func:`parse_contract`, which check
    every field, so a ``Contract`` that exists is well formed.
    """

    provider: ProviderInfo
    sources: Mapping[str, Source]
    order_facts: OrderFacts
    boundaries: Mapping[str, Boundary]
    claims: Mapping[str, ClaimFacts]
    resume: Mapping[Endpoint, ResumeRule]
    partitions: PartitionFacts
    membership_facts: MembershipFacts
    pagination: PaginationFacts
    caveats: tuple[Caveat, ...]
    unconfirmed: tuple[Unconfirmed, ...]
    origin: str
    lines: LineIndex

    # -- places ----------------------------------------------------------

    def line_of(self, path: Path) -> int:
        """The line of ``path`` in the contract file (its table's line if not written)."""
        return self.lines.line_of(path)

    def error(self, path: Path, problem: str, value: object = None) -> ContractError:
        """A :class:`ContractError` located at ``path`` in this contract."""
        return ContractError(self.origin, self.line_of(path), format_path(path), problem, value)

    # -- the runtime -----------------------------------------------------

    def order(self) -> Order:
        """The implementation order for this provider's coordinates.

        Raises :class:`ContractError` when the coordinates are opaque
        (``comparable = false``): no cut over them could be compared.
        """
        facts = self.order_facts
        if not facts.comparable:
            raise self.error(
                ("order", "comparable"),
                "the provider's positions are opaque; fencepost cannot compare them, "
                "so no order (and no cut) can be built from this contract",
            )
        if facts.kind is CoordinateKind.STRING:
            return StringOrder(facts.name)
        return IntegerOrder(facts.name, facts.successor)

    def partition_order_name(self, partition: str) -> str:
        """The order name a partition gets: shared, or its own when partitions are incomparable."""
        if self.partitions.order is CrossOrder.SHARED:
            return self.order_facts.name
        return f"{self.order_facts.name}/{partition}"

    def membership(self, epoch: int, scope: str, partitions: Iterable[str]) -> Membership:
        """The membership of ``partitions`` in ``epoch`` with this provider's orders.

        When the provider gives no order across partitions, each partition gets
        an order of its own name, so :func:`~fencepost.impl.merge.merge`
        withholds a scalar frontier (``incomparable``) and keeps the vector
        instead of comparing offsets of different partitions.
        """
        base = self.order()
        members = list(partitions)
        assignment: dict[str, str] = {}
        orders: dict[str, Order] = {}
        for partition in members:
            if type(partition) is not str or not partition:
                raise InvalidValue("partitions", partition, "a partition is a non-empty string")
            name = self.partition_order_name(partition)
            assignment[partition] = name
            orders[name] = _renamed(base, name)
        if not members:
            orders[base.name] = base
        return Membership(epoch=epoch, scope=scope, partitions=assignment, orders=orders)

    def coordinate(self, value: object, field: str = "value") -> Coordinate:
        """``value`` as the API writes it, decoded to this order's coordinate."""
        return decode(self.order_facts.encoding, value, field)

    def uses(self) -> tuple[Use, ...]:
        """Every claim and resume rule, as a use of a boundary."""
        out: list[Use] = []
        for name, claim in self.claims.items():
            out.append(
                Use(
                    "claim",
                    name,
                    ("claims", name),
                    self.boundaries[claim.boundary],
                    claim.as_kind,
                    claim.adjust,
                )
            )
        for kind, rule in self.resume.items():
            out.append(
                Use(
                    "resume",
                    kind.value,
                    ("resume", kind.value),
                    self.boundaries[rule.boundary],
                    kind,
                    rule.adjust,
                )
            )
        return tuple(out)

    def find_claim(self, name: str) -> ClaimFacts:
        """The claim called ``name``, or the one claim made from the boundary ``name``."""
        if name in self.claims:
            return self.claims[name]
        made = [c for c in self.claims.values() if c.boundary == name]
        if len(made) == 1:
            return made[0]
        known = sorted({*self.claims, *(c.boundary for c in self.claims.values())})
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if len(made) > 1:
            problem = (
                f"boundary {name!r} feeds several claims "
                f"({', '.join(c.name for c in made)}); name the claim"
            )
        else:
            listed = ", ".join(known) or "none"
            problem = f"no claim or claimed boundary named {name!r} (known: {listed}){hint}"
        raise InvalidValue("claim", name, problem)

    def check_claim(self, name: str, value: object) -> ClaimDecision:
        """May the provider's claim ``name`` at ``value`` certify a checkpoint, and as what?

        ``name`` is a claim name or the boundary it is made from. Certification
        needs all of: the claim ``certifies``; its source ``guarantee`` is
        ``final``; the derived cut is never stronger than the boundary marks
        (no ``before`` read as ``through``, no successor manufactured on an
        order without one, no ``through`` at a shared coordinate whose ties the
        contract leaves open, no reading an unconfirmed fact the risky way); and
        the coordinates are comparable. Anything else gives ``final=False``
        with the reason, never an exception: a non-final claim is still a fact
        worth recording as provisional.
        """
        claim = self.find_claim(name)
        boundary = self.boundaries[claim.boundary]
        at = self.coordinate(value, f"claims.{claim.name}.value")
        cut_at = _shift(at, claim.adjust, f"claims.{claim.name}.value")
        cut = Cut(claim.as_kind, cut_at)
        reason = self._refusal(claim, boundary)
        return ClaimDecision(claim.name, boundary.name, value, cut, reason == "", reason)

    def _refusal(self, claim: ClaimFacts, boundary: Boundary) -> str:
        if not self.order_facts.comparable:
            return "the provider's positions are opaque (order.comparable = false)"
        if claim.guarantee is not Guarantee.FINAL:
            return (
                f"claim {claim.name!r} guarantees {claim.guarantee.value!r}, not finality: "
                "events in its downset may still arrive or change"
            )
        if not claim.certifies:
            return f"the contract does not let claim {claim.name!r} certify (certifies = false)"
        use = next(u for u in self.uses() if u.role == "claim" and u.name == claim.name)
        if use.adjust is not Adjust.NONE and not self.order_facts.successor:
            return (
                f"claim {claim.name!r} adjusts the value by one on an order without an exact "
                "successor: events may sit between x and x+1"
            )
        if relation(use, successor=self.order_facts.successor) == "stronger":
            return (
                f"claim {claim.name!r} derives {claim.as_kind.value} from a "
                f"{boundary.cut.value} boundary: it would cover events the provider did not"
            )
        if (
            self.order_facts.shared_positions
            and self.order_facts.ties is None
            and _derived_endpoint(use) is Endpoint.THROUGH
        ):
            return (
                f"claim {claim.name!r} derives a through cut at a coordinate several events "
                "share, and the contract does not say how ties are handled"
            )
        for risky in self.risky_unconfirmed(use):
            return (
                f"claim {claim.name!r} relies on an unconfirmed fact ({format_path(risky.field)}) "
                "read the risky way"
            )
        return ""

    def risky_unconfirmed(self, use: Use) -> tuple[Unconfirmed, ...]:
        """Unresolved unconfirmed facts under whose other reading ``use`` would be untrue."""
        out: list[Unconfirmed] = []
        if relation(use, successor=self.order_facts.successor) == "stronger":
            return ()
        for item in self.unconfirmed:
            if item.resolved:
                continue
            if item.field == ("boundaries", use.boundary.name, "cut"):
                other = _flip(use.boundary.cut)
                flipped = Use(
                    use.role,
                    use.name,
                    use.where,
                    Boundary(
                        use.boundary.name,
                        use.boundary.surface,
                        other,
                        use.boundary.meaning,
                        use.boundary.cite,
                    ),
                    use.checkpoint,
                    use.adjust,
                )
                if relation(flipped, successor=self.order_facts.successor) == "stronger":
                    out.append(item)
            elif (
                item.field == ("order", "successor")
                and self.order_facts.successor
                and use.adjust is not Adjust.NONE
                and relation(use, successor=False) == "stronger"
            ):
                out.append(item)
        return tuple(out)

    def resume_from(self, cut: Cut) -> ResumePosition | None:
        """The provider position to resume a partition whose checkpoint is ``cut``.

        ``None`` for the nothing cut (start from the partition's beginning).
        Raises :class:`ContractError` when the contract gives no rule for the
        cut's kind, or when its rule would skip an event the checkpoint does
        not cover (an exclusive start at a ``before`` cut, a manufactured
        successor): resuming there would lose events.
        """
        if cut.is_nothing:
            return None
        rule = self.resume.get(cut.endpoint)
        path: Path = ("resume", cut.endpoint.value)
        if rule is None:
            raise self.error(
                ("resume",),
                f"the contract gives no parameter to resume from a {cut.endpoint.value} "
                f"checkpoint (add [resume.{cut.endpoint.value}])",
            )
        use = next(u for u in self.uses() if u.role == "resume" and u.name == cut.endpoint.value)
        assert cut.at is not None
        self.order().validate(cut.at, "cut.at")
        if rule.adjust is not Adjust.NONE and not self.order_facts.successor:
            raise self.error(
                path,
                "resuming by x±1 on an order without an exact successor manufactures a "
                "position nobody certified",
            )
        rel = relation(use, successor=self.order_facts.successor)
        if rel == "stronger" or self.risky_unconfirmed(use):
            raise self.error(
                path,
                f"resuming a {cut.endpoint.value} checkpoint with {rule.boundary} would skip "
                "events the checkpoint does not cover",
            )
        return ResumePosition(
            rule.boundary, _shift(cut.at, rule.adjust, "cut.at"), redelivers=rel == "weaker"
        )

    # -- presentation ----------------------------------------------------

    def to_json(self) -> dict[str, object]:
        """The contract's facts as plain JSON values (for ``contracts show --json``)."""
        o = self.order_facts
        m = self.membership_facts
        p = self.pagination
        return {
            "provider": {
                "name": self.provider.name,
                "title": self.provider.title,
                "version": self.provider.version,
                "summary": self.provider.summary,
            },
            "order": {
                "name": o.name,
                "kind": o.kind.value,
                "successor": o.successor,
                "comparable": o.comparable,
                "resolution": o.resolution,
                "encoding": o.encoding.value,
                "shared_positions": o.shared_positions,
                "ties": o.ties.value if o.ties else None,
                "tiebreaker": o.tiebreaker,
                "example": o.example,
                "cite": list(o.cite),
            },
            "boundaries": {
                b.name: {
                    "surface": b.surface.value,
                    "cut": b.cut.value,
                    "meaning": b.meaning,
                    "cite": list(b.cite),
                }
                for b in self.boundaries.values()
            },
            "claims": {
                c.name: {
                    "boundary": c.boundary,
                    "guarantee": c.guarantee.value,
                    "certifies": c.certifies,
                    "as": c.as_kind.value,
                    "adjust": c.adjust.value,
                    "occurs": c.occurs.value,
                    "statement": c.statement,
                    "cite": list(c.cite),
                }
                for c in self.claims.values()
            },
            "resume": {
                k.value: {"boundary": r.boundary, "adjust": r.adjust.value}
                for k, r in self.resume.items()
            },
            "partitions": {
                "unit": self.partitions.unit,
                "order": self.partitions.order.value,
                "frontier": self.partitions.frontier.value,
                "statement": self.partitions.statement,
                "cite": list(self.partitions.cite),
            },
            "membership": {
                "changes": m.changes.value,
                "discovery": m.discovery.value,
                "epochs": m.epochs.value,
                "lineage": m.lineage.value,
                "statement": m.statement,
                "cite": list(m.cite),
            },
            "pagination": {
                "token": p.token.value,
                "overlap": p.overlap.value,
                "empty_pages": p.empty_pages.value,
                "event_id": p.event_id,
                "statement": p.statement,
                "cite": list(p.cite),
            },
            "caveats": [{"text": c.text, "cite": list(c.cite)} for c in self.caveats],
            "unconfirmed": [
                {
                    "field": format_path(u.field),
                    "question": u.question,
                    "assumed": u.assumed,
                    "cite": list(u.cite),
                    "resolved_by": list(u.resolved_by),
                }
                for u in self.unconfirmed
            ],
            "sources": {
                s.id: {"title": s.title, "url": s.url, "quote": s.quote}
                for s in self.sources.values()
            },
        }


# ---------------------------------------------------------------------------
# Cut relations used by the runtime (the review tool proves the same with Z3)


def _flip(kind: Endpoint) -> Endpoint:
    return Endpoint.THROUGH if kind is Endpoint.BEFORE else Endpoint.BEFORE


def _shift(at: Coordinate, adjust: Adjust, field: str) -> Coordinate:
    if adjust is Adjust.NONE:
        return at
    if type(at) is not int:
        raise InvalidValue(field, at, "only integer coordinates can be adjusted by one")
    return at + 1 if adjust is Adjust.SUCCESSOR else at - 1


def _derived_endpoint(use: Use) -> Endpoint:
    """The kind of the cut the design derives in a claim use."""
    return use.checkpoint


def relation(use: Use, *, successor: bool, at: int = 0) -> str:
    """How the use's inner downset compares with the one it must stay inside.

    For a claim the derived cut must stay inside the boundary's cut; for a
    resume the skipped downset must stay inside the checkpoint's. Returns
    ``"equal"``, ``"weaker"`` (inside, strictly: true but gives up progress or
    redelivers) or ``"stronger"`` (outside: untrue). Adjustments are linear
    shifts, so the relation is the same at every coordinate; ``at`` only
    anchors the computation. ``successor`` says whether the order's successor
    is exact (the comparison is dense otherwise).
    """
    order = IntegerOrder("relation", successor)
    if use.role == "claim":
        inner = Cut(use.checkpoint, at + _delta(use.adjust))
        outer = Cut(use.boundary.cut, at)
    else:
        inner = Cut(use.boundary.cut, at + _delta(use.adjust))
        outer = Cut(use.checkpoint, at)
    c = compare_cuts(order, inner, outer)
    return "equal" if c == 0 else "weaker" if c < 0 else "stronger"


def _delta(adjust: Adjust) -> int:
    return {Adjust.NONE: 0, Adjust.SUCCESSOR: 1, Adjust.PREDECESSOR: -1}[adjust]


def _renamed(order: Order, name: str) -> Order:
    if isinstance(order, IntegerOrder):
        return IntegerOrder(name, order.successor_exact)
    return StringOrder(name)


# ---------------------------------------------------------------------------
# Encodings

_DIGITS = re.compile(r"-?[0-9]{1,200}")
_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_HLC = re.compile(r"([0-9]{1,19})\.([0-9]{10})")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})"
)


def decode(encoding: Encoding, value: object, field: str = "value") -> Coordinate:
    """Decode an API value to a coordinate; :class:`InvalidValue` names what is wrong.

    Every integer encoding preserves the provider's order: ``a`` before ``b``
    in the provider's order exactly when ``decode(a) < decode(b)``.
    """
    if isinstance(value, bool):
        raise InvalidValue(field, value, f"a bool is not a {encoding.value} value")
    if encoding is Encoding.STRING:
        return StringOrder("decode").validate(value, field)
    if encoding is Encoding.INTEGER:
        if type(value) is int:
            return value
        if type(value) is str and _DIGITS.fullmatch(value):
            return int(value)
        raise InvalidValue(field, value, "an integer or a string of decimal digits is required")
    if encoding is Encoding.LSN:
        m = _LSN.fullmatch(value) if type(value) is str else None
        if m is None:
            raise InvalidValue(field, value, 'an LSN is written "X/Y" with hexadecimal X and Y')
        return (int(m.group(1), 16) << 32) | int(m.group(2), 16)
    if encoding is Encoding.HLC:
        m = _HLC.fullmatch(value) if type(value) is str else None
        if m is None:
            raise InvalidValue(
                field, value, 'an HLC timestamp is written "WALL.LOGICAL" (10 logical digits)'
            )
        return int(m.group(1)) * 10**10 + int(m.group(2))
    if encoding is Encoding.RFC3339:
        return _rfc3339(value, field)
    if encoding is Encoding.BSON_TIMESTAMP:
        t, i = _pair(value, field, ("t", "i"))
        for part, name in ((t, "t"), (i, "i")):
            if not 0 <= part < 2**32:
                raise InvalidValue(f"{field}.{name}", part, "must be in 0..2**32-1")
        return (t << 32) | i
    if encoding is Encoding.PAIR64:
        a, b = _pair(value, field, ("value", "tiebreaker"))
        if not 0 <= b < 2**64:
            raise InvalidValue(f"{field}[1]", b, "the tiebreaker must be in 0..2**64-1")
        return a * 2**64 + b
    raise AssertionError(encoding)  # pragma: no cover - every encoding is handled above


def encode(encoding: Encoding, coordinate: Coordinate) -> str:
    """A coordinate written the way the provider's API writes it (inverse of :func:`decode`).

    Used to show witnesses and examples in the provider's own terms
    (``16/B374D848`` rather than ``98571409480``).
    """
    if encoding is Encoding.STRING or isinstance(coordinate, str):
        return repr(coordinate)
    x = coordinate
    if encoding is Encoding.LSN and 0 <= x < 2**64:
        return f"{x >> 32:X}/{x & 0xFFFFFFFF:X}"
    if encoding is Encoding.HLC and x >= 0:
        return f"{x // 10**10}.{x % 10**10:010d}"
    if encoding is Encoding.RFC3339:
        seconds, nanos = divmod(x, 10**9)
        try:
            moment = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return str(x)
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"
    if encoding is Encoding.BSON_TIMESTAMP and 0 <= x < 2**64:
        return f"Timestamp({x >> 32}, {x & 0xFFFFFFFF})"
    if encoding is Encoding.PAIR64:
        return f"[{x // 2**64}, {x % 2**64}]"
    return str(x)


def _pair(value: object, field: str, names: tuple[str, str]) -> tuple[int, int]:
    if isinstance(value, Mapping) and set(value) == set(names):
        items = [value[names[0]], value[names[1]]]
    elif isinstance(value, list | tuple) and len(value) == 2:
        items = list(value)
    else:
        raise InvalidValue(
            field,
            value,
            f"a pair [{names[0]}, {names[1]}] (or a table with those keys) is required",
        )
    for k, item in enumerate(items):
        if type(item) is not int:
            raise InvalidValue(f"{field}[{k}]", item, "an integer is required")
    return items[0], items[1]


def _rfc3339(value: object, field: str) -> int:
    if isinstance(value, datetime):  # a TOML offset date-time, already parsed
        if value.tzinfo is None:
            raise InvalidValue(field, value, "a timestamp needs a time zone offset (Z or +hh:mm)")
        return int(value.replace(microsecond=0).timestamp()) * 10**9 + value.microsecond * 1000
    m = _RFC3339.fullmatch(value) if type(value) is str else None
    if m is None:
        raise InvalidValue(
            field, value, 'an RFC 3339 timestamp like "2024-05-01T12:00:00.123456789Z" is required'
        )
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or "").ljust(9, "0")
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
    except ValueError as exc:
        raise InvalidValue(field, value, f"not a real date and time ({exc})") from None
    return int(moment.timestamp()) * 10**9 + int(fraction)


# ---------------------------------------------------------------------------
# Loading

_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
E = TypeVar("E", bound=Enum)

_TOP_ALL = (
    "provider",
    "sources",
    "order",
    "boundaries",
    "claims",
    "resume",
    "partitions",
    "membership",
    "pagination",
    "caveats",
    "unconfirmed",
)


class _Reader:
    """Typed access to one table of the contract, with every error located."""

    def __init__(self, loader: _Loader, path: Path, data: object, allowed: Iterable[str]) -> None:
        self.loader = loader
        self.path = path
        if not isinstance(data, dict):
            raise loader.error(path, "must be a table", data)
        self.data: dict[str, object] = data
        self.allowed = tuple(allowed)
        for key in data:
            if key not in self.allowed:
                close = difflib.get_close_matches(key, self.allowed, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise loader.error(
                    (*path, key),
                    f"unknown field; {hint}allowed here: {', '.join(self.allowed)}",
                    data[key],
                )

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> object:
        if key not in self.data:
            raise self.loader.error((*self.path, key), "missing required field")
        return self.data[key]

    def text(self, key: str) -> str:
        value = self.raw(key)
        if type(value) is not str or not value.strip():
            raise self.loader.error((*self.path, key), "a non-empty string is required", value)
        return value

    def optional_text(self, key: str) -> str | None:
        return self.text(key) if key in self.data else None

    def boolean(self, key: str, default: bool | None = None) -> bool:
        if key not in self.data and default is not None:
            return default
        value = self.raw(key)
        if type(value) is not bool:
            raise self.loader.error((*self.path, key), "true or false is required", value)
        return value

    def choice(self, key: str, enum: type[E], default: E | None = None) -> E:
        if key not in self.data and default is not None:
            return default
        value = self.raw(key)
        options = [str(member.value) for member in enum]
        if type(value) is not str or value not in options:
            close = (
                difflib.get_close_matches(value, options, n=1, cutoff=0.6)
                if type(value) is str
                else []
            )
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.loader.error(
                (*self.path, key), f"must be one of: {', '.join(options)}{hint}", value
            )
        return enum(value)

    def endpoint(self, key: str) -> Endpoint:
        value = self.raw(key)
        if value not in ("before", "through"):
            raise self.loader.error((*self.path, key), 'must be "before" or "through"', value)
        assert isinstance(value, str)
        return Endpoint(value)

    def cites(self, key: str = "cite") -> tuple[str, ...]:
        if key not in self.data:
            return ()
        value = self.data[key]
        path = (*self.path, key)
        if not isinstance(value, list) or not all(type(v) is str and v for v in value):
            raise self.loader.error(path, 'a list of source ids is required: cite = ["id"]', value)
        for item in value:
            self.loader.cite_refs.append((path, item))
        return tuple(value)

    def table(self, key: str, allowed: Iterable[str]) -> _Reader:
        return _Reader(self.loader, (*self.path, key), self.raw(key), allowed)


class _Loader:
    def __init__(self, text: str, origin: str) -> None:
        self.origin = origin
        self.text = text
        self.lines = index_lines(text)
        self.cite_refs: list[tuple[Path, str]] = []

    def error(self, path: Path, problem: str, value: object = None) -> ContractError:
        return ContractError(
            self.origin, self.lines.line_of(path), format_path(path), problem, value
        )

    def load(self) -> Contract:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
            line = int(m.group(1)) if m else None
            message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
            raise ContractError(self.origin, line, "", f"TOML syntax: {message}") from None
        top = _Reader(self, (), data, _TOP_ALL)

        provider = self._provider(top.table("provider", ("name", "title", "version", "summary")))
        sources = self._sources(top)
        order = self._order(top.table("order", _ORDER_FIELDS))
        boundaries = self._boundaries(top)
        claims = self._claims(top, boundaries, order)
        resume = self._resume(top, boundaries, order)
        partitions = self._partitions(top.table("partitions", _PARTITION_FIELDS))
        membership = self._membership(top.table("membership", _MEMBERSHIP_FIELDS))
        pagination = self._pagination(top.table("pagination", _PAGINATION_FIELDS))
        caveats = tuple(
            Caveat(r.text("text"), r.cites()) for r in self._array(top, "caveats", ("text", "cite"))
        )
        unconfirmed = tuple(
            self._unconfirmed(r, data)
            for r in self._array(
                top, "unconfirmed", ("field", "question", "assumed", "cite", "resolved_by")
            )
        )
        for path, ref in self.cite_refs:
            if ref not in sources:
                close = difflib.get_close_matches(ref, list(sources), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(
                    path,
                    f"cites {ref!r}, which no [sources.{ref}] table defines{hint}",
                    ref,
                )
        return Contract(
            provider=provider,
            sources=MappingProxyType(sources),
            order_facts=order,
            boundaries=MappingProxyType(boundaries),
            claims=MappingProxyType(claims),
            resume=MappingProxyType(resume),
            partitions=partitions,
            membership_facts=membership,
            pagination=pagination,
            caveats=caveats,
            unconfirmed=unconfirmed,
            origin=self.origin,
            lines=self.lines,
        )

    def _provider(self, r: _Reader) -> ProviderInfo:
        name = r.text("name")
        if not _NAME.fullmatch(name):
            raise self.error(
                ("provider", "name"),
                "a provider name is lower-case letters, digits and '-' (kafka, dynamodb-streams)",
                name,
            )
        return ProviderInfo(name, r.text("title"), r.text("version"), r.optional_text("summary"))

    def _sources(self, top: _Reader) -> dict[str, Source]:
        if not top.has("sources"):
            return {}
        raw_sources = top.raw("sources")
        if not isinstance(raw_sources, dict):
            raise self.error(("sources",), "must be a table of [sources.ID] tables", raw_sources)
        out: dict[str, Source] = {}
        for sid, raw in raw_sources.items():
            r = _Reader(self, ("sources", sid), raw, ("title", "url", "quote"))
            url = r.optional_text("url")
            if url is not None and not re.match(r"https?://\S+$", url):
                raise self.error(
                    ("sources", sid, "url"), "a URL starts with https:// or http://", url
                )
            out[sid] = Source(sid, r.text("title"), url, r.optional_text("quote"))
        return out

    def _order(self, r: _Reader) -> OrderFacts:
        kind = r.choice("kind", CoordinateKind)
        successor = r.boolean("successor")
        if kind is CoordinateKind.STRING and successor:
            raise self.error(
                ("order", "successor"), "string orders have no exact successor", successor
            )
        encodings = ENCODINGS_OF_KIND[kind]
        encoding = r.choice("encoding", Encoding, default=encodings[0])
        if encoding not in encodings:
            raise self.error(
                ("order", "encoding"),
                f"a {kind.value} order takes one of: {', '.join(e.value for e in encodings)}",
                encoding.value,
            )
        shared = r.boolean("shared_positions")
        ties = r.choice("ties", Ties) if r.has("ties") else None
        if ties is not None and not shared:
            raise self.error(
                ("order", "ties"),
                "ties only matter when shared_positions = true; remove it or set shared_positions",
                ties.value,
            )
        tiebreaker = r.optional_text("tiebreaker")
        if (ties is Ties.TIEBREAKER) != (tiebreaker is not None):
            raise self.error(
                ("order", "tiebreaker"),
                'name the tiebreaker exactly when ties = "tiebreaker"',
                tiebreaker,
            )
        example: object = None
        if r.has("example"):
            example = r.raw("example")
            try:
                decode(encoding, example, "order.example")
            except InvalidValue as exc:
                raise self.error(
                    ("order", "example"),
                    f"not a value of encoding {encoding.value!r}: {exc.problem}",
                    example,
                ) from None
        return OrderFacts(
            name=r.text("name"),
            kind=kind,
            successor=successor,
            comparable=r.boolean("comparable", default=True),
            resolution=r.text("resolution"),
            encoding=encoding,
            shared_positions=shared,
            ties=ties,
            tiebreaker=tiebreaker,
            example=example,
            cite=r.cites(),
        )

    def _boundaries(self, top: _Reader) -> dict[str, Boundary]:
        raw = top.raw("boundaries")
        if not isinstance(raw, dict) or not raw:
            raise self.error(("boundaries",), "list at least one boundary: [boundaries.NAME]", raw)
        out: dict[str, Boundary] = {}
        for name, table in raw.items():
            r = _Reader(self, ("boundaries", name), table, ("surface", "cut", "meaning", "cite"))
            out[name] = Boundary(
                name, r.choice("surface", Surface), r.endpoint("cut"), r.text("meaning"), r.cites()
            )
        return out

    def _claims(
        self, top: _Reader, boundaries: Mapping[str, Boundary], order: OrderFacts
    ) -> dict[str, ClaimFacts]:
        if not top.has("claims"):
            return {}
        raw = top.raw("claims")
        if not isinstance(raw, dict):
            raise self.error(("claims",), "must be a table of [claims.NAME] tables", raw)
        out: dict[str, ClaimFacts] = {}
        for name, table in raw.items():
            path: Path = ("claims", name)
            r = _Reader(self, path, table, _CLAIM_FIELDS)
            boundary = self._reference(r, "boundary", boundaries, Surface.RECORD)
            adjust = r.choice("adjust", Adjust, default=Adjust.NONE)
            self._check_adjust(path, adjust, order)
            out[name] = ClaimFacts(
                name=name,
                boundary=boundary,
                guarantee=r.choice("guarantee", Guarantee),
                certifies=r.boolean("certifies"),
                as_kind=r.endpoint("as"),
                adjust=adjust,
                occurs=r.choice("occurs", Occurs, default=Occurs.CONTINUOUS),
                statement=r.text("statement"),
                cite=r.cites(),
            )
        return out

    def _resume(
        self, top: _Reader, boundaries: Mapping[str, Boundary], order: OrderFacts
    ) -> dict[Endpoint, ResumeRule]:
        if not top.has("resume"):
            return {}
        table = top.table("resume", ("before", "through"))
        out: dict[Endpoint, ResumeRule] = {}
        for key in ("before", "through"):
            if not table.has(key):
                continue
            r = table.table(key, ("boundary", "adjust"))
            boundary = self._reference(r, "boundary", boundaries, Surface.PARAMETER)
            adjust = r.choice("adjust", Adjust, default=Adjust.NONE)
            self._check_adjust(("resume", key), adjust, order)
            out[Endpoint(key)] = ResumeRule(Endpoint(key), boundary, adjust)
        return out

    def _reference(
        self, r: _Reader, key: str, boundaries: Mapping[str, Boundary], surface: Surface
    ) -> str:
        name = r.text(key)
        path = (*r.path, key)
        if name not in boundaries:
            close = difflib.get_close_matches(name, list(boundaries), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.error(
                path, f"names no boundary (known: {', '.join(boundaries)}){hint}", name
            )
        if boundaries[name].surface is not surface:
            what = (
                "a claim is read from a record"
                if surface is Surface.RECORD
                else ("a resume position is a request parameter")
            )
            raise self.error(
                path,
                f"boundary {name!r} is a {boundaries[name].surface.value}; {what}",
                name,
            )
        return name

    def _check_adjust(self, path: Path, adjust: Adjust, order: OrderFacts) -> None:
        if adjust is not Adjust.NONE and order.kind is CoordinateKind.STRING:
            raise self.error(
                (*path, "adjust"),
                "string coordinates cannot be adjusted by one; remove adjust",
                adjust.value,
            )

    def _partitions(self, r: _Reader) -> PartitionFacts:
        return PartitionFacts(
            unit=r.text("unit"),
            order=r.choice("order", CrossOrder),
            frontier=r.choice("frontier", Frontier),
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _membership(self, r: _Reader) -> MembershipFacts:
        changes = r.choice("changes", MembershipChange)
        lineage = r.choice("lineage", Lineage, default=Lineage.NONE)
        if r.has("lineage") and changes is not MembershipChange.SPLIT_MERGE:
            raise self.error(
                ("membership", "lineage"),
                'lineage only applies when changes = "split-merge"',
                lineage.value,
            )
        return MembershipFacts(
            changes=changes,
            discovery=r.choice("discovery", Discovery),
            epochs=r.choice("epochs", Epochs),
            lineage=lineage,
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _pagination(self, r: _Reader) -> PaginationFacts:
        return PaginationFacts(
            token=r.choice("token", TokenKind),
            overlap=r.choice("overlap", Possibility),
            empty_pages=r.choice("empty_pages", Possibility),
            event_id=r.optional_text("event_id"),
            statement=r.optional_text("statement"),
            cite=r.cites(),
        )

    def _array(self, top: _Reader, key: str, allowed: tuple[str, ...]) -> list[_Reader]:
        if not top.has(key):
            return []
        raw = top.raw(key)
        if not isinstance(raw, list):
            raise self.error((key,), f"write each entry as a [[{key}]] table", raw)
        return [_Reader(self, (key, i), item, allowed) for i, item in enumerate(raw)]

    def _unconfirmed(self, r: _Reader, data: Mapping[str, object]) -> Unconfirmed:
        text = r.text("field")
        try:
            target = parse_path(text)
        except KeySyntaxError as exc:
            raise self.error((*r.path, "field"), f"not a field path: {exc}", text) from None
        if not _exists(data, target):
            raise self.error(
                (*r.path, "field"),
                "names no field of this contract (write the dotted path, e.g. order.successor)",
                text,
            )
        resolved = r.cites("resolved_by")
        return Unconfirmed(
            target, r.text("question"), r.optional_text("assumed"), r.cites(), resolved
        )


_ORDER_FIELDS = (
    "name",
    "kind",
    "successor",
    "comparable",
    "resolution",
    "encoding",
    "shared_positions",
    "ties",
    "tiebreaker",
    "example",
    "cite",
)
_CLAIM_FIELDS = (
    "boundary",
    "guarantee",
    "certifies",
    "as",
    "adjust",
    "occurs",
    "statement",
    "cite",
)
_PARTITION_FIELDS = ("unit", "order", "frontier", "statement", "cite")
_MEMBERSHIP_FIELDS = ("changes", "discovery", "epochs", "lineage", "statement", "cite")
_PAGINATION_FIELDS = ("token", "overlap", "empty_pages", "event_id", "statement", "cite")

#: Every field a contract may have, by table (docs/contracts.md documents each one).
FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "provider": ("name", "title", "version", "summary"),
        "sources.ID": ("title", "url", "quote"),
        "order": _ORDER_FIELDS,
        "boundaries.NAME": ("surface", "cut", "meaning", "cite"),
        "claims.NAME": _CLAIM_FIELDS,
        "resume.before / resume.through": ("boundary", "adjust"),
        "partitions": _PARTITION_FIELDS,
        "membership": _MEMBERSHIP_FIELDS,
        "pagination": _PAGINATION_FIELDS,
        "[[caveats]]": ("text", "cite"),
        "[[unconfirmed]]": ("field", "question", "assumed", "cite", "resolved_by"),
    }
)


def _exists(data: object, path: Path) -> bool:
    node = data
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not 0 <= part < len(node):
                return False
            node = node[part]
        else:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
    return True


def parse_contract(text: str, origin: str = "<contract>") -> Contract:
    """Parse a contract from TOML ``text``; ``origin`` names the file in errors."""
    return _Loader(text, origin).load()


def read_contract_file(path: str | FilePath) -> Contract:
    """Load the contract file at ``path`` (errors name the file as given)."""
    origin = str(path)
    try:
        raw = FilePath(path).read_bytes()
    except FileNotFoundError:
        raise ContractError(origin, None, "", "no such file") from None
    except IsADirectoryError:
        raise ContractError(origin, None, "", "is a directory, not a contract file") from None
    except OSError as exc:
        raise ContractError(origin, None, "", f"cannot read: {exc.strerror or exc}") from None
    return _decode_and_parse(raw, origin)


def _decode_and_parse(raw: bytes, origin: str) -> Contract:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ContractError(origin, line, "", "not UTF-8 text") from None
    return parse_contract(text, origin)


def shipped_contract_names() -> tuple[str, ...]:
    """The names of the contracts shipped in ``fencepost.contracts``, sorted."""
    root = importlib.resources.files("fencepost.contracts")
    return tuple(
        sorted(
            entry.name[: -len(".toml")]
            for entry in root.iterdir()
            if entry.name.endswith(".toml") and entry.is_file()
        )
    )


def load_shipped_contract(name: str) -> Contract:
    """Load the shipped contract ``name`` (``kafka``, ``kinesis``, ...)."""
    names = shipped_contract_names()
    if name not in names:
        raise UnknownContract(name, names)
    resource = importlib.resources.files("fencepost.contracts") / f"{name}.toml"
    return _decode_and_parse(resource.read_bytes(), f"contracts/{name}.toml")


def looks_like_path(name_or_path: str) -> bool:
    """True when the argument names a file rather than a shipped contract."""
    return name_or_path.endswith(".toml") or "/" in name_or_path or "\\" in name_or_path


def load_contract(name_or_path: str | FilePath) -> Contract:
    """Load a contract by shipped name (``"kafka"``) or by path (``"my/source.toml"``).

    Scenarios and ``fencepost conform`` call this to take a provider's order
    and claims from its contract. Raises :class:`UnknownContract` for an
    unknown name and :class:`ContractError` (file, line, field) for a file that
    is missing, unreadable or malformed.
    """
    if isinstance(name_or_path, FilePath):
        return read_contract_file(name_or_path)
    if type(name_or_path) is not str or not name_or_path:
        raise InvalidValue("contract", name_or_path, "a contract name or a path is required")
    if looks_like_path(name_or_path):
        return read_contract_file(name_or_path)
    return load_shipped_contract(name_or_path)
