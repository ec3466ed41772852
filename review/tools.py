"""What a sync tool's configuration means for the rows it reads: one plan per tool and config.

``fencepost review CONTRACT --tool dlt|singer|airbyte --config JSON`` takes the same
JSON as ``fencepost adapter NAME --config`` (the tool's own keys; the adapters in
``fencepost.adapters`` run the libraries, this module only reads their settings and
imports none of them). :func:`plan` turns a configuration into a :class:`SyncPlan`:
where the next run starts (the greatest value read, less a lag), whether a run's read
is capped at its start, whether a partition seen for the first time starts from the
beginning or from the other partitions' state, how slices are cut and formatted, and
how records reach the destination. :mod:`fencepost.review.sync` judges a plan against
a contract's ``[cursor]`` facts.

Every key the adapter accepts is accepted here, and an unknown key is refused
(:class:`ToolConfigError`, exit 2) naming it and the known ones; a key that does not
change which rows are read (``batch_size_rows``, ``start_date``) is read and
checked, and :data:`KEYS` says why it does not matter. The tool names come from the
adapters' registry, ``fencepost.adapters.ADAPTERS`` (the CLI checks that every name
there has a model here, and a test keeps the two in step).

Cost: parsing is linear in the size of the configuration; nothing here runs a tool.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from types import MappingProxyType
from typing import Literal

from fencepost.contracts import Contract, Encoding

#: One second in the units of a timestamp order (RFC 3339 coordinates are nanoseconds).
SECOND = 10**9


class ToolConfigError(ValueError):
    """A tool configuration the review cannot read: names the key, the problem and the fix."""

    def __init__(self, tool: str, key: str | None, problem: str) -> None:
        self.tool = tool
        self.key = key
        self.problem = problem
        where = f"{key}: " if key else ""
        super().__init__(f"--config for {tool}: {where}{problem}")


@dataclass(frozen=True, slots=True)
class Slices:
    """Slices of one run (airbyte's ``step``): each ends ``granularity`` before the next starts."""

    step: int
    granularity: int
    step_key: str
    granularity_key: str


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """What one configuration of a sync tool does with a source, in the order's units.

    - ``full_table``: every run reads every row; no state, nothing resumes.
    - The next run starts at ``greatest value read - lag`` (``lag_key`` names the
      setting), ``lower_inclusive`` (``>=``) or not; ``exact_lower`` when the tool
      filters rows below the exact start (dlt), otherwise the start is rounded down to
      the step a request can name (``request_step``, or the contract's query step).
    - ``cap``: a run reads only rows before its start (``"start"``) or before its
      start less ``cap_lag`` (``"start-minus-lag"``), or has no upper bound
      (``"none"``: it sees rows that commit while it reads).
    - ``one_query``: one query per partition per run (one snapshot, on a source whose
      reads are snapshots); false when a run reads in several requests (slices).
    - ``state`` per partition or one for all; ``new_partition_start``: a partition
      seen for the first time starts from the beginning or from the global state.
    - ``mode``: ``append`` (every copy lands) or ``merge`` (one copy per row id);
      ``atomic``: records and state in one commit; ``boundary_dedupe``: rows at the
      start value already loaded are skipped by hash (dlt's ``unique_hashes``).
    """

    tool: str
    config: Mapping[str, object]
    full_table: bool
    lag: int
    lag_key: str | None
    lower_inclusive: bool
    exact_lower: bool
    cap: Literal["none", "start", "start-minus-lag"]
    cap_lag: int
    cap_inclusive: bool
    cap_key: str | None
    one_query: bool
    state: Literal["per-partition", "global"]
    new_partition_start: Literal["beginning", "global"]
    state_key: str | None
    slices: Slices | None
    request_step: int | None
    mode: Literal["append", "merge"]
    atomic: bool
    boundary_dedupe: bool

    def shown_config(self) -> str:
        """The configuration as given, compactly (``{}`` for the tool's defaults)."""
        if not self.config:
            return "{} (the defaults)"
        return "{" + ", ".join(f'"{k}": {_json(v)}' for k, v in self.config.items()) + "}"


def _json(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


# --- the keys: the adapters' sets, and what each means to the review --------------------------

#: Per tool, every key its adapter takes, with what the review reads from it (or why it
#: does not change which rows are read). Kept equal to the adapters' own key sets by
#: tests/review/test_review_tools.py.
KEYS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "dlt": MappingProxyType(
            {
                "initial_value": "where the first run starts; rows before it are excluded on "
                "purpose, not lost",
                "lag": "seconds (cursor units on an integer cursor) taken off last_value: the "
                "next run starts there",
                "range_start": '"closed" (>=, the default) or "open" (>) start',
                "row_order": "the order rows come in; it does not change which rows are read",
                "last_value_func": '"max" (the default): last_value is the greatest value read',
                "write_disposition": '"append" (every copy lands) or "merge" (one copy per id, '
                "with a primary key)",
                "primary_key": '"id" (the default), null (hash the row) or [] (no dedupe)',
                "resources": '"per_partition" (a state per partition, the default) or "single" '
                "(one cursor for every partition)",
                "upper_bound": 'null (no upper bound) or "now" (read only rows before the '
                "run's start)",
            }
        ),
        "singer": MappingProxyType(
            {
                "replication_method": "INCREMENTAL (a bookmark) or FULL_TABLE (every row, "
                "every run)",
                "start_date": "where the first run starts; rows before it are excluded on purpose",
                "is_sorted": "declares the stream sorted (the SDK then checks it); it does not "
                "move the bookmark",
                "check_sorted": "whether a sorted stream is checked; it does not move the bookmark",
                "partitions": "false reads every partition under one bookmark",
                "state_partitioning_keys": "[] keeps one bookmark for the stream",
                "lookback_window": "tap code: seconds taken off the bookmark",
                "signpost_lag": "tap code: read only up to the run's start less this lag, and "
                "cap the bookmark there",
                "load_method": "append-only (every copy lands) or upsert (one copy per id)",
                "batch_size_rows": "records per commit; the state always follows its records",
            }
        ),
        "airbyte": MappingProxyType(
            {
                "cursor_granularity": "each slice ends this much before the next starts",
                "step": "the length of one slice",
                "lookback_window": "taken off the state: the next run starts there",
                "datetime_format": "how request bounds are written: %s (seconds), %ms, or a "
                "strftime format",
                "cursor_datetime_formats": "how the records' values are parsed; it does not "
                "change the bounds",
                "start_datetime": "where the first run starts; rows before it are excluded on "
                "purpose",
                "end_datetime": "a fixed end: rows after it are never requested",
                "start_time_option": "the lower bound parameter: cursor[gte] (>=) or cursor[gt]",
                "end_time_option": "the upper bound parameter: cursor[lte] (<=) or cursor[lt]",
                "is_compare_strictly": "whether a slice may start at its end; no row moves",
                "global_substream_cursor": "one state for every partition",
                "destination_sync_mode": "append or append_dedup (one copy per id)",
            }
        ),
    }
)

#: dlt keys its adapter refuses, with its reason (a stateless backfill is not judged here).
REFUSED: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "dlt": MappingProxyType(
            {
                "end_value": "end_value makes dlt's incremental stateless (a backfill of a fixed "
                "range)",
                "range_end": "range_end only matters with end_value, which makes the incremental "
                "stateless",
            }
        )
    }
)


@dataclass(frozen=True)
class _Units:
    """How a contract's order counts time: nanoseconds on a timestamp order, else units."""

    time: bool
    query_step: int  # the step a query bound can name (1 when the contract does not say)

    def seconds(self, tool: str, key: str, value: object) -> int:
        """A number of seconds (cursor units on an integer cursor), >= 0, in order units."""
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            unit = "seconds" if self.time else "cursor units"
            raise ToolConfigError(tool, key, f"a number >= 0 ({unit}) is required, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ToolConfigError(tool, key, f"a finite number is required, got {value!r}")
        amount = Fraction(str(value)) * (SECOND if self.time else 1)
        return math.floor(amount)  # rounded down: a shorter lag is the riskier reading


def _units(contract: Contract) -> _Units:
    precision = contract.cursor.precision
    return _Units(
        time=contract.order_facts.encoding is Encoding.RFC3339,
        query_step=precision.query if precision is not None else 1,
    )


def _check_keys(tool: str, config: Mapping[str, object]) -> None:
    known = KEYS[tool]
    for key in config:
        refused = REFUSED.get(tool, {}).get(key)
        if refused is not None:
            raise ToolConfigError(
                tool, key, f"not supported: {refused}; known keys: {', '.join(known)}"
            )
        if key not in known:
            close = _close(key, known)
            raise ToolConfigError(
                tool,
                key,
                f"unknown key{close}; the {tool} adapter takes: {', '.join(known)}",
            )


def _close(key: str, known: Mapping[str, str]) -> str:
    import difflib

    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _choice(
    tool: str, config: Mapping[str, object], key: str, allowed: tuple[object, ...]
) -> object:
    value = config.get(key, allowed[0])
    if isinstance(value, bool) or value not in allowed:
        shown = ", ".join(_json(a) for a in allowed)
        raise ToolConfigError(tool, key, f"one of {shown} is required, got {_json(value)}")
    return value


def _flag(tool: str, config: Mapping[str, object], key: str, default: bool) -> bool:
    value = config.get(key, default)
    if type(value) is not bool:
        raise ToolConfigError(tool, key, f"true or false is required, got {value!r}")
    return value


# --- dlt -------------------------------------------------------------------------------------


def _dlt(config: Mapping[str, object], units: _Units) -> SyncPlan:
    tool = "dlt"
    initial = config.get("initial_value")
    if isinstance(initial, str):
        try:
            datetime.fromisoformat(initial)
        except ValueError:
            raise ToolConfigError(
                tool,
                "initial_value",
                f'{initial!r} is not ISO 8601; write e.g. "2024-01-01T00:00:00Z"',
            ) from None
    elif initial is not None and (isinstance(initial, bool) or not isinstance(initial, int)):
        raise ToolConfigError(tool, "initial_value", f"a timestamp or an integer, got {initial!r}")
    raw_lag = config.get("lag")
    lag = 0 if raw_lag is None else units.seconds(tool, "lag", raw_lag)
    range_start = _choice(tool, config, "range_start", ("closed", "open"))
    _choice(tool, config, "row_order", (None, "asc", "desc"))
    _choice(tool, config, "last_value_func", ("max",))
    disposition = _choice(tool, config, "write_disposition", ("append", "merge"))
    key = config.get("primary_key", "id")
    if key == ["id"]:
        key = "id"
    if key not in ("id", None) and key != []:
        raise ToolConfigError(
            tool, "primary_key", f'"id" (or ["id"]), null or [] is required, got {key!r}'
        )
    resources = _choice(tool, config, "resources", ("per_partition", "single"))
    upper = _choice(tool, config, "upper_bound", (None, "now"))
    per_partition = resources == "per_partition"
    return SyncPlan(
        tool=tool,
        config=MappingProxyType(dict(config)),
        full_table=False,
        lag=lag,
        lag_key="lag" if lag else None,
        lower_inclusive=range_start == "closed",
        exact_lower=True,  # dlt drops every row below start_value, whatever the query returned
        cap="start" if upper == "now" else "none",
        cap_lag=0,
        cap_inclusive=False,
        cap_key="upper_bound" if upper == "now" else None,
        one_query=True,
        state="per-partition" if per_partition else "global",
        new_partition_start="beginning" if per_partition else "global",
        state_key=None if per_partition else "resources",
        slices=None,
        request_step=None,
        mode="merge" if disposition == "merge" and key == "id" else "append",
        atomic=True,  # the state is extracted into the load package with the rows
        boundary_dedupe=range_start == "closed" and not lag and key != [],
    )


# --- singer-sdk ------------------------------------------------------------------------------


def _singer(config: Mapping[str, object], units: _Units) -> SyncPlan:
    tool = "singer"
    method = _choice(tool, config, "replication_method", ("INCREMENTAL", "FULL_TABLE"))
    start = config.get("start_date")
    if start is not None and (isinstance(start, bool) or not isinstance(start, str | int)):
        raise ToolConfigError(
            tool, "start_date", f"an ISO 8601 string or an integer, got {start!r}"
        )
    if isinstance(start, str):
        try:
            datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError:
            raise ToolConfigError(
                tool, "start_date", f"{start!r} is not ISO 8601 (e.g. 2024-01-01T00:00:00Z)"
            ) from None
    _flag(tool, config, "is_sorted", False)
    _flag(tool, config, "check_sorted", True)
    partitions = _flag(tool, config, "partitions", True)
    keys = config.get("state_partitioning_keys")
    if keys is not None and (not isinstance(keys, list) or any(k != "partition" for k in keys)):
        raise ToolConfigError(
            tool, "state_partitioning_keys", f'null, [] or ["partition"] is required, got {keys!r}'
        )
    raw_lookback = config.get("lookback_window")
    lookback = 0 if raw_lookback is None else units.seconds(tool, "lookback_window", raw_lookback)
    raw_signpost = config.get("signpost_lag")
    signpost = None if raw_signpost is None else units.seconds(tool, "signpost_lag", raw_signpost)
    load = _choice(tool, config, "load_method", ("append-only", "upsert"))
    batch = config.get("batch_size_rows", 10_000)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ToolConfigError(
            tool, "batch_size_rows", f"an integer >= 1 is required, got {batch!r}"
        )
    one_bookmark = not partitions or keys == []
    return SyncPlan(
        tool=tool,
        config=MappingProxyType(dict(config)),
        full_table=method == "FULL_TABLE",
        lag=lookback,
        lag_key="lookback_window" if lookback else None,
        lower_inclusive=True,  # the tap queries >= the bookmark
        exact_lower=False,  # floored to the API's step, and the SDK drops nothing below it
        cap="start-minus-lag" if signpost is not None else "none",
        cap_lag=signpost or 0,
        cap_inclusive=False,
        cap_key="signpost_lag" if signpost is not None else None,
        one_query=True,
        state="global" if one_bookmark else "per-partition",
        new_partition_start="global" if one_bookmark else "beginning",
        state_key=("partitions" if not partitions else "state_partitioning_keys")
        if one_bookmark
        else None,
        slices=None,
        request_step=None,
        mode="merge" if load == "upsert" else "append",
        atomic=False,  # the target commits records, then the STATE that follows them
        boundary_dedupe=False,
    )


# --- airbyte-cdk -----------------------------------------------------------------------------

_ISO_DURATION = re.compile(
    r"P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?"
)


def _duration(tool: str, config: Mapping[str, object], key: str) -> int | None:
    """An ISO 8601 duration of fixed length (``PT10S``, ``P1D``) in nanoseconds."""
    value = config.get(key)
    if value is None:
        return None
    text = value if isinstance(value, str) else ""
    m = _ISO_DURATION.fullmatch(text)
    if m is None or text in ("P", "PT") or text.endswith("T"):
        raise ToolConfigError(
            tool,
            key,
            f"an ISO 8601 duration of fixed length is required (PT1S, PT10S, P1D), got {value!r}",
        )
    seconds = sum(
        Fraction(m.group(g) or "0") * factor
        for g, factor in (("d", 86_400), ("h", 3600), ("m", 60), ("s", 1))
    )
    return math.floor(seconds * SECOND)


def _instant(tool: str, config: Mapping[str, object], key: str) -> None:
    value = config.get(key)
    if value is None:
        return
    if not isinstance(value, str) or "{{" in value:
        raise ToolConfigError(
            tool, key, f"a literal ISO 8601 instant is required (no Jinja), got {value!r}"
        )
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolConfigError(
            tool, key, f"{value!r} is not ISO 8601 (e.g. 2024-01-01T00:00:00Z)"
        ) from None


def _option(tool: str, config: Mapping[str, object], key: str, names: tuple[str, ...]) -> str:
    value = config.get(key, names[0])
    if isinstance(value, dict):
        value = value.get("field_name")
    if value not in names:
        raise ToolConfigError(
            tool, key, f"field_name must be one of {', '.join(names)}, got {value!r}"
        )
    assert isinstance(value, str)
    return value


def request_step_of(fmt: str | None, units: _Units) -> int:
    """The step of the request values a ``datetime_format`` writes, in nanoseconds.

    ``%s``: seconds; ``%ms``: milliseconds; a strftime format: microseconds with ``%f``,
    else seconds. Without one, the adapter's default: seconds when the API takes whole
    seconds, else milliseconds.
    """
    if fmt is None:
        return SECOND if units.query_step % SECOND == 0 else 10**6
    if fmt == "%ms":
        return 10**6
    if "%f" in fmt:
        return 10**3
    return SECOND


def _airbyte(config: Mapping[str, object], units: _Units) -> SyncPlan:
    tool = "airbyte"
    if not units.time:
        raise ToolConfigError(
            tool,
            None,
            "airbyte-cdk's DatetimeBasedCursor reads timestamp cursors only, and this contract's "
            'order is not a timestamp (order.encoding = "rfc3339")',
        )
    granularity = _duration(tool, config, "cursor_granularity")
    step = _duration(tool, config, "step")
    if step is not None and granularity is None:
        raise ToolConfigError(
            tool, "step", "airbyte-cdk requires cursor_granularity with step; add e.g. PT1S"
        )
    lookback = _duration(tool, config, "lookback_window") or 0
    fmt = config.get("datetime_format")
    if fmt is not None and (not isinstance(fmt, str) or not fmt or "{{" in fmt):
        raise ToolConfigError(tool, "datetime_format", f"%s, %ms or a strftime format, got {fmt!r}")
    formats = config.get("cursor_datetime_formats")
    if formats is not None and (
        not isinstance(formats, list) or not formats or not all(isinstance(f, str) for f in formats)
    ):
        raise ToolConfigError(tool, "cursor_datetime_formats", "a list of formats is required")
    _instant(tool, config, "start_datetime")
    _instant(tool, config, "end_datetime")
    lower = _option(tool, config, "start_time_option", ("cursor[gte]", "cursor[gt]"))
    upper = _option(tool, config, "end_time_option", ("cursor[lte]", "cursor[lt]"))
    _flag(tool, config, "is_compare_strictly", False)
    global_cursor = _flag(tool, config, "global_substream_cursor", False)
    mode = _choice(tool, config, "destination_sync_mode", ("append", "append_dedup"))
    slices = None
    if granularity is not None:
        slices = Slices(
            step if step is not None else 10 * SECOND,  # the adapter's default step, PT10S
            granularity,
            "step" if step is not None else "step (the adapter's default, PT10S)",
            "cursor_granularity",
        )
    return SyncPlan(
        tool=tool,
        config=MappingProxyType(dict(config)),
        full_table=False,
        lag=lookback,
        lag_key="lookback_window" if lookback else None,
        lower_inclusive=lower == "cursor[gte]",
        exact_lower=False,  # the bound is formatted per datetime_format, rounded down
        cap="start",  # the last slice ends at the run's start (end_datetime defaults to now)
        cap_lag=0,
        cap_inclusive=upper == "cursor[lte]",
        cap_key=None,
        one_query=slices is None,
        state="global" if global_cursor else "per-partition",
        # ConcurrentPerPartitionCursor starts a partition it has not seen from the global
        # cursor, the greatest value over the other partitions
        new_partition_start="global",
        state_key="global_substream_cursor" if global_cursor else None,
        slices=slices,
        request_step=request_step_of(fmt if isinstance(fmt, str) else None, units),
        mode="merge" if mode == "append_dedup" else "append",
        atomic=False,  # the destination persists records, then echoes the state
        boundary_dedupe=False,
    )


_PLANS: Mapping[str, Callable[[Mapping[str, object], _Units], SyncPlan]] = MappingProxyType(
    {"dlt": _dlt, "singer": _singer, "airbyte": _airbyte}
)

#: The tools the review has a model of (equal to ``fencepost.adapters.ADAPTERS``'s names).
TOOLS: tuple[str, ...] = tuple(_PLANS)


def plan(tool: str, config: Mapping[str, object], contract: Contract) -> SyncPlan:
    """The plan of ``tool`` under ``config`` on ``contract``'s source.

    Raises :class:`ToolConfigError` for an unknown tool, an unknown key (naming it and
    the known ones) or a value the tool does not take.
    """
    if tool not in _PLANS:
        raise ToolConfigError(
            tool, None, f"no review model for {tool!r} (known: {', '.join(TOOLS)})"
        )
    _check_keys(tool, config)
    return _PLANS[tool](config, _units(contract))
