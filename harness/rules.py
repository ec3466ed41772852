"""What the harness checks: the properties of docs/semantics.md section 7 and the protocol rules.

Every failure the harness reports names one :class:`Rule`. Properties are
statements about durable state and ground truth that must hold after every
step; protocol rules are about the messages themselves. The names, that split
and the meanings are the vocabulary's (:mod:`fencepost.vocabulary.rules`;
``honest_outcome`` is a protocol rule); tests/vocabulary/test_totality.py checks
:class:`Rule` spells exactly them, in report order. :data:`PRIORITY` fixes
which rule is reported first when one step breaks several (the most serious
first: a false published claim outranks a malformed message).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fencepost.vocabulary.rules import PROPERTIES, ROW_PROPERTIES, RULES


class Rule(Enum):
    """A property or protocol rule the harness checks; the value is its stable name."""

    # docs/semantics.md section 7 (and the ingest guarantee of docs/conformance-protocol.md)
    SOUNDNESS = "soundness"
    NO_RELABELING = "no_relabeling"
    CERTIFIED_SUPPORT = "certified_support"
    MONOTONE_PUBLICATION = "monotone_publication"
    EPOCH_FENCE = "epoch_fence"
    CHECKPOINT_TRUTH = "checkpoint_truth"
    CHECKPOINT_MONOTONICITY = "checkpoint_monotonicity"
    LOST_RESPONSE_HONESTY = "lost_response_honesty"
    # the sync level's properties (docs/conformance-protocol.md, "Level sync"; fencepost.judge.rows)
    NO_LOST_ROWS = "no_lost_rows"
    HONEST_COVERAGE = "honest_coverage"
    EXACTLY_ONCE = "exactly_once"
    # protocol rules
    HONEST_OUTCOME = "honest_outcome"
    INGEST_REPORT = "ingest_report"
    ALGEBRA_COMPARE = "algebra_compare"
    ALGEBRA_MERGE = "algebra_merge"
    OP_ID_REUSE = "op_id_reuse"
    OPAQUE_TOKEN = "opaque_token"
    QUERY_GRANULARITY = "query_granularity"
    QUERY_TOKEN = "query_token"
    INVENTED_ROW = "invented_row"
    CALL_PAIRING = "call_pairing"
    MESSAGE_SCHEMA = "message_schema"
    ERROR_HANDLING = "error_handling"
    SUT_ERROR = "sut_error"
    RUNAWAY = "runaway"
    HANDSHAKE = "handshake"
    LINE_TOO_LONG = "line_too_long"
    SUT_HANG = "sut_hang"
    SUT_CRASH = "sut_crash"
    SHUTDOWN = "shutdown"
    RESET = "reset"

    @property
    def is_property(self) -> bool:
        """True for docs/semantics.md section 7 properties, False for protocol rules."""
        return self in _PROPERTIES

    @property
    def is_row_property(self) -> bool:
        """True for the sync level's properties (rows lost, duplicated, coverage overclaimed)."""
        return self in _ROW_PROPERTIES

    @property
    def meaning(self) -> str:
        """What breaking this rule means, in domain words (used in reports and docs)."""
        return MEANINGS[self]


_PROPERTIES = frozenset(Rule(name) for name in PROPERTIES)

_ROW_PROPERTIES = frozenset(Rule(name) for name in ROW_PROPERTIES)

#: What breaking each rule means: the vocabulary's text (one text, one place).
MEANINGS: dict[Rule, str] = {rule: RULES[rule.value] for rule in Rule}

#: Report order when one step breaks several rules.
PRIORITY: tuple[Rule, ...] = tuple(Rule)


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where (step, worker) and what, in domain words."""

    rule: Rule
    message: str
    step: int | None = None
    worker: str | None = None

    def __str__(self) -> str:
        where = []
        if self.step is not None:
            where.append(f"step {self.step}")
        if self.worker is not None:
            where.append(self.worker)
        prefix = f"[{', '.join(where)}] " if where else ""
        return f"{prefix}{self.rule.value}: {self.message}"


class SutFailure(Exception):
    """The SUT broke the protocol so that the run cannot go on (crash, hang, garbage).

    Raised by channels and message handling; the runner turns it into a
    :class:`Violation` and tears the run down. Never escapes the harness.
    """

    def __init__(self, rule: Rule, message: str, worker: str | None = None) -> None:
        self.rule = rule
        self.message = message
        self.worker = worker
        super().__init__(f"{rule.value}: {message}")


class HarnessError(Exception):
    """fencepost's own fault: the harness broke while judging (never a verdict on the SUT).

    ``seed`` names the case that was running (None: outside any case), so the
    error can be reproduced with ``fencepost conform --replay SEED``; the
    original exception is chained as ``__cause__``.
    """

    def __init__(self, where: str, seed: int | None, cause: BaseException) -> None:
        self.where = where
        self.seed = seed
        self.cause = cause
        at = f" (seed {seed})" if seed is not None else ""
        super().__init__(f"{where}{at}: {type(cause).__name__}: {cause}")


def first(violations: list[Violation] | tuple[Violation, ...]) -> Violation | None:
    """The violation to report first: the earliest step, then the highest-priority rule."""
    if not violations:
        return None
    rank = {rule: i for i, rule in enumerate(PRIORITY)}
    return min(violations, key=lambda v: (v.step if v.step is not None else 0, rank[v.rule]))
