"""Schedules: the harness's choices, one step at a time, in domain words.

A schedule is a sequence of :data:`Action` values. Each is either a choice of
whose call to answer next and how (the scheduler and the network), a request
to start (the workload), or an environment step (the source finalizes an
event, an honest reader certifies a cut, the membership changes, an operator
misconfigures a checkpoint). A step that is not possible when its turn comes
(answering a worker with no call pending, a lost response to a read that must
be a write) is skipped, so any sub-sequence of a schedule is again a schedule:
that is what lets the shrinker delete steps freely.

The harness's scheduler drives processes through the protocol, whatever their
language; fencepost's Python objects on real stores are driven by the lockstep
scheduler (:mod:`fencepost.properties.lockstep`, which says why the two stay two).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fencepost.harness.world import INJECT_KINDS
from fencepost.judge.values import BadValue, Cut
from fencepost.judge.wire import cut_from_json, cut_to_json


@dataclass(frozen=True, slots=True)
class Publish:
    """Start a publication attempt at publisher ``worker``."""

    worker: str


@dataclass(frozen=True, slots=True)
class Ingest:
    """Start an ingest pass at reader ``worker`` for ``partition`` in the current epoch."""

    worker: str
    partition: str


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer ``worker``'s pending call, shaped by ``mode`` (see :data:`MODES`)."""

    worker: str
    mode: str = "ok"


@dataclass(frozen=True, slots=True)
class Advance:
    """An honest reader certifies ``partition``'s next true cut (publisher-level worlds)."""

    partition: str


@dataclass(frozen=True, slots=True)
class Finalize:
    """The source finalizes the next event of ``partition``."""

    partition: str


@dataclass(frozen=True, slots=True)
class Reshard:
    """The next epoch's membership becomes durable."""


@dataclass(frozen=True, slots=True)
class Inject:
    """Misconfigure ``partition``'s checkpoint in the current epoch (see INJECT_KINDS).

    ``cut``: the cut the misconfigured checkpoint claims; None lets the world
    choose (the partition's whole log, or the previous epoch's checkpoint for
    ``wrong_epoch``). Ignored by ``missing``.
    """

    partition: str
    kind: str
    cut: Cut | None = None


@dataclass(frozen=True, slots=True)
class Certify:
    """An honest reader certifies exactly ``cut`` for ``partition`` in the current epoch.

    Unlike :class:`Advance` (the next true cut in the partition's claim style)
    any cut of the order may be named, ``before x`` below the first event and
    both endpoint kinds in one partition included. The source finalizes the
    events of the cut's downset and their outcomes become durable as it does
    (the ingest guarantee); the stored checkpoint is judged like a SUT's. Only
    possible when the cut is ahead of the partition's stored checkpoint.
    """

    partition: str
    cut: Cut


@dataclass(frozen=True, slots=True)
class Serve:
    """From now on the provider answers a fetch of ``token`` (None: the start) of
    ``partition`` in the current epoch with this scripted page.

    ``events`` are ids of the partition's ground truth; ``next_token`` the
    page's continuation (None: the last page); ``claim`` the source's
    coverage claim, final or not (None: no claim); the next ``lost`` fetches of
    the token time out first. Once a partition has a scripted page, every fetch
    of it is answered from the script (a token with no page gets an empty page
    without claim or continuation). Claims are *not* trusted: the checks judge
    what the SUT stores from them against the ground truth.
    """

    partition: str
    token: str | None
    events: tuple[str, ...]
    next_token: str | None = None
    claim: Cut | None = None
    final: bool = True
    lost: int = 0


@dataclass(frozen=True, slots=True)
class Crash:
    """Worker ``worker``'s process dies (its pending call is never answered) and a
    fresh one is started and greeted; the harness's stores keep their state.

    The restarted worker is named ``<worker>.<n>`` (incarnation ``n``, from 2)
    in the ``publish``/``ingest`` messages it receives, so the op_ids it derives
    from that name never reuse its dead predecessor's.
    """

    worker: str


Action = Publish | Ingest | Answer | Advance | Finalize | Reshard | Inject | Certify | Serve | Crash

#: How a pending call may be answered, per op. ``lost``: the response is lost and a
#: write is *not* applied; ``applied_lost``: the write is applied, then its response
#: is lost; the page modes shape the provider's answer (world.World.page).
MODES: dict[str, tuple[str, ...]] = {
    "read_publication": ("ok", "lost"),
    "read_membership": ("ok", "lost"),
    "read_checkpoints": ("ok", "lost"),
    "write_publication": ("ok", "lost", "applied_lost"),
    "read_checkpoint": ("ok", "lost"),
    "fetch_page": ("ok", "lost", "empty", "heartbeat", "overlap", "noclaim", "horizon"),
    "record_outcome": ("ok", "lost", "applied_lost"),
    "write_checkpoint": ("ok", "lost", "applied_lost"),
}

#: Modes that lose a response (counted against a request's fault budget).
LOSSES = frozenset({"lost", "applied_lost"})

#: A mode of its own, for scripted bases and regression files (never enumerated by the
#: search): the pending call and every later call of the same request lose their
#: responses, not applied, until the request ends. A program that never gives up is a
#: ``runaway`` at the harness's limit of calls per request: retries are bounded
#: (docs/semantics.md section 5).
LOST_UNTIL_END = "lost_until_end"
#: Another mode of its own (publication attempts only): every write of the request
#: conflicts until the request ends, because another writer rewrites the record's claim
#: (same epoch and cut, next revision) right before each write arrives; every other call
#: is answered normally. Like :data:`LOST_UNTIL_END`, a fault that outlasts any retry
#: budget: the attempt must give up honestly (docs/conformance.md, "How the search works").
CONFLICT_UNTIL_END = "conflict_until_end"
#: The modes that persist until the request ends.
UNTIL_END = frozenset({LOST_UNTIL_END, CONFLICT_UNTIL_END})

_MODE_WORDS = {
    LOST_UNTIL_END: "and every later call of its request lost, until the request ends",
    CONFLICT_UNTIL_END: "and every write of its request beaten by another writer, until "
    "the request ends",
    "ok": "answered",
    "lost": "response lost (not applied)",
    "applied_lost": "applied, then its response lost",
    "empty": "answered with an empty page",
    "heartbeat": "answered with an empty page carrying a final claim",
    "overlap": "answered with a page repeating the previous event",
    "noclaim": "answered with a page carrying no claim",
    "horizon": "answered with a final claim only up to what is finalized",
}


def describe(action: Action) -> str:
    """The action in domain words, without the run's context."""
    if isinstance(action, Publish):
        return f"{action.worker} starts a publication attempt"
    if isinstance(action, Ingest):
        return f"{action.worker} starts an ingest pass of partition {action.partition}"
    if isinstance(action, Answer):
        return f"{action.worker}'s pending call {_MODE_WORDS.get(action.mode, action.mode)}"
    if isinstance(action, Advance):
        return f"an honest reader certifies partition {action.partition}'s next true cut"
    if isinstance(action, Finalize):
        return f"the source finalizes the next event of partition {action.partition}"
    if isinstance(action, Reshard):
        return "the next epoch's membership becomes durable (reshard)"
    if isinstance(action, Certify):
        return f"an honest reader certifies partition {action.partition} up to {action.cut}"
    if isinstance(action, Serve):
        at = "the start" if action.token is None else repr(action.token)
        claim = (
            "no claim"
            if action.claim is None
            else f"a {'final' if action.final else 'non-final'} claim {action.claim}"
        )
        return (
            f"the provider serves {action.partition} at {at}: "
            f"{', '.join(action.events) or 'no events'}; {claim}"
        )
    if isinstance(action, Crash):
        return f"{action.worker}'s process crashes and a fresh one starts"
    at = "" if action.cut is None else f" at {action.cut}"
    return f"operator misconfigures partition {action.partition}'s checkpoint: {action.kind}{at}"


def mode_words(mode: str) -> str:
    return _MODE_WORDS.get(mode, mode)


def action_to_json(action: Action) -> dict[str, object]:
    if isinstance(action, Publish):
        return {"do": "publish", "worker": action.worker}
    if isinstance(action, Ingest):
        return {"do": "ingest", "worker": action.worker, "partition": action.partition}
    if isinstance(action, Answer):
        return {"do": "answer", "worker": action.worker, "mode": action.mode}
    if isinstance(action, Advance):
        return {"do": "advance", "partition": action.partition}
    if isinstance(action, Finalize):
        return {"do": "finalize", "partition": action.partition}
    if isinstance(action, Reshard):
        return {"do": "reshard"}
    if isinstance(action, Certify):
        return {"do": "certify", "partition": action.partition, "cut": cut_to_json(action.cut)}
    if isinstance(action, Serve):
        return {
            "do": "serve",
            "partition": action.partition,
            "token": action.token,
            "events": list(action.events),
            "next_token": action.next_token,
            "claim": None if action.claim is None else cut_to_json(action.claim),
            "final": action.final,
            "lost": action.lost,
        }
    if isinstance(action, Crash):
        return {"do": "crash", "worker": action.worker}
    out: dict[str, object] = {"do": "inject", "partition": action.partition, "kind": action.kind}
    if action.cut is not None:
        out["cut"] = cut_to_json(action.cut)
    return out


class ScheduleError(ValueError):
    """A schedule step that cannot be read; the message names the step and the field."""


def _text(obj: Mapping[str, object], key: str, where: str) -> str:
    value = obj.get(key)
    if type(value) is not str or not value:
        raise ScheduleError(f"{where}.{key}: a non-empty string is required, got {value!r}")
    return value


_SHAPES: dict[str, tuple[str, ...]] = {
    "publish": ("worker",),
    "ingest": ("worker", "partition"),
    "answer": ("worker", "mode"),
    "advance": ("partition",),
    "finalize": ("partition",),
    "reshard": (),
    "inject": ("partition", "kind", "cut"),
    "certify": ("partition", "cut"),
    "serve": ("partition", "token", "events", "next_token", "claim", "final", "lost"),
    "crash": ("worker",),
}

_ALL_MODES = frozenset({*UNTIL_END, *(m for modes in MODES.values() for m in modes)})


def action_from_json(data: object, where: str = "step") -> Action:
    """Parse :func:`action_to_json`'s form; :class:`ScheduleError` names the field."""
    if not isinstance(data, dict):
        raise ScheduleError(f"{where}: a step is a JSON object with a 'do' field")
    do = data.get("do")
    if not isinstance(do, str) or do not in _SHAPES:
        raise ScheduleError(f"{where}.do: one of {', '.join(_SHAPES)}, got {do!r}")
    assert isinstance(do, str)
    for key in data:
        if key != "do" and key not in _SHAPES[do]:
            raise ScheduleError(f"{where}.{key}: unknown field for {do!r}")
    if do == "publish":
        return Publish(_text(data, "worker", where))
    if do == "ingest":
        return Ingest(_text(data, "worker", where), _text(data, "partition", where))
    if do == "answer":
        mode = data.get("mode", "ok")
        if not isinstance(mode, str) or mode not in _ALL_MODES:
            raise ScheduleError(f"{where}.mode: one of {', '.join(sorted(_ALL_MODES))}")
        assert isinstance(mode, str)
        return Answer(_text(data, "worker", where), mode)
    if do == "advance":
        return Advance(_text(data, "partition", where))
    if do == "finalize":
        return Finalize(_text(data, "partition", where))
    if do == "reshard":
        return Reshard()
    if do == "certify":
        if data.get("cut") is None:
            raise ScheduleError(f'{where}.cut: a cut {{"at": x, "kind": ...}} is required')
        return Certify(_text(data, "partition", where), _cut(data.get("cut"), f"{where}.cut"))
    if do == "serve":
        return _serve_from_json(data, where)
    if do == "crash":
        return Crash(_text(data, "worker", where))
    kind = _text(data, "kind", where)
    if kind not in INJECT_KINDS:
        raise ScheduleError(f"{where}.kind: one of {', '.join(INJECT_KINDS)}, got {kind!r}")
    raw_cut = data.get("cut")
    return Inject(
        _text(data, "partition", where),
        kind,
        None if raw_cut is None else _cut(raw_cut, f"{where}.cut"),
    )


def _cut(data: object, where: str) -> Cut:
    try:
        return cut_from_json(data, where)
    except BadValue as exc:
        raise ScheduleError(str(exc)) from None


def _optional_text(obj: Mapping[str, object], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not str or not value:
        raise ScheduleError(f"{where}.{key}: a non-empty string or null, got {value!r}")
    return value


def _serve_from_json(data: Mapping[str, object], where: str) -> Serve:
    events = data.get("events", [])
    if not isinstance(events, list) or any(type(e) is not str or not e for e in events):
        raise ScheduleError(f"{where}.events: a list of event ids (non-empty strings)")
    final = data.get("final", True)
    if type(final) is not bool:
        raise ScheduleError(f"{where}.final: true or false, got {final!r}")
    lost = data.get("lost", 0)
    if type(lost) is not int or not 0 <= lost <= 1000:
        raise ScheduleError(f"{where}.lost: an integer from 0 to 1000, got {lost!r}")
    raw_claim = data.get("claim")
    return Serve(
        _text(data, "partition", where),
        _optional_text(data, "token", where),
        tuple(events),
        _optional_text(data, "next_token", where),
        None if raw_claim is None else _cut(raw_claim, f"{where}.claim"),
        final,
        lost,
    )
