"""Assertion helpers for the implementation tests: a call recorder and the oracles.

:class:`RecordingStore` wraps a store and keeps every call with its result or
error. :func:`check_attempt` judges one publisher attempt from that trace alone
(the rules of docs/semantics.md sections 5 and 6): it does not trust the publisher's
own account. :func:`check_sound` and :func:`check_checkpoints_true` judge the
durable state against a simulated source's ground truth (section 7).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fencepost.impl.cuts import Cut, compare_cuts
from fencepost.impl.merge import MergeSummary, Withheld, merge, merge_summary
from fencepost.impl.publisher import Outcome, Policy, PublishResult
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.stores import Applied, IndefiniteStoreError, Store


@dataclass
class Call:
    op: str
    args: tuple[Any, ...]
    result: Any = None
    error: BaseException | None = None


class RecordingStore:
    """Any store, with every call and its result (or error) appended to ``calls``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target) or name.startswith("_"):
            return target

        def recorded(*args: Any) -> Any:
            call = Call(name, args)
            self.calls.append(call)
            try:
                call.result = target(*args)
            except BaseException as exc:
                call.error = exc
                raise
            return call.result

        return recorded


def check_attempt(
    calls: Sequence[Call], result: PublishResult, policy: Policy = Policy.MONOTONE
) -> None:
    """Judge one publication attempt from its store calls (AssertionError if dishonest).

    - every write proposes exactly ``merge`` of the membership and checkpoints
      read since the previous write (``merge_summary`` of the summary read, on
      the summary path), on the revision of the record read since then: never a
      stale cut reused after a conflict or a lost response;
    - a write never goes back: older epoch never; within the epoch only a
      stronger cut; into a new epoch under monotone only a cut at least the
      record's;
    - ``published`` only on an acknowledged write carrying the result's op_id;
    - ``confirmed`` only if the last write's response was lost and a later
      successful read showed the same epoch with a cut at or past the proposal;
    - op_ids are fresh per write.
    """
    record: PublicationRecord | None = None
    membership: Membership | None = None
    checkpoints: Sequence[Checkpoint] | MergeSummary | None = None
    op_ids: list[str] = []
    last_write: Call | None = None
    last_order: Any = None
    reads_after_last_write: list[Call] = []
    for call in calls:
        if call.error is not None and not isinstance(call.error, IndefiniteStoreError):
            raise AssertionError(f"unexpected error in {call.op}: {call.error!r}")
        if call.op == "read_publication" and call.error is None:
            record = call.result
            reads_after_last_write.append(call)
        elif call.op == "read_membership" and call.error is None:
            membership = call.result
        elif call.op in ("read_checkpoints", "read_merge_summary") and call.error is None:
            checkpoints = call.result
        elif call.op == "write_publication":
            _stream, expected, epoch, cut, op_id = call.args
            assert record is not None and membership is not None and checkpoints is not None, (
                "a write before the record, membership and checkpoints were read"
            )
            assert expected == record.revision, "the write does not name the revision just read"
            merged = (
                merge_summary(membership, checkpoints)
                if isinstance(checkpoints, MergeSummary)
                else merge(membership, checkpoints)
            )
            assert not isinstance(merged, Withheld), f"wrote although the merge withheld: {merged}"
            assert epoch == membership.epoch and cut == merged, (
                f"proposed ({epoch}, {cut}) but the fresh reads merge to "
                f"({membership.epoch}, {merged}): a stale or invented cut"
            )
            order = membership.order_of(sorted(membership.partitions)[0])
            assert epoch >= record.epoch, "a claim for an epoch older than the record's"
            if epoch == record.epoch:
                assert compare_cuts(order, cut, record.cut) > 0, "not ahead within the epoch"
            elif policy is Policy.MONOTONE:
                assert compare_cuts(order, cut, record.cut) >= 0, "monotone cutover went back"
            assert op_id not in op_ids, f"op_id {op_id} reused"
            op_ids.append(op_id)
            last_write = call
            last_order = order
            reads_after_last_write = []
            # A fresh decision needs fresh reads: forget them.
            record, membership, checkpoints = None, None, None
    if result.outcome is Outcome.PUBLISHED:
        assert last_write is not None and isinstance(last_write.result, Applied), (
            "published without an acknowledged write"
        )
        assert last_write.args[4] == result.op_id
        assert result.record == last_write.result.record
    if result.outcome is Outcome.CONFIRMED:
        assert last_write is not None and isinstance(last_write.error, IndefiniteStoreError), (
            "confirmed although the last write's response was not lost"
        )
        _s, _e, epoch, cut, _op = last_write.args
        seen = [c.result for c in reads_after_last_write]
        assert seen, "confirmed without an authoritative read after the lost write"
        shown: PublicationRecord = seen[-1]
        assert shown.epoch == epoch, "confirmed a claim of another epoch"
        assert shown.cut == result.cut and shown == result.record
        assert compare_cuts(last_order, shown.cut, cut) >= 0, "confirmed a record behind"
    if result.outcome in (Outcome.UNCHANGED, Outcome.WITHHELD):
        assert result.reason is not None or result.outcome is Outcome.UNCHANGED


def check_sound(store: Store, stream: str, source: SimulatedSource) -> PublicationRecord:
    """Soundness: every event in D(record's cut) has a durable outcome. Returns the record."""
    record = store.read_publication(stream)
    covered = source.covered_ids(record.cut)
    have = store.outcomes(stream, covered)
    missing = [e for e in covered if e not in have]
    assert not missing, f"record {record} covers events without outcomes: {missing[:5]}"
    return record


def check_checkpoints_true(store: Store, stream: str, source: SimulatedSource, epoch: int) -> None:
    """Every stored checkpoint's downset is covered by durable outcomes of its partition."""
    for checkpoint in store.read_checkpoints(stream, epoch):
        events = source.events(checkpoint.partition)
        cut = checkpoint.cut
        if cut.is_nothing:
            continue
        inside = [e.id for e in events if compare_cuts(source.order, Cut.through(e.at), cut) <= 0]
        have = store.outcomes(stream, inside)
        assert len(have) == len(inside), (
            f"checkpoint {checkpoint} certifies events without outcomes"
        )


class Monotone:
    """Remembers the last record and checkpoints seen; asserts they never go back."""

    def __init__(self, order: Any) -> None:
        self.order = order
        self.record: PublicationRecord | None = None
        self.checkpoints: dict[tuple[int, str], Checkpoint] = {}

    def see(self, store: Store, stream: str, epochs: Sequence[int] = (1,)) -> None:
        record = store.read_publication(stream)
        if self.record is not None:
            assert record.epoch >= self.record.epoch, "the record's epoch went back"
            assert record.revision >= self.record.revision
            if record.epoch == self.record.epoch:
                assert compare_cuts(self.order, record.cut, self.record.cut) >= 0, (
                    f"the record went back: {self.record} -> {record}"
                )
        self.record = record
        for epoch in epochs:
            for checkpoint in store.read_checkpoints(stream, epoch):
                key = (epoch, checkpoint.partition)
                before = self.checkpoints.get(key)
                if before is not None:
                    assert checkpoint.generation >= before.generation
                    assert compare_cuts(self.order, checkpoint.cut, before.cut) >= 0, (
                        f"checkpoint went back: {before} -> {checkpoint}"
                    )
                self.checkpoints[key] = checkpoint


def run_to_completion(step: Callable[[], bool], limit: int = 500) -> int:
    """Call ``step`` until it returns True; fail after ``limit`` calls. Returns the count."""
    for count in range(1, limit + 1):
        if step():
            return count
    raise AssertionError(f"did not finish within {limit} steps")
