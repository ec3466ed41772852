"""singer-sdk behind the ``sync`` level: a real Tap and Stream, and the target a pipeline runs.

``fencepost adapter singer [--config JSON]`` (docs/real-tools.md, singer-sdk). Each
sync builds a singer-sdk :class:`~singer_sdk.Tap` with one
:class:`~singer_sdk.Stream` over the harness's source and runs the tap's
public ``sync_all()``; everything that decides what is read and what the state
says is the SDK's own code:

- the stream's replication key is the source's cursor, so the SDK keeps the
  bookmark (``increment_state``), checks the sort order (``is_sorted``,
  ``check_sorted``, ``InvalidStreamSortException``), promotes progress
  markers and caps them at the replication-key signpost
  (``finalize_state_progress_markers``), applies ``start_date``, keeps one
  bookmark per partition context (``partitions``,
  ``state_partitioning_keys``) and emits the RECORD and STATE messages;
- ``get_records(context)`` is the only tap code, as in any tap: it asks the
  SDK for its starting value (``get_starting_replication_key_value``) and
  queries the source page by page with it as an inclusive ``>=`` lower bound,
  floored to the source's granularity, as a tap formats a bound for an API
  that takes seconds;
- the messages the tap writes go through the SDK's writer hook (``Tap(...,
  message_writer=...)``) to a target played here the way singer-sdk's
  ``Target`` behaves: records are buffered and committed when
  ``batch_size_rows`` is reached and at the end of the pipe, and the latest
  STATE is committed after them, as its own commit (``Target.drain_all``). So
  records and state are never atomic: delivery is at-least-once.

The harness is the source, the destination and the state backend (Meltano's
role); the tap's input state is ``read_state()``. The SDK reads the clock once,
``PluginBase.__init__``'s ``initialized_at``, the default signpost of a
timestamp replication key: the tap here returns the sync's ``now`` instead, so
runs replay. ``time_extracted`` on RECORD messages still reads the machine's
clock; the target does not look at it.

Configuration, under singer's own terms (:data:`KEYS` says where each key
lives in a real pipeline): ``replication_method`` (catalog metadata),
``start_date`` (tap setting), ``is_sorted``, ``check_sorted``, ``partitions``,
``state_partitioning_keys`` (stream properties a tap's code sets),
``load_method`` and ``batch_size_rows`` (target settings). Two keys are tap
code that singer-sdk does not have, named as such: ``lookback_window`` (the
common tap pattern of subtracting a window from the bookmark, as
tap-salesforce's) and ``signpost_lag`` (a tap whose
``get_replication_key_signpost`` returns the source clock minus the lag and
which passes it to the source as the query's exclusive upper bound).

What was cut out: Meltano itself, the Singer pipe between two processes (the
messages are serialized and parsed as on the pipe, in one process), a
target's schema handling and its max-record-age drain (wall-clock), the
tap's CLI, catalog discovery and signal handlers. Cost per sync: one Tap built
plus one JSON encode and decode per message, about 2 ms in process for 10 new
rows (``python benchmarks/singer_sync.py`` prints it beside a loop without the
SDK); starting the process costs singer-sdk's import, under a second.
"""

from __future__ import annotations

import copy
import datetime as dt
import importlib.metadata
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Final, TypeVar

import singer_sdk
from singer_sdk.helpers import types as sdk_types
from singer_sdk.io_base import SingerWriter
from singer_sdk.singerlib import Message
from singer_sdk.singerlib.catalog import REPLICATION_FULL_TABLE

from fencepost.adapters import ConfigError
from fencepost.adapters.runtime import (
    Bound,
    Coverage,
    Delivery,
    LostResponse,
    Mode,
    Row,
    SessionEnd,
    SourceClient,
    SyncRequest,
    SyncResult,
)
from fencepost.inputs.jsonlines import MessageError

#: The configuration keys, and where each one lives in a real singer pipeline: the one home
#: of this set (validation, the error message and the docs read it).
KEYS: Final[dict[str, str]] = {
    "replication_method": "catalog metadata (forced-replication-method): INCREMENTAL or FULL_TABLE",
    "start_date": "tap setting: the starting value before any bookmark (ISO-8601, or an integer)",
    "is_sorted": "stream property (tap code): Stream.is_sorted, singer-sdk's default false",
    "check_sorted": "stream property (tap code): Stream.check_sorted, singer-sdk's default true",
    "partitions": "stream property (tap code): Stream.partitions, one context per source partition",
    "state_partitioning_keys": "stream property (tap code): [] keeps one bookmark for the stream",
    "lookback_window": "tap code, not singer-sdk: seconds (cursor units) taken off the start value",
    "signpost_lag": "tap code on singer-sdk's signpost hook: read only up to now minus this lag",
    "load_method": "target setting: append-only or upsert (merge on the primary key)",
    "batch_size_rows": "target setting: records per commit before the end of the pipe",
}

_REPLICATION_METHODS: Final = ("INCREMENTAL", "FULL_TABLE")
_LOAD_METHODS: Final[dict[str, Mode]] = {"append-only": "append", "upsert": "merge"}

#: What RESTStream.backoff_max_tries answers: a lost read is retried as a REST tap retries.
_BACKOFF_MAX_TRIES: Final = 5

#: The record's fields beside the cursor: the primary key and the partition it came from.
_ID_FIELD: Final = "id"
_PARTITION_FIELD: Final = "partition"

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MS: Final = dt.timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class SingerConfig:
    """A singer pipeline's configuration (see :data:`KEYS`).

    The defaults are singer-sdk's (``is_sorted`` false, ``check_sorted``
    true, an append-only target draining every 10,000 records), and a tap over
    a partitioned source lists its partitions as contexts (``partitions``).

    ``lookback_window`` and ``signpost_lag`` are in seconds for a timestamp
    cursor and in the cursor's units for an integer one (the units of the
    world's ``--max-commit-delay``).
    """

    replication_method: str = "INCREMENTAL"
    start_date: str | int | None = None
    is_sorted: bool = False
    check_sorted: bool = True
    partitions: bool = True
    state_partitioning_keys: tuple[str, ...] | None = None
    lookback_window: float = 0
    signpost_lag: float | None = None
    load_method: str = "append-only"
    batch_size_rows: int = 10_000

    @property
    def incremental(self) -> bool:
        return self.replication_method == "INCREMENTAL"

    @property
    def mode(self) -> Mode:
        return _LOAD_METHODS[self.load_method]


def _known() -> str:
    return ", ".join(KEYS)


def _bool(raw: Mapping[str, object], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if type(value) is not bool:
        raise ConfigError(f"{key}: true or false is required, got {value!r}")
    return value


def _amount(raw: Mapping[str, object], key: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(
            f"{key}: a number >= 0 is required (seconds for a timestamp cursor), got {value!r}"
        )
    return float(value)


def parse_config(raw: Mapping[str, object]) -> SingerConfig:
    """The configuration, strictly: unknown keys and bad values raise :class:`ConfigError`."""
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"the singer adapter knows: {_known()}"
        )
    method = raw.get("replication_method", "INCREMENTAL")
    if method not in _REPLICATION_METHODS:
        raise ConfigError(
            f"replication_method: one of {', '.join(_REPLICATION_METHODS)} is required, "
            f"got {method!r} (LOG_BASED needs a change log this source does not have)"
        )
    start_date = raw.get("start_date")
    if start_date is not None:
        if isinstance(start_date, str):
            try:
                _parse_iso(start_date)
            except ValueError:
                raise ConfigError(
                    f"start_date: an ISO-8601 timestamp is required, got {start_date!r} "
                    "(e.g. 2024-01-01T00:00:00Z)"
                ) from None
        elif isinstance(start_date, bool) or not isinstance(start_date, int):
            raise ConfigError(
                f"start_date: an ISO-8601 string (timestamp cursor) or an integer is required, "
                f"got {start_date!r}"
            )
    keys = raw.get("state_partitioning_keys")
    spk: tuple[str, ...] | None = None
    if keys is not None:
        if not isinstance(keys, list) or any(k != _PARTITION_FIELD for k in keys):
            raise ConfigError(
                "state_partitioning_keys: null (one bookmark per context), [] (one bookmark for "
                f'the stream) or ["{_PARTITION_FIELD}"] is required, got {keys!r}'
            )
        spk = tuple(str(k) for k in keys)
    load_method = raw.get("load_method", "append-only")
    if load_method not in _LOAD_METHODS:
        hint = (
            " (overwrite replaces the table, which this destination cannot express)"
            if load_method == "overwrite"
            else ""
        )
        raise ConfigError(
            f"load_method: one of {', '.join(_LOAD_METHODS)} is required, got {load_method!r}{hint}"
        )
    batch = raw.get("batch_size_rows", 10_000)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch_size_rows: an integer >= 1 is required, got {batch!r}")
    lookback = _amount(raw, "lookback_window")
    return SingerConfig(
        replication_method=str(method),
        start_date=start_date,
        is_sorted=_bool(raw, "is_sorted", False),
        check_sorted=_bool(raw, "check_sorted", True),
        partitions=_bool(raw, "partitions", True),
        state_partitioning_keys=spk,
        lookback_window=0 if lookback is None else lookback,
        signpost_lag=_amount(raw, "signpost_lag"),
        load_method=str(load_method),
        batch_size_rows=batch,
    )


# --- cursor values: what the source stores <-> what a tap emits -------------------------------


def _parse_iso(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class _Codec:
    """A cursor value as the tap emits it: ISO-8601 UTC for timestamps (ms in the source).

    Timestamps are written as singer-sdk writes datetimes
    (``to_json_compatible``: ISO-8601, microseconds, ``+00:00``), so the SDK's
    string comparisons of bookmarks order them by time.
    """

    timestamp: bool

    def emit(self, at: int) -> str | int:
        if not self.timestamp:
            return at
        return (_EPOCH + dt.timedelta(milliseconds=at)).isoformat(timespec="microseconds")

    def signpost(self, at: int) -> dt.datetime | int:
        return _EPOCH + dt.timedelta(milliseconds=at) if self.timestamp else at

    def units(self, value: object) -> int:
        """A bookmark or start value in the source's units (ms for timestamps), floored."""
        if self.timestamp:
            if not isinstance(value, str):
                raise ValueError(f"a timestamp bookmark must be an ISO-8601 string, got {value!r}")
            return (_parse_iso(value) - _EPOCH) // _MS
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"an integer bookmark is required, got {value!r}")
        return value

    def amount(self, value: float) -> int:
        """A lag or window from the configuration in the source's units, rounded up."""
        return math.ceil(value * 1000) if self.timestamp else math.ceil(value)

    def schema(self) -> dict[str, object]:
        if self.timestamp:
            return {"type": ["string"], "format": "date-time"}
        return {"type": ["integer"]}


def _floor(value: int, step: int) -> int:
    return value - value % step


# --- one sync ---------------------------------------------------------------------------------

_T = TypeVar("_T")


def _retry(op: Callable[[], _T]) -> _T:
    """A read whose response was lost is asked again, as a REST tap's backoff does."""
    for _ in range(_BACKOFF_MAX_TRIES - 1):
        try:
            return op()
        except LostResponse:
            continue
    return op()


#: The state after a commit whose response was lost: it may or may not have applied.
_UNKNOWN: Final[object] = object()


class _Target:
    """The target end of the pipe, as singer-sdk's ``Target`` drains: records, then state.

    RECORD messages are buffered and committed when ``batch_size_rows`` are
    held (``Target._process_record_message``: ``drain_one`` on a full sink,
    records only); STATE messages only replace the latest state
    (``_process_state_message``); at the end of the pipe every buffered record
    is committed and then the latest state, as a second commit
    (``drain_all``). A commit that fails kills the target: nothing more is
    committed in this run.
    """

    def __init__(self, source: SourceClient, mode: Mode, batch_size_rows: int, stored: object):
        self._source = source
        self._mode: Mode = mode
        self._batch = batch_size_rows
        self._buffer: list[str] = []
        self._latest: object = None
        #: The state the destination holds now (``_UNKNOWN`` after a lost state commit).
        self.stored: object = stored
        self.dead = False

    def receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "RECORD":
            self._buffer.append(str(message["record"][_ID_FIELD]))
            if len(self._buffer) >= self._batch:
                self._drain_records()
        elif kind == "STATE":
            self._latest = message["value"]

    def _drain_records(self) -> None:
        records, self._buffer = self._buffer, []
        try:
            self._source.commit(records, self._mode)
        except BaseException:
            self.dead = True
            raise

    def end_of_pipe(self) -> None:
        """Drain every sink, then persist the latest state (``Target.drain_all``)."""
        if self.dead:
            return
        if self._buffer:
            self._drain_records()
        if self._latest:
            state = copy.deepcopy(self._latest)
            try:
                self._source.commit([], self._mode, state=state)
            except BaseException:
                self.dead = True
                self.stored = _UNKNOWN
                raise
            self.stored = state


class _PipeWriter(SingerWriter):
    """The tap's stdout: each message serialized as on the Singer pipe and handed to the target."""

    def __init__(self, target: _Target) -> None:
        self._target = target

    def write_message(self, message: Message) -> None:
        self._target.receive(json.loads(self.format_message(message)))


@dataclass
class _Run:
    """What one sync knows: the request, the source, the configuration, the listed partitions."""

    request: SyncRequest
    source: SourceClient
    config: SingerConfig
    codec: _Codec
    listed: list[str] | None = field(default=None)

    def partitions(self) -> list[str]:
        """The source's partitions, listed once per sync (the tap's partition list)."""
        if self.listed is None:
            self.listed = _retry(self.source.list_partitions)
        return self.listed

    def rows(self, partition: str, lower: Bound | None, upper: Bound | None) -> Iterator[Row]:
        token: str | None = None
        while True:
            page = _retry(partial(self.source.query, partition, lower, upper, token))
            yield from page.rows
            if page.next is None:
                return
            token = page.next

    def lower_bound(self, start: object) -> Bound | None:
        """The tap's ``>=`` bound for a starting value: less any lookback, floored to the step."""
        if start is None:
            return None
        at = self.codec.units(start) - self.codec.amount(self.config.lookback_window)
        return Bound(_floor(at, self.request.source.granularity), True)

    def upper_bound(self) -> Bound | None:
        """``signpost_lag``'s exclusive bound: ``now`` minus the lag, floored to granularity."""
        if self.config.signpost_lag is None:
            return None
        at = self.request.now - self.codec.amount(self.config.signpost_lag)
        return Bound(_floor(at, self.request.source.granularity), False)


class _SourceStream(singer_sdk.Stream):
    """The harness's source as a singer-sdk stream: replication key = the source's cursor."""

    def __init__(self, tap: _SourceTap, run: _Run) -> None:
        self._run = run
        source = run.request.source
        if source.cursor in (_ID_FIELD, _PARTITION_FIELD):
            raise ValueError(
                f"the source's cursor is named {source.cursor!r}, a field this tap's records "
                f"use for the row id and partition; rename the cursor"
            )
        schema = {
            "type": "object",
            "properties": {
                _ID_FIELD: {"type": ["string"]},
                _PARTITION_FIELD: {"type": ["string"]},
                source.cursor: run.codec.schema(),
            },
        }
        super().__init__(tap, schema=schema, name=source.stream)
        self.primary_keys = [_ID_FIELD]
        self.replication_key = source.cursor
        if not run.config.incremental:
            # What a catalog's forced-replication-method does (Stream.apply_catalog).
            self.forced_replication_method = REPLICATION_FULL_TABLE
        if run.config.state_partitioning_keys is not None:
            self.state_partitioning_keys = list(run.config.state_partitioning_keys)

    @property
    def is_sorted(self) -> bool:
        return self._run.config.is_sorted

    @property
    def check_sorted(self) -> bool:
        return self._run.config.check_sorted

    @property
    def partitions(self) -> list[dict[str, Any]] | None:
        if not self._run.config.partitions:
            return None
        return [{_PARTITION_FIELD: p} for p in self._run.partitions()]

    def get_replication_key_signpost(self, context: sdk_types.Context | None = None) -> Any:
        if self._run.config.signpost_lag is None:
            return super().get_replication_key_signpost(context)
        lag = self._run.codec.amount(self._run.config.signpost_lag)
        return self._run.codec.signpost(self._run.request.now - lag)

    def get_records(self, context: sdk_types.Context | None) -> Iterable[dict[str, Any]]:
        run = self._run
        lower = run.lower_bound(self.get_starting_replication_key_value(context))
        upper = run.upper_bound()
        names = [str(context[_PARTITION_FIELD])] if context else run.partitions()
        cursor = run.request.source.cursor
        for name in names:
            for row in run.rows(name, lower, upper):
                yield {_ID_FIELD: row.id, _PARTITION_FIELD: name, cursor: run.codec.emit(row.at)}


class _SourceTap(singer_sdk.Tap):
    """A tap of one stream; its clock is the source's (``initialized_at`` is the sync's ``now``)."""

    name = "tap-fencepost-source"
    config_jsonschema: ClassVar[dict[str, object]] = {
        "type": "object",
        "properties": {"start_date": {"type": ["string", "integer"]}},
    }

    def __init__(self, run: _Run, target: _Target, state: dict[str, Any]) -> None:
        self._run = run
        config: dict[str, object] = {}
        if run.config.start_date is not None:
            config["start_date"] = run.config.start_date
        super().__init__(config=config, state=state, message_writer=_PipeWriter(target))

    def discover_streams(self) -> Sequence[singer_sdk.Stream]:
        return [_SourceStream(self, self._run)]

    @property
    def initialized_at(self) -> int:
        return self._run.request.now

    def _setup_signal_handlers(self) -> None:
        """The adapter's process belongs to the harness: a tap's handlers would exit mid-line."""


# --- the tool ---------------------------------------------------------------------------------


class SingerTool:
    """singer-sdk as a conformance SUT: one tap run, then the target's commits, per sync.

    Nothing is kept between syncs but the configuration (the state lives in
    the destination, as a Meltano state backend keeps it), so :meth:`reset`
    has nothing to forget. Delivery is at-least-once: records are committed
    before the state that covers them.
    """

    def __init__(self, config: SingerConfig) -> None:
        self.config = config
        self._version = importlib.metadata.version("singer-sdk")

    @property
    def name(self) -> str:
        defaults = SingerConfig()
        changed = {
            k: getattr(self.config, k)
            for k in KEYS
            if getattr(self.config, k) != getattr(defaults, k)
        }
        text = json.dumps(changed, sort_keys=True, default=list) if changed else "defaults"
        return f"singer-sdk {self._version} {text}"

    @property
    def delivery(self) -> Delivery:
        return "at-least-once"

    def reset(self) -> None:
        """Nothing is held between syncs: the tap and the target are built per sync."""

    def sync(self, request: SyncRequest, source: SourceClient) -> SyncResult:
        stored = source.read_state()
        if stored is not None and not isinstance(stored, dict):
            raise ValueError(f"the stored state is not a Singer state object: {stored!r}")
        run = _Run(request, source, self.config, _Codec(request.source.cursor_type == "timestamp"))
        start_date = self.config.start_date
        if start_date is not None and isinstance(start_date, str) != run.codec.timestamp:
            raise ValueError(
                f"start_date {start_date!r} does not suit a {request.source.cursor_type} cursor: "
                "give an ISO-8601 string for timestamps, an integer for integer cursors"
            )
        target = _Target(source, self.config.mode, self.config.batch_size_rows, stored)
        tap_error: Exception | None = None
        try:
            _SourceTap(run, target, copy.deepcopy(stored) if stored else {}).sync_all()
        except (SessionEnd, MessageError):
            raise
        except Exception as exc:
            if target.dead:  # a commit failed: the target is gone, and so is this run
                raise
            tap_error = exc  # the tap failed; the target still drains at the end of its input
        target.end_of_pipe()
        coverage = self.coverage(run, target.stored)
        if tap_error is not None:
            print(
                f"singer tap failed: {type(tap_error).__name__}: {tap_error}",
                file=sys.stderr,
            )
            return SyncResult("failed", coverage)
        return SyncResult("completed", coverage)

    # --- what the stored state claims ---------------------------------------------------------

    def coverage(self, run: _Run, state: object) -> dict[str, Coverage] | None:
        """Per partition, ``before`` the bound the next run will query from (None: no claim).

        The bookmark is the greatest value the tap saw (capped at the signpost
        only for an unsorted stream's own bookmark), resumed with ``>=``: the
        next run re-reads it, so the claim is ``before`` the resume bound, with
        nothing ``plus``. FULL_TABLE claims nothing.
        """
        if not self.config.incremental or state is _UNKNOWN or run.listed is None:
            return None
        claims: dict[str, Coverage] = {}
        for partition in run.listed:
            start = self.resume_value(run, state, partition)
            bound = None if start is None else run.lower_bound(start)
            claims[partition] = Coverage(None if bound is None else bound.at)
        return claims

    def resume_value(self, run: _Run, state: object, partition: str) -> object:
        """The starting value the SDK will give this partition's next run.

        Mirrors ``StreamStateManager.write_starting_replication_value``
        (singer_sdk/streams/_state.py): the bookmark when its replication key
        matches and it is truthy, else ``start_date``; for a timestamp key the
        later of the two. A test holds it to the bound the next run queries.
        """
        config = self.config
        stream_state: Mapping[str, Any] = {}
        if isinstance(state, dict):
            stream_state = state.get("bookmarks", {}).get(run.request.source.stream, {})
        per_context = config.partitions and config.state_partitioning_keys != ()
        entry: Mapping[str, Any] = stream_state
        if per_context:
            entry = next(
                (
                    p
                    for p in stream_state.get("partitions", [])
                    if p.get("context") == {_PARTITION_FIELD: partition}
                ),
                {},
            )
        value: object = None
        bookmark = entry.get("replication_key_value")
        if bookmark and entry.get("replication_key") == run.request.source.cursor:
            value = bookmark
        if config.start_date is not None:
            if not value:
                value = config.start_date
            elif run.codec.timestamp:
                value = max(value, config.start_date, key=run.codec.units)
        return value


def build(config: dict[str, object]) -> SingerTool:
    """The singer adapter for ``config`` (:data:`KEYS`); :class:`ConfigError` names a bad key."""
    return SingerTool(parse_config(config))
