"""Reading audit logs: one JSON object per line, each one store operation (docs/audit.md).

:func:`read_ops` streams the lines of every file, validates each strictly and
yields :class:`~fencepost.audit.ops.Op` values. A mistake is a :class:`LogError`
naming ``file:line`` and the field: malformed JSON, a key given twice, an
unknown or missing field, NaN, a float, a number out of range, nesting deeper
than JSON values need, a lone surrogate, invalid UTF-8, a line over 1 MiB (read
with a bound: 50 MB of garbage is refused after 1 MiB of it), a path that is a
FIFO or a device (refused at once, never waited for or read forever). Every
line is decoded by the one reader of untrusted JSON lines
(:func:`fencepost.inputs.jsonlines.decode_line`), so the audit refuses exactly
what the wire and the regression files refuse. Nothing is guessed.

Two lines may describe one operation: a ``pending`` line written before a
mutating call, and the line that completes it (same ``worker`` and ``seq``).
A pending line that is never completed (the process was killed in the call)
becomes an indefinite operation once every file is read. A last line without
its newline (a process killed while writing it) is skipped and counted in
:attr:`LogStats.torn`, never an error: that is what ``kill -9`` leaves. Only a
*plausible* torn line is skipped: it must be UTF-8 text starting a JSON object
with no control character; anything else (random bytes) is garbage, refused.

A **segment line** (``"op":"segment"``, written by the recorder as the first line
of every segment, :class:`LogStats.segments`) says which segment of which log the
file is and when it was opened: every line of an earlier segment carries times
at or before that instant. When a log's first segments were deleted (rotation
with ``keep``), the audit learns from it when its knowledge of the history
starts (:attr:`LogStats.start`), and a missing segment in the middle is a hole
(:attr:`LogStats.holes`). A recorder that could not write its ``dropped``
lines (the disk stayed full to the end) writes the counts into its segment line
in place, which pads itself with blanks for that purpose.

Each worker's invocation times must not go back as its call numbers go up (it
is one sequential caller on one clock): a regression is reported
(:attr:`LogStats.clock`), since the log's real-time order cannot then be trusted.

Cost: O(bytes) time; memory O(pending calls in flight + workers), plus, per
worker, the ranges of sequence numbers seen (one range while they are
contiguous), used to refuse a line logged twice, and one line of at most 1 MiB.
"""

from __future__ import annotations

import codecs
import copyreg
import io
import json
import os
import pickle
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fencepost.audit.ops import ATTEMPT, DROPPED, INF, SEGMENT, STORE_OPS, Op, Status
from fencepost.inputs.files import NotRegularFile, open_regular, refusal
from fencepost.inputs.jsonlines import MessageError, decode_line
from fencepost.judge.values import NOTHING as _NOTHING
from fencepost.judge.values import BadValue, Checkpoint, Cut, Endpoint, Record, text
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


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment line: segment ``number`` of the log ``log``, opened at ``t0`` by
    ``worker`` (a recorder); ``dropped`` lines per stream it could not write and
    never reported otherwise, ``unnamed`` dropped lines of streams it could not name."""

    where: str
    worker: str
    log: str
    number: int
    t0: int
    t1: int
    dropped: tuple[tuple[str, int], ...]
    unnamed: int


def _problem(exc: MessageError) -> str:
    """A reader's refusal in the audit's words (the field without the reader's ``line.``)."""
    if exc.field == "line":
        return exc.problem
    return f"{exc.field.removeprefix('line.')}: {exc.problem}"


def decode(raw: str, where: str) -> dict[str, Any]:
    """One line of the log as a JSON object, by the one reader of untrusted JSON lines."""
    try:
        return decode_line(raw, integers_only=True)
    except MessageError as exc:
        raise LogError(where, _problem(exc)) from None


def parse_line(raw: str, where: str) -> Line:
    """One line of the log as an operation; :class:`LogError` naming ``where`` if it is not."""
    data = decode(raw, where)
    try:
        return _line(data, where)
    except _Bad as exc:
        raise LogError(where, str(exc)) from None
    except RecursionError:
        raise LogError(where, "nested too deeply to be a log line") from None


_SEGMENT_FIELDS = frozenset(
    {"v", "worker", "seq", "stream", "op", "args", "t0", "t1", "status", "result"}
)


def parse_segment(data: dict[str, Any], where: str) -> Segment:
    """A segment line (``"op":"segment"``), strictly."""
    try:
        _obj(data, "segment line", _SEGMENT_FIELDS)
        if data["v"] != VERSION or type(data["v"]) is not int:
            raise _Bad(f"v: this reader knows log format version {VERSION}, got {data['v']!r}")
        if data["stream"] != "" or data["status"] != "ok":
            raise _Bad('a segment line has "stream":"" and "status":"ok"')
        _int(data["seq"], "seq")
        args = _obj(data["args"], "args", frozenset({"log", "segment"}))
        result = _obj(data["result"], "result", frozenset({"dropped", "unnamed"}))
        dropped = result["dropped"]
        if not isinstance(dropped, dict):
            raise _Bad("result.dropped: an object of stream to lines dropped is required")
        t0, t1 = _int(data["t0"], "t0"), _int(data["t1"], "t1")
        if t1 < t0:
            raise _Bad(f"t1: the segment was closed ({t1}) before it was opened ({t0})")
        return Segment(
            where,
            _str(data["worker"], "worker"),
            _str(args["log"], "args.log"),
            _int(args["segment"], "args.segment"),
            t0,
            t1,
            tuple(
                (_str(k, "result.dropped"), _int(n, f"result.dropped.{k}"))
                for k, n in sorted(dropped.items())
            ),
            _int(result["unnamed"], "result.unnamed"),
        )
    except _Bad as exc:
        raise LogError(where, str(exc)) from None


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
        known = ", ".join((*STORE_OPS, ATTEMPT, DROPPED, SEGMENT))
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


# --- the fast path -----------------------------------------------------------------------
#
# Most lines of a log are publication reads and writes. :func:`_fast` reads such a line
# with the C JSON scanner alone (no Python hook per object) and checks it field by field
# in straight-line code; any line it does not *accept* (another operation, an odd value,
# anything it cannot prove well-formed cheaply) goes to the strict reader above, which
# alone words every refusal. So the fast path changes no verdict and no error: it only
# accepts, never refuses, and what it accepts is exactly what the strict reader would
# have read, the same :class:`Op` (tests/audit/test_audit_fast.py checks both on
# thousands of valid and mutated lines).
#
# How it refuses what the hook would refuse, without the hook:
# - a key given twice: every ``:`` of the text separates a key from its value or sits
#   inside a string; a line whose ``:`` count equals the keys of the objects read has no
#   ``:`` in a string and no repeated key (a repeat makes one key of two separators);
# - NaN, Infinity, floats and integers posing as bools: every number read is checked to
#   be an ``int`` (``type(x) is int``), so a float or a constant is never accepted;
# - a lone surrogate: one can only come from a ``\u`` escape (the text is valid UTF-8),
#   so a line holding ``\u`` is left to the strict reader.
#
# Cost: one ``str.count`` and one ``in`` scan of the line in C, then O(fields).

#: The C scanner behind ``json.loads``, called directly: (object, end) of the text at 0.
_scan: Any = getattr(json.JSONDecoder(), "scan_once")  # noqa: B009 (set in __init__, untyped)
#: A record built from values already checked here, as ``Record`` would hold them: set
#: through its slots, without ``Record.__post_init__`` checking them a second time.
_new = object.__new__
_SLOTS: dict[str, Any] = {name: vars(Record)[name] for name in Record.__slots__}
_SET_EPOCH = _SLOTS["epoch"].__set__
_SET_CUT = _SLOTS["cut"].__set__
_SET_REVISION = _SLOTS["revision"].__set__
_SET_OP_ID = _SLOTS["op_id"].__set__
_ENDPOINTS = {"before": Endpoint.BEFORE, "through": Endpoint.THROUGH}
#: Cuts and records seen recently, reused (they are immutable): bounded, cleared when full.
_CUTS: dict[tuple[str, object], Cut] = {}
_CACHE_LIMIT = 4096
#: Worker and stream names seen recently: one string object per name, however many lines.
_NAMES: dict[str, str] = {}
_WRITE_PUBLICATION = "write_publication"
_READ_PUBLICATION = "read_publication"


def _fast_record(raw: object) -> tuple[int, str | None, Any, int, str | None] | None:
    """A record's JSON object (``record_from_json``) as ``(epoch, cut kind or None for
    nothing, cut at, revision, op_id)``, or None to leave it to the strict reader. Its
    object holds 4 keys, its cut 2 more unless nothing."""
    if type(raw) is not dict or len(raw) != 4:
        return None
    epoch = raw.get("epoch")
    revision = raw.get("revision")
    op_id = raw.get("op_id", 0)
    if (
        type(epoch) is not int
        or epoch < 0
        or type(revision) is not int
        or revision < 0
        or (op_id is not None and type(op_id) is not str)
        or "cut" not in raw
    ):
        return None
    cut = raw["cut"]
    if cut is None:
        return (epoch, None, None, revision, op_id)
    if type(cut) is not dict or len(cut) != 2:
        return None
    kind = cut.get("kind")
    at = cut.get("at")
    if (type(at) is not int and type(at) is not str) or (kind != "before" and kind != "through"):
        return None
    return (epoch, kind, at, revision, op_id)


def checked_record(epoch: int, cut: Cut, revision: int, op_id: str | None) -> Record:
    """``Record(epoch, cut, revision, op_id)`` for values already checked (by the fast
    reader, or when the record was first built and then pickled): set through its slots,
    without ``Record.__post_init__`` checking them a second time."""
    record: Record = _new(Record)
    _SET_EPOCH(record, epoch)
    _SET_CUT(record, cut)
    _SET_REVISION(record, revision)
    _SET_OP_ID(record, op_id)
    return record


def shared_cut(kind: str, at: object) -> Cut:
    """The cut ``kind at`` (``before`` or ``through``), one object per value recently seen."""
    key = (kind, at)
    cut = _CUTS.get(key)
    if cut is None:
        if len(_CUTS) >= _CACHE_LIMIT:
            _CUTS.clear()
        cut = _CUTS[key] = Cut(_ENDPOINTS[kind], at)  # type: ignore[arg-type]
    return cut


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
PICKLE_DISPATCH: dict[Any, Any] = {
    **copyreg.dispatch_table,
    MappingProxyType: _proxy,
    Record: _record,
    Cut: _cut,
    Checkpoint: _checkpoint,
}


#: An operation of the log as plain values (what :func:`read_entries` yields, what the
#: audit sorts and spills with ``marshal``): ``(stream, t0, worker, seq, index, payload)``,
#: ordered as the audit takes operations, ``index`` (reading order) breaking ties. The
#: payload is the :class:`Op` itself for the rare lines the strict reader read, or for a
#: publication read or write ``(where, kind, t1, status, args, result, attempt)``:
#: ``status`` the :class:`Status` value, ``args`` None for a read and ``(expected_revision,
#: epoch, cut kind, cut at, op_id)`` for a write, ``result`` None or ``(epoch, cut kind,
#: cut at, revision, op_id)``, a cut kind of None standing for the nothing cut.
Entry = tuple[str, int, str, int, int, Any]
_STATUS_OF = {s.value: s for s in Status}
#: Records seen recently, reused (immutable; a revision's ack and the reads showing it
#: are one record): bounded, cleared when full.
_RECORDS: dict[tuple[Any, ...], Record] = {}
_INDEFINITE = Status.INDEFINITE.value


def _flat_cut(kind: str | None, at: Any) -> Cut:
    return _NOTHING if kind is None else shared_cut(kind, at)


def inflate(entry: Entry) -> Op:
    """The :class:`Op` an entry stands for (its ``index`` set), built once, after the sort.

    Cost: for a plain payload, one ``Op``, one ``Record`` and two dictionary look-ups for
    shared cuts; an ``Op`` payload is returned as it is.
    """
    stream, t0, worker, seq, index, payload = entry
    if type(payload) is not tuple:
        op: Op = payload if type(payload) is Op else pickle.loads(payload)
        op.index = index
        return op
    where, kind, t1, status, a, r, attempt = payload
    if a is None:
        args: dict[str, Any] = {}
    else:
        args = {
            "expected_revision": a[0],
            "epoch": a[1],
            "cut": _NOTHING if a[2] is None else shared_cut(a[2], a[3]),
            "op_id": a[4],
        }
    if r is None:
        result = None
    else:
        result = _RECORDS.get(r)
        if result is None:
            if len(_RECORDS) >= _CACHE_LIMIT:
                _RECORDS.clear()
            cut = _NOTHING if r[1] is None else shared_cut(r[1], r[2])
            result = _RECORDS[r] = checked_record(r[0], cut, r[3], r[4])
    return Op(
        where, worker, seq, stream, kind, t0, t1, _STATUS_OF[status], args, result, attempt, index
    )


def flat_payload(op: Op) -> Any:
    """``op`` as a payload ``marshal`` can write: plain values for a publication read or
    write holding the values the fast reader makes, else the op pickled (bytes)."""
    kind, args, result = op.kind, op.args, op.result
    if kind in (_READ_PUBLICATION, _WRITE_PUBLICATION):
        try:
            if kind == _READ_PUBLICATION:
                a: tuple[Any, ...] | None = None
                plain = not args
            else:
                cut = args["cut"]
                a = (
                    args["expected_revision"],
                    args["epoch"],
                    None if cut.endpoint is Endpoint.NOTHING else cut.endpoint.value,
                    cut.at,
                    args["op_id"],
                )
                plain = len(args) == 4 and type(cut) is Cut
            r: tuple[Any, ...] | None = None
            if result is not None:
                rc = result.cut
                plain = plain and type(result) is Record and type(rc) is Cut
                r = (
                    result.epoch,
                    None if rc.endpoint is Endpoint.NOTHING else rc.endpoint.value,
                    rc.at,
                    result.revision,
                    result.op_id,
                )
            if plain and all(v is None or type(v) in (int, str) for v in (*(a or ()), *(r or ()))):
                return (op.where, kind, op.t1, op.status.value, a, r, op.attempt)
        except (AttributeError, KeyError, TypeError):
            pass
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = PICKLE_DISPATCH
    pickler.dump(op)
    return out.getvalue()


def _fast_flat(text: str, where: str) -> tuple[str, int, str, int, bool, Any] | None:
    """A publication read or write line as ``(stream, t0, worker, seq, pending, payload)``
    (see :data:`Entry`), read fast; None to leave it to the strict reader."""
    if "\\u" in text:
        return None
    if text[:1] != "{":
        return None
    try:
        data, end = _scan(text, 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    if end != len(text) or type(data) is not dict:
        return None
    kind = data.get("op")
    if kind == "write_publication":
        kind = _WRITE_PUBLICATION  # one string object for every line: cheaper to hold and pickle
    elif kind == "read_publication":
        kind = _READ_PUBLICATION
    else:
        return None
    keys = len(data)
    try:
        v = data["v"]
        worker = data["worker"]
        seq = data["seq"]
        stream = data["stream"]
        t0 = data["t0"]
        raw_status = data["status"]
        raw_args = data["args"]
    except KeyError:
        return None
    if (
        v != 1
        or type(v) is not int
        or type(worker) is not str
        or not worker
        or type(seq) is not int
        or not 0 <= seq <= MAX_INT
        or type(stream) is not str
        or not stream
        or type(t0) is not int
        or not 0 <= t0 <= MAX_INT
        or type(raw_args) is not dict
    ):
        return None
    known = 8  # v, worker, seq, stream, op, t0, status, args
    attempt = data.get("attempt")
    if "attempt" in data:
        known += 1
        if attempt is not None and (type(attempt) is not str or not attempt):
            return None
    if "error" in data:
        known += 1
        error = data["error"]
        if type(error) is not str or not error:
            return None
    pending = raw_status == "pending"
    t1: float
    if pending:
        status = _INDEFINITE
        t1 = INF
    else:
        if type(raw_status) is not str or raw_status not in _STATUS_OF or "t1" not in data:
            return None
        status = raw_status
        known += 1
        t1 = data["t1"]
        if type(t1) is not int or not t0 <= t1 <= MAX_INT:
            return None
        if status == _INDEFINITE:
            t1 = INF
    answered = status == "ok" or status == "conflict"
    if answered:
        if pending or "result" not in data:
            return None
        known += 1
    if keys != known:  # an unknown field, or t1/result where none may be
        return None
    a: tuple[int, int, str | None, Any, str] | None
    if kind == "read_publication":
        if raw_args or status == "conflict":
            return None
        a = None
        pairs = keys
    else:
        if len(raw_args) != 4:
            return None
        expected = raw_args.get("expected_revision")
        epoch = raw_args.get("epoch")
        op_id = raw_args.get("op_id")
        if (
            type(expected) is not int
            or not 0 <= expected <= MAX_INT
            or type(epoch) is not int
            or not 0 <= epoch <= MAX_INT
            or type(op_id) is not str
            or not op_id
            or "cut" not in raw_args
        ):
            return None
        cut = raw_args["cut"]
        pairs = keys + 4
        if cut is None:
            a = (expected, epoch, None, None, op_id)
        else:
            if type(cut) is not dict or len(cut) != 2:
                return None
            cut_kind = cut.get("kind")
            at = cut.get("at")
            if (type(at) is not int and type(at) is not str) or (
                cut_kind != "before" and cut_kind != "through"
            ):
                return None
            a = (expected, epoch, cut_kind, at, op_id)
            pairs += 2
    r = None
    if answered:
        r = _fast_record(data["result"])
        if r is None:
            return None
        pairs += 4 if r[1] is None else 6
    colons = text.count(":")
    if colons != pairs:  # a key given twice, or a ':' inside a string: which one?
        strings = [worker, stream, attempt, data.get("error"), *(a or ())]
        if r is not None:
            strings += (r[4], r[2])
        inside = sum(s.count(":") for s in strings if type(s) is str)
        if colons != pairs + inside:
            return None
    names = _NAMES
    if len(names) >= _CACHE_LIMIT:
        names.clear()
    worker = names.setdefault(worker, worker)
    stream = names.setdefault(stream, stream)
    return (stream, t0, worker, seq, pending, (where, kind, t1, status, a, r, attempt))


def _fast(text: str, where: str) -> Line | None:
    """A publication read or write line, read fast; None to leave it to the strict reader."""
    flat = _fast_flat(text, where)
    if flat is None:
        return None
    stream, t0, worker, seq, pending, payload = flat
    return Line(inflate((stream, t0, worker, seq, 0, payload)), pending)


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


@dataclass(frozen=True, slots=True)
class ClockRegression:
    """A worker's invocation time that went back as its call number went up."""

    where: str
    worker: str
    earlier: str  # file:line of the call before it
    back_by: int


@dataclass
class LogStats:
    """What reading the log found besides operations."""

    files: int = 0
    lines: int = 0
    torn: list[str] = field(default_factory=list)  # file:line of torn last lines
    unfinished: int = 0  # pending calls never completed: indefinite
    segments: list[Segment] = field(default_factory=list)
    clock: list[ClockRegression] = field(default_factory=list)
    #: Segments missing between the first and the last of a log: (log, number).
    holes: list[tuple[str, int]] = field(default_factory=list)
    #: When the log's knowledge of the history starts: every line of a deleted
    #: segment carries a time at or before it (None: every segment is there).
    start: int | None = None
    #: Lines the recorder dropped without naming their stream: every stream is incomplete.
    unnamed_drops: int = 0

    def finish(self) -> None:
        """Holes and the start of knowledge, from the segment lines read."""
        by_log: dict[str, dict[int, Segment]] = {}
        for seg in self.segments:
            by_log.setdefault(seg.log, {}).setdefault(seg.number, seg)
        starts: list[int] = []
        for name, numbers in sorted(by_log.items()):
            first, last = min(numbers), max(numbers)
            self.holes.extend((name, n) for n in range(first, last) if n not in numbers)
            if first > 0:  # segments 0 .. first-1 were deleted
                starts.append(numbers[first].t0)
        self.start = max(starts) if starts else None


_SUFFIX = re.compile(r"^(.*?)(?:\.(\d+))?$")


def _segment_order(path: Path) -> tuple[str, int, str]:
    """``LOG``, ``LOG.1``, ``LOG.2``, ..., ``LOG.10``: segments in the order written."""
    m = _SUFFIX.match(path.name)
    assert m is not None
    return (m.group(1), -1 if m.group(2) is None else int(m.group(2)), path.name)


def log_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every file named, a folder standing for the files in it (segments in their order:
    ``LOG``, ``LOG.1``, ..., ``LOG.10``). A folder entry that is a FIFO, a device or a
    socket is refused (:class:`LogError`), never skipped; a subfolder is skipped."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            entries = []
            for entry in sorted(path.iterdir(), key=_segment_order):
                try:
                    mode = entry.stat().st_mode
                except OSError as exc:
                    raise LogError(str(entry), f"cannot read: {exc.strerror or exc}") from None
                if entry.is_dir():
                    continue
                if not entry.is_file():
                    raise LogError(str(entry), refusal(mode))
                entries.append(entry)
            found.extend(entries)
        else:
            found.append(path)
    return found


_UTF8 = codecs.getincrementaldecoder("utf-8")


def _plausibly_torn(data: bytes) -> bool:
    """Whether a last line without its newline can be a log line cut short by a kill: UTF-8
    text (its last character may be cut) starting a JSON object, with no control character.
    Random bytes are not: they are garbage, never a torn line."""
    try:
        shown = _UTF8().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return shown.startswith("{") and not any(ch < " " for ch in shown)


def read_ops(paths: Iterable[Path], stats: LogStats | None = None) -> Iterator[Op]:
    """Every operation of the files, in file order, pending calls paired with completions.

    Raises :class:`LogError` (``file:line``) on the first unreadable line or a path
    that is not a regular file, and ``OSError`` when a file cannot be opened.
    """
    for entry in read_entries(paths, stats):
        yield inflate(entry)


def read_entries(paths: Iterable[Path], stats: LogStats | None = None) -> Iterator[Entry]:
    """What :func:`read_ops` yields, as :data:`Entry` values numbered in reading order:
    the publication lines (nearly all of a log) as plain values, no object built per
    operation until the audit takes it (:func:`inflate`), so the sort holds and spills
    plain tuples. Refuses exactly what :func:`read_ops` refuses, with the same errors.
    """
    stats = stats if stats is not None else LogStats()
    # (worker, seq) -> (stream, t0, kind, where, payload) of a pending call
    pending: dict[tuple[str, int], tuple[str, int, str, str, Any]] = {}
    seen: dict[str, _Seen] = {}
    latest: dict[str, tuple[int, int, str]] = {}  # worker -> (highest seq, its t0, where)
    index = 0
    fast = _fast_flat
    for path in paths:
        stats.files += 1
        try:
            handle = open_regular(path)
        except NotRegularFile as exc:
            raise LogError(str(path), exc.reason) from None
        name = str(path)
        with handle:
            # file_lines (fencepost.inputs.jsonlines), inlined: the same bounded reads,
            # without a generator and a tuple per line.
            readline = handle.readline
            number = 0
            while True:
                raw = readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                number += 1
                ended = raw[-1:] == b"\n"
                if ended:
                    raw = raw[:-1]
                if len(raw) > MAX_LINE_BYTES:
                    raise LogError(
                        f"{name}:{number}",
                        f"longer than {MAX_LINE_BYTES} bytes: not an audit log (no line of "
                        "one comes near it)",
                    ) from None
                where = f"{name}:{number}"
                if not ended:
                    if not _plausibly_torn(raw):
                        raise LogError(
                            where,
                            "the last line has no newline and is not the start of a log line "
                            "(not UTF-8 JSON text): garbage, not a line cut short by a kill",
                        )
                    stats.torn.append(where)  # the last line, cut short by a kill
                    break
                try:
                    decoded = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise LogError(where, f"not UTF-8 text ({exc.reason})") from None
                if not decoded or decoded.isspace():  # not decoded.strip(), without a copy
                    continue
                stats.lines += 1
                flat = fast(decoded, where)
                if flat is not None:
                    stream, t0, worker, seq, is_pending, payload = flat
                    kind = payload[1]
                else:
                    data = decode(decoded, where)
                    if data.get("op") == SEGMENT:
                        segment = parse_segment(data, where)
                        stats.segments.append(segment)
                        for op in _header_drops(segment, stats):
                            yield (op.stream, op.t0, op.worker, op.seq, index, op)
                            index += 1
                        continue
                    try:
                        line = _line(data, where)
                    except _Bad as exc:
                        raise LogError(where, str(exc)) from None
                    except RecursionError:
                        raise LogError(where, "nested too deeply to be a log line") from None
                    payload = op = line.op
                    stream, t0, worker, seq, kind = op.stream, op.t0, op.worker, op.seq, op.kind
                    is_pending = line.pending
                    if kind == DROPPED:
                        # the recorder's marker, not a call: no sequence number of a call
                        yield (stream, t0, worker, seq, index, op)
                        index += 1
                        continue
                if kind != ATTEMPT:  # _check_clock, inlined
                    last = latest.get(worker)
                    if last is None or seq > last[0]:
                        if last is not None and t0 < last[1]:
                            stats.clock.append(
                                ClockRegression(where, worker, last[2], last[1] - t0)
                            )
                        latest[worker] = (seq, t0, where)
                key = (worker, seq)
                worker_seen = seen.get(worker)
                if is_pending:
                    if worker_seen is not None and worker_seen.has(seq):
                        continue  # its completion was in a file read earlier
                    if key in pending:
                        raise LogError(where, f"worker {worker} seq {seq} announced twice")
                    pending[key] = (stream, t0, kind, where, payload)
                    continue
                announced = pending.pop(key, None)
                if announced is not None and (
                    announced[2] != kind or announced[0] != stream or announced[1] != t0
                ):
                    raise LogError(
                        where,
                        f"worker {worker} seq {seq} completes a different call than the "
                        f"pending line at {announced[3]} announced",
                    )
                if worker_seen is None:
                    worker_seen = seen[worker] = _Seen()
                if not worker_seen.add(seq):
                    raise LogError(
                        where,
                        f"worker {worker} seq {seq} appears twice: each call is one line",
                    )
                yield (stream, t0, worker, seq, index, payload)
                index += 1
    for (worker, seq), (stream, t0, _, where, payload) in pending.items():
        if not seen.setdefault(worker, _Seen()).add(seq):
            raise LogError(where, f"worker {worker} seq {seq} appears twice")
        stats.unfinished += 1
        yield (stream, t0, worker, seq, index, payload)
        index += 1
    stats.finish()


def _header_drops(segment: Segment, stats: LogStats) -> Iterator[Op]:
    """The drops a segment line reports, as the ``dropped`` operations they stand for."""
    stats.unnamed_drops += segment.unnamed
    for stream, lines in segment.dropped:
        yield Op(
            segment.where,
            segment.worker,
            segment.number,
            stream,
            DROPPED,
            segment.t0,
            segment.t1,
            Status.OK,
            {},
            {"lines": lines},
        )


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
