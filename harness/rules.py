"""What the harness checks: the properties of docs/semantics.md section 7 and the protocol rules.

Every failure the harness reports names one :class:`Rule`. Properties are
statements about durable state and ground truth that must hold after every
step; protocol rules are about the messages themselves. :data:`PRIORITY` fixes
which rule is reported first when one step breaks several (the most serious
first: a false published claim outranks a malformed message).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fencepost.judge.properties import MEANING
from fencepost.judge.rows import ROW_MEANING


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


_PROPERTIES = frozenset(
    {
        Rule.SOUNDNESS,
        Rule.NO_RELABELING,
        Rule.CERTIFIED_SUPPORT,
        Rule.MONOTONE_PUBLICATION,
        Rule.EPOCH_FENCE,
        Rule.CHECKPOINT_TRUTH,
        Rule.CHECKPOINT_MONOTONICITY,
        Rule.LOST_RESPONSE_HONESTY,
    }
)

_ROW_PROPERTIES = frozenset({Rule.NO_LOST_ROWS, Rule.HONEST_COVERAGE, Rule.EXACTLY_ONCE})

MEANINGS: dict[Rule, str] = {
    # The judge's properties mean what the judge says they mean (one text, one place).
    **{Rule(prop.value): text for prop, text in MEANING.items()},
    **{Rule(prop.value): text for prop, text in ROW_MEANING.items()},
    Rule.ALGEBRA_COMPARE: "compare_ok disagrees with the downset order of the two cuts",
    Rule.ALGEBRA_MERGE: (
        "merge_ok disagrees with the merge of docs/semantics.md section 4: a different claim, or a "
        "different withheld reason (reasons are checked in the documented order)"
    ),
    Rule.OP_ID_REUSE: (
        "a write carries an op_id already used by another attempt: writer attribution breaks"
    ),
    Rule.OPAQUE_TOKEN: (
        "fetch_page named a token the provider never issued for this partition and epoch"
    ),
    Rule.QUERY_GRANULARITY: (
        "a sync query bound names a value the source cannot express (not a multiple of its "
        "granularity), as an API refuses a timestamp finer than it takes"
    ),
    Rule.QUERY_TOKEN: (
        "a sync query continues with a token the source never issued, or one issued for another "
        "query (another partition or other bounds)"
    ),
    Rule.INVENTED_ROW: "a commit names a row id the source never returned to any query",
    Rule.CALL_PAIRING: (
        "a message does not belong where it arrived: a reply with the wrong id, a call of "
        "another level, another stream or partition, or an unsolicited message"
    ),
    Rule.MESSAGE_SCHEMA: (
        "a message is not well formed: not JSON, an unknown or missing field, a wrong type"
    ),
    Rule.ERROR_HANDLING: (
        "the SUT did not answer an unparsable message with an error message and keep running"
    ),
    Rule.SUT_ERROR: "the SUT answered a well-formed message with an error",
    Rule.RUNAWAY: "one request made more store or provider calls than the harness allows",
    Rule.HANDSHAKE: "the SUT did not answer hello with hello_ok for protocol 1",
    Rule.LINE_TOO_LONG: "the SUT wrote a line longer than the protocol's line limit",
    Rule.SUT_HANG: "the SUT did not answer within the per-call time limit",
    Rule.SUT_CRASH: "the SUT process exited or closed its output while an answer was due",
    Rule.SHUTDOWN: "the SUT did not exit with status 0 after shutdown",
    Rule.RESET: (
        "a SUT that declared the reset capability did not answer reset with reset_ok, or "
        "behaved differently after a reset than a freshly started process"
    ),
}

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
