"""What a review reports: findings, their severity, and witnesses that make claims false.

A finding about truth carries a :class:`Witness`: concrete events (positions,
partitions, timing) under which the claim the contract derives is false while
everything the provider documented still holds. Witnesses are produced by Z3
(:mod:`fencepost.review.witness`) and re-checked here by plain arithmetic
(:meth:`Witness.verify`), so a witness that is shown is one that was checked
twice, by two different means.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction

#: A position in a witness: an integer, a rational strictly between integers
#: (on an order without an exact successor), or a string.
Position = int | Fraction | str


class Severity(Enum):
    """How bad a finding is. ``error`` fails the review (exit 1)."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "note": 2}[self.value]


class WitnessKind(Enum):
    """Which falsity a witness shows, and so how :meth:`Witness.verify` checks it."""

    OUTSIDE = "outside"  # an event in the claimed downset, outside the guaranteed one
    TIE = "tie"  # a second event at the claimed coordinate, after the boundary's event
    LATE = "late"  # an event in the claimed downset that became visible after the signal
    UNFINAL = "unfinal"  # an event in the claimed downset that was not final
    INCOMPARABLE = "incomparable"  # a covered event later than an uncovered one
    NEW_MEMBER = "new-member"  # an event of a partition the claim's membership missed


@dataclass(frozen=True, slots=True)
class Cutlike:
    """A cut in a witness: ``(kind, at)`` with kind ``before`` or ``through``."""

    kind: str
    at: Position

    def contains(self, p: Position) -> bool:
        """Whether position ``p`` is in this cut's downset."""
        _same_type(self.at, p)
        return p < self.at if self.kind == "before" else p <= self.at  # type: ignore[operator]

    def __str__(self) -> str:
        return f"{self.kind} {show_position(self.at)}"


@dataclass(frozen=True, slots=True)
class WitnessEvent:
    """One event of a witness.

    ``seq`` orders events that share one position (a tie); ``time`` is when the
    event became visible (or, for :attr:`WitnessKind.INCOMPARABLE`, when it
    happened); ``final`` whether the source had finalized it.
    """

    id: str
    partition: str
    at: Position
    note: str
    seq: int | None = None
    time: int | None = None
    final: bool = True
    shown: str | None = None  # the position in the provider's notation, when it has one


@dataclass(frozen=True, slots=True)
class Witness:
    """Concrete events under which the derived claim is false.

    ``claim`` is the cut the contract derives (what would be certified, or for
    a resume the downset the resume position skips); ``guarantee`` the cut the
    provider's facts support, when there is one; ``signal_time`` when a
    caught-up signal was given; ``members`` the partitions the claim was made
    over (for a membership change).
    """

    kind: WitnessKind
    claim: Cutlike
    claim_text: str
    guarantee: Cutlike | None
    guarantee_text: str
    events: tuple[WitnessEvent, ...]
    explanation: str
    signal_time: int | None = None
    members: tuple[str, ...] = ()

    def verify(self) -> bool:
        """Re-check by arithmetic that these events make the claim false.

        Independent of Z3: it evaluates downset membership directly on the
        positions shown.
        """
        try:
            return self._verify()
        except (TypeError, ValueError):
            return False

    def _verify(self) -> bool:
        by_id = {e.id: e for e in self.events}
        if self.kind is WitnessKind.OUTSIDE:
            assert self.guarantee is not None
            return any(
                self.claim.contains(e.at) and not self.guarantee.contains(e.at) for e in self.events
            )
        if self.kind is WitnessKind.TIE:
            boundary = by_id.get("e1")
            if boundary is None or boundary.seq is None:
                return False
            for e in self.events:
                if e is boundary or e.seq is None:
                    continue
                provider_covers = e.at < boundary.at or (  # type: ignore[operator]
                    e.at == boundary.at and e.seq <= boundary.seq
                )
                if e.at == boundary.at and self.claim.contains(e.at) and not provider_covers:
                    return True
            return False
        if self.kind is WitnessKind.LATE:
            if self.signal_time is None:
                return False
            return any(
                self.claim.contains(e.at) and e.time is not None and e.time > self.signal_time
                for e in self.events
            )
        if self.kind is WitnessKind.UNFINAL:
            return any(self.claim.contains(e.at) and not e.final for e in self.events)
        if self.kind is WitnessKind.INCOMPARABLE:
            for a in self.events:
                for b in self.events:
                    if (
                        a.partition != b.partition
                        and not self.claim.contains(a.at)
                        and self.claim.contains(b.at)
                        and a.time is not None
                        and b.time is not None
                        and a.time < b.time
                    ):
                        return True
            return False
        if self.kind is WitnessKind.NEW_MEMBER:
            return any(
                e.partition not in self.members and self.claim.contains(e.at) for e in self.events
            )
        raise AssertionError(self.kind)  # pragma: no cover - every kind is handled

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "claim": {"kind": self.claim.kind, "at": json_position(self.claim.at)},
            "claim_text": self.claim_text,
            "guarantee": (
                {"kind": self.guarantee.kind, "at": json_position(self.guarantee.at)}
                if self.guarantee
                else None
            ),
            "guarantee_text": self.guarantee_text,
            "signal_time": self.signal_time,
            "members": list(self.members),
            "events": [
                {
                    "id": e.id,
                    "partition": e.partition,
                    "at": json_position(e.at),
                    "shown": e.shown,
                    "seq": e.seq,
                    "time": e.time,
                    "final": e.final,
                    "note": e.note,
                }
                for e in self.events
            ],
            "explanation": self.explanation,
            "verified": self.verify(),
        }


class SyncKind(Enum):
    """Which loss a sync witness shows, and so how :meth:`SyncWitness.verify` checks it."""

    LATE_ROW = "late-row"  # a row commits behind a run's read, below where the next run starts
    SLICE_GAP = "slice-gap"  # a stored value between one slice's upper bound and the next's lower
    NEW_PARTITION = "new-partition"  # a partition appears later with a row below its start


@dataclass(frozen=True, slots=True)
class SyncRow:
    """A row of a sync witness: its cursor value and, when it matters, when it committed.

    ``at`` and ``commit`` are in the order's units (nanoseconds on a timestamp
    order), ``commit`` on the source's clock; ``shown`` is ``at`` as people read it.
    """

    id: str
    partition: str
    at: int
    note: str
    commit: int | None = None
    shown: str | None = None


def floor_to(value: int, step: int) -> int:
    """``value`` rounded down to a multiple of ``step`` (a bound formatted coarser)."""
    return value - value % step


@dataclass(frozen=True, slots=True)
class SyncWitness:
    """Rows, commit times and runs under which a sync tool's configuration loses a row.

    ``values`` holds the numbers the story rests on (the source clock when the run
    started, when pages were read, the tool's lag, the query step, the bound the next
    run starts from...), ``flags`` whether bounds are inclusive; ``story`` tells it in
    order, in domain words; ``lost`` names the rows no run ever copies.
    :meth:`verify` re-checks the story by plain arithmetic, independently of Z3.
    """

    kind: SyncKind
    rows: tuple[SyncRow, ...]
    values: Mapping[str, int]
    flags: Mapping[str, bool]
    story: tuple[str, ...]
    lost: tuple[str, ...]
    explanation: str
    facts: tuple[str, ...] = field(default=())

    def verify(self) -> bool:
        """Re-check by arithmetic that these rows and times lose the rows named in ``lost``."""
        try:
            return self._verify()
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            return False

    def _row(self, name: str) -> SyncRow:
        return next(r for r in self.rows if r.id == name)

    def _below(self, at: int, lower: int) -> bool:
        return at < lower if self.flags["lower_inclusive"] else at <= lower

    def _verify(self) -> bool:
        v = self.values
        if self.kind is SyncKind.LATE_ROW:
            (late,) = self.lost
            r, top = self._row(late), self._row("v")
            assert r.commit is not None and top.commit is not None
            delay = v.get("delay")
            ok = [
                r.at <= r.commit,
                top.at <= top.commit <= v["read_v"],
                v["now"] <= v["read_r"] <= v["read_v"],
                r.at <= top.at,
                v["read_r"] <= r.commit,  # r committed after its page was read (or at that instant)
                not self.flags.get("snapshot", False) or v["read_r"] == v["read_v"],
                v["lower"] == _start(top.at - v["lag"], v["step"], self.flags["exact"]),
                self._below(r.at, v["lower"]),
            ]
            if delay is not None:
                ok += [r.commit <= r.at + delay, top.commit <= top.at + delay]
            if "cap" in v:
                ok.append(v["cap"] == floor_to(v["now"] - v["cap_lag"], v["cap_step"]))
                ok.append(top.at <= v["cap"] if self.flags["cap_inclusive"] else top.at < v["cap"])
            return all(ok)
        if self.kind is SyncKind.SLICE_GAP:
            (gap,) = self.lost
            r = self._row(gap)
            upper = floor_to(v["boundary"] - v["granularity"], v["request_step"])
            lower = floor_to(v["boundary"], v["request_step"])
            above_upper = r.at > upper if self.flags["upper_inclusive"] else r.at >= upper
            later = _start(v["state"] - v["lag"], v["request_step"], self.flags["exact"])
            return (
                upper == v["upper"]
                and lower == v["lower"]
                and r.at % v["stored_step"] == 0
                and above_upper
                and self._below(r.at, lower)
                and self._row("v").at == v["state"]
                and self._below(r.at, later)  # every later run starts above r
            )
        if self.kind is SyncKind.NEW_PARTITION:
            (old,) = self.lost
            r, top = self._row(old), self._row("v")
            ok = [
                r.partition != top.partition,
                v["lower"] == _start(top.at - v["lag"], v["step"], self.flags["exact"]),
                self._below(r.at, v["lower"]),
            ]
            if "delay" in v and not self.flags.get("old_rows", True):
                # a new partition's rows commit after it appears, within the delay
                assert r.commit is not None
                ok += [r.commit >= v["appears"] >= top.at, r.commit <= r.at + v["delay"]]
            return all(ok)
        raise AssertionError(self.kind)  # pragma: no cover - every kind is handled

    def items(self) -> list[tuple[str, str]]:
        """The witness as labelled lines: the facts used, the story, the rows lost, why."""
        out = [("facts", fact) for fact in self.facts]
        out += [("then", step) for step in self.story]
        out.append(("lost", ", ".join(self.lost)))
        out.append(("so", self.explanation))
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "rows": [
                {
                    "id": r.id,
                    "partition": r.partition,
                    "at": r.at,
                    "shown": r.shown,
                    "commit": r.commit,
                    "note": r.note,
                }
                for r in self.rows
            ],
            "values": dict(self.values),
            "flags": dict(self.flags),
            "facts": list(self.facts),
            "story": list(self.story),
            "lost": list(self.lost),
            "explanation": self.explanation,
            "verified": self.verify(),
        }


def _start(value: int, step: int, exact: bool) -> int:
    """Where a run starts from ``value``: exactly (the tool filters), or floored to the step."""
    return value if exact else floor_to(value, step)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a review found in one contract.

    ``rule`` is a stable id (docs/contracts.md lists them all); ``where`` the
    dotted path of the field it is about and ``line`` its line in ``file``.
    """

    rule: str
    severity: Severity
    title: str
    provider: str
    file: str
    where: str
    line: int
    explanation: str
    witness: Witness | SyncWitness | None = None

    def sort_key(self) -> tuple[int, str, int, str]:
        return (self.severity.rank, self.rule, self.line, self.where)

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "title": self.title,
            "provider": self.provider,
            "file": self.file,
            "line": self.line,
            "where": self.where,
            "explanation": self.explanation,
            "witness": self.witness.to_json() if self.witness else None,
        }


def _same_type(a: Position, b: Position) -> None:
    if isinstance(a, str) != isinstance(b, str):
        raise TypeError("a string position compared with a number")


def show_position(p: Position) -> str:
    """A position for people: integers as they are, rationals as exact decimals or n/d."""
    if isinstance(p, str):
        return repr(p)
    if isinstance(p, Fraction):
        if p.denominator == 1:
            return str(p.numerator)
        d = p.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d == 1:
            whole, rest = divmod(abs(p.numerator), p.denominator)
            digits = ""
            while rest:
                rest *= 10
                digit, rest = divmod(rest, p.denominator)
                digits += str(digit)
            return ("-" if p < 0 else "") + f"{whole}.{digits}"
        return f"{p.numerator}/{p.denominator}"
    return str(p)


def json_position(p: Position) -> int | str:
    """A position on the wire: integers as numbers, rationals as exact decimal strings."""
    if isinstance(p, Fraction):
        return p.numerator if p.denominator == 1 else show_position(p)
    return p
