"""Reading audit logs: one JSON object per line, each one store operation (docs/audit.md).

:func:`read_ops` streams the lines of every file, validates each strictly and
yields :class:`~fencepost.audit.ops.Op` values. A mistake is a :class:`LogError`
naming ``file:line`` and the field: malformed JSON, an unknown or missing field,
NaN, a float, a number out of range, nesting deeper than JSON values need, a
lone surrogate, invalid UTF-8, a line over 1 MiB. Nothing is guessed.

Two lines may describe one operation: a ``pending`` line written before a
mutating call, and the line that completes it (same ``worker`` and ``seq``).
A pending line that is never completed (the process was killed in the call)
becomes an indefinite operation once every file is read. A last line without
its newline (a process killed while writing it) is skipped and counted in
:attr:`LogStats.torn`, never an error: that is what ``kill -9`` leaves.

Cost: O(bytes) time; memory O(pending calls in flight + workers), plus, per
worker, the ranges of sequence numbers seen (one range while they are
contiguous), used to refuse a line logged twice.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fencepost.audit.ops import ATTEMPT, DROPPED, INF, STORE_OPS, Op, Status
from fencepost.judge.values import BadValue, text
from fencepost.judge.wire import (
    checkpoint_from_json,
    checkpoint_to_json,
    cut_from_json,
    cut_to_json,
    membership_from_json,
    membership_to_json,
    record_from_json,
    record_to_json,
)

#: The version of the log format this reader understands.
VERSION = 1
MAX_LINE_BYTES = 1 << 20
#: Times, sequence numbers, revisions and epochs are integers in [0, MAX_INT].
MAX_INT = (1 << 63) - 1

_FIELDS = frozenset(
    {"v", "worker", "seq", "stream", "op", "args", "t0", "t1", "status", "result", "error"}
    | {"attempt"}
)
_REQUIRED = ("v", "worker", "seq", "stream", "op", "t0", "status")
_STATUSES = {s.value: s for s in Status}
_OUTCOMES = ("published", "confirmed", "unchanged", "withheld", "gave_up")


class LogError(ValueError):
    """A line the audit cannot read: ``where`` is ``file:line``."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class _Bad(ValueError):
    """A problem inside one line, before its place is known."""


def _no_constant(name: str) -> object:
    raise _Bad(f"{name} is not a number the log may hold; numbers are finite integers")


def _no_float(literal: str) -> object:
    raise _Bad(f"{literal} is not an integer; times, revisions and epochs are integers")


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_no_float)


def _int(value: object, name: str, *, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    if type(value) is not int:
        kind = "a bool" if isinstance(value, bool) else type(value).__name__
        raise _Bad(f"{name}: an integer is required, got {kind} {value!r}"[:200])
    if not 0 <= value <= MAX_INT:
        raise _Bad(f"{name}: must be between 0 and 2**63-1, got {value}"[:200])
    return value


def _str(value: object, name: str, *, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    try:
        return text(value, name)
    except BadValue as exc:
        raise _Bad(str(exc)) from None


def _obj(value: object, name: str, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{name}: a JSON object is required, got {type(value).__name__}")
    extra = value.keys() - keys
    if extra:
        raise _Bad(f"{name}.{sorted(extra)[0]}: unknown field; allowed: {', '.join(sorted(keys))}")
    missing = keys - value.keys()
    if missing:
        raise _Bad(f"{name}.{sorted(missing)[0]}: missing required field")
    return value


def _value(parse: Any, data: object, name: str) -> Any:
    try:
        return parse(data, name)
    except BadValue as exc:
        raise _Bad(str(exc)) from None


def _args(op: str, raw: object) -> dict[str, Any]:
    """The arguments of ``op`` as the judge's values."""
    if op in ("read_publication", "dropped"):
        _obj(raw, "args", frozenset())
        return {}
    if op == "create_stream" or op == "write_membership":
        a = _obj(raw, "args", frozenset({"membership"}))
        return {"membership": _value(membership_from_json, a["membership"], "args.membership")}
    if op == "write_publication":
        a = _obj(raw, "args", frozenset({"expected_revision", "epoch", "cut", "op_id"}))
        return {
            "expected_revision": _int(a["expected_revision"], "args.expected_revision"),
            "epoch": _int(a["epoch"], "args.epoch"),
            "cut": _value(cut_from_json, a["cut"], "args.cut"),
            "op_id": _str(a["op_id"], "args.op_id"),
        }
    if op == "read_membership":
        a = _obj(raw, "args", frozenset({"epoch"}))
        return {"epoch": _int(a["epoch"], "args.epoch", nullable=True)}
    if op == "read_checkpoint":
        a = _obj(raw, "args", frozenset({"epoch", "partition"}))
        return {
            "epoch": _int(a["epoch"], "args.epoch"),
            "partition": _str(a["partition"], "args.partition"),
        }
    if op == "read_checkpoints":
        a = _obj(raw, "args", frozenset({"epoch"}))
        return {"epoch": _int(a["epoch"], "args.epoch")}
    if op == "write_checkpoint":
        a = _obj(raw, "args", frozenset({"expected_generation", "checkpoint"}))
        return {
            "expected_generation": _int(
                a["expected_generation"], "args.expected_generation", nullable=True
            ),
            "checkpoint": _value(checkpoint_from_json, a["checkpoint"], "args.checkpoint"),
        }
    if op == "record_outcome":
        a = _obj(raw, "args", frozenset({"event_id", "outcome"}))
        return {
            "event_id": _str(a["event_id"], "args.event_id"),
            "outcome": _str(a["outcome"], "args.outcome"),
        }
    if op == "outcomes":
        a = _obj(raw, "args", frozenset({"event_ids"}))
        ids = a["event_ids"]
        if not isinstance(ids, list):
            raise _Bad("args.event_ids: a list of event ids is required")
        return {"event_ids": [_str(x, f"args.event_ids[{i}]") for i, x in enumerate(ids)]}
    assert op == ATTEMPT
    a = _obj(raw, "args", frozenset({"policy"}))
    if a["policy"] not in ("monotone", "reset"):
        raise _Bad(f"args.policy: monotone or reset, got {a['policy']!r}"[:200])
    return {"policy": a["policy"]}


def _result(op: str, status: Status, raw: object) -> Any:
    """The result of ``op`` (present exactly when the status is ok or conflict)."""
    if op in ("create_stream", "read_publication", "write_publication"):
        return _value(record_from_json, raw, "result")
    if op == "read_membership":
        return _value(membership_from_json, raw, "result")
    if op == "write_membership":
        if raw is not None:
            raise _Bad("result: write_membership returns null")
        return None
    if op == "read_checkpoint" or (op == "write_checkpoint" and status is Status.CONFLICT):
        return None if raw is None else _value(checkpoint_from_json, raw, "result")
    if op == "write_checkpoint":
        return _value(checkpoint_from_json, raw, "result")
    if op == "read_checkpoints":
        if not isinstance(raw, list):
            raise _Bad("result: read_checkpoints returns a list of checkpoints")
        return tuple(_value(checkpoint_from_json, c, f"result[{i}]") for i, c in enumerate(raw))
    if op == "record_outcome":
        return _str(raw, "result")
    if op == "outcomes":
        if not isinstance(raw, dict):
            raise _Bad("result: outcomes returns an object of event id to outcome")
        return {_str(k, "result"): _str(v, f"result.{k}") for k, v in raw.items()}
    if op == DROPPED:
        r = _obj(raw, "result", frozenset({"lines"}))
        return {"lines": _int(r["lines"], "result.lines")}
    assert op == ATTEMPT
    r = _obj(raw, "result", frozenset({"outcome", "epoch", "cut", "reason", "op_id"}))
    if r["outcome"] not in _OUTCOMES:
        raise _Bad(f"result.outcome: one of {', '.join(_OUTCOMES)}, got {r['outcome']!r}"[:200])
    return {
        "outcome": r["outcome"],
        "epoch": _int(r["epoch"], "result.epoch", nullable=True),
        "cut": _value(cut_from_json, r["cut"], "result.cut"),
        "reason": _str(r["reason"], "result.reason", nullable=True),
        "op_id": _str(r["op_id"], "result.op_id", nullable=True),
    }


@dataclass(slots=True)
class Line:
    """One decoded line: an operation, or a pending announcement of one."""

    op: Op
    pending: bool


def parse_line(raw: str, where: str) -> Line:
    """One line of the log as an operation; :class:`LogError` naming ``where`` if it is not."""
    try:
        data = _DECODER.decode(raw)
    except _Bad as exc:
        raise LogError(where, str(exc)) from None
    except RecursionError:
        raise LogError(where, "nested too deeply to be a log line") from None
    except ValueError as exc:
        shown = raw if len(raw) <= 60 else raw[:57] + "..."
        raise LogError(where, f"not JSON ({exc}): {shown!r}") from None
    try:
        return _line(data, where)
    except _Bad as exc:
        raise LogError(where, str(exc)) from None
    except RecursionError:
        raise LogError(where, "nested too deeply to be a log line") from None


def _line(data: object, where: str) -> Line:
    if not isinstance(data, dict):
        raise _Bad(f"a log line is a JSON object, got {type(data).__name__}")
    extra = data.keys() - _FIELDS
    if extra:
        raise _Bad(f"{sorted(extra)[0]}: unknown field; allowed: {', '.join(sorted(_FIELDS))}")
    for key in _REQUIRED:
        if key not in data:
            raise _Bad(f"{key}: missing required field")
    if data["v"] != VERSION or type(data["v"]) is not int:
        raise _Bad(f"v: this reader knows log format version {VERSION}, got {data['v']!r}"[:200])
    op = data["op"]
    if type(op) is not str or (op not in STORE_OPS and op not in (ATTEMPT, DROPPED)):
        known = ", ".join((*STORE_OPS, ATTEMPT, DROPPED))
        raise _Bad(f"op: unknown operation {op!r}; known: {known}"[:300])
    raw_status = data["status"]
    pending = raw_status == "pending"
    status = (
        Status.INDEFINITE
        if pending
        else _STATUSES.get(raw_status if type(raw_status) is str else "")
    )
    if status is None:
        raise _Bad(f"status: ok, conflict, error, indefinite or pending, got {raw_status!r}"[:200])
    if status is Status.CONFLICT and op not in ("write_publication", "write_checkpoint"):
        raise _Bad(f"status: only a conditional write can conflict, not {op}")
    if op in (ATTEMPT, DROPPED) and status is not Status.OK:
        raise _Bad(f"status: an {op} line is always ok")
    t0 = _int(data["t0"], "t0")
    if pending:
        if "t1" in data or "result" in data:
            raise _Bad("a pending line has neither t1 nor result (the call has not returned)")
        t1: float = INF
    else:
        if "t1" not in data:
            raise _Bad("t1: missing required field (only a pending line has none)")
        t1 = _int(data["t1"], "t1")
        if t1 < t0:
            raise _Bad(f"t1: the call completed ({t1}) before it was invoked ({t0})")
        if status is Status.INDEFINITE:
            t1 = INF  # the caller gave up at t1; the call may take effect at any time
    answered = status in (Status.OK, Status.CONFLICT)
    if answered != ("result" in data):
        raise _Bad(
            "result: required when status is ok or conflict"
            if answered
            else f"result: a call with status {raw_status} has no result"
        )
    if "error" in data:
        _str(data["error"], "error")
    if "args" not in data:
        raise _Bad("args: missing required field")
    attempt = data.get("attempt")
    if attempt is not None:
        attempt = _str(attempt, "attempt")
    if op == ATTEMPT and attempt is None:
        raise _Bad("attempt: an attempt line names its attempt")
    args = _args(op, data["args"])
    result = _result(op, status, data["result"]) if answered else None
    return Line(
        Op(
            where,
            _str(data["worker"], "worker"),
            _int(data["seq"], "seq"),
            _str(data["stream"], "stream"),
            op,
            t0,
            t1,
            status,
            args,
            result,
            attempt,
        ),
        pending,
    )


class _Seen:
    """The sequence numbers seen for one worker, as sorted disjoint ranges."""

    __slots__ = ("hi", "lo")

    def __init__(self) -> None:
        self.lo: list[int] = []
        self.hi: list[int] = []

    def has(self, n: int) -> bool:
        i = bisect_right(self.lo, n) - 1
        return i >= 0 and n <= self.hi[i]

    def add(self, n: int) -> bool:
        """Add ``n``; False if it was already there."""
        lo, hi = self.lo, self.hi
        if hi and hi[-1] + 1 == n:
            hi[-1] = n
            return True
        i = bisect_right(lo, n) - 1
        if i >= 0 and n <= hi[i]:
            return False
        if i >= 0 and hi[i] + 1 == n:
            hi[i] = n
            if i + 1 < len(lo) and lo[i + 1] == n + 1:
                hi[i] = hi[i + 1]
                del lo[i + 1], hi[i + 1]
            return True
        if i + 1 < len(lo) and lo[i + 1] == n + 1:
            lo[i + 1] = n
            return True
        lo.insert(i + 1, n)
        hi.insert(i + 1, n)
        return True


@dataclass
class LogStats:
    """What reading the log found besides operations."""

    files: int = 0
    lines: int = 0
    torn: list[str] = field(default_factory=list)  # file:line of torn last lines
    unfinished: int = 0  # pending calls never completed: indefinite


def log_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every file named, a folder standing for the files in it (sorted by name)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.is_file()))
        else:
            found.append(path)
    return found


def read_ops(paths: Iterable[Path], stats: LogStats | None = None) -> Iterator[Op]:
    """Every operation of the files, in file order, pending calls paired with completions.

    Raises :class:`LogError` (``file:line``) on the first unreadable line and
    ``OSError`` when a file cannot be opened.
    """
    stats = stats if stats is not None else LogStats()
    pending: dict[tuple[str, int], Op] = {}
    seen: dict[str, _Seen] = {}
    for path in paths:
        stats.files += 1
        with open(path, "rb") as handle:
            number = 0
            for raw in handle:
                number += 1
                where = f"{path}:{number}"
                if not raw.endswith(b"\n"):
                    stats.torn.append(where)  # the last line, cut short by a kill
                    break
                if len(raw) > MAX_LINE_BYTES:
                    raise LogError(where, f"longer than {MAX_LINE_BYTES} bytes")
                try:
                    decoded = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise LogError(where, f"not UTF-8 text ({exc.reason})") from None
                if not decoded.strip():
                    continue
                stats.lines += 1
                line = parse_line(decoded, where)
                op = line.op
                key = (op.worker, op.seq)
                if line.pending:
                    worker_seen = seen.get(op.worker)
                    if worker_seen is not None and worker_seen.has(op.seq):
                        continue  # its completion was in a file read earlier
                    if key in pending:
                        raise LogError(where, f"worker {op.worker} seq {op.seq} announced twice")
                    pending[key] = op
                    continue
                announced = pending.pop(key, None)
                if announced is not None and (
                    announced.kind != op.kind
                    or announced.stream != op.stream
                    or announced.t0 != op.t0
                ):
                    raise LogError(
                        where,
                        f"worker {op.worker} seq {op.seq} completes a different call than the "
                        f"pending line at {announced.where} announced",
                    )
                if not seen.setdefault(op.worker, _Seen()).add(op.seq):
                    raise LogError(
                        where,
                        f"worker {op.worker} seq {op.seq} appears twice: each call is one line",
                    )
                yield op
    for key, op in pending.items():
        if not seen.setdefault(op.worker, _Seen()).add(op.seq):
            raise LogError(op.where, f"worker {key[0]} seq {key[1]} appears twice")
        stats.unfinished += 1
        yield op


def _args_to_json(op: Op) -> dict[str, Any]:
    a = op.args
    if op.kind in ("create_stream", "write_membership"):
        return {"membership": membership_to_json(a["membership"])}
    if op.kind == "write_publication":
        return {**a, "cut": cut_to_json(a["cut"])}
    if op.kind == "write_checkpoint":
        return {
            "expected_generation": a["expected_generation"],
            "checkpoint": checkpoint_to_json(a["checkpoint"]),
        }
    return dict(a)


def _result_to_json(op: Op) -> Any:
    r = op.result
    if op.kind in ("create_stream", "read_publication", "write_publication"):
        return record_to_json(r)
    if op.kind == "read_membership":
        return membership_to_json(r)
    if op.kind in ("read_checkpoint", "write_checkpoint"):
        return None if r is None else checkpoint_to_json(r)
    if op.kind == "read_checkpoints":
        return [checkpoint_to_json(c) for c in r]
    if op.kind == ATTEMPT:
        return {**r, "cut": cut_to_json(r["cut"])}
    return r


def op_to_json(op: Op) -> dict[str, Any]:
    """The log line of ``op`` (an indefinite op is written as a pending line)."""
    line: dict[str, Any] = {
        "v": VERSION,
        "worker": op.worker,
        "seq": op.seq,
        "stream": op.stream,
        "op": op.kind,
        "args": _args_to_json(op),
        "t0": op.t0,
    }
    if op.attempt is not None:
        line["attempt"] = op.attempt
    if op.status is Status.INDEFINITE:
        line["status"] = "pending"
        return line
    line["t1"] = int(op.t1)
    line["status"] = op.status.value
    if op.status in (Status.OK, Status.CONFLICT):
        line["result"] = _result_to_json(op)
    return line
