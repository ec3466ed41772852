"""Discriminating coverage: in how many runs a plausible wrong answer would have been caught.

Situation coverage (:mod:`fencepost.harness.coverage`) counts the runs that
*reached* a situation; a situation reached is not a wrong answer caught. This
module asks the sharper question for every decision a SUT makes, by the kinds of
decision of docs/semantics.md (compare, section 2; certify, section 3; merge,
section 4; publish and outcome, sections 5 and 6; op_id and ingest report,
docs/conformance-protocol.md): had the SUT given a *plausible wrong answer*
here instead of whatever it answered, would the judge have rejected it?

Each :class:`WrongAnswer` is derived from the decision table itself, never from
the mutant catalog: a merge that drops idle members, a minimum started from a
fixed sentinel, integers compared as text, confirming a lost write when the
reread record is in a newer epoch, reporting ``published`` after giving up, a
restarted worker reusing op_ids, and so on (:data:`WRONG_ANSWERS`). At each
decision point the harness computes the wrong answer from what the SUT was told
(the attempt's view, the case's inputs, the pages served) and hands it to the
same judge functions that judge real answers (:mod:`fencepost.judge`), on the
actual state. A wrong answer equal to the right one is not counted: the
situation did not tell them apart. So a count is a number of runs in which a
SUT making that mistake would have failed; a wrong answer no run could catch is
a ``WARNING`` in the summary.

Cost: per decision point, at most one judge call per wrong answer still
uncounted in the run (each O(P) for P members, O(P x E) where soundness is
judged); a wrong answer a run already counts is not weighed again, since a count
is of runs. The wrong merges of one membership and checkpoints are computed once
and shared by every attempt and run that reads them (:func:`_merges`); those equal
to the right merge are never decided or judged. At the default budget this
weighing is under a tenth of the harness's CPU (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fencepost.judge.cuts import compare, minimum, same_claim
from fencepost.judge.decide import (
    AttemptLog,
    Decision,
    Reported,
    WriteAnswer,
    WriteSeen,
    decide_merged,
    judge_outcome,
)
from fencepost.judge.merge import Withheld, WithheldReason, merge
from fencepost.judge.values import (
    BadValue,
    Checkpoint,
    Coordinate,
    Cut,
    Endpoint,
    Finality,
    Membership,
    Order,
    Record,
)

#: The kinds of decision, in the order of docs/semantics.md, and the levels whose runs
#: measure each (a merge is measured on the algebra level's merge cases and on every
#: publisher view).
DECISIONS: Mapping[str, tuple[str, ...]] = {
    "compare": ("algebra",),
    "certify": ("checkpointer",),
    "ingest_report": ("checkpointer",),
    "merge": ("algebra", "publisher"),
    "publish": ("publisher",),
    "outcome": ("publisher",),
    "op_id": ("publisher",),
}


@dataclass(frozen=True, slots=True)
class WrongAnswer:
    """One plausible wrong answer to one kind of decision; ``name`` is stable (JSON, JUnit)."""

    name: str
    decision: str
    says: str


def _w(name: str, decision: str, says: str) -> WrongAnswer:
    return WrongAnswer(name, decision, says)


#: Every wrong answer the harness measures, by decision kind. The merge answers are
#: measured twice: on the algebra level's merge cases and on every publisher view.
WRONG_ANSWERS: tuple[WrongAnswer, ...] = (
    _w("kinds_swapped", "compare", "before x ranked above through x"),
    _w("integers_as_text", "compare", "integer coordinates compared as decimal text"),
    _w("utf16_order", "compare", "strings compared by UTF-16 code units, not code points"),
    _w("float64_coordinates", "compare", "integers compared as 64-bit floats"),
    _w("successor_everywhere", "compare", "through x equal to before x+1 on a dense order"),
    _w("zero_as_nothing", "compare", "coordinate 0 (or the empty string) read as nothing"),
    _w("drops_idle_members", "merge", "members with no checkpoint or no coverage left out"),
    _w("sentinel_minimum", "merge", "the minimum started from a fixed sentinel (2^31-1, U+FFFF)"),
    _w("min_as_text", "merge", "the minimum of integer coordinates taken as text"),
    _w("min_utf16", "merge", "the minimum of strings taken in UTF-16 order"),
    _w("min_float64", "merge", "the minimum taken over 64-bit floats"),
    _w("min_casefold", "merge", "the minimum of strings taken ignoring case (casefold)"),
    _w("min_normalised", "merge", "the minimum of strings taken after NFKC normalisation"),
    _w("nothing_as_zero", "merge", "a member at nothing taken as before 0 in the minimum"),
    _w("first_two_members", "merge", "only the first two members merged (right for two only)"),
    _w("first_kind_on_tie", "merge", "at a tied coordinate the endpoint kind met first kept"),
    _w("names_case_insensitive", "merge", "checkpoints matched to members ignoring case"),
    _w("names_normalised", "merge", "checkpoints matched to members after NFC normalisation"),
    _w("scalar_across_incomparable", "merge", "a scalar minimum across incomparable orders"),
    _w("reasons_member_first", "merge", "the first faulty member decides the withheld reason"),
    _w("manufactured_successor", "merge", "through x normalised to before x+1 on a dense order"),
    _w("nonmembers_pin", "merge", "checkpoints of non-members kept in the minimum"),
    _w("misconfigured_trusted", "merge", "epoch, scope and finality of checkpoints not checked"),
    _w("epochs_plus_one", "publish", "the next epoch assumed to be the record's epoch + 1"),
    _w("cutover_vs_own_write", "publish", "a cutover compared with the worker's own last write"),
    _w("monotone_as_reset", "publish", "a monotone cutover written below the record"),
    _w("reset_as_monotone", "publish", "a reset cutover held back as cutover_pending"),
    _w("stale_cut_after_conflict", "publish", "the old cut written again after a conflict"),
    _w("old_epoch_after_fence", "publish", "after a lost write, retried in the old epoch"),
    _w("write_equal_cut", "publish", "the record's own claim written again in the same epoch"),
    _w("successor_ignored", "publish", "through x ranked below before x+1 on an exact order"),
    _w("published_after_giving_up", "outcome", "published reported after giving up"),
    _w("published_on_lost_write", "outcome", "a lost write response taken as published"),
    _w("confirmed_newer_epoch", "outcome", "confirmed from a newer-epoch record at or past it"),
    _w("confirmed_moved_revision", "outcome", "confirmed because the revision moved"),
    _w("gave_up_with_proposal", "outcome", "gave_up reporting its own proposal"),
    _w("gave_up_untroubled", "outcome", "gave_up without a conflict or a lost response"),
    _w("stale_view_decided", "outcome", "the outcome decided from the first record read"),
    _w("restart_reuses_op_ids", "op_id", "a restarted worker numbering op_ids from 1 again"),
    _w("op_id_per_process", "op_id", "one op_id for every attempt of a process"),
    _w("certify_greatest_seen", "certify", "through the greatest event seen certified"),
    _w("certify_nonfinal_claim", "certify", "a non-final claim certified"),
    _w("certify_successor", "certify", "before x+1 certified from through x on a dense order"),
    _w("overwrite_after_conflict", "certify", "a lower cut written on top after a conflict"),
    _w("certify_provisional", "certify", "a provisional checkpoint's cut counted as coverage"),
    _w("report_unstored", "ingest_report", "ingest_ok reporting a cut whose write failed"),
)
BY_NAME: Mapping[str, WrongAnswer] = {w.name: w for w in WRONG_ANSWERS}


@dataclass
class Caught:
    """The wrong answers one run would have caught (names of :data:`WRONG_ANSWERS`)."""

    names: set[str] = field(default_factory=set)

    def add(self, name: str, caught: bool) -> None:
        if caught:
            self.names.add(name)


@dataclass(frozen=True)
class Power:
    """Per wrong answer, how many runs would have caught it (every one listed, 0 included)."""

    runs: Mapping[str, int]

    @staticmethod
    def of(caught: Iterable[frozenset[str]]) -> Power:
        counts = {w.name: 0 for w in WRONG_ANSWERS}
        for names in caught:
            for name in names:
                counts[name] += 1
        return Power(counts)

    def missing(self, levels: Iterable[str]) -> tuple[WrongAnswer, ...]:
        """The wrong answers no run would have caught, among the tested ``levels``' decisions.

        ``compare`` is made by the algebra level and, through the publisher's merges
        and the reader's certifications, by the others; only an algebra run counts it.
        A merge mistake counts when the algebra level or the publisher level is tested.
        """
        tested = set(levels)
        return tuple(
            w
            for w in WRONG_ANSWERS
            if self.runs.get(w.name, 0) == 0 and tested & set(DECISIONS[w.decision])
        )


# --- bent algebra ---------------------------------------------------------------------------

CoordinateCompare = Callable[[Coordinate, Coordinate], int]


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _as_text(a: Coordinate, b: Coordinate) -> int:
    return _sign((str(a) > str(b)) - (str(a) < str(b)))


def _utf16(a: Coordinate, b: Coordinate) -> int:
    if isinstance(a, str) and isinstance(b, str):
        ua, ub = a.encode("utf-16-be"), b.encode("utf-16-be")
        return (ua > ub) - (ua < ub)
    return _true_coordinates(a, b)


def _float64(a: Coordinate, b: Coordinate) -> int:
    if isinstance(a, int) and isinstance(b, int):
        try:
            fa, fb = float(a), float(b)
        except OverflowError:
            return _true_coordinates(a, b)
        return (fa > fb) - (fa < fb)
    return _true_coordinates(a, b)


def _folded(fold: Callable[[str], str]) -> CoordinateCompare:
    """Strings compared after ``fold`` (casefold, a normalisation); integers exactly."""

    def compare_folded(a: Coordinate, b: Coordinate) -> int:
        if isinstance(a, str) and isinstance(b, str):
            return _true_coordinates(fold(a), fold(b))
        return _true_coordinates(a, b)

    return compare_folded


_CASEFOLD = _folded(str.casefold)
_NFKC = _folded(lambda s: unicodedata.normalize("NFKC", s))


def _true_coordinates(a: Coordinate, b: Coordinate) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]  # same kind: checked by the caller


def _bent(order: Order, a: Cut, b: Cut, coordinates: CoordinateCompare) -> int:
    """A cut comparison with the coordinates compared by ``coordinates`` (no successor)."""
    if a.is_nothing or b.is_nothing:
        return (0 if a.is_nothing else 1) - (0 if b.is_nothing else 1)
    assert a.at is not None and b.at is not None
    where = coordinates(a.at, b.at)
    if where != 0:
        return where
    rank = {Endpoint.BEFORE: 0, Endpoint.THROUGH: 1}
    return _sign(rank[a.endpoint] - rank[b.endpoint])


def wrong_compare(name: str, order: Order, a: Cut, b: Cut) -> int | None:
    """What a comparison making the mistake ``name`` answers (None: not applicable)."""
    if name == "kinds_swapped":
        if a.at is not None and a.at == b.at and a.endpoint is not b.endpoint:
            return -compare(order, a, b)
        return compare(order, a, b)
    if name == "integers_as_text":
        return _bent(order, a, b, _as_text) if order.kind == "integer" else None
    if name == "utf16_order":
        return _bent(order, a, b, _utf16) if order.kind == "string" else None
    if name == "float64_coordinates":
        return _bent(order, a, b, _float64) if order.kind == "integer" else None
    if name == "successor_everywhere":
        if order.kind != "integer" or order.successor:
            return None
        return compare(Order.integer(order.name, True), a, b)
    if name == "zero_as_nothing":
        return compare(order, _zero_nothing(a), _zero_nothing(b))
    return None


def _zero_nothing(cut: Cut) -> Cut:
    return Cut.nothing() if cut.at in (0, "") else cut


def _with_coordinates(order: Order, cuts: Sequence[Cut], coordinates: CoordinateCompare) -> Cut:
    low = cuts[0]
    for cut in cuts[1:]:
        if _bent(order, cut, low, coordinates) < 0:
            low = cut
    return low


def _keep(membership: Membership, members: Iterable[str]) -> Membership:
    kept = set(members)
    return Membership(
        membership.epoch,
        membership.scope,
        {p: o for p, o in membership.partitions.items() if p in kept},
        dict(membership.orders),
    )


def _valid_minimum(
    membership: Membership,
    checkpoints: Sequence[Checkpoint],
    take: Callable[[Order, list[Cut]], Cut],
) -> Cut | Withheld:
    """The right merge, with its minimum taken by ``take`` when it gives a frontier."""
    right = merge(membership, checkpoints)
    if isinstance(right, Withheld):
        return right
    members = sorted(membership.partitions)
    held = {c.partition: c for c in checkpoints if c.partition in membership.partitions}
    cuts = [held[p].cut for p in members]
    low = take(membership.order_of(members[0]), cuts)
    return Withheld(WithheldReason.NO_COVERAGE) if low.is_nothing else low


def _renamed(
    membership: Membership, checkpoints: Sequence[Checkpoint], fold: Callable[[str], str]
) -> Cut | Withheld:
    """Checkpoints matched to members by ``fold``-ed names (the last one of a folded name
    wins), as a map keyed by a lower-cased or normalised name does."""
    by_fold: dict[str, Checkpoint] = {}
    for c in checkpoints:
        by_fold[fold(c.partition)] = c
    matched = []
    for p in sorted(membership.partitions):
        found = by_fold.get(fold(p))
        if found is not None:
            matched.append(
                Checkpoint(
                    p,
                    found.cut,
                    found.token,
                    found.generation,
                    found.scope,
                    found.epoch,
                    found.finality,
                )
            )
    return merge(membership, matched)


def _sentinel(order: Order) -> Cut:
    return Cut.through("\uffff") if order.kind == "string" else Cut.through(2**31 - 1)


#: The merge mistakes that compare coordinates through a bent view of them (as text,
#: as UTF-16, as float64, ignoring case, after NFKC), each by the view it takes.
_BENT_COORDINATES = {
    "min_as_text": _as_text,
    "min_utf16": _utf16,
    "min_float64": _float64,
    "min_casefold": _CASEFOLD,
    "min_normalised": _NFKC,
}


def wrong_merge(
    name: str, membership: Membership, checkpoints: Sequence[Checkpoint]
) -> Cut | Withheld | None:
    """What a merge making the mistake ``name`` gives (None: not a merge mistake)."""
    members = sorted(membership.partitions)
    held = {c.partition: c for c in checkpoints if c.partition in membership.partitions}
    if name == "drops_idle_members":
        busy = [p for p in members if p in held and not held[p].cut.is_nothing]
        return merge(_keep(membership, busy), checkpoints) if busy else None
    if name == "sentinel_minimum":
        return _valid_minimum(
            membership, checkpoints, lambda o, cuts: minimum(o, [_sentinel(o), *cuts])
        )
    if name in _BENT_COORDINATES:
        view = _BENT_COORDINATES[name]
        return _valid_minimum(
            membership, checkpoints, lambda o, cuts: _with_coordinates(o, cuts, view)
        )
    if name == "nothing_as_zero":
        zeroed = [
            dataclasses.replace(c, cut=Cut.before(0))
            if c.cut.is_nothing
            and c.partition in membership.partitions
            and membership.order_of(c.partition).kind == "integer"
            else c
            for c in checkpoints
        ]
        return merge(membership, zeroed)
    if name == "first_two_members":
        return merge(_keep(membership, members[:2]), checkpoints) if len(members) > 2 else None
    if name == "first_kind_on_tie":

        def first_kind(order: Order, cuts: list[Cut]) -> Cut:
            low = minimum(order, cuts)
            for cut in cuts:
                if cut.at is not None and cut.at == low.at:
                    return cut
            return low

        return _valid_minimum(membership, checkpoints, first_kind)
    if name == "names_case_insensitive":
        return _renamed(membership, checkpoints, str.casefold)
    if name == "names_normalised":
        return _renamed(membership, checkpoints, lambda s: unicodedata.normalize("NFC", s))
    if name == "scalar_across_incomparable":
        if len(set(membership.partitions.values())) < 2:
            return None
        first = membership.partitions[members[0]]
        flat = Membership(
            membership.epoch,
            membership.scope,
            dict.fromkeys(membership.partitions, first),
            {first: membership.orders[first]},
        )
        try:
            return merge(flat, checkpoints)
        except BadValue:
            return None
    if name == "reasons_member_first":
        for p in members:
            c = held.get(p)
            if c is None:
                return Withheld(WithheldReason.MISSING_CHECKPOINT)
            if c.epoch != membership.epoch:
                return Withheld(WithheldReason.EPOCH_MISMATCH)
            if c.scope != membership.scope:
                return Withheld(WithheldReason.SCOPE_MISMATCH)
            if c.finality is not Finality.FINAL:
                return Withheld(WithheldReason.UNSUPPORTED_FINALITY)
        return merge(membership, checkpoints)
    if name == "manufactured_successor":
        bent = []
        for c in checkpoints:
            if c.partition in membership.partitions and c.cut.endpoint is Endpoint.THROUGH:
                order = membership.order_of(c.partition)
                assert c.cut.at is not None
                if not order.successor:
                    at = c.cut.at
                    bumped = at + 1 if isinstance(at, int) else at + "\x00"
                    c = Checkpoint(
                        c.partition,
                        Cut.before(bumped),
                        c.token,
                        c.generation,
                        c.scope,
                        c.epoch,
                        c.finality,
                    )
            bent.append(c)
        return merge(membership, bent)
    if name == "nonmembers_pin":
        strays = [c for c in checkpoints if c.partition not in membership.partitions]
        if not strays:
            return None

        def pinned(order: Order, cuts: list[Cut]) -> Cut:
            return minimum(order, [*cuts, *(c.cut for c in strays)])

        try:
            return _valid_minimum(membership, checkpoints, pinned)
        except BadValue:
            return None
    if name == "misconfigured_trusted":
        trusted = [
            Checkpoint(
                c.partition,
                c.cut,
                c.token,
                c.generation,
                membership.scope,
                membership.epoch,
                Finality.FINAL,
            )
            for c in checkpoints
        ]
        return merge(membership, trusted)
    return None


def _same_merge(order: Order, a: Cut | Withheld, b: Cut | Withheld) -> bool:
    if isinstance(a, Withheld) or isinstance(b, Withheld):
        return isinstance(a, Withheld) and isinstance(b, Withheld) and a.reason is b.reason
    try:
        return same_claim(order, a, b)
    except BadValue:
        return False


MERGE_ANSWERS: tuple[str, ...] = tuple(w.name for w in WRONG_ANSWERS if w.decision == "merge")
COMPARE_ANSWERS: tuple[str, ...] = tuple(w.name for w in WRONG_ANSWERS if w.decision == "compare")
OUTCOME_ANSWERS: frozenset[str] = frozenset(
    w.name for w in WRONG_ANSWERS if w.decision == "outcome"
)


def algebra_compare_caught(
    order: Order, a: Cut, b: Cut, known: set[str] | frozenset[str] = frozenset()
) -> set[str]:
    """The compare mistakes a compare case tells apart from the right answer (those in
    ``known`` are not weighed)."""
    right = compare(order, a, b)
    found = set()
    for name in COMPARE_ANSWERS:
        if name in known:
            continue
        try:
            wrong = wrong_compare(name, order, a, b)
        except (BadValue, TypeError):
            continue
        if wrong is not None and wrong != right:
            found.add(name)
    return found


def algebra_merge_caught(
    membership: Membership,
    checkpoints: Sequence[Checkpoint],
    known: set[str] | frozenset[str] = frozenset(),
) -> set[str]:
    """The merge mistakes a merge case tells apart from the right answer (the algebra
    level's judge rejects any other claim or reason; those in ``known`` are not weighed)."""
    try:
        right = merge(membership, checkpoints)
    except BadValue:
        return set()
    members = sorted(membership.partitions)
    order = membership.order_of(members[0]) if members else None
    found = set()
    for name in MERGE_ANSWERS:
        if name in known:
            continue
        try:
            wrong = wrong_merge(name, membership, checkpoints)
        except (BadValue, TypeError):
            continue
        if wrong is None or order is None:
            continue
        if not _same_merge(order, wrong, right):
            found.add(name)
    return found


# --- publisher views ------------------------------------------------------------------------

#: Judges a hypothetical write: (epoch, cut) written over the record the view holds; True
#: when the judge rejects it (the world's checks, on the actual state).
WriteJudge = Callable[[int, Cut], bool]


@dataclass(frozen=True)
class View:
    """What one attempt decided from: the latest record, membership and checkpoints."""

    log: AttemptLog
    order: Order
    policy: str
    #: The worker's own last acknowledged write in this process (epoch, cut), if any.
    own: tuple[int, Cut] | None


def _decision_rejected(view: View, decision: Decision, epoch: int, judge_write: WriteJudge) -> bool:
    """Would the judge reject an attempt that decided ``decision`` from ``view``?"""
    log = view.log
    record = log.shown[-1].record
    if decision.kind == "write":
        assert decision.cut is not None
        return judge_write(epoch, decision.cut)
    reason = decision.reason.value if decision.reason is not None else None
    reported = Reported(decision.kind, record.epoch, record.cut, reason)
    return bool(judge_outcome(view.order, log, reported))


def _differs(a: Decision, b: Decision, order: Order) -> bool:
    if a.kind != b.kind or a.reason != b.reason:
        return True
    if a.cut is None or b.cut is None:
        return a.cut != b.cut
    try:
        return not same_claim(order, a.cut, b.cut)
    except BadValue:
        return True


@dataclass(frozen=True, slots=True)
class _Merges:
    """The right merge of one (membership, checkpoints) and the wrong merges that differ
    from it in representation (a wrong merge equal to the right one, or withheld for the
    same reason, leads to the same decision on any record: it is left out)."""

    right: Cut | Withheld
    wrong: tuple[tuple[str, Cut | Withheld], ...]


#: Memo of :func:`_merges`: a merge is a pure function of its inputs, and the exhaustive
#: search shows the same membership and checkpoints to many attempts in many runs. Cleared
#: whole when it reaches :data:`_MEMO_LIMIT` entries (a few KiB each at most).
_MEMO: dict[tuple[Membership, tuple[Checkpoint, ...]], _Merges | None] = {}
_MEMO_LIMIT = 4096


def _same_decision_input(a: Cut | Withheld, b: Cut | Withheld) -> bool:
    """``decide_merged`` gives the same decision for ``a`` as for ``b`` on any record."""
    if isinstance(a, Withheld) or isinstance(b, Withheld):
        return isinstance(a, Withheld) and isinstance(b, Withheld) and a.reason is b.reason
    return a == b


def _merges(membership: Membership, checkpoints: tuple[Checkpoint, ...]) -> _Merges | None:
    """The right merge and the telling wrong ones (None: the right merge is a BadValue).

    Costs one merge per wrong answer the first time a pair is seen, one dictionary
    lookup (hashing the membership and the checkpoints, O(P)) after that.
    """
    key = (membership, checkpoints)
    if key in _MEMO:
        return _MEMO[key]
    found: _Merges | None
    try:
        right = merge(membership, checkpoints)
    except BadValue:
        found = None
    else:
        wrong = []
        for name in MERGE_ANSWERS:
            try:
                merged = wrong_merge(name, membership, checkpoints)
            except (BadValue, TypeError):
                continue
            if merged is not None and not _same_decision_input(merged, right):
                wrong.append((name, merged))
        found = _Merges(right, tuple(wrong))
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = found
    return found


def view_caught(
    view: View, judge_write: WriteJudge, known: frozenset[str] | set[str] = frozenset()
) -> set[str]:
    """The merge and publish mistakes the judge would have caught on this view.

    ``known`` are the mistakes this run already counts: a run counts each once, so
    they are not weighed again; and one wrong decision reached by several mistakes
    is judged once. The wrong merges of one membership and checkpoints are computed
    once (:func:`_merges`, shared by every view and run that shows them), and those
    equal to the right merge are never decided or judged. So an attempt costs a few
    decisions (no merge) and a judge call per distinct wrong decision.
    """
    publish = {"epochs_plus_one", "cutover_vs_own_write", "monotone_as_reset"}
    publish |= {"reset_as_monotone", "write_equal_cut", "successor_ignored"}
    if publish <= known and all(name in known for name in MERGE_ANSWERS):
        return set()
    log = view.log
    if not log.shown or log.membership is None or log.checkpoints is None:
        return set()
    record = log.shown[-1].record
    membership = log.membership
    _, checkpoints = log.checkpoints
    merges = _merges(membership, checkpoints)
    if merges is None:
        return set()
    try:
        right = decide_merged(record, membership, merges.right, view.policy)
    except BadValue:
        return set()
    found: set[str] = set()
    judged: dict[Decision, bool] = {}
    for name, merged in merges.wrong:
        if name in known:
            continue
        try:
            wrong = decide_merged(record, membership, merged, view.policy)
        except (BadValue, TypeError):
            continue
        if not _differs(wrong, right, view.order):
            continue
        if wrong not in judged:
            judged[wrong] = _decision_rejected(view, wrong, membership.epoch, judge_write)
        if judged[wrong]:
            found.add(name)
    if not publish <= known:
        found |= _publish_caught(view, right, record, membership, merges.right, judge_write)
    return found


def _publish_caught(
    view: View,
    right: Decision,
    record: Record,
    membership: Membership,
    merged: Cut | Withheld,
    judge_write: WriteJudge,
) -> set[str]:
    """The publish mistakes of sections 5 and 6 on one view: an epoch assumed +1, a
    monotone cutover compared with the wrong cut or not held back, a reset one held,
    the record's own claim written again (``merged``: the right merge of the view)."""
    found: set[str] = set()
    order = view.order
    cutover = membership.epoch > record.epoch and isinstance(merged, Cut)
    if right.kind == "write" and membership.epoch > record.epoch + 1:
        assert right.cut is not None
        if judge_write(record.epoch + 1, right.cut):
            found.add("epochs_plus_one")
    if right.kind == "unchanged" and membership.epoch == record.epoch and isinstance(merged, Cut):
        try:
            equal = compare(order, merged, record.cut) == 0
        except BadValue:
            equal = False
        if equal and judge_write(membership.epoch, merged):
            found.add("write_equal_cut")
    if cutover and isinstance(merged, Cut):
        try:
            below = compare(order, merged, record.cut) < 0
        except BadValue:
            below = False
        if view.policy == "monotone" and below:
            if judge_write(membership.epoch, merged):
                found.add("monotone_as_reset")
            own = view.own[1] if view.own is not None else Cut.nothing()
            try:
                if compare(order, merged, own) >= 0 and judge_write(membership.epoch, merged):
                    found.add("cutover_vs_own_write")
            except BadValue:
                pass
        if view.policy == "reset" and below and right.kind == "write":
            wrong = Decision("withheld", WithheldReason.CUTOVER_PENDING)
            if _decision_rejected(view, wrong, membership.epoch, judge_write):
                found.add("reset_as_monotone")
    if _successor_ignored(view, right, record, membership, merged, judge_write):
        found.add("successor_ignored")
    return found


def _successor_ignored(
    view: View,
    right: Decision,
    record: Record,
    membership: Membership,
    merged: Cut | Withheld,
    judge_write: WriteJudge,
) -> bool:
    """On an exact order, a comparison that ranks ``through x`` below ``before x+1`` (the
    same claim) decides differently when the merge and the record are that pair: in the
    record's epoch it writes the claim again (``before x+1`` over ``through x``: the judge
    rejects the ``published`` that follows); at a monotone cutover it holds ``through x``
    back as ``cutover_pending`` below ``before x+1``."""
    order = view.order
    if not isinstance(merged, Cut) or order.kind != "integer" or not order.successor:
        return False
    try:
        dense = _bent(order, merged, record.cut, _true_coordinates)
        true = compare(order, merged, record.cut)
    except (BadValue, TypeError):
        return False
    if dense == true:
        return False
    if membership.epoch == record.epoch and dense > 0 and right.kind == "unchanged":
        log = dataclasses.replace(
            view.log,
            writes=[
                *view.log.writes,
                WriteSeen(
                    view.log.seq + 1, "hypothetical", record.epoch, merged, WriteAnswer.APPLIED
                ),
            ],
        )
        reported = Reported("published", record.epoch, merged)
        return bool(judge_outcome(order, log, reported)) or judge_write(record.epoch, merged)
    if membership.epoch > record.epoch and dense < 0 and view.policy == "monotone":
        wrong = Decision("withheld", WithheldReason.CUTOVER_PENDING)
        return right.kind == "write" and _decision_rejected(
            view, wrong, membership.epoch, judge_write
        )
    return False


def outcome_caught(
    order: Order,
    log: AttemptLog,
    reported: Reported,
    known: frozenset[str] | set[str] = frozenset(),
) -> set[str]:
    """The outcome mistakes the judge would have caught at this attempt's end.

    ``known`` are the mistakes this run already counts: they are not judged again
    (one judge call, O(attempt length), per mistake still uncounted)."""
    found: set[str] = set()
    if known >= OUTCOME_ANSWERS:
        return found

    def rejected(wrong: Reported) -> bool:
        return bool(judge_outcome(order, log, wrong))

    def differs(wrong: Reported) -> bool:
        if (wrong.outcome, wrong.epoch, wrong.reason) != (
            reported.outcome,
            reported.epoch,
            reported.reason,
        ):
            return True
        try:
            return not same_claim(order, wrong.cut, reported.cut)
        except BadValue:
            return True

    writes = log.writes
    if reported.outcome == "gave_up" and writes:
        last = writes[-1]
        wrong = Reported("published", last.epoch, last.cut)
        if "published_after_giving_up" not in known and rejected(wrong):
            found.add("published_after_giving_up")
        wrong = Reported("gave_up", last.epoch, last.cut)
        if "gave_up_with_proposal" not in known and differs(wrong) and rejected(wrong):
            found.add("gave_up_with_proposal")
    lost = [w for w in writes if w.answer.lost]
    if lost:
        w = lost[-1]
        wrong = Reported("published", w.epoch, w.cut)
        if "published_on_lost_write" not in known and differs(wrong) and rejected(wrong):
            found.add("published_on_lost_write")
        # The wrong answer is one report, whichever later record showed it: judged once.
        past = behind = False
        for s in log.shown:
            if s.seq <= w.seq:
                continue
            try:
                past |= s.record.epoch > w.epoch and compare(order, s.record.cut, w.cut) >= 0
                behind |= s.record.epoch == w.epoch and compare(order, s.record.cut, w.cut) < 0
            except BadValue:
                continue
        past &= "confirmed_newer_epoch" not in known
        behind &= "confirmed_moved_revision" not in known
        if past or behind:
            wrong = Reported("confirmed", w.epoch, w.cut)
            if differs(wrong) and rejected(wrong):
                found |= {"confirmed_newer_epoch"} if past else set()
                found |= {"confirmed_moved_revision"} if behind else set()
    if log.troubles == 0 and log.shown and "gave_up_untroubled" not in known:
        first = log.shown[0].record
        wrong = Reported("gave_up", first.epoch, first.cut)
        if rejected(wrong):
            found.add("gave_up_untroubled")
    if (
        reported.outcome in ("unchanged", "withheld")
        and len(log.shown) > 1
        and "stale_view_decided" not in known
    ):
        first = log.shown[0].record
        wrong = Reported(reported.outcome, first.epoch, first.cut, reported.reason)
        if differs(wrong) and rejected(wrong):
            found.add("stale_view_decided")
    return found
