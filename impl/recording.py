"""Recording what a store's callers saw, for ``fencepost audit`` (docs/audit.md).

:class:`RecordingStore` wraps any :class:`~fencepost.impl.stores.Store` and
writes one line per call, in the log format of docs/audit.md (schema:
docs/audit-log.schema.json): worker, sequence number, stream, operation,
arguments, invocation and completion times, and the answer (``ok``,
``conflict``, a definite ``error``, or ``indefinite`` when the response was
lost). A mutating call is announced by a ``pending`` line first, so a process
killed inside the call leaves an indefinite operation in the log, not nothing.
:meth:`RecordingStore.attempt` runs one publisher attempt and tags its calls,
then writes the outcome the attempt reported. Errors pass through unchanged:
the caller sees exactly what it would see without the recorder.

:class:`LogWriter` appends lines with one ``write`` each (a ``kill -9`` loses at
most the line being written, which the audit skips), rotates to a new segment
(``LOG.1``, ``LOG.2``, ...) when a segment reaches ``max_bytes``, and never
blocks or fails its caller on a full disk: a line that cannot be written is
dropped and counted per stream (:attr:`LogWriter.dropped`), and once writing
works again a ``dropped`` line tells the audit that stream's history has a hole.

Every segment starts with a **segment line** (``"op":"segment"``: the log's name,
the segment's number, and the time it was opened, read under the writer's lock
after every line of the previous segments was written). It tells the audit where
its knowledge starts once older segments are deleted (``keep``), and it is padded
with blanks to :data:`SEGMENT_LINE_BYTES`: when the disk stays full to the end,
:meth:`LogWriter.close` overwrites it in place (no new block is needed) with the
lines it dropped per stream, so even then the log says it is incomplete.

This module writes the format itself, with the implementation's own codec: the
audit (``fencepost.audit``) reads it with its own parser, and a test checks
the two agree.

Cost: one ``json.dumps`` and one ``write`` system call per line, two lines
per mutating call; no fsync (the lines reach the kernel, which is what
survives ``kill -9``). Measured in ``benchmarks/audit.py``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from fencepost.impl.codec import checkpoint_to_json, cut_to_json, membership_to_json, record_to_json
from fencepost.impl.cuts import Cut
from fencepost.impl.merge import MergeSummary, summarize
from fencepost.impl.publisher import Publisher, PublishResult
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    BatchWrite,
    CheckpointApplied,
    CheckpointWrite,
    IndefiniteStoreError,
    PublicationWrite,
    Store,
    check_batch,
)

T = TypeVar("T")
JSON = Any

#: The log format version written (docs/audit.md).
VERSION = 1
DEFAULT_MAX_BYTES = 64 << 20
#: The length of a segment line with its padding and newline: room for the drop counts
#: written into it in place when the disk stays full (more streams than fit: a total).
SEGMENT_LINE_BYTES = 512


def default_worker() -> str:
    """A name no other process will use: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class LogWriter:
    """Appends audit lines to ``path`` and its rotated segments; thread-safe.

    ``max_bytes``: a segment is closed once it holds at least that much and
    the next line opens ``path.N`` (N counting up, continuing after segments
    already there). ``keep``: if set, only the newest ``keep`` segments are
    kept (older ones are deleted; the audit then starts mid-history, which it
    handles). ``clock``: integer time shared by every worker of the log.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
        write: Callable[[int, bytes], int] = os.write,
    ) -> None:
        if type(max_bytes) is not int or max_bytes < 1:
            raise ValueError(f"max_bytes must be a positive integer, got {max_bytes!r}")
        if keep is not None and (type(keep) is not int or keep < 1):
            raise ValueError(f"keep must be a positive integer or None, got {keep!r}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep
        self.clock = clock
        self._write = write
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._segment = self._last_segment()
        self._name = f"recorder-{os.getpid()}-{id(self):x}"
        self._regular = not (self.path.is_char_device() or self.path.is_fifo())
        #: Lines dropped (disk full or unwritable), per stream, not yet reported in the log.
        self.pending_drops: dict[str, list[int]] = {}
        #: Lines dropped in all, per stream.
        self.dropped: dict[str, int] = {}
        self.lines = 0

    def segment_path(self, n: int) -> Path:
        return self.path if n == 0 else self.path.with_name(f"{self.path.name}.{n}")

    def segments(self) -> list[Path]:
        """Every segment of this log on disk, oldest first."""
        return [
            self.segment_path(n) for n in range(self._segment + 1) if self.segment_path(n).exists()
        ]

    def _last_segment(self) -> int:
        prefix = self.path.name + "."
        last = 0
        try:
            names = os.listdir(self.path.parent or ".")
        except OSError:
            return 0
        for name in names:
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                last = max(last, int(name[len(prefix) :]))
        return last

    def _open(self) -> int | None:
        """The current segment, opened for appending; a new one starts with its segment line
        (a segment without one is never written to: it is retried at the next line)."""
        if self._fd is not None:
            return self._fd
        try:
            # O_NONBLOCK: a FIFO nobody reads must not block the caller (its open fails, and
            # the lines are dropped and counted); on a regular file it changes nothing.
            fd = os.open(
                self.segment_path(self._segment),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK,
                0o644,
            )
            size = os.fstat(fd).st_size
        except OSError:
            return None
        if size == 0 and self._regular:
            if not self._write_segment_line(fd):
                os.close(fd)
                with contextlib.suppress(OSError):  # no segment without its line
                    if os.stat(self.segment_path(self._segment)).st_size == 0:
                        os.unlink(self.segment_path(self._segment))
                return None
            size = SEGMENT_LINE_BYTES
        self._fd = fd
        self._size = size
        return fd

    def _segment_line(
        self, opened: int, closed: int, result: Mapping[str, JSON], number: int | None = None
    ) -> bytes:
        text = _encode(
            {
                "v": VERSION,
                "worker": self._name,
                "seq": 0,
                "stream": "",
                "op": "segment",
                "args": {
                    "log": self.path.name,
                    "segment": self._segment if number is None else number,
                },
                "t0": opened,
                "t1": closed,
                "status": "ok",
                "result": result,
            }
        ).encode()
        return text.ljust(SEGMENT_LINE_BYTES - 1) + b"\n"

    def _write_segment_line(self, fd: int) -> bool:
        now = self.clock()
        data = self._segment_line(now, now, {"dropped": {}, "unnamed": 0})
        try:
            return self._write(fd, data) == len(data)
        except OSError:
            return False

    def _drops_in_segment_line(self) -> bool:
        """Write the drops not yet reported into a segment line in place (the newest segment
        that has one: a segment begun on the full disk may have none): it needs no new
        block, so it works on a full disk. True if they are there now."""
        return any(self._drops_in(self.segment_path(n)) for n in range(self._segment, -1, -1))

    def _drops_in(self, path: Path) -> bool:
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return False
        try:
            first = os.pread(fd, SEGMENT_LINE_BYTES, 0)
            line = json.loads(first) if len(first) == SEGMENT_LINE_BYTES else None
            if not isinstance(line, dict) or line.get("op") != "segment":
                return False
            number = line["args"]["segment"]
            old = line["result"]
            dropped: dict[str, int] = dict(old["dropped"])
            for stream, (count, _, _) in self.pending_drops.items():
                dropped[stream] = dropped.get(stream, 0) + count
            result: dict[str, JSON] = {"dropped": dropped, "unnamed": old["unnamed"]}
            closed = self.clock()
            data = self._segment_line(line["t0"], closed, result, number)
            if len(data) > SEGMENT_LINE_BYTES:  # too many streams to name: a total
                total = sum(dropped.values()) + old["unnamed"]
                data = self._segment_line(
                    line["t0"], closed, {"dropped": {}, "unnamed": total}, number
                )
            if os.pwrite(fd, data, 0) != len(data):
                return False
        except (OSError, ValueError, KeyError, TypeError):
            return False
        finally:
            os.close(fd)
        self.pending_drops.clear()
        return True

    def _rotate(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._segment += 1
        if self.keep is not None:
            for n in range(self._segment - self.keep, -1, -1):
                try:
                    os.unlink(self.segment_path(n))
                except OSError:
                    break

    def _emit(self, data: bytes) -> bool:
        fd = self._open()
        if fd is None:
            return False
        try:
            written = self._write(fd, data)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS):
                pass  # any write error drops the line: the caller must never fail for the log
            return False
        if written != len(data):  # a torn line: finish this segment, start the next
            self._rotate()
            return False
        self._size += written
        if self._size >= self.max_bytes and self._regular:
            self._rotate()
        return True

    def write(self, line: Mapping[str, JSON]) -> bool:
        """Append one line; False (and counted) if it had to be dropped."""
        return self.write_text(str(line.get("stream", "")), _encode(line) + "\n")

    def write_text(self, stream: str, text: str) -> bool:
        """Append ``text`` (one JSON line with its newline) about ``stream``; False if dropped."""
        data = text.encode()
        with self._lock:
            if self.pending_drops and not self._report_drops():
                self._count_drop(stream)
                return False
            if self._emit(data):
                self.lines += 1
                return True
            self._count_drop(stream)
            return False

    def _count_drop(self, stream: str) -> None:
        now = self.clock()
        span = self.pending_drops.setdefault(stream, [0, now, now])
        span[0] += 1
        span[2] = now
        self.dropped[stream] = self.dropped.get(stream, 0) + 1

    def _report_drops(self) -> bool:
        for stream, (count, first, last) in list(self.pending_drops.items()):
            line = {
                "v": VERSION,
                "worker": self._name,
                "seq": first,
                "stream": stream,
                "op": "dropped",
                "args": {},
                "t0": first,
                "t1": last,
                "status": "ok",
                "result": {"lines": count},
            }
            if not self._emit((json.dumps(line, separators=(",", ":")) + "\n").encode()):
                return False
            del self.pending_drops[stream]
        return True

    def close(self) -> None:
        """Report the drops not yet reported (as ``dropped`` lines, or, on a disk still
        full, in the segment line), then close."""
        with self._lock:
            if self.pending_drops and not self._report_drops() and self._regular:
                self._drops_in_segment_line()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _encode(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"))


def _checkpoint_write(w: CheckpointWrite) -> tuple[str, str]:
    if isinstance(w, CheckpointApplied):
        return "ok", _encode(checkpoint_to_json(w.checkpoint))
    return "conflict", _encode(None if w.checkpoint is None else checkpoint_to_json(w.checkpoint))


def _publication_write(w: PublicationWrite) -> tuple[str, str]:
    return ("ok" if isinstance(w, Applied) else "conflict"), _encode(record_to_json(w.record))


def _answer(value: JSON) -> tuple[str, str]:
    return "ok", _encode(value)


class RecordingStore:
    """``inner``, with every call written to ``log`` as worker ``worker``.

    One worker is one sequential caller: give each thread its own
    RecordingStore (sharing one :class:`LogWriter` is fine). ``worker``
    defaults to :func:`default_worker`; it must be unique per process
    incarnation, or the audit cannot tell two processes apart.
    """

    def __init__(self, inner: Store, log: LogWriter, worker: str | None = None) -> None:
        self.inner = inner
        self.log = log
        self.worker = worker or default_worker()
        self._seq = 0
        self._attempts = 0
        self._attempt: str | None = None
        self._worker = _encode(self.worker)
        self._names: dict[str, str] = {}
        self._memberships: dict[Membership, str] = {}

    def _head(self, seq: int, stream: str, op: str, args: str, t0: int) -> str:
        """The line up to ``t0``, written as text: the recorder's cost is its caller's."""
        names = self._names
        if stream not in names:
            if len(names) > 4096:
                names.clear()
            names[stream] = _encode(stream)
        attempt = "" if self._attempt is None else f',"attempt":{_encode(self._attempt)}'
        return (
            f'{{"v":{VERSION},"worker":{self._worker},"seq":{seq},"stream":{names[stream]},'
            f'"op":"{op}","args":{args},"t0":{t0}{attempt}'
        )

    def _membership(self, membership: Membership) -> str:
        """A membership's JSON text, cached: every attempt reads the same one."""
        cache = self._memberships
        text = cache.get(membership)
        if text is None:
            if len(cache) > 64:
                cache.clear()
            text = cache[membership] = _encode(membership_to_json(membership))
        return text

    def _call(
        self,
        stream: str,
        op: str,
        args: str,
        call: Callable[[], T],
        answer: Callable[[T], tuple[str, str]],
        mutating: bool,
    ) -> T:
        seq = self._seq
        self._seq += 1
        clock = self.log.clock
        t0 = clock()
        head = self._head(seq, stream, op, args, t0)
        if mutating:
            self.log.write_text(stream, head + ',"status":"pending"}\n')
        try:
            value = call()
        except IndefiniteStoreError as exc:
            error = _encode(str(exc)[:300])
            self.log.write_text(
                stream, f'{head},"t1":{clock()},"status":"indefinite","error":{error}}}\n'
            )
            raise
        except Exception as exc:
            error = _encode(f"{type(exc).__name__}: {exc}"[:300])
            self.log.write_text(
                stream, f'{head},"t1":{clock()},"status":"error","error":{error}}}\n'
            )
            raise
        t1 = clock()
        status, result = answer(value)
        self.log.write_text(stream, f'{head},"t1":{t1},"status":"{status}","result":{result}}}\n')
        return value

    # --- the publisher attempt ---------------------------------------------------

    def attempt(self, publisher: Publisher) -> PublishResult:
        """Run ``publisher.attempt()`` (its store must be this one), tagging its calls,
        then write the outcome it reported. An attempt that raises reports nothing."""
        self._attempts += 1
        attempt = f"{self.worker}/{self._attempts}"
        seq = self._seq
        self._seq += 1
        t0 = self.log.clock()
        self._attempt = attempt
        try:
            result = publisher.attempt()
        finally:
            self._attempt = None
        self._attempt = attempt
        head = self._head(
            seq, publisher.stream, "attempt", f'{{"policy":"{publisher.policy.value}"}}', t0
        )
        self._attempt = None
        outcome = {
            "outcome": result.outcome.value,
            "epoch": result.epoch,
            "cut": None if result.cut is None else cut_to_json(result.cut),
            "reason": None if result.reason is None else result.reason.value,
            "op_id": result.op_id,
        }
        t1 = self.log.clock()
        self.log.write_text(
            publisher.stream, f'{head},"t1":{t1},"status":"ok","result":{_encode(outcome)}}}\n'
        )
        return result

    # --- the Store protocol --------------------------------------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        return self._call(
            stream,
            "create_stream",
            f'{{"membership":{self._membership(membership)}}}',
            lambda: self.inner.create_stream(stream, membership),
            lambda r: _answer(record_to_json(r)),
            True,
        )

    def read_publication(self, stream: str) -> PublicationRecord:
        return self._call(
            stream,
            "read_publication",
            "{}",
            lambda: self.inner.read_publication(stream),
            lambda r: _answer(record_to_json(r)),
            False,
        )

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        args = _encode(
            {
                "expected_revision": expected_revision,
                "epoch": epoch,
                "cut": cut_to_json(cut),
                "op_id": op_id,
            }
        )
        return self._call(
            stream,
            "write_publication",
            args,
            lambda: self.inner.write_publication(stream, expected_revision, epoch, cut, op_id),
            _publication_write,
            True,
        )

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return self._call(
            stream,
            "read_membership",
            _encode({"epoch": epoch}),
            lambda: self.inner.read_membership(stream, epoch),
            lambda m: ("ok", self._membership(m)),
            False,
        )

    def write_membership(self, stream: str, membership: Membership) -> None:
        self._call(
            stream,
            "write_membership",
            f'{{"membership":{self._membership(membership)}}}',
            lambda: self.inner.write_membership(stream, membership),
            lambda _: _answer(None),
            True,
        )

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        return self._call(
            stream,
            "read_checkpoint",
            _encode({"epoch": epoch, "partition": partition}),
            lambda: self.inner.read_checkpoint(stream, epoch, partition),
            lambda c: _answer(None if c is None else checkpoint_to_json(c)),
            False,
        )

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self._call(
            stream,
            "read_checkpoints",
            _encode({"epoch": epoch}),
            lambda: self.inner.read_checkpoints(stream, epoch),
            lambda cs: _answer([checkpoint_to_json(c) for c in cs]),
            False,
        )

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        return self._call(
            stream,
            "write_checkpoint",
            _encode(
                {
                    "expected_generation": expected_generation,
                    "checkpoint": checkpoint_to_json(checkpoint),
                }
            ),
            lambda: self.inner.write_checkpoint(stream, expected_generation, checkpoint),
            _checkpoint_write,
            True,
        )

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """The summary of the vector this call reads and records as ``read_checkpoints``.

        The audit judges a publisher's decision by the vector it was made from,
        so a recorded publisher shows it the whole vector: O(N) for N members,
        where the store's own summary read is O(log N). The summary is
        :func:`~fencepost.impl.merge.summarize` of that vector against the
        epoch's membership (immutable once written, read unrecorded).
        """
        checkpoints = self.read_checkpoints(stream, epoch)
        return summarize(self.inner.read_membership(stream, epoch), checkpoints)

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """Recorded as one ``write_checkpoint`` per write, each announced ``pending`` first,
        all sharing the batch's interval: the batch commits at one point inside it."""
        batch = check_batch(writes)
        clock = self.log.clock
        t0 = clock()
        heads = []
        for expected, checkpoint in batch:
            seq = self._seq
            self._seq += 1
            args = _encode(
                {"expected_generation": expected, "checkpoint": checkpoint_to_json(checkpoint)}
            )
            head = self._head(seq, stream, "write_checkpoint", args, t0)
            self.log.write_text(stream, head + ',"status":"pending"}\n')
            heads.append(head)
        try:
            results = self.inner.write_checkpoints(stream, batch)
        except IndefiniteStoreError as exc:
            self._complete(stream, heads, "indefinite", _encode(str(exc)[:300]))
            raise
        except Exception as exc:
            self._complete(stream, heads, "error", _encode(f"{type(exc).__name__}: {exc}"[:300]))
            raise
        t1 = clock()
        for head, result in zip(heads, results, strict=True):
            status, text = _checkpoint_write(result)
            self.log.write_text(stream, f'{head},"t1":{t1},"status":"{status}","result":{text}}}\n')
        return results

    def _complete(self, stream: str, heads: Sequence[str], status: str, error: str) -> None:
        t1 = self.log.clock()
        for head in heads:
            self.log.write_text(stream, f'{head},"t1":{t1},"status":"{status}","error":{error}}}\n')

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        stored: str = self._call(
            stream,
            "record_outcome",
            _encode({"event_id": event_id, "outcome": outcome}),
            lambda: str(self.inner.record_outcome(stream, event_id, outcome)),
            _answer,
            True,
        )
        return stored

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        return self._call(
            stream,
            "outcomes",
            _encode({"event_ids": list(event_ids)}),
            lambda: self.inner.outcomes(stream, event_ids),
            lambda found: _answer(dict(found)),
            False,
        )

    def close(self) -> None:
        self.inner.close()
