"""The partition reader (docs/semantics.md section 3) on awkward pages and late retries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from impl_checks import check_checkpoints_true

from fencepost.impl.cuts import NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.faults import FaultKind, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.provider import Claim, Event, Page, Provider, ProviderTimeout
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Checkpoint, Finality, Membership
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.stores import CheckpointWrite, IndefiniteStoreError

OFFSETS = IntegerOrder("offsets", successor_exact=True)
TIMES = IntegerOrder("ts", successor_exact=False)


class Script:
    """A provider serving fixed pages by token; remembers the tokens asked for."""

    def __init__(
        self, pages: Mapping[Any, Page], before: Callable[[str | None], None] | None = None
    ) -> None:
        self.pages = pages
        self.asked: list[str | None] = []
        self.before = before

    def fetch_page(self, partition: str, token: str | None) -> Page:
        self.asked.append(token)
        if self.before is not None:
            self.before(token)
        return self.pages[token]


def page(events: list[tuple[str, int]], nxt: str | None, claim: Claim | None = None) -> Page:
    return Page(tuple(Event(i, at) for i, at in events), nxt, claim)


def final(cut: Cut) -> Claim:
    return Claim(cut, True)


def new_store(order: IntegerOrder = TIMES) -> MemoryStore:
    store = MemoryStore()
    store.create_stream("s", Membership(1, "q1", {"A": order.name}, {order.name: order}))
    return store


def reader(
    store: Any, provider: Any, order: IntegerOrder = TIMES, **kwargs: Any
) -> PartitionReader:
    handled: list[str] = kwargs.pop("handled", [])

    def handle(event: Event) -> str:
        handled.append(event.id)
        return f"done@{event.at}"

    return PartitionReader(store, provider, "s", "A", 1, "q1", order, handle, **kwargs)


def stored(store: MemoryStore) -> Checkpoint | None:
    return store.read_checkpoint("s", 1, "A")


def test_certifies_only_final_claims_and_records_outcomes_first() -> None:
    store = new_store()
    pages = {
        None: page([("e1", 1), ("e2", 2)], "t1", Claim(Cut.through(9), False)),
        "t1": page([("e3", 5)], "t2", final(Cut.before(6))),
        "t2": page([("e4", 8)], None, None),
    }
    cut = reader(store, Script(pages)).run_pass()
    assert cut == Cut.before(6)
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.cut == Cut.before(6)
    assert store.outcomes("s", ["e1", "e2", "e3", "e4"]) == {
        "e1": "done@1",
        "e2": "done@2",
        "e3": "done@5",
        "e4": "done@8",
    }


def test_never_certifies_the_largest_event_seen_or_the_token() -> None:
    store = new_store()
    pages = {None: page([("e1", 1), ("e2", 100)], "after-100", None), "after-100": page([], None)}
    assert reader(store, Script(pages)).run_pass() == NOTHING
    checkpoint = stored(store)
    # Progress (the token) is saved, coverage is not.
    assert checkpoint is not None and checkpoint.cut == NOTHING and checkpoint.token == "after-100"


def test_never_manufactures_a_successor() -> None:
    store = new_store(OFFSETS)
    pages = {None: page([("e1", 5)], None, final(Cut.through(5)))}
    reader(store, Script(pages), OFFSETS).run_pass()
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.cut == Cut.through(5)  # not before 6


def test_empty_and_overlapping_pages() -> None:
    store = new_store()
    handled: list[str] = []
    pages = {
        None: page([], "t1"),
        "t1": page([("e1", 1), ("e2", 2)], "t2", final(Cut.before(2))),
        "t2": page([("e2", 2), ("e3", 3)], "t3", final(Cut.through(3))),  # e2 again
        "t3": page([], None, final(Cut.through(3))),
    }
    assert reader(store, Script(pages), handled=handled).run_pass() == Cut.through(3)
    assert handled == ["e1", "e2", "e3"]  # e2 handed over once per pass
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.generation == 2


def test_several_events_at_one_coordinate() -> None:
    store = new_store()
    pages = {
        None: page([("a", 7), ("b", 7)], "t1", final(Cut.before(7))),
        "t1": page([("c", 7)], "t2", final(Cut.through(7))),
        "t2": page([], None),
    }
    assert reader(store, Script(pages)).run_pass() == Cut.through(7)
    assert set(store.outcomes("s", ["a", "b", "c"])) == {"a", "b", "c"}


def test_a_claim_behind_the_checkpoint_never_regresses_it() -> None:
    store = new_store()
    pages = {
        None: page([("e1", 1)], "t1", final(Cut.through(50))),
        "t1": page([], None, final(Cut.before(10))),
    }
    assert reader(store, Script(pages)).run_pass() == Cut.through(50)
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.cut == Cut.through(50)


def test_resumes_from_the_stored_token() -> None:
    store = new_store()
    pages = {
        None: page([("e1", 1)], "t1", final(Cut.through(1))),
        "t1": page([("e2", 2)], "t2", None),
        "t2": page([("e3", 3)], None, final(Cut.through(3))),
    }
    first = Script(pages)
    reader(store, first, save_progress=False).run_pass(max_pages=2)
    assert first.asked == [None, "t1"]
    second = Script(pages)
    # A fresh reader (a restart) resumes from the checkpoint's token, after page one.
    assert reader(store, second).run_pass() == Cut.through(3)
    assert second.asked == ["t1", "t2"]


def test_a_reader_continues_where_its_last_pass_stopped() -> None:
    """Pages with no claim for longer than a pass must not stall the partition."""
    store = new_store()
    pages = {
        None: page([("e1", 1)], "t1"),
        "t1": page([("e2", 2)], "t2"),
        "t2": page([("e3", 3)], None, final(Cut.through(3))),
    }
    script = Script(pages)
    one = reader(store, script, save_progress=False)
    one.run_pass(max_pages=1)
    one.run_pass(max_pages=1)
    assert one.run_pass(max_pages=1) == Cut.through(3)
    assert script.asked == [None, "t1", "t2"]


def test_late_retry_loses_and_never_overwrites() -> None:
    """Reader 1 stalls inside its fetch while reader 2 certifies further; 1 then loses."""
    store = new_store()
    fast_pages = {None: page([("e1", 1), ("e2", 20)], None, final(Cut.through(20)))}
    fast = reader(store, Script(fast_pages))

    def stall(token: str | None) -> None:
        if token is None:
            fast.run_pass()

    slow_pages = {None: page([("e1", 1)], None, final(Cut.through(1)))}
    slow = reader(store, Script(slow_pages, before=stall))
    assert slow.run_pass() == Cut.through(20)  # it learned the newer checkpoint
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.cut == Cut.through(20)
    assert checkpoint.generation == 1


def test_a_stronger_claim_after_a_conflict_is_written_on_the_new_generation() -> None:
    store = new_store()
    fast = reader(store, Script({None: page([("e1", 1)], None, final(Cut.through(1)))}))

    def stall(token: str | None) -> None:
        if token is None:
            fast.run_pass()

    slow_pages = {None: page([("e1", 1), ("e2", 9)], None, final(Cut.through(9)))}
    assert reader(store, Script(slow_pages, before=stall)).run_pass() == Cut.through(9)
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.cut == Cut.through(9)
    assert checkpoint.generation == 2


@pytest.mark.parametrize("kind", [FaultKind.LOSE_AFTER, FaultKind.LOSE_BEFORE])
def test_lost_checkpoint_response_is_settled_by_rereading(kind: FaultKind) -> None:
    store = new_store()
    pages = {None: page([("e1", 4)], None, final(Cut.through(4)))}
    # Calls: read_checkpoint, record_outcome, write_checkpoint (lost), read_checkpoint, ...
    faulty = FaultyStore(store, plan={2: kind})
    assert reader(faulty, Script(pages)).run_pass() == Cut.through(4)
    checkpoint = stored(store)
    assert checkpoint is not None and checkpoint.generation == 1
    assert [e.op for e in faulty.events] == ["write_checkpoint"]


def test_lost_outcome_response_is_retried_before_certifying() -> None:
    store = new_store()
    pages = {None: page([("e1", 4)], None, final(Cut.through(4)))}
    faulty = FaultyStore(store, plan={1: FaultKind.LOSE_AFTER, 2: FaultKind.LOSE_BEFORE})
    assert reader(faulty, Script(pages)).run_pass() == Cut.through(4)
    assert store.outcomes("s", ["e1"]) == {"e1": "done@4"}


def test_outcomes_that_stay_unrecorded_stop_the_pass_before_certifying() -> None:
    store = new_store()
    pages = {None: page([("e1", 4)], None, final(Cut.through(4)))}
    faulty = FaultyStore(store, lose_before=1.0, ops={"record_outcome"})
    with pytest.raises(IndefiniteStoreError):
        reader(faulty, Script(pages), max_retries=2).run_pass()
    assert stored(store) is None


class Flaky(Script):
    def __init__(self, pages: Mapping[Any, Page], failures: int) -> None:
        super().__init__(pages)
        self.failures = failures

    def fetch_page(self, partition: str, token: str | None) -> Page:
        if self.failures:
            self.failures -= 1
            raise ProviderTimeout("lost")
        return super().fetch_page(partition, token)


def test_provider_timeouts_are_refetched_within_budget() -> None:
    store = new_store()
    pages = {None: page([("e1", 4)], None, final(Cut.through(4)))}
    assert reader(store, Flaky(pages, 2)).run_pass() == Cut.through(4)
    with pytest.raises(ProviderTimeout):
        reader(new_store(), Flaky(pages, 5), max_retries=2).run_pass()


def test_bad_provider_values_are_refused_by_name() -> None:
    store = new_store()
    pages = {None: page([("e1", 4)], None, final(Cut.through("x")))}
    with pytest.raises(InvalidValue, match=r"page\.claim\.cut"):
        reader(store, Script(pages)).run_pass()
    strings = {None: Page((Event("e0", 1), Event("e1", "oops")), None)}
    handled: list[str] = []
    with pytest.raises(InvalidValue, match=r"page\.events\[1\]\.at"):
        reader(new_store(), Script(strings), handled=handled).run_pass()
    assert handled == []  # a bad page is refused before any of its events is acted on


# --- against the simulated source, with the ground-truth oracle ---------------------


def _ingest(
    store: Any, source: SimulatedSource, cls: type[PartitionReader] = PartitionReader
) -> None:
    membership = source.membership()
    for partition in source.partitions:
        r = cls(store, source, "s", partition, 1, membership.scope, source.order, lambda e: "ok")
        for _ in range(60):
            r.run_pass(max_pages=3)


def test_simulated_source_checkpoints_are_always_true() -> None:
    source = SimulatedSource(seed=11, partitions=3, events=60, nonfinal_rate=0.3)
    store = MemoryStore()
    store.create_stream("s", source.membership())
    _ingest(store, source)
    check_checkpoints_true(store, "s", source, 1)
    for partition in source.partitions:
        checkpoint = store.read_checkpoint("s", 1, partition)
        assert checkpoint is not None and checkpoint.cut == source.final_cut(partition)


class TrustsNonFinalClaims(PartitionReader):
    """Broken: certifies whatever a page claims, final or not."""

    def run_pass(self, max_pages: int | None = None) -> Cut:
        class Finalising:
            def __init__(self, inner: Provider) -> None:
                self.inner = inner

            def fetch_page(self, partition: str, token: str | None) -> Page:
                p = self.inner.fetch_page(partition, token)
                if p.claim is not None:
                    return Page(p.events, p.next_token, Claim(p.claim.cut, True))
                return p

        self.provider = (
            Finalising(self.provider) if not hasattr(self.provider, "inner") else self.provider
        )
        return super().run_pass(max_pages)


def test_the_oracle_catches_a_reader_that_trusts_non_final_claims() -> None:
    source = SimulatedSource(seed=11, partitions=3, events=60, nonfinal_rate=0.5)
    store = MemoryStore()
    store.create_stream("s", source.membership())
    caught = False
    membership = source.membership()
    for partition in source.partitions:
        r = TrustsNonFinalClaims(
            store, source, "s", partition, 1, membership.scope, source.order, lambda e: "ok"
        )
        r.run_pass(max_pages=1)
        try:
            check_checkpoints_true(store, "s", source, 1)
        except AssertionError:
            caught = True
            break
    assert caught


class WriteSpy:
    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.writes: list[Checkpoint] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_checkpoint(
        self, stream: str, expected: int | None, cp: Checkpoint
    ) -> CheckpointWrite:
        self.writes.append(cp)
        return self.inner.write_checkpoint(stream, expected, cp)


def test_final_state_is_stable_no_writes_once_caught_up() -> None:
    source = SimulatedSource(seed=3, partitions=1, events=10)
    store = MemoryStore()
    store.create_stream("s", source.membership())
    spy = WriteSpy(store)
    r = PartitionReader(spy, source, "s", "p000", 1, source.scope, source.order, lambda e: "ok")
    for _ in range(30):
        r.run_pass()
    count = len(spy.writes)
    r.run_pass()
    r.run_pass()
    assert len(spy.writes) == count


@pytest.mark.parametrize(
    "misconfigured",
    [
        Checkpoint("A", Cut.through(100), "elsewhere", 1, "other-query", 1),  # another scope
        Checkpoint("A", Cut.through(100), "guess", 1, "q1", 1, Finality.PROVISIONAL),
    ],
    ids=["wrong-scope", "provisional"],
)
def test_a_misconfigured_checkpoint_in_its_key_is_neither_coverage_nor_a_resume_position(
    misconfigured: Checkpoint,
) -> None:
    """docs/semantics.md section 8: the pass starts from the beginning (token None), never
    counts the stored cut as certified, and its first write replaces the misconfiguration,
    conditional on its generation."""
    store = new_store()
    assert store.write_checkpoint("s", None, misconfigured).checkpoint == misconfigured
    pages = {None: page([("e1", 1), ("e2", 2)], None, final(Cut.through(2)))}
    provider = Script(pages)
    cut = reader(store, provider).run_pass()
    assert provider.asked == [None], "it resumed from a token that is not its own"
    assert cut == Cut.through(2)
    now = stored(store)
    assert now is not None and now.cut == Cut.through(2) and now.generation == 2
    assert now.scope == "q1" and now.epoch == 1 and now.finality is Finality.FINAL
    assert set(store.outcomes("s", ["e1", "e2"])) == {"e1", "e2"}


def test_a_conflict_with_a_misconfigured_checkpoint_is_not_taken_as_a_newer_claim() -> None:
    """A write that loses to a checkpoint of another scope writes again on top of it."""
    store = new_store()
    pages = {None: page([("e1", 1)], None, final(Cut.through(1)))}

    def plant(token: str | None) -> None:
        store.write_checkpoint("s", None, Checkpoint("A", Cut.through(50), "x", 1, "other", 1))

    assert reader(store, Script(pages, before=plant)).run_pass() == Cut.through(1)
    now = stored(store)
    assert now is not None and now.scope == "q1" and now.cut == Cut.through(1)
