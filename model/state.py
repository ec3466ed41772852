"""State, actions and compiled context of the fencepost model.

Everything here is plain frozen data: :class:`State` and its parts are
``NamedTuple`` s (hashable, cheap to build and to sort), :class:`Action` a frozen
dataclass interned per context. The transitions live in
:mod:`fencepost.model.machine`.

Field guide for drivers outside the model (the lockstep test maps the
implementation's durable state onto these):

* ground truth: ``state.partitions[i].truth`` (:class:`Truth`), or
  ``state.events(i, epoch)`` for named events with position and flags;
* checkpoints per (partition, epoch): ``state.checkpoint(i, epoch)`` and
  ``state.generation(i, epoch)``;
* the publication record: ``state.record`` (:class:`Record`);
* memberships: ``state.epoch`` (current) and ``state.memberships()``;
* outcomes reported by publishers: ``state.publishers[k].outcome`` / ``.reason``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import NOTHING, THROUGH, Cut, coordinate_text, integer_cuts

# ---------------------------------------------------------------------------
# Publisher and reader phases (ints: cheap to hash and sort).

IDLE = 0
HAVE_RECORD = 1
HAVE_MEMBERSHIP = 2
PROPOSING = 3
IN_DOUBT = 4
PUBLISHER_PHASES = (
    "idle",
    "has read the record",
    "has read the membership",
    "proposing",
    "in doubt",
)

READING = 1
FETCHED = 2
#: Production reader only (``reader_retries`` set): it must write again next (a rewrite
#: after a lost race, or a retry after a write the authoritative reread showed not applied).
WRITING = 3
#: Production reader only: a checkpoint write's response was lost; it must reread next.
REREADING = 4
#: Production reader only: its retry budget is spent; it rereads what is stored and goes on
#: from there.
SETTLING = 5
READER_PHASES = (
    "idle",
    "paging",
    "holding a page",
    "writing again",
    "in doubt",
    "giving up",
)

#: A reader's token before it holds any: no checkpoint was stored and it fetched nothing
#: yet (the implementation's ``None``, which differs from every issued token).
NO_TOKEN = -1

#: Attempt outcomes (docs/semantics.md section 5); "" = no attempt reported yet.
PUBLISHED = "published"
CONFIRMED = "confirmed"
UNCHANGED = "unchanged"
WITHHELD = "withheld"
GAVE_UP = "gave_up"

#: Merge / attempt reasons (docs/semantics.md sections 4 and 6).
MISSING_CHECKPOINT = "missing_checkpoint"
EPOCH_MISMATCH = "epoch_mismatch"
SCOPE_MISMATCH = "scope_mismatch"
UNSUPPORTED_FINALITY = "unsupported_finality"
NO_COVERAGE = "no_coverage"
CUTOVER_PENDING = "cutover_pending"


# ---------------------------------------------------------------------------
# State


class Checkpoint(NamedTuple):
    """A stored partition checkpoint (docs/semantics.md section 3), less its generation.

    The generation lives beside it in :attr:`Partition.generations` so the
    explorer can abstract it (only equality with a reader's expected
    generation matters). ``token`` is the provider cursor (an index into the
    partition's event list for that epoch), never compared as coverage. The
    sentinel :data:`MISSING` (epoch 0) stands for "no checkpoint".
    """

    cut: Cut
    token: int
    scope: str
    epoch: int
    final: bool


MISSING = Checkpoint(NOTHING, 0, "", 0, False)


class Truth(NamedTuple):
    """Ground truth of one partition.

    Events are numbered per partition: its own events ``0..n-1`` (present in
    every epoch), then one batch of ``moved_events`` per reshard that moved
    events into it; ``moved[i]`` is the epoch from which batch ``i`` belongs to
    the partition. ``final`` and ``durable`` are bitmasks over event numbers:
    the source finalized the event / its terminal outcome is durable.
    """

    moved: tuple[int, ...]
    final: int
    durable: int


class Reader(NamedTuple):
    """One ingest worker bound to a partition (a pass at a time).

    ``expected`` is the generation its next write names (0: no checkpoint
    existed, -1: idle); ``base`` the cut stored under that generation (what it
    read, or what a lost race showed it), ``claim`` the best final claim of its
    pass so far, ``token`` its provider cursor (:data:`NO_TOKEN` before it
    holds one), ``pending`` the events of the page it holds whose outcomes are
    not yet recorded. ``base_token`` is the token of the checkpoint it holds (a
    token-only progress write is due when the cursor differs from it),
    ``retries_left`` how many more writes its current claim may make after the
    first (the implementation's ``max_retries``), and ``closing`` whether the
    write under way is the progress write that ends the pass.
    """

    phase: int
    passes_left: int
    epoch: int
    base: Cut
    claim: Cut
    token: int
    pending: int
    base_token: int
    retries_left: int
    closing: bool
    expected: int


#: Readers before this field index are compared as they are by the canonical key
#: (:mod:`fencepost.model.canonical`).
READER_EXPECTED = 10


class Partition(NamedTuple):
    """Everything attached to one partition; partitions permute as wholes.

    ``checkpoints[e-1]`` / ``generations[e-1]`` are the checkpoint stored for
    this partition in membership epoch ``e`` (generation starts at 1 per
    (partition, epoch); 0 means none). ``peaks[e-1]`` is observer memory, not
    durable state: the highest cut ever stored there, for the monotonicity
    invariant.
    """

    truth: Truth
    checkpoints: tuple[Checkpoint, ...]
    generations: tuple[int, ...]
    peaks: tuple[Cut, ...]
    readers: tuple[Reader, ...]


#: A partition's durable state less its readers (ground truth, checkpoints, generations,
#: peaks): what its environment and each reader read.
Core = tuple[Truth, tuple[Checkpoint, ...], tuple[int, ...], tuple[Cut, ...]]


def core_of(part: Partition) -> Core:
    """The partition less its readers: what its environment and each reader read."""
    return (part.truth, part.checkpoints, part.generations, part.peaks)


class Record(NamedTuple):
    """The publication record ``(epoch, cut, revision, op_id)`` of docs/semantics.md section 5."""

    epoch: int
    cut: Cut
    revision: int
    op_id: str | None


class Publisher(NamedTuple):
    """One publisher's local state.

    ``rec_*`` is the record it last read (``rec_revision`` -1 when it holds
    none), ``mem_epoch`` the membership epoch it read, ``proposal`` the cut it
    proposes (in ``mem_epoch``). After an attempt, ``outcome``/``reason`` is what
    it reported and ``justified`` whether the environment gave it grounds (an
    acknowledged write for ``published``, an authoritative read showing the
    claim for ``confirmed``): observer memory for ``lost_response_honesty``.
    ``orphan_*`` is a write of this publisher still in flight after its
    response timed out (``orphan_epoch`` 0: none); the store may apply it later
    if the revision it names is still current.
    """

    phase: int
    attempts_left: int
    retries_left: int
    rec_epoch: int
    rec_cut: Cut
    mem_epoch: int
    proposal: Cut
    outcome: str
    reason: str
    justified: bool
    orphan_epoch: int
    orphan_cut: Cut
    rec_revision: int
    orphan_revision: int
    orphan_op: str
    attempt: int


#: Publisher fields before this index are its local state as the canonical key sees
#: it; the rest (revision read, the in-flight write's revision and op id, the
#: attempt counter) are numbering the keys abstract away.
PUBLISHER_LOCAL = 12


class History(NamedTuple):
    """Observer memory of the record for the monotonicity and fence invariants.

    ``peak_epoch`` is the highest epoch ever published, ``peak_cut`` the highest
    cut published in it, ``peak_all`` the highest cut ever published (kept only
    under the ``monotone`` policy, else :data:`NOTHING`).
    """

    peak_epoch: int
    peak_cut: Cut
    peak_all: Cut


class State(NamedTuple):
    """A global state: membership epoch, partitions, the record, publishers, history.

    ``epoch`` is the current (durable) membership epoch; every epoch's members
    are all partitions (a reshard moves events into one of them).
    ``context`` carries the configuration and precomputed tables; it is left out
    of canonical keys.
    """

    context: Context
    epoch: int
    partitions: tuple[Partition, ...]
    record: Record
    publishers: tuple[Publisher, ...]
    history: History

    @property
    def config(self) -> ModelConfig:
        """The bounds and switches this state was built under."""
        return self.context.config

    def checkpoint(self, partition: int, epoch: int) -> Checkpoint | None:
        """The checkpoint stored for (partition index, epoch), or ``None``."""
        cp = self.partitions[partition].checkpoints[epoch - 1]
        return None if cp.epoch == 0 else cp

    def generation(self, partition: int, epoch: int) -> int:
        """The stored generation of (partition index, epoch); 0 when none is stored."""
        return self.partitions[partition].generations[epoch - 1]

    def memberships(self) -> dict[int, tuple[str, ...]]:
        """Membership epochs made durable so far, each with its member partitions."""
        names = self.context.partition_names
        return {e: names for e in range(1, self.epoch + 1)}

    def events(self, partition: int, epoch: int) -> tuple[EventInfo, ...]:
        """Ground truth of (partition, epoch): its events in position order with their flags."""
        part = self.partitions[partition]
        ctx = self.context
        out = []
        for idx in ctx.view(part.truth.moved, epoch):
            bit = 1 << idx
            out.append(
                EventInfo(
                    ctx.event_name(partition, idx),
                    ctx.half_of(idx),
                    bool(part.truth.final & bit),
                    bool(part.truth.durable & bit),
                )
            )
        return tuple(out)


class EventInfo(NamedTuple):
    """One event of the ground truth: name, position (half units), final, outcome durable."""

    name: str
    half: int
    final: bool
    durable: bool


class Page(NamedTuple):
    """A provider page: events ``start..end-1`` of the partition's list for the epoch.

    ``claim_kind``: "" (no claim), "final" or "non-final"; ``claim`` its cut.
    ``events`` names the delivered events with their positions; ``overlap`` says
    the page repeats the previous page's last event.
    """

    start: int
    end: int
    claim_kind: str
    claim: Cut
    events: tuple[str, ...]
    overlap: bool


@dataclass(frozen=True, slots=True)
class Action:
    """One transition, with every nondeterministic choice spelled out.

    Matchable by ``kind`` (the store call or environment event) and its
    participants: ``actor`` (``p1`` a publisher, ``A.r1`` a reader of A,
    ``source``, ``ingest``, ``faulty writer``, ``membership``), ``partition`` and
    ``epoch``; ``cut``, ``outcome``, ``page`` and ``detail`` pin the choice.

    Kinds and their fields:

    * publishers: ``read_publication`` (outcome ``ok``/``timeout``; detail
      ``authoritative:<decision>`` for the reread after a lost response),
      ``read_membership`` (epoch), ``read_checkpoints`` (epoch; cut = merged cut;
      detail = ``propose``, ``unchanged`` or the withheld reason),
      ``write_publication`` (epoch, cut; outcome ``ok``, ``conflict``,
      ``lost-applied``, ``lost-not-applied``, ``in-flight``; detail = what a
      conflict leads to), ``delayed_write`` (the store applies a write that was
      in flight when its response timed out);
    * readers: ``read_checkpoint`` (detail ``authoritative:<decision>`` for the
      reread after a lost response), ``fetch_page`` (page), ``record_outcomes``
      (detail = event names), ``write_checkpoint`` (cut; outcome ``ok``,
      ``conflict``, ``lost-applied``, ``lost-not-applied``; detail = the expected
      generation, then ``; <purpose>`` and for a conflict ``; <decision>``, see
      :func:`write_detail`), ``end_pass``;
    * environment: ``finalize`` (detail = event), ``certify`` (a true cut),
      ``bad_checkpoint`` (detail = ``provisional``/``scope``/``epoch``),
      ``reshard`` (epoch = the new epoch; partition = where events move).
    """

    kind: str
    actor: str
    partition: str | None = None
    epoch: int | None = None
    cut: Cut | None = None
    outcome: str | None = None
    page: Page | None = None
    detail: str | None = None

    def describe(self) -> str:
        """The transition in domain words, e.g. 'publisher p1 reads the publication record'."""
        return _describe(self)

    def __str__(self) -> str:
        return _describe(self)


_WRITE_OUTCOMES = {
    "ok": "applied and acknowledged",
    "lost-applied": "applied, but the response is lost",
    "lost-not-applied": "not applied, and the response is lost",
    "in-flight": "the response times out while the write is still in flight",
}

_CONFLICT_NEXT = {
    "retry": "rereads the record and recomputes",
    "gave_up": "the retry budget is spent, gives up",
    "same-cut": "retries the same cut with the new revision",
}

_REREAD = {
    "confirmed": "the claim is present in the same epoch: confirmed",
    "retry": "the record is behind the proposal: recomputes and retries",
    "cutover": "the epoch changed: applies the cutover rule and retries",
    "gave_up": "not confirmed and the retry budget is spent: gives up",
    "same-epoch": "the epoch changed, yet it recomputes in the epoch it holds",
}

#: Why a reader writes: its pass's new final claim, a token-only progress write at the
#: end of a pass, or again (a rewrite after a lost race, a retry of a lost write).
_PURPOSE = {
    "claim": "",
    "progress": " (progress: the same cut with the token reached)",
    "again": " again",
}

_CONFLICT_DECISION = {
    "": "",
    "keep": "; it claims at least as much: kept, the pass ends",
    "rewrite": "; it claims less: rewrites on it",
    "gave_up": "; it claims less but the retry budget is spent: gives up",
    "adopt": "; adopts the stored generation and writes its old cut again",
}

_CHECKPOINT_REREAD = {
    "written": "its write is stored",
    "retry": "its write was not applied: writes again",
    "rewrite": "a newer generation claims less: rewrites on it",
    "keep": "a newer generation claims at least as much: kept, the pass ends",
    "gave_up": "its write is not stored and the retry budget is spent: gives up",
    "settle": "after giving up: goes on from what is stored",
}


def write_detail(expecting: str, purpose: str, decision: str = "") -> str:
    """The detail of a ``write_checkpoint`` action: expected generation; purpose[; decision].

    ``purpose`` is one of ``claim`` (a new final claim), ``progress`` (the same
    cut with the token reached), ``again`` (a rewrite after a lost race, or a
    retry of a write that was not applied);
    ``decision`` (conflicts only) one of ``keep``, ``rewrite``, ``gave_up``,
    ``adopt`` (the ``overwrite`` mutant), or empty for the simple reader.
    """
    return f"{expecting}; {purpose}" + (f"; {decision}" if decision else "")


def split_write_detail(detail: str | None) -> tuple[str, str, str]:
    """``(expecting, purpose, decision)`` of a ``write_checkpoint`` action's detail."""
    parts = (detail or "").split("; ")
    expecting = parts[0]
    purpose = parts[1] if len(parts) > 1 else "claim"
    decision = parts[2] if len(parts) > 2 else ""
    return expecting, purpose, decision


_BAD = {
    "provisional": "a provisional checkpoint",
    "scope": "a checkpoint certified for another scope,",
    "epoch": "a checkpoint stamped with the previous epoch,",
}


def _describe(a: Action) -> str:
    """Domain words for an action, from its fields alone."""
    kind = a.kind
    who = a.actor
    if kind == "read_publication":
        if a.detail and a.detail.startswith("authoritative"):
            what = f"publisher {who} rereads the publication record (authoritative read)"
            if a.outcome == "timeout":
                return f"{what}: the read times out, gives up"
            return f"{what}: {_REREAD[a.detail.split(':', 1)[1]]}"
        if a.outcome == "timeout":
            return f"publisher {who} starts an attempt: the record read times out, gives up"
        return f"publisher {who} starts an attempt: reads the publication record"
    if kind == "read_membership":
        if a.outcome == "timeout":
            return f"publisher {who} reads the membership: times out, gives up"
        return f"publisher {who} reads the membership (epoch {a.epoch})"
    if kind == "read_checkpoints":
        what = f"publisher {who} reads the checkpoints of epoch {a.epoch}"
        if a.outcome == "timeout":
            return f"{what}: times out, gives up"
        if a.detail == "propose":
            return f"{what}, merges {a.cut} and proposes it"
        if a.detail == "unchanged":
            return f"{what}, merges {a.cut}: not ahead of the record, unchanged"
        if a.detail == "cutover_pending":
            return f"{what}, merges {a.cut}: below the record, withheld (cutover_pending)"
        return f"{what}: withheld ({a.detail})"
    if kind == "write_publication":
        what = f"publisher {who} writes (epoch {a.epoch}, {a.cut}) on the revision it read"
        if a.outcome == "conflict":
            return f"{what}: conflict, {_CONFLICT_NEXT[a.detail or 'retry']}"
        return f"{what}: {_WRITE_OUTCOMES[a.outcome or 'ok']}"
    if kind == "delayed_write":
        return (
            f"the store applies publisher {who}'s delayed write (epoch {a.epoch}, {a.cut}), "
            "its revision still current"
        )
    if kind == "read_checkpoint":
        if a.detail and a.detail.startswith("authoritative"):
            return (
                f"reader {who} rereads the checkpoint of {a.partition} in epoch {a.epoch} "
                f"(authoritative read): {_CHECKPOINT_REREAD[a.detail.split(':', 1)[1]]}"
            )
        return (
            f"reader {who} starts a pass: reads the checkpoint of {a.partition} in epoch {a.epoch}"
        )
    if kind == "fetch_page":
        page = a.page
        assert page is not None
        events = ", ".join(page.events) if page.events else "no events"
        claim = "no claim" if page.claim_kind == "" else f"a {page.claim_kind} claim {page.claim}"
        repeat = " (overlapping the previous page)" if page.overlap else ""
        return f"reader {who} fetches a page of {a.partition}: {events}; {claim}{repeat}"
    if kind == "record_outcomes":
        return f"reader {who} records durable outcomes of {a.detail}"
    if kind == "write_checkpoint":
        expecting, purpose, decision = split_write_detail(a.detail)
        what = (
            f"reader {who} writes checkpoint {a.partition} {a.cut}{_PURPOSE[purpose]} in epoch "
            f"{a.epoch} expecting {expecting}"
        )
        if a.outcome == "conflict":
            return f"{what}: conflict, a newer generation is stored{_CONFLICT_DECISION[decision]}"
        return f"{what}: {_WRITE_OUTCOMES[a.outcome or 'ok']}"
    if kind == "end_pass":
        return f"reader {who} ends its pass with nothing new to certify"
    if kind == "finalize":
        return f"the source finalizes {a.detail}"
    if kind == "certify":
        return (
            f"ingest certifies {a.partition} {a.cut} in epoch {a.epoch} "
            "(the events it covers become final with durable outcomes)"
        )
    if kind == "bad_checkpoint":
        return (
            f"a faulty writer stores {_BAD[a.detail or 'provisional']} {a.partition} {a.cut} "
            f"as the first checkpoint of epoch {a.epoch}"
        )
    if kind == "reshard":
        if a.partition is None:
            return f"the membership moves to epoch {a.epoch}"
        return (
            f"the membership moves to epoch {a.epoch}; a reshard moves events at {a.detail} "
            f"into {a.partition}"
        )
    return f"{who} {kind}"


# ---------------------------------------------------------------------------
# Context: a compiled configuration with precomputed tables.


class Context:
    """A configuration compiled into lookup tables; one object per distinct config.

    Equality follows the configuration, so states built from equal configs
    compare equal whichever ``initial`` call made them.
    """

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.successor = config.successor
        self.mutant = config.mutant or ""
        self.part = config.part
        self.own = config.own_halves
        self.moved_halves = config.moved_halves
        self.n_own = len(self.own)
        self.n_moved = len(self.moved_halves)
        self.candidates = integer_cuts(config.coordinates)
        self.partition_names = tuple(_partition_name(i) for i in range(config.partitions))
        self.publisher_names = tuple(f"p{i + 1}" for i in range(config.publishers))
        self.reader_names = tuple(
            tuple(f"{p}.r{j + 1}" for j in range(config.readers)) for p in self.partition_names
        )
        self.has_readers = config.part in ("ingest", "composed") and config.readers > 0
        self.production_reader = config.reader_retries is not None
        self.reader_retries = config.reader_retries or 0
        self.has_publishers = config.part in ("publication", "composed") and config.publishers > 0
        self.monotone = config.policy == "monotone"
        self._views: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}
        self._required: dict[tuple[tuple[int, ...], int, Cut], int] = {}
        self._actions: dict[tuple[object, ...], Action] = {}
        self._event_texts: dict[tuple[int, int], str] = {}
        # Memo tables of the transition relation (fencepost.model.machine), each keyed by
        # exactly what the transitions it holds read; they grow with the distinct
        # sub-states met, never with the number of times a sub-state recurs.
        #: (partition index, epoch, core) -> the environment's steps, as (action, core after).
        self.env_cache: dict[tuple[object, ...], list[tuple[Action, Any]]] = {}
        #: (partition index, reader index, epoch, core, reader) -> (action, core, reader after).
        self.reader_cache: dict[tuple[object, ...], list[tuple[Action, Any, Reader]]] = {}
        #: (publisher index, publisher, record, what it read) -> (action, publisher, write).
        self.publisher_cache: dict[tuple[object, ...], list[tuple[Action, Publisher, Any]]] = {}
        #: (epoch, partitions) -> the merge of that epoch's checkpoints.
        self.merge_cache: dict[tuple[int, tuple[Partition, ...]], tuple[str, Cut]] = {}
        #: (partition index, reader index, reader, truth) -> the provider's page answers.
        self.page_cache: dict[tuple[int, int, Reader, Truth], list[tuple[Action, Reader]]] = {}
        #: (partition index, truth, checkpoints, peaks) -> (monotonicity, truth) violations.
        self.partition_checks: dict[tuple[object, ...], tuple[str | None, str | None]] = {}
        #: partition index -> the partition last looked up there, with its entry.
        self.partition_checked: dict[int, tuple[Partition, tuple[str | None, str | None]]] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Context) and other.config == self.config

    def __hash__(self) -> int:
        return hash(self.config)

    def __repr__(self) -> str:
        return f"Context({self.config!r})"

    # -- events ------------------------------------------------------------
    def half_of(self, idx: int) -> int:
        """Position (half units) of event number ``idx`` of a partition."""
        if idx < self.n_own:
            return self.own[idx]
        return self.moved_halves[(idx - self.n_own) % self.n_moved]

    def event_name(self, partition: int, idx: int) -> str:
        """``A#2`` for an own event, ``A#m1.1`` for the first event of the first moved batch."""
        name = self.partition_names[partition]
        if idx < self.n_own:
            return f"{name}#{idx + 1}"
        batch, k = divmod(idx - self.n_own, self.n_moved)
        return f"{name}#m{batch + 1}.{k + 1}"

    def event_text(self, partition: int, idx: int) -> str:
        """An event with its position, e.g. ``A#1 at 0.5`` (cached)."""
        key = (partition, idx)
        got = self._event_texts.get(key)
        if got is None:
            got = f"{self.event_name(partition, idx)} at {coordinate_text(self.half_of(idx))}"
            self._event_texts[key] = got
        return got

    def view(self, moved: tuple[int, ...], epoch: int) -> tuple[int, ...]:
        """Event numbers of a partition in ``epoch``, in position order (the provider's list)."""
        key = (moved, epoch)
        got = self._views.get(key)
        if got is None:
            idxs = list(range(self.n_own))
            for b, since in enumerate(moved):
                if since <= epoch:
                    start = self.n_own + b * self.n_moved
                    idxs.extend(range(start, start + self.n_moved))
            got = tuple(sorted(idxs, key=lambda i: (self.half_of(i), i)))
            self._views[key] = got
        return got

    def required(self, moved: tuple[int, ...], epoch: int, cut: Cut) -> int:
        """Bitmask of the partition's events in ``epoch`` that lie in ``D(cut)``."""
        key = (moved, epoch, cut)
        got = self._required.get(key)
        if got is None:
            got = 0
            for idx in self.view(moved, epoch):
                half = self.half_of(idx)
                if half < cut.half or (cut.kind == THROUGH and half == cut.half):
                    got |= 1 << idx
            self._required[key] = got
        return got

    def batches(self, moved: tuple[int, ...], epoch: int) -> list[tuple[int, ...]]:
        """The finalization sequences (own events, then each moved batch present by ``epoch``)."""
        out = [tuple(range(self.n_own))]
        for b, since in enumerate(moved):
            if since <= epoch:
                start = self.n_own + b * self.n_moved
                out.append(tuple(sorted(range(start, start + self.n_moved), key=self.half_of)))
        return out

    # -- actions -------------------------------------------------------------
    def action(
        self,
        kind: str,
        actor: str,
        partition: str | None = None,
        epoch: int | None = None,
        cut: Cut | None = None,
        outcome: str | None = None,
        page: Page | None = None,
        detail: str | None = None,
    ) -> Action:
        """An interned :class:`Action`: equal choices give the very same object."""
        key = (kind, actor, partition, epoch, cut, outcome, page, detail)
        got = self._actions.get(key)
        if got is None:
            got = Action(kind, actor, partition, epoch, cut, outcome, page, detail)
            self._actions[key] = got
        return got


def _partition_name(i: int) -> str:
    return chr(ord("A") + i)


@lru_cache(maxsize=64)
def context_for(config: ModelConfig) -> Context:
    """The compiled context of ``config`` (cached: one per distinct configuration)."""
    return Context(config)
