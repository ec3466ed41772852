"""A loaded provider contract and the runtime decisions it makes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fencepost.contracts.encodings import decode
from fencepost.contracts.facts import (
    Adjust,
    Boundary,
    Caveat,
    ClaimDecision,
    ClaimFacts,
    ContractError,
    CoordinateKind,
    CrossOrder,
    CursorFacts,
    Evidence,
    Guarantee,
    MembershipFacts,
    OrderFacts,
    PaginationFacts,
    PartitionFacts,
    ProviderInfo,
    ResumePosition,
    ResumeRule,
    Source,
    Unconfirmed,
    Use,
)
from fencepost.impl.cuts import Cut, Endpoint, compare_cuts
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate, IntegerOrder, Order, StringOrder
from fencepost.impl.records import Membership
from fencepost.inputs.tomllines import (
    LineIndex,
    Path,
    format_path,
)


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
    #: What a sync tool reading by the cursor depends on (``[cursor]``; all None if absent).
    cursor: CursorFacts = field(default_factory=CursorFacts)

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
        the coordinates are comparable; and, when the contract says rows commit late, the
        claim is its certified horizon. Anything else gives ``final=False``
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
        late = self.cursor.late_commits
        horizon = self.cursor.horizon
        if (
            late is not None
            and late.possible
            and (horizon is None or horizon.boundary != claim.boundary)
        ):
            return (
                f"rows commit late (cursor.late_commits.max_delay = {late.shown}) and "
                f"{claim.boundary} is not the certified horizon (cursor.horizon): a row below "
                "the claim can still commit after it"
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
            "cursor": self._cursor_json(),
            "sources": {
                s.id: {"title": s.title, "url": s.url, "quote": s.quote}
                for s in self.sources.values()
            },
        }

    def _cursor_json(self) -> dict[str, object]:
        c = self.cursor
        out: dict[str, object] = {"field": c.field}
        facts: dict[str, tuple[object, dict[str, object]]] = {}
        if c.late_commits is not None:
            facts["late_commits"] = (
                c.late_commits.evidence,
                {"max_delay": c.late_commits.shown, "delay": c.late_commits.delay.value},
            )
        if c.precision is not None:
            facts["precision"] = (
                c.precision.evidence,
                {"stored": c.precision.stored_shown, "query": c.precision.query_shown},
            )
        if c.mutability is not None:
            facts["mutability"] = (c.mutability.evidence, {"mutable": c.mutability.mutable})
        if c.new_partitions is not None:
            facts["new_partitions"] = (
                c.new_partitions.evidence,
                {"old_rows": c.new_partitions.old_rows},
            )
        if c.horizon is not None:
            facts["horizon"] = (c.horizon.evidence, {"boundary": c.horizon.boundary})
        if c.reads is not None:
            facts["reads"] = (c.reads.evidence, {"snapshot": c.reads.snapshot})
        for key, (evidence, values) in facts.items():
            assert isinstance(evidence, Evidence)
            out[key] = {**values, "cite": list(evidence.cite), "assumed": evidence.assumed}
        return out


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
