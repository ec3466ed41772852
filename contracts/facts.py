"""The vocabulary of a provider contract: errors, enumerations and the typed facts.

Each fact is plain frozen data read from the TOML file by :mod:`fencepost.contracts.loader`;
:class:`fencepost.contracts.contract.Contract` turns them into runtime decisions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate
from fencepost.impl.provider import Claim
from fencepost.inputs.toml import InputError
from fencepost.inputs.tomllines import (
    Path,
)

# ---------------------------------------------------------------------------
# Errors


class ContractError(InputError, InvalidValue):
    """A contract file that cannot be read, parsed or trusted, with its place.

    ``file`` and ``line`` locate the mistake (``line`` is None when the whole
    file is at fault: unreadable, missing); ``field`` is the dotted path of the
    offending field as an author writes it (``boundaries.AT_SEQUENCE_NUMBER.cut``);
    ``value`` the offending value.
    """

    def __init__(
        self, file: str, line: int | None, field: str, problem: str, value: object = None
    ) -> None:
        InputError.__init__(self, file, line, field, problem)
        self.value = value

    def __str__(self) -> str:
        return InputError.__str__(self)


class ContractErrors(ContractError):
    """Every mistake found in one contract file, reported at once (sorted by line).

    Its own ``file``, ``line``, ``field`` and ``value`` are the first mistake's, so
    code that handles one :class:`ContractError` keeps working; :attr:`errors`
    holds them all and ``str()`` gives one line per mistake.
    """

    def __init__(self, errors: Iterable[ContractError]) -> None:
        self.errors: tuple[ContractError, ...] = tuple(errors)
        first = self.errors[0]
        super().__init__(first.file, first.line, first.field, first.problem, first.value)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


def every_error(exc: ContractError) -> tuple[ContractError, ...]:
    """The mistakes ``exc`` stands for: all of a :class:`ContractErrors`, else itself."""
    return exc.errors if isinstance(exc, ContractErrors) else (exc,)


def contract_error(
    origin: str, line: int | None, field: str, problem: str, value: object = None
) -> ContractError:
    """The :class:`ContractError` the shared TOML reader raises for a contract file."""
    return ContractError(origin, line, field, problem, value)


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


class Delay(Enum):
    """What a contract says about late commits: a bound, none at all, or not known."""

    BOUNDED = "bounded"  # every row commits at most max_delay after its cursor value
    UNBOUNDED = "unbounded"  # a row may commit any time after its cursor value
    UNKNOWN = "unknown"  # not settled: read as unbounded wherever it matters


# ---------------------------------------------------------------------------
# Typed data


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a fact rests on: the sources that state it, or an explicit assumption.

    ``cite`` names ``[sources]`` ids; ``assumed`` is ``assumed = true`` written by the
    author (the fact is taken as true without a source, and the review lists it
    among the assumptions its verdict rests on). A fact with neither is a bare
    declaration: the review questions it wherever it makes a finding disappear.
    """

    cite: tuple[str, ...] = ()
    assumed: bool = False

    @property
    def supported(self) -> bool:
        return bool(self.cite) or self.assumed

    def describe(self) -> str:
        """``cited: a, b`` / ``assumed`` / ``no citation``."""
        if self.cite:
            return f"cited: {', '.join(self.cite)}"
        return "assumed" if self.assumed else "no citation, not marked assumed"


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
    assumed: bool = False
    #: Evidence written on a field itself (``ties = { value = "atomic", cite = [...] }``).
    evidence: Mapping[str, Evidence] = field(default_factory=dict)

    def evidence_of(self, name: str, *, own_only: bool = False) -> Evidence:
        """The evidence for field ``name``: its own, else (unless ``own_only``) the table's."""
        if name in self.evidence:
            return self.evidence[name]
        return Evidence() if own_only else Evidence(self.cite, self.assumed)


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
    assumed: bool = False


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
    assumed: bool = False

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.cite, self.assumed)


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
    assumed: bool = False

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.cite, self.assumed)


@dataclass(frozen=True, slots=True)
class MembershipFacts:
    """How the partition set changes, how a consumer learns of it, how epochs are formed."""

    changes: MembershipChange
    discovery: Discovery
    epochs: Epochs
    lineage: Lineage
    statement: str | None
    cite: tuple[str, ...]
    assumed: bool = False

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.cite, self.assumed)


@dataclass(frozen=True, slots=True)
class PaginationFacts:
    """Token opacity, page overlap, empty pages, and the stable event id outcomes use."""

    token: TokenKind
    overlap: Possibility
    empty_pages: Possibility
    event_id: str | None
    statement: str | None
    cite: tuple[str, ...]
    assumed: bool = False

    @property
    def evidence(self) -> Evidence:
        return Evidence(self.cite, self.assumed)


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
class LateCommits:
    """Whether a row can become visible after a row with a greater cursor value was read.

    ``max_delay`` (order units: nanoseconds on an RFC 3339 order) bounds how long
    after its cursor value a row commits, when ``delay`` is ``bounded``; 0 means
    rows commit in cursor order. ``shown`` is the bound as written (``"10s"``).
    """

    delay: Delay
    max_delay: int | None
    shown: str
    statement: str | None
    evidence: Evidence

    @property
    def possible(self) -> bool:
        """Late commits are stated possible (a bound above 0, or unbounded)."""
        return self.delay is Delay.UNBOUNDED or bool(self.max_delay)


@dataclass(frozen=True, slots=True)
class Precision:
    """The step of stored cursor values against the step a query bound can name.

    Both in order units; ``stored < query`` (milliseconds stored, seconds queried)
    means rows sit between two values a query can express.
    """

    stored: int
    query: int
    stored_shown: str
    query_shown: str
    statement: str | None
    evidence: Evidence

    @property
    def finer(self) -> bool:
        return self.stored < self.query


@dataclass(frozen=True, slots=True)
class Mutability:
    """Whether rows are updated, each update giving the row a new cursor value.

    ``mutable`` is None when the contract answers "unknown".
    """

    mutable: bool | None
    statement: str | None
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Whether a partition that appears later can hold rows older than values already read.

    ``old_rows`` is None when the contract answers "unknown".
    """

    old_rows: bool | None
    statement: str | None
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class Horizon:
    """A record boundary that certifies every row before it has committed (PostgreSQL's xmin)."""

    boundary: str
    statement: str | None
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class Reads:
    """Whether one read (every page of one run's query) sees one snapshot of the source."""

    snapshot: bool
    statement: str | None
    evidence: Evidence


@dataclass(frozen=True, slots=True)
class CursorFacts:
    """What a sync tool reading by the cursor depends on; every part may be unstated (None)."""

    field: str | None = None
    late_commits: LateCommits | None = None
    precision: Precision | None = None
    mutability: Mutability | None = None
    new_partitions: NewPartitions | None = None
    horizon: Horizon | None = None
    reads: Reads | None = None


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
