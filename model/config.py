"""Bounds and switches of the fencepost model, validated up front.

A :class:`ModelConfig` fixes one finite instance of the protocol: how many
partitions, publishers and ingest readers, which coordinates and events exist,
how many membership epochs, which faults the network may inject, the cutover
policy, which sub-model (``part``) runs, and at most one mutant (a known bug
switched on). Every field is checked by :meth:`ModelConfig.validate`; a bad
value raises :class:`ConfigError` naming the field and the fix.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from fencepost.model.cuts import to_half

PARTS = ("ingest", "publication", "composed")
POLICIES = ("monotone", "reset")
BAD_CHECKPOINT_KINDS = ("provisional", "scope", "epoch")

#: Hard ceilings that keep a typo from asking for an astronomically large space.
_CEILINGS = {
    "partitions": 6,
    "publishers": 6,
    "readers": 4,
    "coordinates": 16,
    "events_per_partition": 12,
    "moved_events": 6,
    "epochs": 6,
    "attempts": 6,
    "retries": 6,
    "reader_retries": 6,
    "passes": 6,
    "page_size": 6,
}


class ConfigError(ValueError):
    """A model bound or switch is invalid; the message names the field and the fix."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One finite instance of the protocol.

    ``part`` picks the sub-model: ``ingest`` (readers and the source; no
    publishers), ``publication`` (publishers; checkpoints advance as
    environment steps; no readers) or ``composed`` (both). Fields a part does
    not use are ignored by it, and so is a mutant whose bug lives elsewhere.

    Bounds: ``partitions`` (members of every epoch), ``publishers``,
    ``readers`` (ingest workers per partition), ``coordinates`` (integer
    coordinate values ``0..coordinates-1`` of the one order),
    ``events_per_partition`` / ``positions`` (each partition's own events, in
    coordinate units; several may share a coordinate), ``moved_events`` /
    ``moved_positions`` (the events each reshard moves into a partition),
    ``epochs`` (membership epochs; ``epochs - 1`` reshards), ``attempts``
    (publication attempts per publisher), ``retries`` (retries within one
    attempt after a conflict or an unconfirmed lost response), ``passes``
    (ingest passes per reader), ``page_size`` (new events per page).
    ``None`` positions pick the default layout (see :func:`_default_positions`).

    Order: ``successor`` true is an order with an exact successor (offsets,
    events only at integer coordinates); false is dense (timestamps, strings),
    where events may also sit half-way past a coordinate.

    Faults and environment: ``lost_responses`` (write responses may be lost,
    the write applied or not), ``in_flight`` (a publication write whose
    response timed out may still be applied later), ``read_timeouts``
    (publisher reads may time out; the attempt gives up), ``overlap`` (a page
    may repeat the previous page's last event), ``bad_checkpoints`` (kinds of
    bad first checkpoints the publication environment may store).

    Readers: ``reader_retries`` picks the reader. ``None`` is the simple reader
    (a pass ends at its first checkpoint write, whatever its answer); an integer
    is the production reader (``fencepost.impl.reader.PartitionReader`` with
    ``max_retries`` = this many): after a lost response it rereads its
    checkpoint (authoritative read) and, within that many extra writes, writes
    again when its write was not applied or rewrites after a lost race while its
    claim is still strictly ahead. ``save_progress`` (production reader only)
    adds the token-only progress write at the end of a pass: the same cut with
    the token reached, when that token differs from the stored one. The
    explored defaults and the refinement check use the production reader; the
    simple one remains for drivers written against it.

    ``policy`` is the membership cutover policy, ``scope`` the stream's query
    scope, ``mutant`` at most one known bug switched on
    (:data:`fencepost.model.mutants.MUTANTS`).
    """

    part: str = "publication"
    partitions: int = 2
    publishers: int = 2
    readers: int = 0
    coordinates: int = 1
    events_per_partition: int = 2
    moved_events: int = 1
    epochs: int = 2
    lost_responses: bool = True
    in_flight: bool = True
    read_timeouts: bool = True
    policy: str = "monotone"
    successor: bool = False
    attempts: int = 1
    retries: int = 1
    reader_retries: int | None = None
    save_progress: bool = False
    passes: int = 1
    page_size: int = 1
    overlap: bool = True
    bad_checkpoints: tuple[str, ...] = BAD_CHECKPOINT_KINDS
    positions: tuple[float, ...] | None = None
    moved_positions: tuple[float, ...] | None = None
    scope: str = "q1"
    mutant: str | None = None
    _halves: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _moved_halves: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------ checks
    def validate(self) -> None:
        """Raise :class:`ConfigError` for the first invalid field, naming it and the fix."""
        _choice("part", self.part, PARTS)
        _choice("policy", self.policy, POLICIES)
        for name, low in (
            ("partitions", 1),
            ("publishers", 0),
            ("readers", 0),
            ("coordinates", 1),
            ("events_per_partition", 0),
            ("moved_events", 0),
            ("epochs", 1),
            ("attempts", 0),
            ("retries", 0),
            ("passes", 0),
            ("page_size", 0),
        ):
            _int_in(name, getattr(self, name), low, _CEILINGS[name])
        if self.reader_retries is not None:
            _int_in("reader_retries", self.reader_retries, 0, _CEILINGS["reader_retries"])
        for name in (
            "lost_responses",
            "in_flight",
            "read_timeouts",
            "successor",
            "overlap",
            "save_progress",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.save_progress and self.reader_retries is None:
            raise ConfigError(
                "save_progress needs the production reader: set reader_retries (0 or more)"
            )
        if not isinstance(self.scope, str) or not self.scope:
            raise ConfigError(f"scope must be a non-empty string, got {self.scope!r}")
        if not isinstance(self.bad_checkpoints, tuple):
            raise ConfigError(
                f"bad_checkpoints must be a tuple of kinds from {BAD_CHECKPOINT_KINDS}, "
                f"got {self.bad_checkpoints!r}"
            )
        for kind in self.bad_checkpoints:
            _choice("bad_checkpoints entry", kind, BAD_CHECKPOINT_KINDS)
        if len(set(self.bad_checkpoints)) != len(self.bad_checkpoints):
            raise ConfigError(f"bad_checkpoints lists a kind twice: {self.bad_checkpoints!r}")
        if self.mutant is not None:
            from fencepost.model.mutants import MUTANTS

            if self.mutant not in MUTANTS:
                raise ConfigError(
                    f"unknown mutant {self.mutant!r}; choose one of {', '.join(sorted(MUTANTS))}"
                )
        halves = self._layout(
            "positions", self.positions, self.events_per_partition, _default_positions
        )
        moved = self._layout(
            "moved_positions", self.moved_positions, self.moved_events, _default_moved
        )
        object.__setattr__(self, "_halves", halves)
        object.__setattr__(self, "_moved_halves", moved)

    def _layout(
        self,
        name: str,
        given: tuple[float, ...] | None,
        count: int,
        default: Any,
    ) -> tuple[int, ...]:
        if given is None:
            values: tuple[Fraction, ...] = default(count, self.coordinates, self.successor)
        else:
            if not isinstance(given, tuple):
                raise ConfigError(f"{name} must be a tuple of coordinates, got {given!r}")
            values = tuple(_coordinate(name, v) for v in given)
            expected = self.events_per_partition if name == "positions" else self.moved_events
            if len(values) != expected:
                count_name = "events_per_partition" if name == "positions" else "moved_events"
                raise ConfigError(
                    f"{name} lists {len(values)} events but {count_name} is {expected}; "
                    "make them agree"
                )
        halves = []
        top = Fraction(self.coordinates - 1) + (0 if self.successor else Fraction(1, 2))
        for value in values:
            shown = f"{float(value):g}"
            half = to_half(value)
            if self.successor and half % 2:
                raise ConfigError(
                    f"{name}: event at {shown} sits between integer coordinates, which an "
                    "order with an exact successor does not allow; use successor=False"
                )
            if value < 0 or value > top:
                where = "" if self.successor else ", or half-way past the last on a dense order"
                raise ConfigError(
                    f"{name}: event at {shown} lies outside the coordinates "
                    f"0..{self.coordinates - 1}{where}; raise coordinates or move the event"
                )
            halves.append(half)
        return tuple(sorted(halves))

    # ------------------------------------------------------------------ derived
    @property
    def own_halves(self) -> tuple[int, ...]:
        """Positions (half units, ascending) of each partition's own events."""
        return self._halves

    @property
    def moved_halves(self) -> tuple[int, ...]:
        """Positions (half units, ascending) of the events one reshard moves into a partition."""
        return self._moved_halves

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed, validated again."""
        return dataclasses.replace(self, **changes)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(
            f"{name}={value} is outside {low}..{high}; the model is explored exhaustively, "
            "so keep bounds small"
        )


def _coordinate(name: str, value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise ConfigError(f"{name}: {value!r} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}: {value!r} is not a finite coordinate")
    result = Fraction(value)
    if (result * 2).denominator != 1:
        raise ConfigError(f"{name}: {value!r} is not a multiple of 0.5")
    return result


def _default_positions(count: int, coordinates: int, successor: bool) -> tuple[Fraction, ...]:
    """Default own-event layout, filled coordinate by coordinate.

    Dense orders: 0, 0.5, 0, 1, 1.5, 1, ... (an event at the coordinate, one
    half-way past it, a second one sharing the coordinate). Successor orders:
    0, 0, 1, 1, ... (events sharing a coordinate).
    """
    values: list[Fraction] = []
    x = 0
    while len(values) < count:
        if successor:
            values.extend([Fraction(x)] * 2)
        else:
            values.extend([Fraction(x), Fraction(2 * x + 1, 2), Fraction(x)])
        x += 1
    values = values[:count]
    top = coordinates - (1 if successor else Fraction(1, 2))
    if values and max(values) > top:
        raise ConfigError(
            f"events_per_partition={count} does not fit in coordinates={coordinates} with the "
            "default layout; raise coordinates or give positions explicitly"
        )
    return tuple(sorted(values))


def _default_moved(count: int, coordinates: int, successor: bool) -> tuple[Fraction, ...]:
    """Default layout of moved events: 0, 0, ... (below any old checkpoint that covers 0)."""
    return tuple(Fraction(0) for _ in range(count))


#: Default bounds per part: small enough to explore in seconds, large enough that
#: every mutant's counterexample and every ``sometimes`` property is reached (pinned in
#: tests/model). Faults and the merge over several partitions are explored in each half
#: of the assume-guarantee split; the composed part checks that they fit: one partition
#: whose checkpoints come from real passes, two passes and two publication attempts (one
#: in each epoch), no lost responses, under the ``reset`` policy, so that the default
#: exploration reaches a cutover under each policy (``monotone`` in publication).
DEFAULTS: dict[str, ModelConfig] = {
    "ingest": ModelConfig(
        part="ingest",
        partitions=1,
        publishers=0,
        readers=2,
        events_per_partition=2,
        positions=(0, 0),
        epochs=1,
        reader_retries=1,
        save_progress=True,
    ),
    "publication": ModelConfig(part="publication"),
    "composed": ModelConfig(
        part="composed",
        partitions=1,
        publishers=1,
        readers=1,
        events_per_partition=1,
        epochs=2,
        attempts=2,
        passes=2,
        overlap=False,
        lost_responses=False,
        policy="reset",
        reader_retries=1,
        save_progress=True,
    ),
}


def default_config(part: str, **overrides: Any) -> ModelConfig:
    """The default bounds of ``part`` with some fields overridden (validated).

    Overriding an event count without the matching positions drops the
    default's explicit layout for the default one of that many events.
    """
    _choice("part", part, PARTS)
    for count, layout in (
        ("events_per_partition", "positions"),
        ("moved_events", "moved_positions"),
    ):
        if count in overrides and layout not in overrides:
            overrides[layout] = None
    return DEFAULTS[part].replace(**overrides)
