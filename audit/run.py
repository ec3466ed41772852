"""The audit of whole logs: read, sort by stream and invocation, check each stream.

:func:`audit` reads every file once (:func:`fencepost.audit.log.read_ops`),
numbers the operations, and sorts them by ``(stream, t0, worker, seq)`` with an
external merge sort: at most ``memory_ops`` operations are held at once; fuller
runs are pickled to temporary files and merged back ``FAN_IN`` at a time
(``heapq.merge``; more runs are merged in passes), each run read back in chunks
small enough that the chunks of one merge fit in ``memory_ops``. So the audit
opens at most ``FAN_IN + 2`` files at once (it works under ``ulimit -n 16``) and
holds at most about ``memory_ops`` operations, whatever the size of the log.
The sorted operations go to one :class:`~fencepost.audit.stream.StreamAudit` per
stream in turn, which holds only what is in flight (P-compositionality: each
stream's registers are checked on their own, so a stream's verdict never
waits for another's).

A log that holds no operation is undecided (exit 4), never clean: a recorder
that wrote nothing must not pass a CI job.

Cost: O(n log n) time for n operations (the sort, plus one pass per merge
level: log_FAN_IN(runs)); the checks are O(n) on histories whose concurrency is
bounded, see :mod:`fencepost.audit.register`); memory O(memory_ops + the largest
stream's state in flight), independent of n and of the number of streams.
"""

from __future__ import annotations

import copyreg
import gc
import heapq
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

from fencepost.audit.log import (
    ClockRegression,
    LogStats,
    checked_record,
    log_files,
    read_ops,
    shared_cut,
)
from fencepost.audit.ops import Op
from fencepost.audit.stream import StreamAudit, Truth
from fencepost.audit.verdict import StreamVerdict, Violation
from fencepost.judge.values import Checkpoint, Cut, Endpoint, Record

_KEY = attrgetter("stream", "t0", "worker", "seq")
#: An operation's fields, in ``Op``'s order: a run holds tuples (pickled in C, no
#: ``__reduce__`` call per operation), made operations again when read back.
_FIELDS = attrgetter(*Op.__slots__)
_CHUNK = 4096
#: Runs merged at once: the files open while sorting (and so ``ulimit -n``) stay bounded.
FAN_IN = 8


@dataclass
class AuditReport:
    """Everything one audit found."""

    files: int = 0
    operations: int = 0
    streams: int = 0
    seconds: float = 0.0
    verdicts: list[StreamVerdict] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    unfinished: int = 0
    spilled_runs: int = 0
    merge_passes: int = 0
    #: A worker whose invocation times went back: the log's real-time order is in doubt.
    clock: list[ClockRegression] = field(default_factory=list)
    #: Segments missing between the first and the last of a log: (log, number).
    holes: list[tuple[str, int]] = field(default_factory=list)
    #: Lines the recorder dropped without naming their stream.
    unnamed_drops: int = 0

    @property
    def violations(self) -> list[Violation]:
        return [v for s in self.verdicts for v in s.violations]

    @property
    def undecided(self) -> list[str]:
        return [u for s in self.verdicts for u in s.undecided]

    @property
    def incomplete(self) -> list[StreamVerdict]:
        """Streams whose recorder dropped lines (full disk): no verdict can be final."""
        return [s for s in self.verdicts if s.dropped]

    @property
    def doubts(self) -> list[str]:
        """Why the log as a whole cannot be called correct (each makes the audit undecided)."""
        out: list[str] = []
        if not self.operations:
            out.append(
                "the log holds no operation: nothing was checked (is the recorder writing "
                "to this file?)"
            )
        for log, number in self.holes:
            out.append(f"segment {number} of log {log} is missing: the history has a hole")
        if self.unnamed_drops:
            out.append(
                f"the recorder dropped {self.unnamed_drops} line(s) of streams it could not "
                "name (disk full): every stream's history may be incomplete"
            )
        for c in self.clock:
            out.append(
                f"{c.where}: worker {c.worker}'s clock went back by {c.back_by} (its call before, "
                f"at {c.earlier}, was invoked later): the log's order of calls cannot be "
                "trusted; record with a monotonic clock"
            )
        return out

    @property
    def exit_code(self) -> int:
        """0 every property holds; 1 a violation; 4 undecided (budget, an incomplete or
        empty log, a clock that went back)."""
        if self.violations:
            return 1
        if self.undecided or self.incomplete or self.doubts:
            return 4
        return 0


def read_only(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """A read-only view of ``d`` (how the judge's memberships hold their mappings)."""
    return MappingProxyType(d)


def _proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return (read_only, (dict(m),))


def _record(r: Record) -> tuple[Any, tuple[Any, ...]]:
    return (checked_record, (r.epoch, r.cut, r.revision, r.op_id))


def _cut(c: Cut) -> tuple[Any, tuple[Any, ...]]:
    if c.endpoint is Endpoint.NOTHING:
        return (Cut, (c.endpoint, c.at))
    return (shared_cut, (c.endpoint.value, c.at))


def _checkpoint(c: Checkpoint) -> tuple[Any, tuple[Any, ...]]:
    return (
        Checkpoint,
        (c.partition, c.cut, c.token, c.generation, c.scope, c.epoch, c.finality),
    )


#: The judge's values pickled as their constructor's arguments: the generic path for
#: frozen slotted dataclasses (``__getstate__`` through ``dataclasses.fields``, then
#: ``__setstate__``) took most of the time of a spilled sort.
_DISPATCH: dict[Any, Any] = {
    **copyreg.dispatch_table,
    MappingProxyType: _proxy,
    Record: _record,
    Cut: _cut,
    Checkpoint: _checkpoint,
}


def _pickler(out: BinaryIO) -> pickle.Pickler:
    """A pickler for the judge's read-only mappings (memberships) too, leaving the
    process-wide pickle registry alone."""
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    return pickler


def _write_run(ops: Iterable[Op], folder: str, chunk: int) -> str:
    """Sorted ``ops`` pickled to a new file of ``folder``, ``chunk`` operations per record
    (each as the tuple of its fields)."""
    fd, path = tempfile.mkstemp(suffix=".run", dir=folder)
    with os.fdopen(fd, "wb") as out:
        pickler = _pickler(out)
        batch: list[tuple[Any, ...]] = []
        for op in ops:
            batch.append(_FIELDS(op))
            if len(batch) >= chunk:
                pickler.dump(batch)
                pickler.clear_memo()
                batch = []
        if batch:
            pickler.dump(batch)
    return path


def _run(path: str) -> Iterator[Op]:
    """A run read back one chunk at a time; the file is deleted once read."""
    try:
        with open(path, "rb") as handle:
            while True:
                try:
                    chunk: list[tuple[Any, ...]] = pickle.load(handle)
                except EOFError:
                    return
                for fields in chunk:
                    yield Op(*fields)
    finally:
        os.unlink(path)


def merge_chunk(memory_ops: int) -> int:
    """Operations per pickled record: one record of each of ``FAN_IN`` runs being merged,
    plus the one being written, fit in ``memory_ops``."""
    return max(1, min(_CHUNK, memory_ops // (FAN_IN + 1)))


def sorted_ops(ops: Iterable[Op], memory_ops: int, report: AuditReport) -> Iterator[Op]:
    """``ops`` numbered in reading order and sorted by (stream, t0, worker, seq).

    Runs of ``memory_ops`` operations are sorted in memory and spilled; while more
    than :data:`FAN_IN` remain, the oldest ``FAN_IN`` are merged into one (a pass),
    so no more than ``FAN_IN`` runs are ever open at once.
    """
    buffer: list[Op] = []
    chunk = merge_chunk(memory_ops)
    with tempfile.TemporaryDirectory(prefix="fencepost-audit-") as folder:
        runs: list[str] = []
        for index, op in enumerate(ops):
            op.index = index
            buffer.append(op)
            if len(buffer) >= memory_ops:
                buffer.sort(key=_KEY)
                runs.append(_write_run(buffer, folder, chunk))
                buffer = []
        report.spilled_runs = len(runs)
        if not runs:
            buffer.sort(key=_KEY)
            yield from buffer
            return
        if buffer:
            buffer.sort(key=_KEY)
            runs.append(_write_run(buffer, folder, chunk))
            buffer = []
            report.spilled_runs = len(runs)
        while len(runs) > FAN_IN:
            group, runs = runs[:FAN_IN], runs[FAN_IN:]
            merged = heapq.merge(*(_run(r) for r in group), key=_KEY)
            runs.append(_write_run(merged, folder, chunk))
            report.merge_passes += 1
        yield from heapq.merge(*(_run(r) for r in runs), key=_KEY)


def widened(ops: Iterable[Op], skew: int) -> Iterator[Op]:
    """Every interval widened by ``skew`` on both sides: clocks that disagree by at most
    ``skew`` then never order two operations that were concurrent."""
    for op in ops:
        op.t0 -= skew
        op.t1 += skew
        yield op


def audit_ops(
    ops: Iterable[Op],
    *,
    policy: str | None = None,
    budget: int = 2_000_000,
    memory_ops: int = 200_000,
    truth: Callable[[str], Truth | None] | None = None,
    report: AuditReport | None = None,
    clock_skew: int = 0,
    start: int | Callable[[], int | None] | None = None,
) -> AuditReport:
    """Audit operations already read (see :func:`audit` for the arguments).

    ``start``: when the log's knowledge of the history starts (its first segments
    were deleted; :attr:`fencepost.audit.log.LogStats.start`), or a function giving it
    once every operation is read; None: the log is whole.
    """
    report = report if report is not None else AuditReport()
    if clock_skew:
        ops = widened(ops, clock_skew)

    def knowledge_start() -> int | None:
        known = start() if callable(start) else start
        return None if known is None else known + clock_skew

    # The audit makes no reference cycles worth collecting while it runs, and the cyclic
    # collector's passes over hundreds of thousands of live operations only cost time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _audit_sorted(ops, policy, budget, memory_ops, truth, report, knowledge_start)
    finally:
        if collecting:
            gc.enable()
    return report


def _audit_sorted(
    ops: Iterable[Op],
    policy: str | None,
    budget: int,
    memory_ops: int,
    truth: Callable[[str], Truth | None] | None,
    report: AuditReport,
    knowledge_start: Callable[[], int | None],
) -> None:
    started = time.perf_counter()
    current: StreamAudit | None = None
    for op in sorted_ops(ops, memory_ops, report):
        report.operations += 1
        if current is None or current.stream != op.stream:
            if current is not None:
                report.verdicts.append(current.finish())
            current = StreamAudit(
                op.stream,
                policy=policy,
                budget=budget,
                truth=None if truth is None else truth(op.stream),
                start=knowledge_start(),
            )
        current.add(op)
    if current is not None:
        report.verdicts.append(current.finish())
    report.streams = len(report.verdicts)
    report.seconds = time.perf_counter() - started


def audit(
    paths: Iterable[str | os.PathLike[str]],
    *,
    policy: str | None = None,
    budget: int = 2_000_000,
    memory_ops: int = 200_000,
    truth: Callable[[str], Truth | None] | None = None,
    clock_skew: int = 0,
) -> AuditReport:
    """Audit the log files (a folder stands for its files).

    ``policy`` is the publishers' cutover policy (attempt lines carry their own);
    ``budget`` the configurations one register may visit before it is
    undecided; ``memory_ops`` the operations held in memory while sorting;
    ``truth`` gives a stream's ground truth (tests), enabling soundness;
    ``clock_skew`` the most two workers' clocks may disagree (time units of the log).
    Raises :class:`~fencepost.audit.log.LogError` for an unreadable line and
    ``OSError`` for a file that cannot be read.
    """
    started = time.perf_counter()
    stats = LogStats()
    files: list[Path] = log_files(paths)
    report = AuditReport()
    audit_ops(
        read_ops(files, stats),
        policy=policy,
        budget=budget,
        memory_ops=memory_ops,
        truth=truth,
        report=report,
        clock_skew=clock_skew,
        start=lambda: stats.start,
    )
    report.files = stats.files
    report.torn = stats.torn
    report.unfinished = stats.unfinished
    report.clock = stats.clock
    report.holes = stats.holes
    report.unnamed_drops = stats.unnamed_drops
    report.seconds = time.perf_counter() - started
    return report
