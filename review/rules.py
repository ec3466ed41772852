"""The review rules: what makes a provider contract unsafe, doubtful or worth a note.

Each :class:`Rule` has a stable id (CI gates and docs/contracts.md refer to it),
a title, the reasoning it enforces, and a check from a :class:`Contract` to
findings. Rules about truth (a derived claim that could be false) ask Z3
(:mod:`fencepost.review.witness`) for events that make the claim false and
attach them; the rule fires exactly when such events exist, so a finding never
rests on a pattern match alone. Severities: ``error`` (a claim the runtime could
publish would be untrue, or nothing can be published at all), ``warning`` (a
fact is unsettled or a safe design gives something up), ``note`` (a consequence
worth knowing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from types import MappingProxyType

import z3

from fencepost.contracts import (
    LOAD_BEARING,
    Adjust,
    ClaimFacts,
    Contract,
    CoordinateKind,
    CrossOrder,
    Delay,
    Discovery,
    Epochs,
    Evidence,
    Frontier,
    Guarantee,
    LateCommits,
    Lineage,
    MembershipChange,
    Mutability,
    NewPartitions,
    Occurs,
    Possibility,
    Precision,
    Reads,
    Use,
    decode,
)
from fencepost.impl.cuts import Endpoint
from fencepost.impl.orders import Coordinate
from fencepost.inputs.tomllines import Path, format_path
from fencepost.review import witness as w
from fencepost.review.findings import (
    Cutlike,
    Finding,
    Severity,
    SyncWitness,
    Witness,
    WitnessEvent,
    WitnessKind,
)
from fencepost.review.sync import TOOL_RULES, tool_findings
from fencepost.review.tools import SyncPlan


@dataclass(frozen=True)
class Rule:
    """A review rule: stable id, what it checks and why, and the check itself."""

    id: str
    title: str
    severity: Severity  # the most severe finding the rule can report
    why: str
    check: Callable[[_Context], list[Finding]]


@dataclass(frozen=True)
class _Context:
    contract: Contract
    axis: w.Axis
    #: the sync tool reviewed beside the contract (``--tool``), if any
    plan: SyncPlan | None = None
    #: a review of a contract with one declaration negated: the rules about
    #: declarations and questions do not run there
    counterfactual: bool = False
    cache: dict[str, object] = field(default_factory=dict)

    @property
    def anchor(self) -> Coordinate:
        return self.axis.anchor

    def finding(
        self,
        rule: str,
        severity: Severity,
        path: Path,
        explanation: str,
        witness: Witness | SyncWitness | None = None,
    ) -> Finding:
        if witness is not None and not witness.verify():
            raise AssertionError(f"rule {rule}: Z3 produced a witness that does not verify")
        return Finding(
            rule=rule,
            severity=severity,
            title=RULES_BY_ID[rule].title,
            provider=self.contract.provider.name,
            file=self.contract.origin,
            where=format_path(path),
            line=self.contract.line_of(path),
            explanation=explanation,
            witness=witness,
        )

    def certifying(self) -> list[ClaimFacts]:
        return [c for c in self.contract.claims.values() if c.certifies]

    def checked_uses(self) -> list[Use]:
        """Claims that certify, and every resume rule."""
        return [
            u
            for u in self.contract.uses()
            if u.role == "resume" or self.contract.claims[u.name].certifies
        ]


def anchor_of(contract: Contract) -> Coordinate:
    """The coordinate witnesses are built around: the contract's example, else 100 or "m"."""
    facts = contract.order_facts
    if facts.example is not None:
        return decode(facts.encoding, facts.example, "order.example")
    return "m" if facts.kind is CoordinateKind.STRING else 100


def _delta(adjust: Adjust) -> int:
    return {Adjust.NONE: 0, Adjust.SUCCESSOR: 1, Adjust.PREDECESSOR: -1}[adjust]


def _pair(
    ctx: _Context, use: Use, boundary_cut: Endpoint | None = None
) -> tuple[Cutlike, Cutlike, str, str, str]:
    """The use's inner and outer cuts at the anchor, with their descriptions.

    A claim's derived cut (inner) must stay inside what its boundary marks
    (outer); a resume's skipped downset (inner) inside its checkpoint (outer).
    """
    x = ctx.anchor
    b = use.boundary
    kind = (boundary_cut or b.cut).value
    moved = ctx.axis.shifted(_delta(use.adjust))
    shown, moved_shown = ctx.axis.show(x), ctx.axis.show(moved)
    if use.role == "claim":
        inner = Cutlike(use.checkpoint.value, moved)
        outer = Cutlike(kind, x)
        claim_text = f"claim {use.name!r} certifies {ctx.axis.cut(inner)} from {b.name} = {shown}"
        guarantee_text = f"{b.name} = {shown} marks {ctx.axis.cut(outer)}"
        consequence = "the checkpoint would certify an event the provider never covered."
    else:
        inner = Cutlike(kind, moved)
        outer = Cutlike(use.checkpoint.value, x)
        claim_text = (
            f"resume.{use.name}: a {ctx.axis.cut(outer)} checkpoint resumes with "
            f"{b.name} = {moved_shown}, which skips D({ctx.axis.cut(inner)})"
        )
        guarantee_text = f"the checkpoint covers D({ctx.axis.cut(outer)})"
        consequence = "resuming there skips an event the checkpoint never covered: it is lost."
    return inner, outer, claim_text, guarantee_text, consequence


# ---------------------------------------------------------------------------
# The checks


def _successor_manufactured(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    if ctx.contract.order_facts.successor:
        return out
    for use in ctx.checked_uses():
        if use.adjust is Adjust.NONE:
            continue
        inner, outer, claim_text, guarantee_text, consequence = _pair(ctx, use)
        found = w.outside(ctx.axis, inner, outer, claim_text, guarantee_text, consequence)
        path = (*use.where, "adjust")
        if found is not None:
            out.append(
                ctx.finding(
                    "successor-manufactured",
                    Severity.ERROR,
                    path,
                    f"{claim_text}, but order {ctx.contract.order_facts.name!r} has no exact "
                    f"successor: x{'+' if _delta(use.adjust) > 0 else '-'}1 is a coordinate "
                    f"nobody certified. {guarantee_text}.",
                    found,
                )
            )
        else:
            out.append(
                ctx.finding(
                    "successor-manufactured",
                    Severity.WARNING,
                    path,
                    f"{claim_text}: adjusting by one on an order without an exact successor "
                    "happens to stay true here but gives up progress; use the boundary's own "
                    "coordinate and endpoint kind.",
                )
            )
    return out


def _endpoint_mismatch(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    for use in ctx.checked_uses():
        if use.adjust is not Adjust.NONE and not ctx.contract.order_facts.successor:
            continue  # successor-manufactured reports it
        inner, outer, claim_text, guarantee_text, consequence = _pair(ctx, use)
        over = w.outside(ctx.axis, inner, outer, claim_text, guarantee_text, consequence)
        if over is not None:
            described = _mismatch_words(use)
            out.append(
                ctx.finding(
                    "endpoint-mismatch",
                    Severity.ERROR,
                    use.where,
                    f"{described}: {claim_text}. {guarantee_text}.",
                    over,
                )
            )
            continue
        if w.outside(ctx.axis, outer, inner, "", "", "") is None:
            continue  # the same claim
        if use.role == "claim":
            out.append(
                ctx.finding(
                    "endpoint-mismatch",
                    Severity.WARNING,
                    use.where,
                    f"{claim_text}, though {guarantee_text}: the claim is true but certifies "
                    "less than the provider guarantees, so that progress is never published.",
                )
            )
        else:
            out.append(
                ctx.finding(
                    "endpoint-mismatch",
                    Severity.NOTE,
                    use.where,
                    f"{claim_text}; {guarantee_text}: events in between are delivered again "
                    "(harmless: outcomes are recorded idempotently by event id).",
                )
            )
    return out


def _mismatch_words(use: Use) -> str:
    """Say which way round the boundary was misused, in the provider's own terms."""
    b = use.boundary
    if use.role == "claim":
        marks = "inclusive of x" if b.cut is Endpoint.THROUGH else "exclusive of x"
        return (
            f"record boundary {b.name!r} marks {b.cut.value} x ({marks}) but the claim reads "
            f"it as {use.checkpoint.value} x"
        )
    start = "at x (inclusive)" if b.cut is Endpoint.BEFORE else "after x (exclusive)"
    needs = "after x" if use.checkpoint is Endpoint.THROUGH else "at x"
    return (
        f"parameter {b.name!r} starts {start} but resumes a {use.checkpoint.value} "
        f"checkpoint, which needs a start {needs}"
    )


def _flip(kind: Endpoint) -> Endpoint:
    return Endpoint.THROUGH if kind is Endpoint.BEFORE else Endpoint.BEFORE


def _ties_unhandled(ctx: _Context) -> list[Finding]:
    facts = ctx.contract.order_facts
    if not facts.shared_positions or facts.ties is not None:
        return []
    out: list[Finding] = []
    for claim in ctx.certifying():
        if claim.as_kind is not Endpoint.THROUGH:
            continue
        at = (
            ctx.axis.shifted(_delta(claim.adjust))
            if claim.adjust is not Adjust.NONE
            else ctx.anchor
        )
        cut = Cutlike("through", at)
        text = f"claim {claim.name!r} certifies {ctx.axis.cut(cut)} from {claim.boundary}"
        found = w.tie(ctx.axis, cut, text, f"{claim.boundary} names one event at the coordinate")
        if found is not None:
            out.append(
                ctx.finding(
                    "ties-unhandled",
                    Severity.ERROR,
                    ("claims", claim.name, "as"),
                    f"{text}, at a coordinate several events may share "
                    "(order.shared_positions = true), and order.ties does not say whether the "
                    "provider's boundaries cover all events at a coordinate or only some.",
                    found,
                )
            )
    if not out:
        out.append(
            ctx.finding(
                "ties-unhandled",
                Severity.WARNING,
                ("order", "shared_positions"),
                "Several events may share one coordinate, but order.ties does not say how the "
                'provider\'s boundaries treat them ("atomic": all or none of a coordinate; '
                '"tiebreaker": the coordinate includes a unique tiebreaker). Only before cuts '
                "are derived, which stay true, but a through cut could not be.",
            )
        )
    return out


def _caught_up_finality(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    for claim in ctx.certifying():
        if claim.guarantee is not Guarantee.CAUGHT_UP:
            continue
        at = (
            ctx.axis.shifted(_delta(claim.adjust))
            if claim.adjust is not Adjust.NONE
            else ctx.anchor
        )
        cut = Cutlike(claim.as_kind.value, at)
        text = f"claim {claim.name!r} certifies {ctx.axis.cut(cut)} from {claim.boundary}"
        found = w.late(
            ctx.axis,
            cut,
            text,
            "caught up at the moment of the response only",
            ctx.contract.order_facts.shared_positions,
        )
        if found is not None:
            out.append(
                ctx.finding(
                    "caught-up-finality",
                    Severity.ERROR,
                    ("claims", claim.name, "guarantee"),
                    f"{text}, but a caught-up signal ({claim.boundary}) only says nothing newer "
                    "was visible at that moment; it is not finality.",
                    found,
                )
            )
    return out


def _unfinal_claim(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    for claim in ctx.certifying():
        if claim.guarantee not in (Guarantee.OBSERVED, Guarantee.PROVISIONAL):
            continue
        at = (
            ctx.axis.shifted(_delta(claim.adjust))
            if claim.adjust is not Adjust.NONE
            else ctx.anchor
        )
        cut = Cutlike(claim.as_kind.value, at)
        text = f"claim {claim.name!r} certifies {ctx.axis.cut(cut)} from {claim.boundary}"
        why = (
            "had not been returned yet: the boundary is only the greatest position observed"
            if claim.guarantee is Guarantee.OBSERVED
            else "was not final: a provisional claim may still change"
        )
        found = w.unfinal(
            ctx.axis,
            cut,
            text,
            f"{claim.guarantee.value}",
            ctx.contract.order_facts.shared_positions,
            why,
        )
        if found is not None:
            out.append(
                ctx.finding(
                    "unfinal-claim-certifies",
                    Severity.ERROR,
                    ("claims", claim.name, "guarantee"),
                    f"{text}, but its guarantee is {claim.guarantee.value!r}; only a final "
                    "claim may certify coverage.",
                    found,
                )
            )
    return out


def _no_finality(ctx: _Context) -> list[Finding]:
    if any(c.guarantee is Guarantee.FINAL for c in ctx.certifying()):
        return []
    return [
        ctx.finding(
            "no-finality",
            Severity.ERROR,
            ("claims",),
            "No claim both guarantees finality and certifies: no checkpoint can ever be "
            "certified, so no frontier can ever be published. Name the provider's final "
            'claim (guarantee = "final", certifies = true), or do not build a frontier on '
            "this provider.",
        )
    ]


def _opaque(ctx: _Context) -> list[Finding]:
    if ctx.contract.order_facts.comparable:
        return []
    return [
        ctx.finding(
            "opaque-coordinates",
            Severity.ERROR,
            ("order", "comparable"),
            "The provider's positions are opaque (order.comparable = false): fencepost cannot "
            "compare them, so no before/through cut over them can be checked or merged.",
        )
    ]


def _scalar_incomparable(ctx: _Context) -> list[Finding]:
    parts = ctx.contract.partitions
    if parts.frontier is not Frontier.SCALAR or parts.order is not CrossOrder.PER_PARTITION:
        return []
    cut = Cutlike("before", ctx.anchor)
    found = w.incomparable(
        ctx.axis, cut, f"a scalar frontier {ctx.axis.cut(cut)} over all {parts.unit}s"
    )
    return [
        ctx.finding(
            "scalar-incomparable",
            Severity.ERROR,
            ("partitions", "frontier"),
            f"A scalar frontier is asked for ({parts.frontier.value}) while positions are "
            f"ordered only within each {parts.unit} (partitions.order = per-partition): merge "
            "would withhold it as incomparable, and forcing one misorders events. Publish the "
            'checkpoint vector (frontier = "vector").',
            found,
        )
    ]


def _membership_no_epoch(ctx: _Context) -> list[Finding]:
    m = ctx.contract.membership_facts
    if m.changes not in (MembershipChange.ADD, MembershipChange.SPLIT_MERGE):
        return []
    if m.epochs is not Epochs.NONE and m.discovery is not Discovery.NONE:
        return []
    missing = (
        'no epoch mechanism (epochs = "none")'
        if m.epochs is Epochs.NONE
        else ('no way to learn of the change (discovery = "none")')
    )
    path: Path = ("membership", "epochs" if m.epochs is Epochs.NONE else "discovery")
    kinds = [c.as_kind.value for c in ctx.certifying()] or ["through"]
    cut = Cutlike(kinds[0], ctx.anchor)
    found = w.new_member(ctx.axis, cut, f"the published frontier {ctx.axis.cut(cut)}")
    return [
        ctx.finding(
            "membership-no-epoch",
            Severity.ERROR,
            path,
            f"Membership changes ({m.changes.value}) but there is {missing}: a frontier "
            "computed over the old partitions is published as if it covered the new ones.",
            found,
        )
    ]


def _split_without_lineage(ctx: _Context) -> list[Finding]:
    m = ctx.contract.membership_facts
    if m.changes is not MembershipChange.SPLIT_MERGE or m.lineage is not Lineage.NONE:
        return []
    return [
        ctx.finding(
            "split-without-lineage",
            Severity.WARNING,
            ("membership", "lineage"),
            "Partitions split and merge but children are not read only after their parents "
            'are finished (lineage = "none"): keep an unfinished parent in every epoch until '
            "it is certified through its end, or a child's events can be published while the "
            "parent's earlier events are outstanding.",
        )
    ]


def _unconfirmed_unresolved(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    for i, item in enumerate(ctx.contract.unconfirmed):
        if item.resolved:
            continue
        top = item.field[0]
        severity = Severity.WARNING if top in LOAD_BEARING else Severity.NOTE
        assumed = f" Assumed meanwhile: {item.assumed}." if item.assumed else ""
        out.append(
            ctx.finding(
                "unconfirmed-unresolved",
                severity,
                ("unconfirmed", i),
                f"{format_path(item.field)} is unconfirmed: {item.question.strip()}{assumed} "
                "Resolve it (resolved_by = [source ids]) once a source settles it.",
            )
        )
    return out


def _unconfirmed_strong(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    for use in ctx.checked_uses():
        for item in ctx.contract.risky_unconfirmed(use):
            index = ctx.contract.unconfirmed.index(item)
            if item.field[:1] == ("boundaries",):
                other = _flip(use.boundary.cut)
                axis = ctx.axis
                inner, outer, claim_text, guarantee_text, consequence = _pair(ctx, use, other)
                reading = f"{use.boundary.name} marks {other.value}"
            else:
                axis = w.Axis(replace(ctx.contract.order_facts, successor=False), ctx.anchor)
                inner, outer, claim_text, guarantee_text, consequence = _pair(ctx, use)
                reading = "the order has no exact successor"
            found = w.outside(axis, inner, outer, claim_text, guarantee_text, consequence)
            out.append(
                ctx.finding(
                    "unconfirmed-strong-reading",
                    Severity.ERROR,
                    use.where,
                    f"{claim_text} relies on {format_path(item.field)}, which is unconfirmed "
                    f"(unconfirmed[{index}]); under the other reading ({reading}) it is false. "
                    "Use the reading that is true either way.",
                    found,
                )
            )
    return out


def _uncited(ctx: _Context) -> list[Finding]:
    c = ctx.contract
    gaps: list[tuple[Path, str]] = []
    if not c.order_facts.cite and not c.order_facts.assumed:
        gaps.append((("order",), "the coordinate order"))
    for b in c.boundaries.values():
        if not b.cite and not b.assumed:
            gaps.append((("boundaries", b.name), f"boundary {b.name!r}"))
    for claim in c.claims.values():
        if not claim.evidence.supported:
            gaps.append((("claims", claim.name), f"what claim {claim.name!r} guarantees"))
    if not c.partitions.evidence.supported:
        gaps.append((("partitions",), "the order across partitions"))
    m = c.membership_facts
    if m.changes is not MembershipChange.NONE and not m.evidence.supported:
        gaps.append((("membership",), "how membership changes"))
    p = c.pagination
    if Possibility.NEVER in (p.overlap, p.empty_pages) and not p.evidence.supported:
        gaps.append((("pagination",), "that pages never overlap or are never empty"))
    for i, caveat in enumerate(c.caveats):
        if not caveat.cite:
            gaps.append((("caveats", i), "a caveat"))
    for i, item in enumerate(c.unconfirmed):
        if not item.cite:
            gaps.append((("unconfirmed", i), f"the doubt about {format_path(item.field)}"))
    return [
        ctx.finding(
            "uncited-fact",
            Severity.WARNING,
            path,
            f"No citation for {what}: add cite = [source ids] naming the document it comes from, "
            "or assumed = true to take it without one.",
        )
        for path, what in gaps
    ]


def _no_event_id(ctx: _Context) -> list[Finding]:
    p = ctx.contract.pagination
    if p.overlap is not Possibility.POSSIBLE or p.event_id is not None:
        return []
    return [
        ctx.finding(
            "no-event-id",
            Severity.WARNING,
            ("pagination", "event_id"),
            "Pages may overlap, but no stable event id is named (pagination.event_id): "
            "outcomes are recorded idempotently by event id, so without one a repeated event "
            "is processed twice.",
        )
    ]


def _resume_missing(ctx: _Context) -> list[Finding]:
    out: list[Finding] = []
    kinds = sorted(
        {c.as_kind for c in ctx.certifying() if c.guarantee is Guarantee.FINAL},
        key=lambda k: k.value,
    )
    for kind in kinds:
        if kind in ctx.contract.resume:
            continue
        out.append(
            ctx.finding(
                "resume-missing",
                Severity.NOTE,
                ("resume",),
                f"Claims certify {kind.value} checkpoints, but the contract names no parameter "
                f"to resume from one ([resume.{kind.value}]): after a restart the reader must "
                "rely on the opaque token, or on a parameter it cannot use exactly.",
            )
        )
    return out


def _finality_limited(ctx: _Context) -> list[Finding]:
    final = [c for c in ctx.certifying() if c.guarantee is Guarantee.FINAL]
    out: list[Finding] = []
    for claim in final:
        if claim.occurs is Occurs.SNAPSHOT:
            out.append(
                ctx.finding(
                    "finality-limited",
                    Severity.NOTE,
                    ("claims", claim.name, "occurs"),
                    f"Claim {claim.name!r} is final only within one snapshot: give each snapshot "
                    "its own query scope, so checkpoints from different snapshots are never "
                    "merged (scope_mismatch) and nothing indexed after the snapshot is claimed.",
                )
            )
    if final and all(c.occurs is Occurs.PARTITION_END for c in final):
        out.append(
            ctx.finding(
                "finality-limited",
                Severity.NOTE,
                ("claims", final[0].name, "occurs"),
                f"Finality comes only when a {ctx.contract.partitions.unit} ends "
                f"({', '.join(repr(c.name) for c in final)}): open "
                f"{ctx.contract.partitions.unit}s are never certified, so the frontier moves "
                f"only as {ctx.contract.partitions.unit}s close.",
            )
        )
    return out


# ---------------------------------------------------------------------------
# Declarations, questions, late commits


@dataclass(frozen=True)
class Declaration:
    """A fact that can make a finding disappear: where it is written, its evidence, and the
    contract as it would be if the fact were false."""

    path: Path
    statement: str
    evidence: Evidence
    if_false: str
    negated: Contract


@dataclass(frozen=True)
class Reliance:
    """A declaration the verdict rests on: what breaks (rule, severity, where) if it is false."""

    where: str
    line: int
    statement: str
    evidence: Evidence
    if_false: str
    breaks: tuple[tuple[str, Severity, str], ...]

    @property
    def worst(self) -> Severity:
        return min((severity for _, severity, _ in self.breaks), key=lambda s: s.rank)

    def to_json(self) -> dict[str, object]:
        return {
            "where": self.where,
            "line": self.line,
            "statement": self.statement,
            "cite": list(self.evidence.cite),
            "assumed": self.evidence.assumed,
            "supported": self.evidence.supported,
            "if_false": self.if_false,
            "breaks": [
                {"rule": rule, "severity": severity.value, "where": where}
                for rule, severity, where in self.breaks
            ],
        }


def declarations(contract: Contract) -> tuple[Declaration, ...]:
    """Every declaration of ``contract`` that some rule reads the safe way.

    The closed list of such facts (one home): ``order.ties``, ``order.successor = true``,
    ``order.shared_positions = false``, a certifying claim's ``guarantee = "final"``,
    ``partitions.order = "shared"``, ``pagination.overlap = "never"``, and the
    ``[cursor]`` facts read the safe way (a late-commit bound, stored values no finer than
    a query, immutable rows, partitions that appear without old rows, a certified horizon,
    snapshot reads).
    """
    c = contract
    o = c.order_facts
    out: list[Declaration] = []
    if o.ties is not None:
        out.append(
            Declaration(
                ("order", "ties"),
                f'order.ties = "{o.ties.value}"',
                o.evidence_of("ties", own_only=True),
                "a boundary may cover only some of the events that share a coordinate",
                replace(c, order_facts=replace(o, ties=None, tiebreaker=None)),
            )
        )
    if o.successor:
        out.append(
            Declaration(
                ("order", "successor"),
                "order.successor = true",
                o.evidence_of("successor"),
                "events can sit between x and x+1",
                replace(c, order_facts=replace(o, successor=False)),
            )
        )
    if not o.shared_positions:
        out.append(
            Declaration(
                ("order", "shared_positions"),
                "order.shared_positions = false",
                o.evidence_of("shared_positions"),
                "several events can share one coordinate",
                replace(
                    c, order_facts=replace(o, shared_positions=True, ties=None, tiebreaker=None)
                ),
            )
        )
    for name, claim in c.claims.items():
        if claim.certifies and claim.guarantee is Guarantee.FINAL:
            claims = dict(c.claims)
            claims[name] = replace(claim, guarantee=Guarantee.PROVISIONAL)
            out.append(
                Declaration(
                    ("claims", name, "guarantee"),
                    f'claims.{name}.guarantee = "final"',
                    claim.evidence,
                    f"rows below {claim.boundary} can still appear (a late commit) or change "
                    "after the claim",
                    replace(c, claims=MappingProxyType(claims)),
                )
            )
    if c.partitions.order is CrossOrder.SHARED:
        out.append(
            Declaration(
                ("partitions", "order"),
                'partitions.order = "shared"',
                c.partitions.evidence,
                f"positions of different {c.partitions.unit}s say nothing about each other",
                replace(c, partitions=replace(c.partitions, order=CrossOrder.PER_PARTITION)),
            )
        )
    if c.pagination.overlap is Possibility.NEVER:
        out.append(
            Declaration(
                ("pagination", "overlap"),
                'pagination.overlap = "never"',
                c.pagination.evidence,
                "a page can repeat events of earlier pages",
                replace(c, pagination=replace(c.pagination, overlap=Possibility.POSSIBLE)),
            )
        )
    out += _cursor_declarations(c)
    return tuple(out)


def _cursor_declarations(c: Contract) -> list[Declaration]:
    cur = c.cursor
    out: list[Declaration] = []
    late = cur.late_commits
    if late is not None and late.delay is Delay.BOUNDED:
        out.append(
            Declaration(
                ("cursor", "late_commits"),
                f'cursor.late_commits.max_delay = "{late.shown}"',
                late.evidence,
                f"a row can commit more than {late.shown} after its cursor value",
                replace(
                    c,
                    cursor=replace(
                        cur,
                        late_commits=LateCommits(
                            Delay.UNBOUNDED, None, "unbounded", None, late.evidence
                        ),
                    ),
                ),
            )
        )
    precision = cur.precision
    if precision is not None and not precision.finer:
        out.append(
            Declaration(
                ("cursor", "precision"),
                f"cursor.precision: stored {precision.stored_shown}, query {precision.query_shown}",
                precision.evidence,
                "stored values are finer than what a query can name",
                replace(
                    c,
                    cursor=replace(
                        cur,
                        precision=Precision(
                            1, precision.query, "1", precision.query_shown, None, precision.evidence
                        ),
                    ),
                ),
            )
        )
    mutability = cur.mutability
    if mutability is not None and mutability.mutable is False:
        out.append(
            Declaration(
                ("cursor", "mutability"),
                "cursor.mutability.mutable = false",
                mutability.evidence,
                "rows are updated, each update giving the row a new cursor value",
                replace(c, cursor=replace(cur, mutability=Mutability(True, None, Evidence()))),
            )
        )
    new = cur.new_partitions
    if new is not None and new.old_rows is False:
        out.append(
            Declaration(
                ("cursor", "new_partitions"),
                "cursor.new_partitions.old_rows = false",
                new.evidence,
                "a partition appearing later can hold rows older than values read elsewhere",
                replace(
                    c, cursor=replace(cur, new_partitions=NewPartitions(True, None, Evidence()))
                ),
            )
        )
    if cur.horizon is not None:
        out.append(
            Declaration(
                ("cursor", "horizon"),
                f'cursor.horizon.boundary = "{cur.horizon.boundary}"',
                cur.horizon.evidence,
                f"{cur.horizon.boundary} does not certify that every row before it has committed",
                replace(c, cursor=replace(cur, horizon=None)),
            )
        )
    reads = cur.reads
    if reads is not None and reads.snapshot:
        out.append(
            Declaration(
                ("cursor", "reads"),
                "cursor.reads.snapshot = true",
                reads.evidence,
                "rows commit between the pages of one read",
                replace(c, cursor=replace(cur, reads=Reads(False, None, Evidence()))),
            )
        )
    return out


#: Rules that question the contract itself; they do not run on a negated contract.
_META = frozenset({"declaration-unsupported", "unanswered-question"})


def _key(f: Finding) -> tuple[str, str, str]:
    return (f.rule, f.severity.value, f.where)


def _analysis(ctx: _Context) -> tuple[Reliance, ...]:
    """The declarations the verdict rests on, each with what breaks if it is false.

    With ``ctx.cache["unsupported only"]`` set, only the declarations without evidence are
    negated (all :func:`review_contract` needs for its findings); otherwise every one is.
    """
    cached = ctx.cache.get("reliances")
    if isinstance(cached, tuple):
        return cached
    wanted = [
        d
        for d in declarations(ctx.contract)
        if not (ctx.cache.get("unsupported only") and d.evidence.supported)
    ]
    if not wanted:
        ctx.cache["reliances"], ctx.cache["breaking"] = (), {}
        return ()
    base = {_key(f) for f in _findings(ctx.contract, ctx.plan, counterfactual=True)}
    out: list[Reliance] = []
    found: dict[tuple[str, str, str], Finding] = {}
    for decl in wanted:
        negated = _findings(decl.negated, ctx.plan, counterfactual=True)
        breaks = sorted(
            (
                f
                for f in negated
                if _key(f) not in base
                and f.rule != "uncited-fact"
                and f.severity is not Severity.NOTE
            ),
            key=Finding.sort_key,
        )
        if not breaks:
            continue
        for f in breaks:
            found.setdefault((format_path(decl.path), f.rule, f.where), f)
        out.append(
            Reliance(
                where=format_path(decl.path),
                line=ctx.contract.line_of(decl.path),
                statement=decl.statement,
                evidence=decl.evidence,
                if_false=decl.if_false,
                breaks=tuple((f.rule, f.severity, f.where) for f in breaks),
            )
        )
    result = tuple(out)
    ctx.cache["reliances"] = result
    ctx.cache["breaking"] = found
    return result


def _declaration_unsupported(ctx: _Context) -> list[Finding]:
    if ctx.counterfactual:
        return []
    reliances = _analysis(ctx)
    found = ctx.cache["breaking"]
    assert isinstance(found, dict)
    out: list[Finding] = []
    for r in reliances:
        if r.evidence.supported:
            continue
        broken = [found[(r.where, rule, where)] for rule, _, where in r.breaks]
        first = next((f for f in broken if f.witness is not None), broken[0])
        witness = first.witness
        listed = ", ".join(f"{rule} ({severity.value})" for rule, severity, _ in r.breaks)
        value_hint = (
            "ties = { value = ..., cite = [source ids] }"
            if r.where == "order.ties"
            else "cite = [source ids] in its table"
        )
        out.append(
            ctx.finding(
                "declaration-unsupported",
                r.worst,
                tuple(r.where.split(".")),
                f"{r.statement} has no citation and is not marked assumed, yet the verdict "
                f"rests on it: if {r.if_false}, the review finds {listed}. "
                f"{first.explanation} Cite the source that states it ({value_hint}), or "
                "write assumed = true to take it as an assumption.",
                witness,
            )
        )
    return out


_QUESTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "late_commits",
        "late commits",
        "Can a row commit after a row with a greater cursor value was read (a writer's "
        "transaction that ends late, a replica that lags)? State [cursor.late_commits] "
        'max_delay = a bound ("10s"), "unbounded" or "unknown".',
    ),
    (
        "mutability",
        "a mutable cursor",
        "Are rows updated, an update giving the row a new cursor value? State "
        '[cursor.mutability] mutable = true, false or "unknown".',
    ),
)


def _unanswered(ctx: _Context) -> list[Finding]:
    if ctx.counterfactual:
        return []
    c = ctx.contract
    leaning = [
        claim.name
        for claim in c.claims.values()
        if claim.certifies and claim.guarantee is Guarantee.FINAL and not claim.cite
    ]
    if ctx.plan is None and not leaning:
        return []
    why, meanwhile = (
        (
            f"{ctx.plan.tool} resumes from what it has read, so whether it loses rows depends "
            "on it",
            "Until it says, the review reads the risky answer (late commits unbounded, rows "
            "updated).",
        )
        if ctx.plan is not None
        else (
            f"claim {leaning[0]!r} is final without a citation, so its truth depends on it",
            "A final claim says no row below it can still appear or change: the answer is what "
            "the claim rests on.",
        )
    )
    out: list[Finding] = []
    for key, topic, question in _QUESTIONS:
        if getattr(c.cursor, key) is not None:
            continue
        out.append(
            ctx.finding(
                "unanswered-question",
                Severity.WARNING,
                ("cursor", key),
                f"The contract is silent on {topic} ({why}). {question} {meanwhile}",
            )
        )
    return out


def _late_commit_finality(ctx: _Context) -> list[Finding]:
    late = ctx.contract.cursor.late_commits
    if late is None or not late.possible or not ctx.contract.order_facts.comparable:
        return []
    horizon = ctx.contract.cursor.horizon
    out: list[Finding] = []
    for claim in ctx.certifying():
        if claim.guarantee is not Guarantee.FINAL:
            continue
        if horizon is not None and horizon.boundary == claim.boundary:
            continue
        at = (
            ctx.axis.shifted(_delta(claim.adjust))
            if claim.adjust is not Adjust.NONE
            else ctx.anchor
        )
        cut = Cutlike(claim.as_kind.value, at)
        text = f"claim {claim.name!r} certifies {ctx.axis.cut(cut)} from {claim.boundary}"
        found = _late_below(ctx, cut, late, text)
        if found is None:
            continue
        out.append(
            ctx.finding(
                "late-commit-finality",
                Severity.ERROR,
                ("claims", claim.name, "guarantee"),
                f"{text} as final, but the contract says rows commit late "
                f"(cursor.late_commits.max_delay = {late.shown}) and {claim.boundary} is not "
                "its certified horizon (cursor.horizon): a row below the claim can still "
                "commit after it.",
                found,
            )
        )
    return out


def _late_below(ctx: _Context, cut: Cutlike, late: LateCommits, text: str) -> Witness | None:
    """A row in ``D(cut)``, within the late-commit bound below it, that commits after the claim."""
    axis = ctx.axis
    if axis.sort == "string":
        return None
    x = axis.val(cut.at)
    p, t = axis.var("p"), z3.Int("t")
    constraints = [w.in_downset(cut.kind, x, p), t > w.SIGNAL_TIME]
    if not ctx.contract.order_facts.shared_positions:
        constraints.append(p != x)
    if late.max_delay is not None:
        constraints.append(p >= x - late.max_delay)
    assert not isinstance(cut.at, str)
    near = [cut.at - Fraction(late.max_delay or 2, 2), *axis.hints(cut.at)]
    preferences = [[p == axis.val(h), t == w.SIGNAL_TIME + 1] for h in near]
    model = w._solve(constraints, preferences)
    if model is None:
        return None
    at = axis.read(model, p)
    when = model.eval(t).as_long()
    events = (
        WitnessEvent("e0", "p0", cut.at, "the value the claim was taken from", time=0),
        WitnessEvent("e1", "p0", at, "commits late, after the claim", time=when),
    )
    explanation = (
        f"The claim was taken at t={w.SIGNAL_TIME}. e1 at {axis.show(at)} is in "
        f"D({axis.cut(cut)}), {late.shown if late.max_delay is not None else 'any time'} late "
        f"at most, and commits at t={when}: the claim certified a row nobody had read."
    )
    return Witness(
        WitnessKind.LATE,
        cut,
        text,
        None,
        "rows commit late (cursor.late_commits)",
        tuple(replace(e, shown=axis.show(e.at)) for e in events),
        explanation,
        signal_time=w.SIGNAL_TIME,
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "successor-manufactured",
        "successor manufactured without an exact successor",
        Severity.ERROR,
        "Turning through x into before x+1 (or before x into through x-1, or resuming at "
        "x±1) is only the same claim when the order has an exact successor. On timestamps "
        "truncated to a precision, sequence numbers with gaps between values, or strings, "
        "events can sit between x and x+1.",
        _successor_manufactured,
    ),
    Rule(
        "endpoint-mismatch",
        "inclusive boundary used as exclusive, or the reverse",
        Severity.ERROR,
        "A before boundary read as through certifies the events at x that the provider did "
        "not cover; an exclusive resume parameter used for a before checkpoint skips them "
        "(cockroach #82488). The reverse is true but weaker: a warning for claims (progress "
        "given up), a note for resumes (events redelivered).",
        _endpoint_mismatch,
    ),
    Rule(
        "ties-unhandled",
        "before/through at a shared coordinate without a tie rule",
        Severity.ERROR,
        "When several events share one coordinate, through x covers all of them; a boundary "
        "that names one event at x (a resume token, a per-event LSN) covers only some "
        "(Debezium DBZ-5915). The contract must say whether boundaries are atomic per "
        "coordinate or carry a tiebreaker.",
        _ties_unhandled,
    ),
    Rule(
        "caught-up-finality",
        "finality taken from a caught-up signal",
        Severity.ERROR,
        "A caught-up signal (Kinesis MillisBehindLatest = 0) says nothing newer was visible "
        "at that moment. Events below the claimed coordinate can still become visible "
        "afterwards, so the signal never makes coverage final.",
        _caught_up_finality,
    ),
    Rule(
        "unfinal-claim-certifies",
        "an observed or provisional claim certifies",
        Severity.ERROR,
        "The greatest event observed, or a provisional watermark, is not coverage: events "
        "below it may not have been returned, or may still change.",
        _unfinal_claim,
    ),
    Rule(
        "no-finality",
        "no finality source",
        Severity.ERROR,
        "Certification needs a final claim from the provider. Without one no checkpoint is "
        "ever certified and no frontier is ever published.",
        _no_finality,
    ),
    Rule(
        "opaque-coordinates",
        "coordinates cannot be compared",
        Severity.ERROR,
        "Cuts are compared by their coordinates. Opaque positions (object ids, resume tokens) "
        "can only be handed back to the provider; they cannot carry a before/through claim.",
        _opaque,
    ),
    Rule(
        "scalar-incomparable",
        "scalar frontier across incomparable orders",
        Severity.ERROR,
        "Positions numbered independently per partition say nothing about the order of "
        "events across partitions. A scalar frontier over them is meaningless; keep the "
        "checkpoint vector (merge withholds incomparable).",
        _scalar_incomparable,
    ),
    Rule(
        "membership-no-epoch",
        "membership changes without an epoch mechanism",
        Severity.ERROR,
        "When partitions are added, split or merged, a frontier computed over the old set "
        "does not cover the new one. Each change must start a durable epoch that the "
        "consumer learns of before it publishes (tiflow #12598, Flink FLINK-40094).",
        _membership_no_epoch,
    ),
    Rule(
        "split-without-lineage",
        "split/merge without parents-first reading",
        Severity.WARNING,
        "A parent's remaining events must be certified before its children replace it in "
        "the membership (beam #40232, amazon-kinesis-client PR #261).",
        _split_without_lineage,
    ),
    Rule(
        "unconfirmed-unresolved",
        "unconfirmed fact left unresolved",
        Severity.WARNING,
        "A fact the sources did not settle is an assumption. It stays flagged until a "
        "source settles it (resolved_by). Warning for facts the runtime relies on; note "
        "for the rest.",
        _unconfirmed_unresolved,
    ),
    Rule(
        "unconfirmed-strong-reading",
        "an unconfirmed fact read the risky way",
        Severity.ERROR,
        "When a boundary's kind (or the exact successor) is unconfirmed, the contract must "
        "use the reading that is true either way: a claim reads the boundary as before, a "
        "resume uses it only for through checkpoints.",
        _unconfirmed_strong,
    ),
    Rule(
        "uncited-fact",
        "fact without a citation",
        Severity.WARNING,
        "Every fact about the provider cites the document it comes from, so a reviewer can "
        "check it and a change in the provider's documentation can be traced.",
        _uncited,
    ),
    Rule(
        "no-event-id",
        "overlapping pages without a stable event id",
        Severity.WARNING,
        "Pages may repeat events; outcomes are recorded idempotently by event id, which "
        "needs an id that is stable across fetches.",
        _no_event_id,
    ),
    Rule(
        "resume-missing",
        "no resume parameter for a certified kind",
        Severity.NOTE,
        "A reader that restarts from a checkpoint needs a parameter that resumes exactly "
        "there without skipping uncertified events.",
        _resume_missing,
    ),
    Rule(
        "finality-limited",
        "finality only at partition end or within a snapshot",
        Severity.NOTE,
        "Claims made only when a partition closes move the frontier only as partitions "
        "close; claims final only within a snapshot need one query scope per snapshot.",
        _finality_limited,
    ),
    Rule(
        "late-commit-finality",
        "a final claim on a source whose rows commit late",
        Severity.ERROR,
        "A row may commit after a row with a greater cursor value was read. A claim that "
        "everything below a value read is final is then false, unless the value is a horizon "
        "the source certifies (every row before it has committed), which the contract names "
        "in [cursor.horizon].",
        _late_commit_finality,
    ),
    Rule(
        "declaration-unsupported",
        "a declaration the verdict rests on has no citation",
        Severity.ERROR,
        "A fact that makes a finding disappear (ties, finality, ordering, immutability, a "
        "late-commit bound, the stored precision, a horizon) must cite its source or be marked "
        "assumed = true; otherwise writing it is enough to pass the review. The severity is "
        "that of what breaks if the declaration is false.",
        _declaration_unsupported,
    ),
    Rule(
        "unanswered-question",
        "a question the verdict depends on is not answered",
        Severity.WARNING,
        "Whether rows commit late and whether the cursor column changes decide whether a tool "
        "reading by the cursor loses rows, and whether a final claim without a citation can "
        "be true. A contract silent on them is asked.",
        _unanswered,
    ),
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}

#: Every rule id, contract rules and tool rules (one home: the two tuples).
ALL_RULE_IDS: tuple[str, ...] = tuple(r.id for r in RULES) + tuple(r.id for r in TOOL_RULES)


@dataclass(frozen=True)
class Review:
    """One review: its findings (most severe first) and the declarations the verdict rests on."""

    findings: tuple[Finding, ...]
    rests_on: tuple[Reliance, ...]


def _context(contract: Contract, plan: SyncPlan | None, counterfactual: bool) -> _Context:
    return _Context(
        contract,
        w.Axis(contract.order_facts, anchor_of(contract)),
        plan,
        counterfactual,
    )


def _findings(contract: Contract, plan: SyncPlan | None, *, counterfactual: bool) -> list[Finding]:
    ctx = _context(contract, plan, counterfactual)
    return _run(ctx)


def _run(ctx: _Context) -> list[Finding]:
    findings: list[Finding] = []
    if ctx.plan is None:
        for rule in RULES:
            if ctx.counterfactual and rule.id in _META:
                continue
            findings.extend(rule.check(ctx))
    else:
        # beside a tool, the subject is the tool's pipeline: the frontier design rules
        # (claims, resume positions) are the contract's own review
        findings.extend(tool_findings(ctx.contract, ctx.plan))
        if not ctx.counterfactual:
            findings.extend(_declaration_unsupported(ctx))
            findings.extend(_unanswered(ctx))
    return findings


def review_full(
    contract: Contract, plan: SyncPlan | None = None, *, rests_on: bool = True
) -> Review:
    """Every finding for ``contract`` (beside ``plan``'s tool, if given) and what it rests on.

    Costs one review per declaration on top of the review itself: each declaration is
    negated and the rules run again, to say what breaks if it is false. With
    ``rests_on=False`` only the declarations without evidence are negated (the findings
    are the same; ``Review.rests_on`` then lists only those).
    """
    ctx = _context(contract, plan, counterfactual=False)
    if not rests_on:
        ctx.cache["unsupported only"] = True
    findings = _run(ctx)
    unsupported = [f.where for f in findings if f.rule == "declaration-unsupported"]
    findings = [
        f
        for f in findings
        if not (
            f.rule == "uncited-fact"
            and any(u == f.where or u.startswith(f.where + ".") for u in unsupported)
        )
    ]
    return Review(tuple(sorted(findings, key=Finding.sort_key)), _analysis(ctx))


def review_contract(contract: Contract, plan: SyncPlan | None = None) -> tuple[Finding, ...]:
    """Every finding of every rule for ``contract`` (beside a tool's plan), most severe first."""
    return review_full(contract, plan, rests_on=False).findings
