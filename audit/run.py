"""The audit of whole logs: read, sort by stream and invocation, check each stream.

:func:`audit` reads every file once (:func:`fencepost.audit.log.read_ops`),
numbers the operations, and sorts them by ``(stream, t0, worker, seq)`` with an
external merge sort: at most ``memory_ops`` operations are held at once; fuller
runs are pickled to temporary files and merged back (``heapq.merge``). The
sorted operations go to one :class:`~fencepost.audit.stream.StreamAudit` per
stream in turn, which holds only what is in flight (P-compositionality: each
stream's registers are checked on their own, so a stream's verdict never
waits for another's).

Cost: O(n log n) time for n operations (the sort; the checks are O(n) on
histories whose concurrency is bounded, see :mod:`fencepost.audit.register`);
memory O(memory_ops + the largest stream's state in flight), independent of n
and of the number of streams.
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

from fencepost.audit.log import LogStats, log_files, read_ops
from fencepost.audit.ops import Op
from fencepost.audit.stream import StreamAudit, Truth
from fencepost.audit.verdict import StreamVerdict, Violation

_KEY = attrgetter("stream", "t0", "worker", "seq")
_CHUNK = 4096


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
    def exit_code(self) -> int:
        """0 every property holds; 1 a violation; 4 undecided (budget or an incomplete log)."""
        if self.violations:
            return 1
        if self.undecided or self.incomplete:
            return 4
        return 0


def read_only(d: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """A read-only view of ``d`` (how the judge's memberships hold their mappings)."""
    return MappingProxyType(d)


def _proxy(m: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return (read_only, (dict(m),))


_DISPATCH: dict[Any, Any] = {**copyreg.dispatch_table, MappingProxyType: _proxy}


def _pickler(out: BinaryIO) -> pickle.Pickler:
    """A pickler for the judge's read-only mappings (memberships) too, leaving the
    process-wide pickle registry alone."""
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    return pickler


def _spill(ops: list[Op], folder: str) -> str:
    ops.sort(key=_KEY)
    fd, path = tempfile.mkstemp(suffix=".run", dir=folder)
    with os.fdopen(fd, "wb") as out:
        pickler = _pickler(out)
        for i in range(0, len(ops), _CHUNK):
            pickler.dump(ops[i : i + _CHUNK])
            pickler.clear_memo()
    return path


def _run(path: str) -> Iterator[Op]:
    with open(path, "rb") as handle:
        while True:
            try:
                chunk: list[Op] = pickle.load(handle)
            except EOFError:
                return
            yield from chunk


def sorted_ops(ops: Iterable[Op], memory_ops: int, report: AuditReport) -> Iterator[Op]:
    """``ops`` numbered in reading order and sorted by (stream, t0, worker, seq)."""
    buffer: list[Op] = []
    with tempfile.TemporaryDirectory(prefix="fencepost-audit-") as folder:
        runs: list[str] = []
        for index, op in enumerate(ops):
            op.index = index
            buffer.append(op)
            if len(buffer) >= memory_ops:
                runs.append(_spill(buffer, folder))
                buffer = []
        report.spilled_runs = len(runs)
        if not runs:
            buffer.sort(key=_KEY)
            yield from buffer
            return
        if buffer:
            runs.append(_spill(buffer, folder))
            buffer = []
            report.spilled_runs = len(runs)
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
) -> AuditReport:
    """Audit operations already read (see :func:`audit` for the arguments)."""
    report = report if report is not None else AuditReport()
    if clock_skew:
        ops = widened(ops, clock_skew)
    # The audit makes no reference cycles worth collecting while it runs, and the cyclic
    # collector's passes over hundreds of thousands of live operations only cost time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _audit_sorted(ops, policy, budget, memory_ops, truth, report)
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
    )
    report.files = stats.files
    report.torn = stats.torn
    report.unfinished = stats.unfinished
    report.seconds = time.perf_counter() - started
    return report
