"""Situation coverage: which of the situations the procedure requires tests for a run exercised.

docs/procedure.md ("Limits and validation") asks an implementation to be tested
with both endpoint kinds at one coordinate, empty and overlapping pages, a
stale checkpoint retry, a lost publication response, concurrent publishers and
a membership change. A verdict of "conformant" means little if the search never
reached one of them, so every run records the :class:`Situation` values it
exercised (the runner and the algebra session call :meth:`Seen.add`), and every
summary carries a table of how many runs exercised each. A situation no run
exercised is a warning in the summary.

The last group are situations that an independent implementation had bugs in
which went unnoticed even with 300 random schedules; the default budget's
exhaustive bases are built to reach them.

Cost: O(1) per recorded situation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from fencepost.judge.values import Order


class Situation(Enum):
    """One situation a run may exercise; the value is its stable name (JSON, JUnit)."""

    BOTH_KINDS_ONE_COORDINATE = "both_kinds_one_coordinate"
    SUCCESSOR_EDGE = "successor_edge"
    EMPTY_PAGE = "empty_page"
    OVERLAPPING_PAGE = "overlapping_page"
    STALE_CHECKPOINT_RETRY = "stale_checkpoint_retry"
    LOST_WRITE_APPLIED_ADVANCED = "lost_write_applied_advanced"
    LOST_WRITE_APPLIED_ALONE = "lost_write_applied_alone"
    LOST_WRITE_NOT_APPLIED_ADVANCED = "lost_write_not_applied_advanced"
    LOST_WRITE_NOT_APPLIED_ALONE = "lost_write_not_applied_alone"
    PUBLISHERS_RACING = "publishers_racing"
    CONFLICT = "conflict"
    CUTOVER_MONOTONE = "cutover_monotone"
    CUTOVER_RESET = "cutover_reset"
    RESHARD_BELOW_CHECKPOINT = "reshard_below_checkpoint"
    WITHHELD_MISSING_CHECKPOINT = "withheld_missing_checkpoint"
    WITHHELD_EPOCH_MISMATCH = "withheld_epoch_mismatch"
    WITHHELD_SCOPE_MISMATCH = "withheld_scope_mismatch"
    WITHHELD_UNSUPPORTED_FINALITY = "withheld_unsupported_finality"
    WITHHELD_INCOMPARABLE = "withheld_incomparable"
    WITHHELD_NO_COVERAGE = "withheld_no_coverage"
    WITHHELD_CUTOVER_PENDING = "withheld_cutover_pending"
    OUTCOME_PUBLISHED = "outcome_published"
    OUTCOME_CONFIRMED = "outcome_confirmed"
    OUTCOME_UNCHANGED = "outcome_unchanged"
    OUTCOME_WITHHELD = "outcome_withheld"
    OUTCOME_GAVE_UP = "outcome_gave_up"
    ORDER_EXACT_SUCCESSOR = "order_exact_successor"
    ORDER_DENSE_INTEGER = "order_dense_integer"
    ORDER_STRING = "order_string"
    RETRY_BUDGET_SPENT = "retry_budget_spent"
    LOST_CHECKPOINT_WRITE_REREAD = "lost_checkpoint_write_reread"
    EPOCH_CHANGE_AFTER_LOST_WRITE = "epoch_change_after_lost_write"
    EMPTY_PAGE_FINAL_CLAIM = "empty_page_final_claim"
    RESTART_THEN_ATTEMPT = "restart_then_attempt"
    ASTRAL_STRINGS = "astral_strings"

    @property
    def says(self) -> str:
        return DESCRIPTIONS[self]


DESCRIPTIONS: Mapping[Situation, str] = {
    Situation.BOTH_KINDS_ONE_COORDINATE: "both endpoint kinds at one coordinate",
    Situation.SUCCESSOR_EDGE: "a successor edge: through x beside before x+1 on an exact order",
    Situation.EMPTY_PAGE: "an empty page",
    Situation.OVERLAPPING_PAGE: "an overlapping page (an event served again)",
    Situation.STALE_CHECKPOINT_RETRY: "a stale checkpoint retry (a write at an old generation)",
    Situation.LOST_WRITE_APPLIED_ADVANCED: (
        "a lost publication response: applied, another publisher advanced before the reread"
    ),
    Situation.LOST_WRITE_APPLIED_ALONE: (
        "a lost publication response: applied, no other writer before the reread"
    ),
    Situation.LOST_WRITE_NOT_APPLIED_ADVANCED: (
        "a lost publication response: not applied, another publisher advanced before the reread"
    ),
    Situation.LOST_WRITE_NOT_APPLIED_ALONE: (
        "a lost publication response: not applied, no other writer before the reread"
    ),
    Situation.PUBLISHERS_RACING: "publishers racing: two attempts in progress at once",
    Situation.CONFLICT: "a conflict: a publication write at a revision that moved",
    Situation.CUTOVER_MONOTONE: "a membership change under the monotone policy",
    Situation.CUTOVER_RESET: "a membership change under the reset policy",
    Situation.RESHARD_BELOW_CHECKPOINT: "a reshard that moves events below an old checkpoint",
    Situation.WITHHELD_MISSING_CHECKPOINT: "withheld: missing_checkpoint",
    Situation.WITHHELD_EPOCH_MISMATCH: "withheld: epoch_mismatch",
    Situation.WITHHELD_SCOPE_MISMATCH: "withheld: scope_mismatch",
    Situation.WITHHELD_UNSUPPORTED_FINALITY: "withheld: unsupported_finality",
    Situation.WITHHELD_INCOMPARABLE: "withheld: incomparable",
    Situation.WITHHELD_NO_COVERAGE: "withheld: no_coverage",
    Situation.WITHHELD_CUTOVER_PENDING: "withheld: cutover_pending",
    Situation.OUTCOME_PUBLISHED: "outcome: published",
    Situation.OUTCOME_CONFIRMED: "outcome: confirmed",
    Situation.OUTCOME_UNCHANGED: "outcome: unchanged",
    Situation.OUTCOME_WITHHELD: "outcome: withheld",
    Situation.OUTCOME_GAVE_UP: "outcome: gave_up",
    Situation.ORDER_EXACT_SUCCESSOR: "order: integers with an exact successor",
    Situation.ORDER_DENSE_INTEGER: "order: integers without a successor (dense)",
    Situation.ORDER_STRING: "order: strings",
    Situation.RETRY_BUDGET_SPENT: (
        "a retry budget spent: more than two conflicts or lost responses in one request"
    ),
    Situation.LOST_CHECKPOINT_WRITE_REREAD: "a lost checkpoint write, then its reread",
    Situation.EPOCH_CHANGE_AFTER_LOST_WRITE: (
        "an epoch change between a lost publication write and its reread"
    ),
    Situation.EMPTY_PAGE_FINAL_CLAIM: "an empty page that carries a final claim",
    Situation.RESTART_THEN_ATTEMPT: "a worker restarted after a crash that then attempts again",
    Situation.ASTRAL_STRINGS: "strings with characters above U+FFFF",
}

#: Situations a level cannot exercise when it is not tested (the others apply to every run).
LEVEL_OF: Mapping[Situation, str] = {
    **{
        s: "publisher"
        for s in Situation
        if s.value.startswith(("lost_write_", "withheld_", "outcome_", "cutover_"))
    },
    Situation.PUBLISHERS_RACING: "publisher",
    Situation.SUCCESSOR_EDGE: "publisher",
    Situation.RESHARD_BELOW_CHECKPOINT: "publisher",
    Situation.CONFLICT: "publisher",
    Situation.RETRY_BUDGET_SPENT: "publisher",
    Situation.EPOCH_CHANGE_AFTER_LOST_WRITE: "publisher",
    Situation.EMPTY_PAGE: "checkpointer",
    Situation.OVERLAPPING_PAGE: "checkpointer",
    Situation.STALE_CHECKPOINT_RETRY: "checkpointer",
    Situation.LOST_CHECKPOINT_WRITE_REREAD: "checkpointer",
    Situation.EMPTY_PAGE_FINAL_CLAIM: "checkpointer",
}


#: The levels that can reach each situation (any one of them is enough): those of
#: :data:`LEVEL_OF`, and a worker restarted after a crash, which takes a worker (a
#: publisher or a reader): a SUT tested at the algebra level alone has none.
LEVELS_OF: Mapping[Situation, frozenset[str]] = {
    **{s: frozenset({level}) for s, level in LEVEL_OF.items()},
    Situation.RESTART_THEN_ATTEMPT: frozenset({"publisher", "checkpointer"}),
}


@dataclass
class Seen:
    """The situations one run exercised."""

    situations: set[Situation] = field(default_factory=set)

    def add(self, *situations: Situation) -> None:
        self.situations.update(situations)


@dataclass(frozen=True)
class Coverage:
    """How many runs exercised each situation (every situation is listed, 0 included)."""

    runs: Mapping[Situation, int]

    @staticmethod
    def of(seen: Iterable[frozenset[Situation]]) -> Coverage:
        counts = dict.fromkeys(Situation, 0)
        for situations in seen:
            for situation in situations:
                counts[situation] += 1
        return Coverage(counts)

    def merged(self, other: Coverage) -> Coverage:
        return Coverage({s: self.runs.get(s, 0) + other.runs.get(s, 0) for s in Situation})

    def missing(self, levels: Iterable[str]) -> tuple[Situation, ...]:
        """The situations no run exercised, among those the tested ``levels`` can reach
        (:data:`LEVELS_OF`: a situation no tested level can reach is no blind spot)."""
        tested = set(levels)
        return tuple(
            s
            for s in Situation
            if self.runs.get(s, 0) == 0 and (s not in LEVELS_OF or LEVELS_OF[s] & tested)
        )


def order_situation(order: Order) -> Situation:
    """Which of the three order kinds ``order`` is."""
    if order.kind == "string":
        return Situation.ORDER_STRING
    return Situation.ORDER_EXACT_SUCCESSOR if order.successor else Situation.ORDER_DENSE_INTEGER
