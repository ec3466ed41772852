"""docs/semantics.md section 7 as formulas, and the lemmas that make them inductive.

A :class:`Lemma` is a named state predicate with its meaning in domain words.
The seven *properties* are section 7's; the other lemmas *strengthen* them:
alone, a property is usually not preserved by every action (a publisher may
hold a proposal that would break soundness once written), so the proof carries
what every process and every write in flight knows at each point. The
conjunction of a protocol's lemmas is proved inductive
(:mod:`fencepost.properties.protocol_proof`): it holds initially and every
action preserves it; then it implies each property.

The predicates mirror :mod:`fencepost.model.invariants` (checked by tests on
every reachable state of the default exploration), over any number of
partitions, publishers, readers, events and epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fencepost.properties.protocol_actions import (
    COMPOSED,
    INGEST,
    PUBLICATION,
    accepted,
    in_view,
    settled,
    true_cut,
)
from fencepost.properties.protocol_logic import (
    NOTHING_CUT,
    CutT,
    Logic,
    Term,
    covers,
    rank,
    well_formed,
)
from fencepost.properties.protocol_state import (
    CONFIRMED,
    FETCHED,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    NO_REASON,
    NONE_OUT,
    PROPOSING,
    PUBLISHED,
    R_IDLE,
    READING,
    REREADING,
    SETTLING,
    WRITING,
    View,
)


@dataclass(frozen=True)
class Lemma:
    """A named state predicate; ``property`` marks the seven of section 7."""

    name: str
    doc: str
    protocols: tuple[str, ...]
    formula: Callable[[Logic, View], Term]
    property: bool = False


_PUB = (PUBLICATION, COMPOSED)
_ING = (INGEST, COMPOSED)
_ALL = (PUBLICATION, INGEST, COMPOSED)


def _r(L: Logic, s: View, c: CutT) -> Term:
    return rank(L, s.succ, c)


def _not_nothing(L: Logic, c: CutT) -> Term:
    return L.Not(L.CutEq(c, NOTHING_CUT))


def _certified_by_all(L: Logic, s: View, epoch: Term, cut: CutT) -> Term:
    """Every partition holds an accepted checkpoint of ``epoch`` at or above ``cut``."""
    return L.ForAll(
        "P",
        lambda p: L.And(accepted(L, s, p, epoch), _r(L, s, s.cp_cut(p, epoch)) >= _r(L, s, cut)),
    )


def _ahead_of_record(L: Logic, s: View, epoch: Term, cut: CutT) -> Term:
    """A claim a write could store now without moving the record back or its epoch down."""
    return L.And(
        epoch >= s.rec_epoch(),
        L.Implies(epoch == s.rec_epoch(), _r(L, s, cut) > _r(L, s, s.rec_cut())),
        L.Implies(s.monotone, _r(L, s, cut) >= _r(L, s, s.rec_cut())),
    )


# ---------------------------------------------------------------------------- section 7


def soundness(L: Logic, s: View) -> Term:
    return L.ForAll(
        "P",
        lambda p: L.ForAll(
            "V",
            lambda v: L.Implies(
                L.And(in_view(L, s, v, p, s.rec_epoch()), covers(L, s.rec_cut(), s.pos(v))),
                settled(L, s, v),
            ),
        ),
    )


def monotone_publication(L: Logic, s: View) -> Term:
    return L.And(
        L.Implies(s.rec_epoch() == s.pe(), _r(L, s, s.rec_cut()) >= _r(L, s, s.pc())),
        L.Implies(s.monotone, _r(L, s, s.rec_cut()) >= _r(L, s, s.pall())),
    )


def no_relabeling(L: Logic, s: View) -> Term:
    return L.Implies(s.rec_cut().kind == 1, _certified_by_all(L, s, s.rec_epoch(), s.rec_cut()))


def epoch_fence(L: Logic, s: View) -> Term:
    return s.rec_epoch() >= s.pe()


def checkpoint_monotonicity(L: Logic, s: View) -> Term:
    return L.ForAll(
        "P",
        lambda p: L.ForAll("E", lambda e: _r(L, s, s.cp_cut(p, e)) >= _r(L, s, s.peak(p, e))),
    )


def lost_response_honesty(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(L.Or(s.out(w) == PUBLISHED, s.out(w) == CONFIRMED), s.just(w)),
    )


def checkpoint_truth(L: Logic, s: View) -> Term:
    return L.ForAll(
        "P",
        lambda p: L.ForAll(
            "E",
            lambda e: L.Implies(accepted(L, s, p, e), true_cut(L, s, s.cp_cut(p, e), p, e)),
        ),
    )


# ---------------------------------------------------------------------------- shapes


def event_layout(L: Logic, s: View) -> Term:
    return L.ForAll(
        "V",
        lambda v: L.And(
            s.pos(v) >= 0,
            L.Implies(s.succ, L.Even(s.pos(v))),
            s.since(v) >= 1,
            s.key(v) > 0,
        ),
    )


def cuts_well_formed(L: Logic, s: View) -> Term:
    return L.And(
        well_formed(L, s.rec_cut()),
        well_formed(L, s.pc()),
        well_formed(L, s.pall()),
        L.ForAll(
            "P",
            lambda p: L.ForAll(
                "E",
                lambda e: L.And(well_formed(L, s.cp_cut(p, e)), well_formed(L, s.peak(p, e))),
            ),
        ),
        L.ForAll(
            "W",
            lambda w: L.And(
                well_formed(L, s.rc(w)), well_formed(L, s.pr(w)), well_formed(L, s.oc(w))
            ),
        ),
        L.ForAll("R", lambda r: L.And(well_formed(L, s.rb(r)), well_formed(L, s.rcl(r)))),
    )


def epochs_in_order(L: Logic, s: View) -> Term:
    return L.And(
        s.E() >= 1,
        s.rec_epoch() >= 1,
        s.rec_epoch() <= s.E(),
        s.rec_rev() >= 0,
        s.pub_retries >= 0,
        s.reader_retries >= 0,
    )


def checkpoint_slots(L: Logic, s: View) -> Term:
    def slot(p: Term, e: Term) -> Term:
        missing = s.stamp(p, e) == 0
        return L.And(
            missing == (s.gen(p, e) == 0),
            s.gen(p, e) >= 0,
            L.Implies(
                missing,
                L.And(L.CutEq(s.cp_cut(p, e), NOTHING_CUT), L.CutEq(s.peak(p, e), NOTHING_CUT)),
            ),
            L.Implies(L.Not(missing), L.And(e >= 1, e <= s.E())),
        )

    return L.ForAll("P", lambda p: L.ForAll("E", lambda e: slot(p, e)))


# ---------------------------------------------------------------------------- publication


def history_tracks_record(L: Logic, s: View) -> Term:
    return L.And(
        s.pe() == s.rec_epoch(),
        _r(L, s, s.pc()) <= _r(L, s, s.rec_cut()),
        L.Implies(s.monotone, _r(L, s, s.pall()) <= _r(L, s, s.rec_cut())),
    )


def publisher_phases(L: Logic, s: View) -> Term:
    def one(w: Term) -> Term:
        ph = s.ph(w)
        return L.And(
            ph >= IDLE,
            ph <= IN_DOUBT,
            s.att(w) >= 0,
            s.ret(w) >= 0,
            L.Implies(
                L.Or(ph == HAVE_RECORD, ph == HAVE_MEMBERSHIP, ph == PROPOSING),
                L.And(s.rr(w) >= 0, s.rr(w) <= s.rec_rev()),
            ),
            L.Implies(
                L.Or(ph == HAVE_MEMBERSHIP, ph == PROPOSING, ph == IN_DOUBT),
                L.And(s.me(w) >= 1, s.me(w) <= s.E()),
            ),
            L.Implies(
                L.Or(ph == HAVE_RECORD, ph == HAVE_MEMBERSHIP),
                L.And(s.re(w) >= 1, s.re(w) <= s.E()),
            ),
            L.Implies(ph == HAVE_MEMBERSHIP, s.re(w) <= s.me(w)),
        )

    return L.ForAll("W", one)


def held_record_is_current(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(
            L.And(L.Or(s.ph(w) == HAVE_RECORD, s.ph(w) == HAVE_MEMBERSHIP), s.rr(w) == s.rec_rev()),
            L.And(s.re(w) == s.rec_epoch(), L.CutEq(s.rc(w), s.rec_cut())),
        ),
    )


def proposal_ahead_of_record(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(
            L.And(s.ph(w) == PROPOSING, s.rr(w) == s.rec_rev()),
            _ahead_of_record(L, s, s.me(w), s.pr(w)),
        ),
    )


def proposal_certified(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(
            s.ph(w) == PROPOSING,
            L.And(_not_nothing(L, s.pr(w)), _certified_by_all(L, s, s.me(w), s.pr(w))),
        ),
    )


def in_flight_write_current(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(
            s.oe(w) != 0,
            L.And(
                s.orr(w) == s.rec_rev(),
                s.oe(w) >= 1,
                s.oe(w) <= s.E(),
                _ahead_of_record(L, s, s.oe(w), s.oc(w)),
            ),
        ),
    )


def in_flight_write_certified(L: Logic, s: View) -> Term:
    return L.ForAll(
        "W",
        lambda w: L.Implies(
            s.oe(w) != 0,
            L.And(_not_nothing(L, s.oc(w)), _certified_by_all(L, s, s.oe(w), s.oc(w))),
        ),
    )


def record_certified(L: Logic, s: View) -> Term:
    return L.Implies(
        _not_nothing(L, s.rec_cut()), _certified_by_all(L, s, s.rec_epoch(), s.rec_cut())
    )


# ---------------------------------------------------------------------------- ingest


def _active(L: Logic, s: View, r: Term) -> Term:
    return s.rph(r) != R_IDLE


def reader_phases(L: Logic, s: View) -> Term:
    def one(r: Term) -> Term:
        p, e = s.rpart(r), s.rep(r)
        return L.And(
            s.rph(r) >= R_IDLE,
            s.rph(r) <= SETTLING,
            s.rpass(r) >= 0,
            s.rret(r) >= 0,
            L.Implies(
                _active(L, s, r),
                L.And(e >= 1, e <= s.E(), s.rexp(r) >= 0, s.rexp(r) <= s.gen(p, e)),
            ),
            L.Implies(s.rph(r) != FETCHED, L.ForAll("V", lambda v: L.Not(s.pend(r, v)))),
        )

    return L.ForAll("R", one)


def checkpoints_accepted(L: Logic, s: View) -> Term:
    return L.ForAll(
        "P",
        lambda p: L.ForAll("E", lambda e: L.Implies(s.stamp(p, e) != 0, accepted(L, s, p, e))),
    )


def reader_claim_true(L: Logic, s: View) -> Term:
    return L.ForAll(
        "R",
        lambda r: L.ForAll(
            "V",
            lambda v: L.Implies(
                L.And(
                    _active(L, s, r),
                    in_view(L, s, v, s.rpart(r), s.rep(r)),
                    covers(L, s.rcl(r), s.pos(v)),
                ),
                L.And(s.final(v), L.Or(s.durable(v), s.pend(r, v))),
            ),
        ),
    )


def reader_prefix_recorded(L: Logic, s: View) -> Term:
    return L.ForAll(
        "R",
        lambda r: L.ForAll(
            "V",
            lambda v: L.Implies(
                L.And(
                    _active(L, s, r),
                    in_view(L, s, v, s.rpart(r), s.rep(r)),
                    s.key(v) < s.rtok(r),
                ),
                L.Or(s.durable(v), s.pend(r, v)),
            ),
        ),
    )


def checkpoint_prefix_recorded(L: Logic, s: View) -> Term:
    return L.ForAll(
        "P",
        lambda p: L.ForAll(
            "E",
            lambda e: L.ForAll(
                "V",
                lambda v: L.Implies(
                    L.And(
                        s.stamp(p, e) != 0,
                        in_view(L, s, v, p, e),
                        s.key(v) < s.cp_tok(p, e),
                    ),
                    s.durable(v),
                ),
            ),
        ),
    )


def reader_holds_stored(L: Logic, s: View) -> Term:
    def one(r: Term) -> Term:
        p, e, ph = s.rpart(r), s.rep(r), s.rph(r)
        holding = L.Or(ph == READING, ph == FETCHED)
        return L.Implies(
            L.And(
                s.rexp(r) == s.gen(p, e),
                L.Or(holding, ph == WRITING, ph == REREADING),
            ),
            L.And(
                _r(L, s, s.rcl(r)) >= _r(L, s, s.cp_cut(p, e)),
                L.Implies(holding, L.CutEq(s.rb(r), s.cp_cut(p, e))),
            ),
        )

    return L.ForAll("R", one)


# ---------------------------------------------------------------------------- the lists


PROPERTIES: tuple[Lemma, ...] = (
    Lemma(
        "soundness",
        "for the record (e, c), every event of every member of e whose position is in D(c) is "
        "final and has a durable terminal outcome",
        _PUB,
        soundness,
        True,
    ),
    Lemma(
        "monotone_publication",
        "within an epoch the record's cut never decreases; under monotone, never at all",
        _PUB,
        monotone_publication,
        True,
    ),
    Lemma(
        "no_relabeling",
        "a through x is only ever published when every member certified at least through x",
        _PUB,
        no_relabeling,
        True,
    ),
    Lemma("epoch_fence", "the record's epoch never decreases", _PUB, epoch_fence, True),
    Lemma(
        "checkpoint_monotonicity",
        "a partition's stored cut never decreases within its (partition, epoch)",
        _ALL,
        checkpoint_monotonicity,
        True,
    ),
    Lemma(
        "lost_response_honesty",
        "an attempt reports published only on an acknowledged write, confirmed only after an "
        "authoritative read showed the claim",
        _PUB,
        lost_response_honesty,
        True,
    ),
    Lemma(
        "checkpoint_truth",
        "every stored final checkpoint of the stream's scope is true: every event of its "
        "partition in its epoch inside its downset is final with a durable outcome",
        _ALL,
        checkpoint_truth,
        True,
    ),
)

#: The strengthening lemmas, each in domain words.
LEMMAS: tuple[Lemma, ...] = (
    Lemma(
        "event_layout",
        "every event sits at a coordinate >= 0 (an integer one when the order has an exact "
        "successor), belongs to its partition from some epoch >= 1, and has a place in the "
        "provider's list (a positive key)",
        _ALL,
        event_layout,
    ),
    Lemma(
        "cuts_well_formed",
        "every cut anyone holds -- the record, the observer's history, checkpoints and their "
        "peaks, publishers' held, proposed and in-flight cuts, readers' base and claim -- is "
        "nothing, or an integer coordinate >= 0 with an endpoint kind",
        _PUB,
        cuts_well_formed,
    ),
    Lemma(
        "epochs_in_order",
        "the membership epoch is at least 1, the record names an epoch that exists "
        "(1 .. the current one), and the configured retry budgets are not negative",
        _ALL,
        epochs_in_order,
    ),
    Lemma(
        "checkpoint_slots",
        "a (partition, epoch) holds no checkpoint exactly when its generation is 0, and then "
        "its cut and peak are nothing; checkpoints exist only for epochs that exist",
        _ALL,
        checkpoint_slots,
    ),
    Lemma(
        "history_tracks_record",
        "the observer's highest published epoch is the record's, and the highest cuts it "
        "remembers are not above the record's (under monotone, the highest ever)",
        _PUB,
        history_tracks_record,
    ),
    Lemma(
        "publisher_phases",
        "a publisher's phase is one of five and its budgets are not negative; the revision it "
        "holds is not newer than the record's; the epochs it read exist, the membership epoch "
        "no older than the record's",
        _PUB,
        publisher_phases,
    ),
    Lemma(
        "held_record_is_current",
        "a publisher holding the record's current revision holds exactly the record's epoch "
        "and cut: nobody wrote since it read",
        _PUB,
        held_record_is_current,
    ),
    Lemma(
        "proposal_ahead_of_record",
        "a proposal on the current revision would not move the record back: its epoch is no "
        "older, in the same epoch its cut is strictly ahead, under monotone never below",
        _PUB,
        proposal_ahead_of_record,
    ),
    Lemma(
        "proposal_certified",
        "every proposal is more than nothing and every partition of its epoch holds an "
        "accepted checkpoint at or above it (a minimum over all, none skipped)",
        _PUB,
        proposal_certified,
    ),
    Lemma(
        "in_flight_write_current",
        "a write still in flight names the record's current revision (every write drops the "
        "others), its epoch exists, and it is ahead of the record like a proposal",
        _PUB,
        in_flight_write_current,
    ),
    Lemma(
        "in_flight_write_certified",
        "a write in flight claims more than nothing and is certified by every partition of "
        "its epoch",
        _PUB,
        in_flight_write_certified,
    ),
    Lemma(
        "record_certified",
        "once it claims more than nothing, the record is certified by an accepted checkpoint "
        "of every partition of its epoch at or above its cut",
        _PUB,
        record_certified,
    ),
    Lemma(
        "reader_phases",
        "a reader's phase is one of six and its budgets are not negative; a reader in a pass "
        "reads an epoch that exists and "
        "expects a generation not newer than the stored one; only a reader holding a page "
        "has outcomes pending",
        _ING,
        reader_phases,
    ),
    Lemma(
        "checkpoints_accepted",
        "with real ingest passes every stored checkpoint was written by a reader: stamped "
        "with its own epoch, final, for the stream's scope (the merge accepts it)",
        _ING,
        checkpoints_accepted,
    ),
    Lemma(
        "reader_claim_true",
        "every event inside a reader's claim is final, and its outcome durable or on the page "
        "it is recording",
        _ING,
        reader_claim_true,
    ),
    Lemma(
        "reader_prefix_recorded",
        "every event before a reader's token has a durable outcome or is on the page it is "
        "recording",
        _ING,
        reader_prefix_recorded,
    ),
    Lemma(
        "checkpoint_prefix_recorded",
        "every event before a stored checkpoint's token has a durable outcome",
        _ING,
        checkpoint_prefix_recorded,
    ),
    Lemma(
        "reader_holds_stored",
        "a reader expecting the stored generation claims at least the stored cut, and while "
        "paging holds exactly it: its next write cannot move the checkpoint back",
        _ING,
        reader_holds_stored,
    ),
)

INDUCTIVE_PROPERTIES = ("checkpoint_monotonicity", "lost_response_honesty", "checkpoint_truth")
ALL_BY_NAME = {x.name: x for x in (*PROPERTIES, *LEMMAS)}


def invariant_of(protocol: str) -> list[Lemma]:
    """The conjunction proved inductive for ``protocol``: its lemmas and the properties
    that carry themselves (checkpoint monotonicity and truth, honesty)."""
    own = [p for p in PROPERTIES if p.name in INDUCTIVE_PROPERTIES and protocol in p.protocols]
    return [*(x for x in LEMMAS if protocol in x.protocols), *own]


def properties_of(protocol: str) -> list[Lemma]:
    """The section 7 properties of ``protocol``."""
    return [p for p in PROPERTIES if protocol in p.protocols]


def initial(L: Logic, s: View) -> Term:
    """Every initial state (docs/semantics.md sections 3 and 5): epoch 1, the record
    (1, nothing, 0), no checkpoint, no event final or durable, every process idle with any
    budget, no write in flight; positions and keys as providers list events."""
    nothing = NOTHING_CUT
    return L.And(
        s.E() == 1,
        s.rec_epoch() == 1,
        L.CutEq(s.rec_cut(), nothing),
        s.rec_rev() == 0,
        s.pe() == 1,
        L.CutEq(s.pc(), nothing),
        L.CutEq(s.pall(), nothing),
        s.pub_retries >= 0,
        s.reader_retries >= 0,
        L.ForAll(
            "P",
            lambda p: L.ForAll(
                "E",
                lambda e: L.And(
                    s.stamp(p, e) == 0,
                    s.gen(p, e) == 0,
                    L.CutEq(s.cp_cut(p, e), nothing),
                    L.CutEq(s.peak(p, e), nothing),
                ),
            ),
        ),
        L.ForAll(
            "V",
            lambda v: L.And(
                s.pos(v) >= 0,
                L.Implies(s.succ, L.Even(s.pos(v))),
                s.since(v) >= 1,
                s.key(v) > 0,
                L.Implies(s.since(v) == 1, L.And(L.Not(s.final(v)), L.Not(s.durable(v)))),
            ),
        ),
        L.ForAll(
            "W",
            lambda w: L.And(
                s.ph(w) == IDLE,
                s.att(w) >= 0,
                s.ret(w) == 0,
                s.re(w) == 0,
                L.CutEq(s.rc(w), nothing),
                s.rr(w) == -1,
                s.me(w) == 0,
                L.CutEq(s.pr(w), nothing),
                s.out(w) == NONE_OUT,
                s.why(w) == NO_REASON,
                s.just(w),
                s.oe(w) == 0,
                L.CutEq(s.oc(w), nothing),
                s.orr(w) == 0,
            ),
        ),
        L.ForAll(
            "R",
            lambda r: L.And(
                s.rph(r) == R_IDLE,
                s.rpass(r) >= 0,
                s.rep(r) == 0,
                L.CutEq(s.rb(r), nothing),
                L.CutEq(s.rcl(r), nothing),
                s.rtok(r) == 0,
                s.rbt(r) == 0,
                s.rret(r) == 0,
                L.Not(s.rclose(r)),
                s.rexp(r) == -1,
                L.ForAll("V", lambda v: L.Not(s.pend(r, v))),
            ),
        ),
    )
