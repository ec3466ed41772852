"""Schedules: the harness's choices, one step at a time, in domain words.

A schedule is a sequence of :data:`Action` values. Each is either a choice of
whose call to answer next and how (the scheduler and the network), a request
to start (the workload), or an environment step (the source finalizes an
event, an honest reader certifies a cut, the membership changes, an operator
misconfigures a checkpoint). A step that is not possible when its turn comes
(answering a worker with no call pending, a lost response to a read that must
be a write) is skipped, so any sub-sequence of a schedule is again a schedule:
that is what lets the shrinker delete steps freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fencepost.harness.world import INJECT_KINDS


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
    """Misconfigure ``partition``'s checkpoint in the current epoch (see INJECT_KINDS)."""

    partition: str
    kind: str


Action = Publish | Ingest | Answer | Advance | Finalize | Reshard | Inject

#: How a pending call may be answered, per op. ``lost``: the response is lost and a
#: write is *not* applied; ``applied_lost``: the write is applied, then its response
#: is lost; the page modes shape the provider's answer (world.World.page).
MODES: dict[str, tuple[str, ...]] = {
    "read_publication": ("ok", "lost"),
    "read_membership": ("ok", "lost"),
    "read_checkpoints": ("ok", "lost"),
    "write_publication": ("ok", "lost", "applied_lost"),
    "read_checkpoint": ("ok", "lost"),
    "fetch_page": ("ok", "lost", "empty", "overlap", "noclaim", "horizon"),
    "record_outcome": ("ok", "lost", "applied_lost"),
    "write_checkpoint": ("ok", "lost", "applied_lost"),
}

#: Modes that lose a response (counted against a request's fault budget).
LOSSES = frozenset({"lost", "applied_lost"})

_MODE_WORDS = {
    "ok": "answered",
    "lost": "response lost (not applied)",
    "applied_lost": "applied, then its response lost",
    "empty": "answered with an empty page",
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
    return f"operator misconfigures partition {action.partition}'s checkpoint: {action.kind}"


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
    return {"do": "inject", "partition": action.partition, "kind": action.kind}


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
    "inject": ("partition", "kind"),
}

_ALL_MODES = frozenset(m for modes in MODES.values() for m in modes)


def action_from_json(data: object, where: str = "step") -> Action:
    """Parse :func:`action_to_json`'s form; :class:`ScheduleError` names the field."""
    if not isinstance(data, dict):
        raise ScheduleError(f"{where}: a step is a JSON object with a 'do' field")
    do = data.get("do")
    if do not in _SHAPES:
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
        if mode not in _ALL_MODES:
            raise ScheduleError(f"{where}.mode: one of {', '.join(sorted(_ALL_MODES))}")
        assert isinstance(mode, str)
        return Answer(_text(data, "worker", where), mode)
    if do == "advance":
        return Advance(_text(data, "partition", where))
    if do == "finalize":
        return Finalize(_text(data, "partition", where))
    if do == "reshard":
        return Reshard()
    kind = _text(data, "kind", where)
    if kind not in INJECT_KINDS:
        raise ScheduleError(f"{where}.kind: one of {', '.join(INJECT_KINDS)}, got {kind!r}")
    return Inject(_text(data, "partition", where), kind)
