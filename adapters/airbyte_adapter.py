"""``fencepost adapter airbyte``: an airbyte-cdk declarative incremental stream as a sync SUT.

What runs is airbyte-cdk's own code, as a connector author configures it: a
low-code manifest (one ``DeclarativeStream`` with a ``DatetimeBasedCursor``, a
``SimpleRetriever`` whose ``HttpRequester`` pages with ``CursorPagination``,
and, when the source is partitioned, a ``SubstreamPartitionRouter`` over a
``partitions`` parent stream) is read by ``ConcurrentDeclarativeSource.read``
with a configured catalog and the connector's input state, and the adapter
consumes the ``AirbyteMessage`` s it yields as a destination and the platform
do. So airbyte's slicing (``ConcurrentCursor.stream_slices``), its formatting
of request bounds (``datetime_format``), its cursor (``observe``,
``close_partition``, ``most_recent_cursor_value``), its state merging and
its per-partition cursor (``ConcurrentPerPartitionCursor``) all decide what is
read and what the state claims.

**The source is an HTTP API.** A tiny server on 127.0.0.1 (a port of its own,
one per tool) answers the manifest's requests by calling the harness's
``SourceClient``: ``GET /rows?partition=..&cursor[gte]=..&cursor[lte]=..&after=..``
is one ``query`` (bounds parsed from what airbyte sent: epoch digits in the
API's unit, seconds when the source's granularity is whole seconds, else
milliseconds; or ISO 8601), ``GET /partitions`` is ``list_partitions``. A
bound the API cannot express (finer than the granularity) is answered 400,
as an API does; airbyte then fails the slice. A lost response is answered 504
and airbyte retries it (its default error handler). Rows come back as
``{"id", <cursor>: "2024-01-01T00:00:12.412Z", "partition"}``.

**The destination.** An Airbyte destination persists the records it receives
and echoes a STATE message back once every record before it is persisted; the
platform stores that state. Records and state are thus persisted by two
parties one after the other, never atomically, and a destination may flush
records before any state arrives (Destinations V2 also keeps the records of
a failed attempt). The adapter does the same: at each STATE message it commits
the records read since the previous one (``append``, or ``merge`` for
``append_dedup``), then the state in a second commit. At-least-once is the
honest promise, exactly-once only with ``append_dedup``. The stored state is
the platform's: the list of per-stream ``AirbyteStateMessage`` JSON the
connector receives as ``--state``.

**Determinism.** airbyte's concurrent framework runs partition generation and
partition reads on a thread pool, and reads the machine's clock. The adapter
keeps the CDK's code and replaces only the machinery around it, during a sync:

- the pool (``ThreadPoolManager``'s executor) defers each submitted task, and
  the framework's queue runs the next task, on the calling thread, only when
  the main loop would wait on an empty queue. This is one worker
  (``concurrency_level: 1``) whose tasks interleave with the main loop at
  fixed points, so the same replies always give the same calls in the same
  order, and the records and state of one slice reach the destination before
  the next slice is read;
- "now" is the sync request's ``now`` (the source's clock): the end provider
  of ``DatetimeBasedCursor`` (``ab_datetime_now`` in
  ``datetime_stream_state_converter``), and the ``time`` module of
  ``concurrent_partition_cursor`` (its state-emission throttle and the
  sync-duration timer that becomes the per-partition ``lookback_window``:
  0 s here, ``ceil`` of the wall-clock duration in a real run, at least 1 s);
- retry back-off sleeps (``backoff`` and ``rate_limiting``) return at once;
- configuration values may not use Jinja (``{{ now_utc() }}`` would read the
  machine's clock).

**Cut out.** The ``airbyte-cdk`` entrypoint (argument parsing, spec and
config validation, message serialisation to stdout, record counts), the
platform and a real destination (the adapter commits straight to the
harness), the HTTP response cache of parent streams (``use_cache: false`` on
the ``partitions`` requester: within one sync the parent is read once anyway,
and across syncs in this long-lived process the shared in-memory cache would
replay an old partition list), and real threads. Only timestamp cursors are
driven (``DatetimeBasedCursor``); an ``integer`` source fails each sync with
a message.

**Cost.** The declarative component schema (a YAML file airbyte parses in
every ``ConcurrentDeclarativeSource.__init__``, about 0.1 s) is parsed once
per process and shared; everything else (the source, its streams, cursors and
state manager) is built fresh for each sync, so nothing leaks between syncs
and :meth:`AirbyteTool.reset` has nothing to forget but the partitions seen.
A sync then costs about 7 ms, plus about 5 ms per page (one loopback request
through airbyte's retriever, and the page's records); start-up (importing
airbyte-cdk, about 3 s) is paid once. ``benchmarks/airbyte_adapter.py``
measures it; docs/real-tools.md has the findings.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime
import functools
import json
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version as _package_version
from types import SimpleNamespace
from typing import Any, Final, Literal
from urllib.parse import parse_qs, urlparse

import backoff._sync
from airbyte_cdk.models.airbyte_protocol import AirbyteStateMessage
from airbyte_cdk.models.airbyte_protocol_serializers import (
    AirbyteStateMessageSerializer,
    ConfiguredAirbyteCatalogSerializer,
)
from airbyte_cdk.sources.concurrent_source.thread_pool_manager import ThreadPoolManager
from airbyte_cdk.sources.declarative import concurrent_declarative_source as _cds
from airbyte_cdk.sources.declarative.incremental import concurrent_partition_cursor as _cpc
from airbyte_cdk.sources.streams.concurrent.partitions.types import QueueItem
from airbyte_cdk.sources.streams.concurrent.state_converters import (
    datetime_stream_state_converter as _dsc,
)
from airbyte_cdk.sources.streams.http import rate_limiting as _rate_limiting
from airbyte_cdk.utils.datetime_helpers import AirbyteDateTime
from airbyte_cdk.utils.traced_exception import AirbyteTracedException
from airbyte_protocol_dataclasses.models import ConfiguredAirbyteCatalog, Type
from isodate import Duration, ISO8601Error, parse_duration

from fencepost.adapters import ConfigError
from fencepost.adapters.runtime import Bound as QueryBound
from fencepost.adapters.runtime import (
    Coverage,
    Delivery,
    LostResponse,
    Mode,
    Page,
    Source,
    SourceClient,
    SyncRequest,
    SyncResult,
)

#: airbyte-cdk's version, as installed (named in ``hello_ok``).
CDK_VERSION: Final = _package_version("airbyte-cdk")

#: ``DatetimeBasedCursor`` keys passed through to the manifest, under airbyte's names.
CURSOR_KEYS: Final = (
    "cursor_granularity",
    "step",
    "lookback_window",
    "datetime_format",
    "cursor_datetime_formats",
    "start_datetime",
    "end_datetime",
    "start_time_option",
    "end_time_option",
    "is_compare_strictly",
    "global_substream_cursor",
)
#: Keys of the configured catalog's stream.
CATALOG_KEYS: Final = ("destination_sync_mode",)
#: Every key ``--config`` takes: the one home of this set.
KNOWN_KEYS: Final = CURSOR_KEYS + CATALOG_KEYS

#: The API's bound parameters and what each means (``cursor[gte]=x``: rows with ``at >= x``).
API_BOUNDS: Final[Mapping[str, tuple[Literal["lower", "upper"], bool]]] = {
    "cursor[gte]": ("lower", True),
    "cursor[gt]": ("lower", False),
    "cursor[lte]": ("upper", True),
    "cursor[lt]": ("upper", False),
}

#: ``start_datetime`` when not configured is the source's declared ``earliest`` (no row is
#: older; docs/conformance-protocol.md "The source"), as a connector author sets it just
#: before the oldest data: 2024-01-01T12:00:00Z in fencepost's timestamp worlds.
#: ``step`` when only ``cursor_granularity`` is given (airbyte requires the two
#: together): several slices over a world whose rows are seconds apart, as the
#: docs' ``P1D`` does over a connector's days.
DEFAULT_STEP: Final = "PT10S"
#: More slices than this in one sync fails it (set ``start_datetime`` or a longer ``step``).
MAX_SLICES: Final = 5000

#: How the API writes a row's cursor value, and so how the manifest parses it.
RECORD_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"
_ISO_INPUT: Final = "%Y-%m-%dT%H:%M:%S.%f%z"
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MS: Final = datetime.timedelta(milliseconds=1)
_MIN_MS: Final = (datetime.datetime.min.replace(tzinfo=datetime.UTC) - _EPOCH) // _MS
_MAX_MS: Final = (datetime.datetime.max.replace(tzinfo=datetime.UTC) - _EPOCH) // _MS

_LOG = logging.getLogger("fencepost.adapters.airbyte")


# --- configuration ---------------------------------------------------------------------------


def _duration(config: Mapping[str, object], key: str) -> datetime.timedelta | Duration | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(
            f"{key}: an ISO 8601 duration string is required (e.g. PT1S), got {value!r}"
        )
    try:
        parsed: datetime.timedelta | Duration = parse_duration(value)
    except (ISO8601Error, ValueError):
        raise ConfigError(
            f"{key}: {value!r} is not an ISO 8601 duration; write e.g. PT1S, PT10S, P1D"
        ) from None
    return parsed


def _instant(config: Mapping[str, object], key: str) -> datetime.datetime | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or "{{" in value:
        raise ConfigError(
            f"{key}: a literal ISO 8601 UTC instant is required (e.g. 2024-01-01T00:00:00Z), "
            f"got {value!r}; Jinja would read the machine's clock, not the source's"
        )
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{key}: {value!r} is not an ISO 8601 instant; write e.g. 2024-01-01T00:00:00Z"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.UTC)


def _option(config: Mapping[str, object], key: str, side: str, default: str) -> str:
    value = config.get(key)
    if value is None:
        return default
    names = [n for n, (s, _) in API_BOUNDS.items() if s == side]
    if isinstance(value, dict):
        extra = sorted(set(value) - {"type", "inject_into", "field_name"})
        if extra or value.get("inject_into", "request_parameter") != "request_parameter":
            raise ConfigError(
                f"{key}: the API takes its bounds as request parameters; give "
                f'{{"inject_into": "request_parameter", "field_name": one of {names}}}'
            )
        value = value.get("field_name")
    if value not in names:
        raise ConfigError(
            f"{key}: field_name must be one of {names} (the API's {side} bounds), got {value!r}"
        )
    assert isinstance(value, str)
    return value


@dataclass(frozen=True, slots=True)
class AirbyteConfig:
    """The adapter's configuration, checked: airbyte's own keys, with the adapter's defaults."""

    raw: Mapping[str, object]
    cursor_granularity: datetime.timedelta | None
    step: datetime.timedelta | Duration | None
    step_defaulted: bool
    lookback_window: datetime.timedelta | None
    datetime_format: str | None
    cursor_datetime_formats: tuple[str, ...]
    #: ``start_datetime`` as configured; None: the source's ``earliest`` (:meth:`start_for`).
    start: datetime.datetime | None
    end: datetime.datetime | None
    lower_param: str
    upper_param: str
    global_substream_cursor: bool
    is_compare_strictly: bool
    destination_sync_mode: Literal["append", "append_dedup"]

    @property
    def mode(self) -> Mode:
        return "merge" if self.destination_sync_mode == "append_dedup" else "append"

    @property
    def lower_inclusive(self) -> bool:
        return API_BOUNDS[self.lower_param][1]

    def start_for(self, source: Source) -> datetime.datetime:
        """``start_datetime``: as configured, else the source's ``earliest``."""
        return self.start if self.start is not None else _EPOCH + source.earliest * _MS


def parse_config(config: Mapping[str, object]) -> AirbyteConfig:
    """Check ``config`` (airbyte's keys, :data:`KNOWN_KEYS`); :class:`ConfigError` names the key."""
    unknown = sorted(set(config) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(
            f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"the known keys are {', '.join(KNOWN_KEYS)}"
        )
    granularity = _duration(config, "cursor_granularity")
    if isinstance(granularity, Duration):
        raise ConfigError(
            "cursor_granularity: a fixed duration is required (no months or years), e.g. PT1S"
        )
    step = _duration(config, "step")
    step_defaulted = False
    if step is not None and granularity is None:
        raise ConfigError(
            "step: airbyte-cdk requires cursor_granularity with step "
            "('If step is defined, cursor_granularity should be as well'); add e.g. "
            '"cursor_granularity": "PT1S"'
        )
    if granularity is not None and step is None:
        step, step_defaulted = parse_duration(DEFAULT_STEP), True
    lookback = _duration(config, "lookback_window")
    if isinstance(lookback, Duration):
        raise ConfigError(
            "lookback_window: a fixed duration is required (no months or years), e.g. PT10S"
        )
    fmt = config.get("datetime_format")
    if fmt is not None and (not isinstance(fmt, str) or not fmt or "{{" in fmt):
        raise ConfigError(f"datetime_format: a strftime format or %s/%ms is required, got {fmt!r}")
    formats = config.get("cursor_datetime_formats", [RECORD_FORMAT])
    if not isinstance(formats, list) or not formats or not all(isinstance(f, str) for f in formats):
        raise ConfigError(
            f'cursor_datetime_formats: a list of formats is required, e.g. ["{RECORD_FORMAT}"]'
        )
    start = _instant(config, "start_datetime")
    flags = {}
    for key in ("global_substream_cursor", "is_compare_strictly"):
        value = config.get(key, False)
        if type(value) is not bool:
            raise ConfigError(f"{key}: true or false is required, got {value!r}")
        flags[key] = value
    mode = config.get("destination_sync_mode", "append")
    if mode not in ("append", "append_dedup"):
        raise ConfigError(
            "destination_sync_mode: 'append' or 'append_dedup' is required "
            f"(an incremental sync), got {mode!r}"
        )
    return AirbyteConfig(
        raw=dict(config),
        cursor_granularity=granularity,
        step=step,
        step_defaulted=step_defaulted,
        lookback_window=lookback,
        datetime_format=fmt,
        cursor_datetime_formats=tuple(formats),
        start=start,
        end=_instant(config, "end_datetime"),
        lower_param=_option(config, "start_time_option", "lower", "cursor[gte]"),
        upper_param=_option(config, "end_time_option", "upper", "cursor[lte]"),
        global_substream_cursor=flags["global_substream_cursor"],
        is_compare_strictly=flags["is_compare_strictly"],
        destination_sync_mode="append_dedup" if mode == "append_dedup" else "append",
    )


# --- time: milliseconds, airbyte's datetimes and the API's wire ------------------------------


def to_ms(value: datetime.datetime) -> int:
    """Milliseconds since the epoch (floored below a millisecond)."""
    return (value - _EPOCH) // _MS


def from_ms(ms: int) -> AirbyteDateTime:
    return AirbyteDateTime.from_datetime(_EPOCH + datetime.timedelta(milliseconds=ms))


def record_time(ms: int) -> str:
    """A row's cursor value as the API writes it: ISO 8601 UTC with milliseconds."""
    seconds, millis = divmod(ms, 1000)
    whole = _EPOCH + datetime.timedelta(seconds=seconds)
    return f"{whole:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def default_datetime_format(granularity: int) -> str:
    """The request format a connector author writes for this API: seconds or milliseconds."""
    return "%s" if granularity % 1000 == 0 else "%ms"


class ApiError(Exception):
    """A request the API refuses (HTTP 400), with the API's message."""


def parse_api_bound(text: str, name: str, granularity: int) -> int:
    """A bound parameter as the API reads it, in milliseconds; :class:`ApiError` if it cannot."""
    unit = 1000 if granularity % 1000 == 0 else 1
    try:
        if text.lstrip("-").isdigit():
            ms = int(text) * unit
        elif text.replace(".", "", 1).lstrip("-").isdigit():
            exact = Decimal(text) * 1000
            if exact != exact.to_integral_value():
                raise ApiError(f"{name}={text}: finer than a millisecond")
            ms = int(exact)
        else:
            parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=datetime.UTC)
            if parsed.microsecond % 1000:
                raise ApiError(f"{name}={text}: finer than a millisecond")
            ms = to_ms(parsed)
    except (ValueError, InvalidOperation):
        unit_name = "seconds" if unit == 1000 else "milliseconds"
        raise ApiError(
            f"{name}={text!r}: this API takes epoch {unit_name} or an ISO 8601 instant"
        ) from None
    if not _MIN_MS <= ms <= _MAX_MS:
        raise ApiError(f"{name}={text}: not an instant between the years 1 and 9999")
    if ms % granularity:
        raise ApiError(f"{name}={text}: this API takes bounds in whole steps of {granularity} ms")
    return ms


# --- the API: a loopback HTTP server over the SourceClient -----------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _ApiServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        status, payload = self.server.api.handle(self.path)
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api: Api) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api


def partition_id(name: str) -> str:
    """A partition as the API names it in ``/partitions`` and ``partition=``: ``p:NAME``.

    airbyte ``ast.literal_eval`` s every interpolated value (``JinjaInterpolation``),
    so a partition called ``1_000`` or ``None`` would reach the request as ``1000``
    or not at all; the prefix keeps every name a string.
    """
    return "p:" + name


def partition_name(text: str) -> str:
    if not text.startswith("p:"):
        raise ApiError(f"partition={text!r}: not a partition id this API issued (p:NAME)")
    return text[2:]


def _token_out(token: str | None) -> str | None:
    # airbyte evaluates "{{ response.next }}" and literal_evals the result: keep it a plain word
    return None if token is None else "t" + base64.urlsafe_b64encode(token.encode()).decode()


def _token_in(text: str) -> str:
    try:
        if text.startswith("t"):
            return base64.urlsafe_b64decode(text[1:].encode()).decode()
    except (binascii.Error, UnicodeDecodeError):
        pass
    raise ApiError(f"after={text!r}: not a token this API issued")


class Api:
    """The source as an HTTP API on 127.0.0.1, answered by the sync's :class:`SourceClient`.

    One request is served at a time (airbyte's single worker waits for each
    response), on the server's thread; the harness's wire is only ever used by
    that thread while the sync's thread waits in airbyte, so calls stay in one
    sequence. An error the sync must end on (the harness closed the session, a
    malformed reply) is kept in :attr:`fatal` and answered 500 from then on;
    the sync's thread raises it at its next step.
    """

    def __init__(self) -> None:
        self._server = _ApiServer(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self._client: SourceClient | None = None
        self._source: Source | None = None
        self.fatal: BaseException | None = None
        #: The partitions the last ``/partitions`` reply listed.
        self.partitions: list[str] = []

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @contextlib.contextmanager
    def bound(self, client: SourceClient, source: Source) -> Iterator[None]:
        self._client, self._source, self.fatal = client, source, None
        try:
            yield
        finally:
            self._client, self._source = None, None

    def raise_fatal(self) -> None:
        if self.fatal is not None:
            raise self.fatal

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def handle(self, path: str) -> tuple[int, object]:
        if self.fatal is not None or self._client is None or self._source is None:
            return 500, {"error": "the sync is over"}
        url = urlparse(path)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            if url.path == "/partitions":
                self.partitions = self._client.list_partitions()
                return 200, {"data": [{"name": p, "id": partition_id(p)} for p in self.partitions]}
            if url.path == "/rows":
                return 200, self._rows(self._client, self._source, params)
            return 404, {"error": f"no such endpoint {url.path}"}
        except ApiError as exc:
            return 400, {"error": str(exc)}
        except LostResponse as exc:
            return 504, {"error": str(exc)}
        except BaseException as exc:  # the sync must end: SessionEnd, MessageError, ...
            self.fatal = exc
            return 500, {"error": f"{type(exc).__name__}: {exc}"}

    def _rows(self, client: SourceClient, source: Source, params: dict[str, str]) -> object:
        unknown = sorted(set(params) - {"partition", "after", *API_BOUNDS})
        if unknown:
            raise ApiError(f"unknown parameters {unknown}")
        bounds: dict[str, QueryBound] = {}
        for name, (side, inclusive) in API_BOUNDS.items():
            if name in params:
                if side in bounds:
                    raise ApiError(f"two {side} bounds")
                at = parse_api_bound(params[name], name, source.granularity)
                bounds[side] = QueryBound(at, inclusive)
        partition = partition_name(params.get("partition", partition_id("main")))
        after = _token_in(params["after"]) if "after" in params else None
        page: Page = client.query(partition, bounds.get("lower"), bounds.get("upper"), after)
        return {
            "data": [
                {"id": r.id, source.cursor: record_time(r.at), "partition": partition}
                for r in page.rows
            ],
            "next": _token_out(page.next),
        }


# --- determinism: one deferred worker, the source's clock, no sleeps --------------------------


class _DeferredPool(ThreadPoolExecutor):
    """airbyte's worker pool, reduced to one worker that runs on the caller's thread.

    A submitted task waits in a FIFO; :meth:`run_next` runs the oldest. Nothing
    runs concurrently, so the CDK's calls happen in one fixed order.
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)  # never started: submit is replaced
        self._tasks: deque[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = deque()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._tasks.append((functools.partial(fn, **kwargs), args, future))
        return future

    def run_next(self) -> bool:
        if not self._tasks:
            return False
        fn, args, future = self._tasks.popleft()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except Exception as exc:
                future.set_exception(exc)
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if cancel_futures:
            while self._tasks:
                self._tasks.popleft()[2].cancel()


class _InlineQueue(queue.Queue[QueueItem]):
    """The framework's queue, unbounded; waiting on it empty runs the worker's next task."""

    def __init__(self, pool: _DeferredPool) -> None:
        super().__init__()
        self._pool = pool

    def get(self, block: bool = True, timeout: float | None = None) -> QueueItem:
        while self.empty():
            if not self._pool.run_next():
                raise RuntimeError("airbyte-cdk waited on its queue with no task left to run")
        return super().get(block=False)


class _NoSleep:
    """Stands in for the ``time`` module where airbyte sleeps between retries."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        return None


@contextlib.contextmanager
def _patched(target: object, name: str, value: object) -> Iterator[None]:
    old = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, old)


_parse_component_schema = _cds.get_declarative_component_schema


@functools.cache
def _component_schema() -> dict[str, Any]:
    return _parse_component_schema()


@contextlib.contextmanager
def source_clock(now_ms: int) -> Iterator[None]:
    """airbyte reads ``now_ms`` as the time and never sleeps, for the ``with`` block."""
    now = from_ms(now_ms)
    frozen = SimpleNamespace(time=lambda: now_ms / 1000, perf_counter_ns=lambda: now_ms * 1_000_000)
    no_proxy = os.environ.get("no_proxy")
    with contextlib.ExitStack() as stack:
        stack.enter_context(_patched(_dsc, "ab_datetime_now", lambda: now))
        stack.enter_context(_patched(_cpc, "time", frozen))
        stack.enter_context(_patched(backoff._sync, "time", _NoSleep()))
        stack.enter_context(_patched(_rate_limiting, "time", _NoSleep()))
        os.environ["no_proxy"] = ",".join(filter(None, [no_proxy, "127.0.0.1"]))
        try:
            yield
        finally:
            if no_proxy is None:
                os.environ.pop("no_proxy", None)
            else:
                os.environ["no_proxy"] = no_proxy


@contextlib.contextmanager
def quiet_cdk() -> Iterator[None]:
    """airbyte's INFO logs off (each one is a JSON line it formats), warnings kept."""
    logger = logging.getLogger("airbyte")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def build_source(
    manifest: Mapping[str, Any],
    catalog: ConfiguredAirbyteCatalog,
    state: list[AirbyteStateMessage] | None,
) -> _cds.ConcurrentDeclarativeSource:
    """A ``ConcurrentDeclarativeSource`` on one deferred worker (see the module's docstring)."""
    pool = _DeferredPool()
    inline = _InlineQueue(pool)
    with (
        _patched(_cds, "Queue", lambda maxsize=0: inline),
        _patched(_cds, "get_declarative_component_schema", _component_schema),
    ):
        source = _cds.ConcurrentDeclarativeSource(
            catalog=catalog, config={}, state=state, source_config=json.loads(json.dumps(manifest))
        )
    source._concurrent_source._threadpool = ThreadPoolManager(pool, source.logger)
    return source


# --- the manifest ----------------------------------------------------------------------------


def _instant_text(value: datetime.datetime) -> str:
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")


def manifest(config: AirbyteConfig, source: Source, url: str) -> dict[str, Any]:
    """The low-code manifest a connector author writes for this API, with ``config``'s keys."""
    raw = config.raw
    cursor: dict[str, Any] = {
        "type": "DatetimeBasedCursor",
        "cursor_field": source.cursor,
        "datetime_format": config.datetime_format or default_datetime_format(source.granularity),
        "cursor_datetime_formats": list(config.cursor_datetime_formats),
        "start_datetime": {
            "type": "MinMaxDatetime",
            "datetime": _instant_text(config.start_for(source)),
            "datetime_format": _ISO_INPUT,
        },
        "start_time_option": {
            "type": "RequestOption",
            "inject_into": "request_parameter",
            "field_name": config.lower_param,
        },
        "end_time_option": {
            "type": "RequestOption",
            "inject_into": "request_parameter",
            "field_name": config.upper_param,
        },
    }
    if config.end is not None:
        cursor["end_datetime"] = {
            "type": "MinMaxDatetime",
            "datetime": _instant_text(config.end),
            "datetime_format": _ISO_INPUT,
        }
    for key in ("cursor_granularity", "lookback_window"):
        if key in raw:
            cursor[key] = raw[key]
    if config.step is not None:
        cursor["step"] = raw.get("step", DEFAULT_STEP)
    for key in ("is_compare_strictly", "global_substream_cursor"):
        if raw.get(key):
            cursor[key] = True
    selector = {
        "type": "RecordSelector",
        "extractor": {"type": "DpathExtractor", "field_path": ["data"]},
    }
    retriever: dict[str, Any] = {
        "type": "SimpleRetriever",
        "requester": {
            "type": "HttpRequester",
            "url": f"{url}/rows",
            "http_method": "GET",
            "request_parameters": {
                "partition": "{{ stream_partition.partition_id }}"
                if source.partitioned
                else partition_id("main")
            },
        },
        "record_selector": selector,
        "paginator": {
            "type": "DefaultPaginator",
            "pagination_strategy": {
                "type": "CursorPagination",
                "cursor_value": "{{ response.next }}",
                "stop_condition": "{{ not response.next }}",
            },
            "page_token_option": {
                "type": "RequestOption",
                "inject_into": "request_parameter",
                "field_name": "after",
            },
        },
    }
    if source.partitioned:
        parent = {
            "type": "DeclarativeStream",
            "name": "partitions",
            "primary_key": ["name"],
            "schema_loader": _schema({"name": {"type": "string"}, "id": {"type": "string"}}),
            "retriever": {
                "type": "SimpleRetriever",
                "requester": {
                    "type": "HttpRequester",
                    "url": f"{url}/partitions",
                    "http_method": "GET",
                    "use_cache": False,
                },
                "record_selector": selector,
            },
        }
        retriever["partition_router"] = {
            "type": "SubstreamPartitionRouter",
            "parent_stream_configs": [
                {
                    "type": "ParentStreamConfig",
                    "parent_key": "id",
                    "partition_field": "partition_id",
                    "stream": parent,
                }
            ],
        }
    stream = {
        "type": "DeclarativeStream",
        "name": source.stream,
        "primary_key": ["id"],
        "schema_loader": _schema(
            {
                "id": {"type": "string"},
                source.cursor: {"type": "string", "format": "date-time"},
                "partition": {"type": "string"},
            }
        ),
        "retriever": retriever,
        "incremental_sync": cursor,
    }
    return {
        "version": CDK_VERSION,
        "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": [source.stream]},
        "concurrency_level": {"type": "ConcurrencyLevel", "default_concurrency": 1},
        "streams": [stream],
    }


def _schema(properties: Mapping[str, object]) -> dict[str, Any]:
    return {
        "type": "InlineSchemaLoader",
        "schema": {"type": "object", "properties": dict(properties)},
    }


def catalog(config: AirbyteConfig, source: Source) -> ConfiguredAirbyteCatalog:
    stream = {
        "stream": {
            "name": source.stream,
            "json_schema": {},
            "supported_sync_modes": ["full_refresh", "incremental"],
            "source_defined_cursor": True,
            "default_cursor_field": [source.cursor],
        },
        "sync_mode": "incremental",
        "cursor_field": [source.cursor],
        "destination_sync_mode": config.destination_sync_mode,
        "primary_key": [["id"]],
    }
    return ConfiguredAirbyteCatalogSerializer.load({"streams": [stream]})


# --- state and coverage ----------------------------------------------------------------------


def load_state(stored: object) -> list[AirbyteStateMessage] | None:
    """The platform's stored state as the connector's input (None before the first)."""
    if stored is None:
        return None
    if not isinstance(stored, list):
        raise ValueError(
            f"the stored state is not a list of Airbyte state messages: {stored!r:.80}"
        )
    return [AirbyteStateMessageSerializer.load(m) for m in stored]


def stream_state(stored: object, stream: str) -> Mapping[str, Any] | None:
    """The ``stream_state`` blob of ``stream`` in the platform's stored state."""
    if not isinstance(stored, list):
        return None
    for message in stored:
        try:
            if message["stream"]["stream_descriptor"]["name"] == stream:
                blob = message["stream"]["stream_state"]
                return blob if isinstance(blob, dict) else None
        except (KeyError, TypeError):
            continue
    return None


def resume_lower(
    config: AirbyteConfig, source: Source, value: str, runtime_lookback_s: int = 0
) -> int:
    """The lower bound airbyte's next sync sends for a partition whose cursor state is ``value``.

    Mirrors airbyte-cdk: ``create_concurrent_cursor_from_datetime_based_cursor``
    subtracts the per-partition cursor's runtime lookback (new partitions only)
    and re-formats; ``DateTimeStreamStateConverter._get_sync_start`` takes the
    greater of the state and ``start_datetime``; ``ConcurrentCursor.stream_slices``
    subtracts ``lookback_window`` from the end of the merged state
    (``_calculate_lower_boundary_of_last_slice``) and ``_split_per_slice_range``
    raises it back to ``start_datetime``; ``output_format`` writes it in
    ``datetime_format`` (``%s`` floors to the second), which the API reads.
    """
    fmt = config.datetime_format or default_datetime_format(source.granularity)
    converter = _dsc.CustomFormatConcurrentStreamStateConverter(
        datetime_format=fmt,
        input_datetime_formats=list(config.cursor_datetime_formats),
        cursor_granularity=config.cursor_granularity,
    )
    at = converter.parse_timestamp(value)
    if runtime_lookback_s:
        at = converter.parse_timestamp(
            converter.output_format(at - datetime.timedelta(seconds=runtime_lookback_s))
        )
    start = config.start_for(source)
    at = max(at, start)
    if config.lookback_window:
        at = max(at - config.lookback_window, start)
    return parse_api_bound(str(converter.output_format(at)), config.lower_param, source.granularity)


def coverage(
    config: AirbyteConfig, source: Source, stored: object, partitions: Sequence[str]
) -> dict[str, Coverage] | None:
    """What the stored state claims, per partition, in the procedure's terms.

    airbyte's state is ``most_recent_cursor_value`` (the greatest cursor value
    observed in the first run of contiguous finished slices), written in
    ``datetime_format``. Its claim is where the next sync resumes: every row
    below the lower bound it will send is taken as copied. So the claim is
    ``before x`` (``through x`` with an exclusive ``cursor[gt]`` lower bound)
    at :func:`resume_lower`: the greatest value seen, floored by the request
    format, less ``lookback_window``. Per-partition state claims per partition;
    a global cursor (``global_substream_cursor``) claims the same for every
    partition the sync listed.
    """
    blob = stream_state(stored, source.stream)
    if not blob:
        return None
    kind: Literal["before", "through"] = "before" if config.lower_inclusive else "through"

    def claim(value: object, runtime: int = 0) -> Coverage | None:
        if not isinstance(value, (str, int)):
            return None
        try:
            return Coverage(resume_lower(config, source, str(value), runtime), kind)
        except (ValueError, ApiError):
            return None

    if not source.partitioned:
        one = claim(blob.get(source.cursor))
        return None if one is None else {"main": one}
    claims: dict[str, Coverage] = {}
    runtime = int(blob.get("lookback_window", 0) or 0)
    if blob.get("use_global_cursor"):
        shared = claim((blob.get("state") or {}).get(source.cursor), runtime)
        if shared is not None:
            claims.update({p: shared for p in partitions})
        return claims or None
    for entry in blob.get("states", []):
        try:
            name = partition_name(entry["partition"]["partition_id"])
            one = claim(entry["cursor"].get(source.cursor))
        except (KeyError, TypeError, AttributeError):
            continue
        if isinstance(name, str) and one is not None:
            claims[name] = one
    return claims or None


# --- the tool --------------------------------------------------------------------------------


def _describe(config: AirbyteConfig) -> str:
    shown = dict(config.raw)
    if config.step_defaulted:
        shown["step"] = f"{DEFAULT_STEP} (adapter default)"
    keys = " ".join(f"{k}={v}" for k, v in shown.items()) or "default"
    return f"airbyte-cdk {CDK_VERSION} DatetimeBasedCursor ({keys})"


class AirbyteTool:
    """One configured airbyte-cdk declarative stream, run one sync at a time (``Tool``)."""

    def __init__(self, config: AirbyteConfig) -> None:
        self.config = config
        self._api: Api | None = None
        self._logger = logging.getLogger("airbyte")

    @property
    def name(self) -> str:
        return _describe(self.config)

    @property
    def delivery(self) -> Delivery:
        return (
            "exactly-once"
            if self.config.destination_sync_mode == "append_dedup"
            else "at-least-once"
        )

    def reset(self) -> None:
        """Forget the partitions seen; the next sync builds everything afresh anyway."""
        if self._api is not None:
            self._api.partitions = []

    def close(self) -> None:
        """Stop the API server (the process's exit does it too)."""
        if self._api is not None:
            self._api.close()
            self._api = None

    def _check_slices(self, request: SyncRequest) -> None:
        step = self.config.step
        if step is None:
            return
        start = self.config.start_for(request.source)
        span = from_ms(request.now) - start
        length = step.totimedelta(start=start) if isinstance(step, Duration) else step
        if length > datetime.timedelta(0) and span / length > MAX_SLICES:
            raise RuntimeError(
                f"step {self.config.raw.get('step', DEFAULT_STEP)} from start_datetime "
                f"{start.isoformat()} cuts more than {MAX_SLICES} slices before now; "
                f"set start_datetime just before the source's oldest row, or a longer step"
            )

    def sync(self, request: SyncRequest, source: SourceClient) -> SyncResult:
        decl = request.source
        if decl.cursor_type != "timestamp":
            raise RuntimeError(
                "the airbyte adapter drives DatetimeBasedCursor, for timestamp cursors only; "
                "this source's cursor is an integer"
            )
        self._check_slices(request)
        if self._api is None:
            self._api = Api()
        api = self._api
        stored = source.read_state()
        input_state = load_state(stored)
        config = self.config
        pending: list[str] = []
        failed: str | None = None
        with api.bound(source, decl), source_clock(request.now), quiet_cdk():
            cdk = build_source(manifest(config, decl, api.url), catalog(config, decl), input_state)
            messages = cdk.read(self._logger, {}, catalog(config, decl), input_state)
            try:
                for message in messages:
                    api.raise_fatal()
                    if message.type == Type.RECORD and message.record is not None:
                        pending.append(str(message.record.data["id"]))
                    elif message.type == Type.STATE and message.state is not None:
                        stored = self._checkpoint(message.state, pending, source)
                    elif message.type == Type.TRACE and message.trace and message.trace.error:
                        failed = failed or message.trace.error.message
            except AirbyteTracedException as exc:
                failed = failed or exc.message or str(exc)
            finally:
                close = getattr(messages, "close", None)
                if close is not None:
                    close()  # a generator: stop airbyte's read where it stands
            api.raise_fatal()
        if pending:  # records of an unfinished checkpoint: kept, as Destinations V2 keeps them
            source.commit(pending, config.mode)
        claims = coverage(config, decl, stored, api.partitions)
        if failed is not None:
            _LOG.warning("airbyte sync %s failed: %s", request.id, failed)
            return SyncResult("failed", claims)
        return SyncResult("completed", claims)

    def _checkpoint(
        self, state: AirbyteStateMessage, pending: list[str], source: SourceClient
    ) -> list[dict[str, Any]]:
        """A destination and the platform at a STATE: the records before it, then the state."""
        if pending:
            source.commit(list(pending), self.config.mode)
            pending.clear()
        stored = [_state_json(state)]
        source.commit([], self.config.mode, stored)
        return stored


def _state_json(state: AirbyteStateMessage) -> dict[str, Any]:
    data = AirbyteStateMessageSerializer.dump(state)
    out: dict[str, Any] = json.loads(json.dumps(data, default=str))
    out.pop("sourceStats", None)
    out.pop("destinationStats", None)
    return out


#: The ``earliest`` of the source the configuration check builds the stream for (any instant
#: would do; this is the one fencepost's timestamp worlds declare).
PROBE_EARLIEST: Final = 1_704_110_400_000


def check_with_cdk(config: AirbyteConfig) -> None:
    """Let airbyte-cdk build the stream once, unpartitioned and partitioned, off-line.

    Its own checks (a format it cannot use, a duration it refuses) become a
    :class:`ConfigError` before the harness starts, not a failed sync.
    """
    probe_start = config.start or _EPOCH + PROBE_EARLIEST * _MS
    if config.datetime_format is not None:
        converter = _dsc.CustomFormatConcurrentStreamStateConverter(config.datetime_format)
        try:
            back = converter.parse_timestamp(converter.output_format(probe_start))
        except ValueError as exc:
            raise ConfigError(
                f"datetime_format: {config.datetime_format!r} cannot be read back by airbyte-cdk "
                f"({exc}); use e.g. %s (epoch seconds) or %Y-%m-%dT%H:%M:%SZ"
            ) from None
        if abs(back - probe_start) >= datetime.timedelta(days=1):
            raise ConfigError(
                f"datetime_format: {config.datetime_format!r} writes start_datetime as "
                f"{converter.output_format(probe_start)!r}, which reads back as {back}; "
                f"use a format with the date and time, e.g. %s or %Y-%m-%dT%H:%M:%SZ"
            )
    for partitioned in (False, True):
        probe = Source(
            "orders",
            "updated_at",
            "timestamp",
            1000,
            10_000,
            partitioned,
            False,
            "live",
            PROBE_EARLIEST,
        )
        try:
            with quiet_cdk():
                cdk = build_source(
                    manifest(config, probe, "http://127.0.0.1:9"), catalog(config, probe), None
                )
                cdk.streams(config={})
        except Exception as exc:
            raise ConfigError(
                f"airbyte-cdk refuses the stream this configuration makes: {exc}; "
                f"the known keys are {', '.join(KNOWN_KEYS)}"
            ) from None


def build(config: dict[str, object]) -> AirbyteTool:
    """The tool ``fencepost adapter airbyte --config JSON`` runs (ConfigError: a bad key)."""
    parsed = parse_config(config)
    check_with_cdk(parsed)
    return AirbyteTool(parsed)
