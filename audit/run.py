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

import gc
import heapq
import marshal
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fencepost.audit.log import (
    ClockRegression,
    Entry,
    LogStats,
    flat_payload,
    inflate,
    log_files,
    read_entries,
)
from fencepost.audit.ops import Op
from fencepost.audit.stream import StreamAudit, Truth
from fencepost.audit.verdict import StreamVerdict, Violation

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


def _write_run(entries: Iterable[Entry], folder: str, chunk: int) -> str:
    """Sorted ``entries`` written with ``marshal`` to a new file of ``folder``, ``chunk``
    per record (its length in 8 bytes, then its bytes); a payload that is an :class:`Op`
    (a line the strict reader read: rare) is flattened or pickled first
    (:func:`~fencepost.audit.log.flat_payload`)."""
    fd, path = tempfile.mkstemp(suffix=".run", dir=folder)
    dumps = marshal.dumps
    with os.fdopen(fd, "wb") as out:
        write = out.write
        batch: list[Entry] = []
        for entry in entries:
            if type(entry[5]) is Op:
                entry = (*entry[:5], flat_payload(entry[5]))
            batch.append(entry)
            if len(batch) >= chunk:
                data = dumps(batch)
                write(len(data).to_bytes(8, "little"))
                write(data)
                batch = []
        if batch:
            data = dumps(batch)
            write(len(data).to_bytes(8, "little"))
            write(data)
    return path


def _run(path: str) -> Iterator[Entry]:
    """A run read back one chunk at a time; the file is deleted once read."""
    try:
        with open(path, "rb") as handle:
            # Each record is its length, then its bytes: ``marshal.load`` of a file reads
            # it in tiny pieces (a call per value), ``marshal.loads`` of the bytes in C.
            read, loads = handle.read, marshal.loads
            while True:
                head = read(8)
                if not head:
                    return
                chunk: list[Entry] = loads(read(int.from_bytes(head, "little")))
                yield from chunk
    finally:
        os.unlink(path)


def merge_chunk(memory_ops: int) -> int:
    """Operations per spilled record: one record of each of ``FAN_IN`` runs being merged,
    plus the one being written, fit in ``memory_ops``."""
    return max(1, min(_CHUNK, memory_ops // (FAN_IN + 1)))


def sorted_entries(
    entries: Iterable[Entry], memory_ops: int, report: AuditReport
) -> Iterator[Entry]:
    """``entries`` (:data:`~fencepost.audit.log.Entry`) sorted by (stream, t0, worker,
    seq), ties in reading order (``index``): compared as plain tuples, in C.

    Runs of ``memory_ops`` entries are sorted in memory and spilled with ``marshal``
    (plain tuples: no Python call per operation); while more than :data:`FAN_IN` remain,
    the oldest ``FAN_IN`` are merged into one (a pass), so no more than ``FAN_IN`` runs
    are ever open at once.
    """
    buffer: list[Entry] = []
    chunk = merge_chunk(memory_ops)
    with tempfile.TemporaryDirectory(prefix="fencepost-audit-") as folder:
        runs: list[str] = []
        for entry in entries:
            buffer.append(entry)
            if len(buffer) >= memory_ops:
                buffer.sort()
                runs.append(_write_run(buffer, folder, chunk))
                buffer = []
        report.spilled_runs = len(runs)
        if not runs:
            buffer.sort()
            yield from buffer
            return
        if buffer:
            buffer.sort()
            runs.append(_write_run(buffer, folder, chunk))
            buffer = []
            report.spilled_runs = len(runs)
        while len(runs) > FAN_IN:
            group, runs = runs[:FAN_IN], runs[FAN_IN:]
            merged = heapq.merge(*(_run(r) for r in group))
            runs.append(_write_run(merged, folder, chunk))
            report.merge_passes += 1
        yield from heapq.merge(*(_run(r) for r in runs))


def _entries(ops: Iterable[Op]) -> Iterator[Entry]:
    """Operations already built, as entries numbered in their order."""
    for index, op in enumerate(ops):
        yield (op.stream, op.t0, op.worker, op.seq, index, op)


def sorted_ops(ops: Iterable[Op], memory_ops: int, report: AuditReport) -> Iterator[Op]:
    """``ops`` numbered in reading order and sorted by (stream, t0, worker, seq)
    (:func:`sorted_entries`)."""
    for entry in sorted_entries(_entries(ops), memory_ops, report):
        yield inflate(entry)


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
    if clock_skew:
        ops = widened(ops, clock_skew)
    return _audit_entries(
        _entries(ops), policy, budget, memory_ops, truth, report, clock_skew, start
    )


def _audit_entries(
    entries: Iterable[Entry],
    policy: str | None,
    budget: int,
    memory_ops: int,
    truth: Callable[[str], Truth | None] | None,
    report: AuditReport | None,
    clock_skew: int,
    start: int | Callable[[], int | None] | None,
) -> AuditReport:
    """:func:`audit_ops` of entries (intervals already widened by ``clock_skew``)."""
    report = report if report is not None else AuditReport()

    def knowledge_start() -> int | None:
        known = start() if callable(start) else start
        return None if known is None else known + clock_skew

    # The audit makes no reference cycles worth collecting while it runs, and the cyclic
    # collector's passes over hundreds of thousands of live operations only cost time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _audit_sorted(entries, policy, budget, memory_ops, truth, report, knowledge_start)
    finally:
        if collecting:
            gc.enable()
    return report


def _audit_sorted(
    entries: Iterable[Entry],
    policy: str | None,
    budget: int,
    memory_ops: int,
    truth: Callable[[str], Truth | None] | None,
    report: AuditReport,
    knowledge_start: Callable[[], int | None],
) -> None:
    started = time.perf_counter()
    current: StreamAudit | None = None
    stream: str | None = None
    operations = 0
    for entry in sorted_entries(entries, memory_ops, report):
        operations += 1
        if entry[0] != stream:
            stream = entry[0]
            if current is not None:
                report.verdicts.append(current.finish())
            current = StreamAudit(
                stream,
                policy=policy,
                budget=budget,
                truth=None if truth is None else truth(stream),
                start=knowledge_start(),
            )
        assert current is not None
        current.add(inflate(entry))
    report.operations += operations
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
    entries = read_entries(files, stats)
    if clock_skew:
        entries = _entries(widened((inflate(e) for e in entries), clock_skew))
    _audit_entries(
        entries, policy, budget, memory_ops, truth, report, clock_skew, lambda: stats.start
    )
    report.files = stats.files
    report.torn = stats.torn
    report.unfinished = stats.unfinished
    report.clock = stats.clock
    report.holes = stats.holes
    report.unnamed_drops = stats.unnamed_drops
    report.seconds = time.perf_counter() - started
    return report
