"""How a scenario's world maps onto one model configuration (the static plan).

The model (:mod:`fencepost.model`) explores small abstract worlds: partitions
named A, B, ... with identical own events, integer coordinates 0..15 (events
may also sit half-way on a dense order), one order, every partition a member of
every epoch. :func:`plan` decides, before anything runs, whether a scenario
fits and how: coordinates compressed order-preservingly (on an order with an
exact successor consecutive values stay consecutive, so ``through x == before
x+1`` keeps holding exactly where it did), partitions in sorted order,
publishers and readers one model process per incarnation. A scenario that does
not fit is :class:`~fencepost.scenarios.outcome.Unsupported`, naming the gap.
The driver is :mod:`fencepost.scenarios.model_runner`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.judge.values import Coordinate, Cut
from fencepost.model.config import BAD_CHECKPOINT_KINDS, ConfigError, ModelConfig
from fencepost.model.mutants import MUTANTS
from fencepost.scenarios.outcome import Unsupported
from fencepost.scenarios.spec import (
    Certify,
    Crash,
    Ingest,
    Misconfigure,
    Publish,
    Scenario,
    Serve,
)

#: The scenario's misconfiguration kinds by the model's names for them.
BAD_KIND = {"provisional": "provisional", "wrong_scope": "scope", "wrong_epoch": "epoch"}
_MAX = {"coordinates": 16, "events": 12, "partitions": 6, "publishers": 6, "readers": 4}


@dataclass
class Plan:
    config: ModelConfig
    partition: dict[str, str]  # scenario partition -> model name
    epoch: dict[int, int]  # scenario epoch -> model epoch
    epoch_back: dict[int, int]
    coord: dict[Coordinate, int]  # scenario coordinate -> model integer coordinate
    coord_back: dict[int, Coordinate]
    reshard_target: dict[int, str | None]  # scenario epoch -> model partition receiving events
    publishers: dict[tuple[str, int], str]  # (worker, incarnation) -> model publisher
    readers: dict[tuple[str, str, int], str]  # (worker, partition, incarnation) -> model reader


def _fail(reason: str) -> Unsupported:
    return Unsupported(reason)


def _coordinates(scenario: Scenario) -> set[Coordinate]:
    values: set[Coordinate] = {ev.at for events in scenario.truth.values() for ev in events}

    def add(cut: Cut | None) -> None:
        if cut is not None and cut.at is not None:
            values.add(cut.at)

    for step in scenario.steps:
        a = step.action
        if isinstance(a, Certify | Misconfigure):
            add(a.cut)
        elif isinstance(a, Serve):
            add(a.claim)
        e = step.expect
        if e.attempt is not None:
            add(e.attempt.cut)
        add(e.ingest)
        if e.record is not None:
            add(e.record.cut)
        for cut in e.checkpoints.values():
            add(cut)
    return values


def plan(scenario: Scenario) -> Plan:
    """Map the scenario's world onto a model configuration, or say why it does not fit."""
    order = scenario.single_order
    if order is None:
        raise _fail(
            "the model has one order for all partitions; this scenario's members use several"
        )
    members = {tuple(sorted(e.members)) for e in scenario.epochs}
    if len(members) != 1:
        listed = "; ".join(
            f"epoch {e.epoch}: {', '.join(sorted(e.members)) or 'none'}" for e in scenario.epochs
        )
        raise _fail(
            "the model keeps every partition a member of every epoch (a reshard moves events "
            f"between them); here the members change ({listed})"
        )
    names = members.pop()
    if not names or len(names) > _MAX["partitions"]:
        raise _fail(f"the model needs 1 to {_MAX['partitions']} partitions, not {len(names)}")
    partition = {p: chr(ord("A") + i) for i, p in enumerate(names)}
    if len(scenario.epochs) > 6:
        raise _fail("the model has at most 6 epochs")
    epoch = {e.epoch: i + 1 for i, e in enumerate(scenario.epochs)}
    epoch_back = {v: k for k, v in epoch.items()}

    # -- coordinates ----------------------------------------------------------------
    successor = order.has_successor
    values = sorted(_coordinates(scenario), key=lambda v: (0, v) if isinstance(v, int) else (1, v))
    coord: dict[Coordinate, int] = {}
    coord_back: dict[int, Coordinate] = {}
    m = -1
    prev: Coordinate | None = None
    for v in values:
        if prev is None:
            m = 0
        elif successor and isinstance(v, int) and isinstance(prev, int) and v != prev + 1:
            m += 2
            coord_back[m - 1] = prev + 1
        else:
            m += 1
        coord[v] = m
        coord_back[m] = v
        prev = v
    if successor and isinstance(prev, int):
        coord_back[m + 1] = prev + 1
    coordinates = max(m + 1, 1)
    if coordinates > _MAX["coordinates"]:
        raise _fail(
            f"the scenario uses {coordinates} distinct coordinates (after compression); the "
            f"model has at most {_MAX['coordinates']}"
        )

    # -- which sub-model -------------------------------------------------------------
    kinds = {step.kind for step in scenario.steps}
    has_ingest = "ingest" in kinds
    has_env = bool(kinds & {"certify", "misconfigure"})
    if has_ingest and has_env:
        raise _fail(
            "in the model, checkpoints come either from the environment (publication part) or "
            "from ingest passes (ingest and composed parts), not both"
        )
    part = ("composed" if "publish" in kinds else "ingest") if has_ingest else "publication"

    # -- ground truth ------------------------------------------------------------------
    first = scenario.epochs[0].epoch
    own: dict[str, list[int]] = {}
    for p in names:
        own[p] = sorted(coord[ev.at] for ev in scenario.events(first, p))
    if part == "publication":
        positions: list[int] = []
        for x in sorted({h for hs in own.values() for h in hs}):
            positions.extend([x] * max(hs.count(x) for hs in own.values()))
    else:
        layouts = {tuple(hs) for hs in own.values()}
        if len(layouts) != 1:
            raise _fail(
                "the model's partitions all hold the same own events; an ingest scenario here "
                "gives its partitions different ones"
            )
        positions = list(layouts.pop())
    moved: tuple[int, ...] | None = None
    reshard_target: dict[int, str | None] = {}
    for prev_e, next_e in zip(scenario.epochs, scenario.epochs[1:], strict=False):
        targets = []
        for p in names:
            before = {ev.id for ev in scenario.events(prev_e.epoch, p)}
            after = scenario.events(next_e.epoch, p)
            if not before <= {ev.id for ev in after}:
                raise _fail(
                    f"events leave partition {p} at epoch {next_e.epoch}; in the model a "
                    "reshard only moves events into a partition (give moved copies new ids)"
                )
            added = tuple(sorted(coord[ev.at] for ev in after if ev.id not in before))
            if added:
                targets.append((p, added))
        if len(targets) > 1:
            raise _fail(f"the reshard to epoch {next_e.epoch} moves events into several partitions")
        batch = targets[0][1] if targets else ()
        if moved is None:
            moved = batch
        elif batch != moved:
            raise _fail("the model moves the same batch of events at every reshard")
        reshard_target[next_e.epoch] = partition[targets[0][0]] if targets else None
    moved = moved or ()
    if len(positions) > _MAX["events"]:
        raise _fail(f"the model holds at most {_MAX['events']} events per partition")

    # -- workers -------------------------------------------------------------------------
    publishers: dict[tuple[str, int], str] = {}
    readers: dict[tuple[str, str, int], str] = {}
    incarnation: dict[str, int] = {}
    per_partition: dict[str, int] = {}
    bad_kinds: set[str] = set()
    write_faults = False
    page_size = 1
    for step in scenario.steps:
        a = step.action
        if isinstance(a, Publish):
            key = (a.publisher, incarnation.get(a.publisher, 0))
            if key not in publishers:
                publishers[key] = f"p{len(publishers) + 1}"
            for op, modes in a.faults.items():
                if op != "write_publication" and "lost" in modes:
                    raise _fail(
                        "the model's publisher gives up on a read that times out, where the "
                        "implementation retries it within its budget: a lost read of "
                        f"{op} has no common meaning"
                    )
                if any(mode != "ok" for mode in modes):
                    write_faults = True
        elif isinstance(a, Ingest):
            rkey = (a.reader, a.partition, incarnation.get(a.reader, 0))
            if rkey not in readers:
                n = per_partition.get(a.partition, 0) + 1
                per_partition[a.partition] = n
                readers[rkey] = f"{partition[a.partition]}.r{n}"
            for op, modes in a.faults.items():
                if any(mode != "ok" for mode in modes):
                    if op != "write_checkpoint" or "lost" in modes:
                        raise _fail(
                            f"the model's ingest passes lose only applied checkpoint writes' "
                            f"responses; faults.{op} = {list(modes)} has no model counterpart"
                        )
                    write_faults = True
        elif isinstance(a, Crash):
            incarnation[a.worker] = incarnation.get(a.worker, 0) + 1
        elif isinstance(a, Misconfigure):
            bad_kinds.add(BAD_KIND[a.kind])
        elif isinstance(a, Serve):
            if a.lost:
                raise _fail("the model's provider never times out (serve.lost)")
            page_size = max(page_size, len(a.events))
    if len(publishers) > _MAX["publishers"]:
        raise _fail(f"the model runs at most {_MAX['publishers']} publisher processes")
    n_readers = max(per_partition.values(), default=0)
    if n_readers > _MAX["readers"]:
        raise _fail(f"the model runs at most {_MAX['readers']} readers per partition")
    if scenario.max_retries > 6:
        raise _fail("the model's retry budget is at most 6")
    mutant: str | None = None
    if scenario.variant is not None:
        if scenario.variant not in MUTANTS:
            raise _fail(f"the model has no mutant {scenario.variant!r}")
        mutant = scenario.variant
    try:
        config = ModelConfig(
            part=part,
            partitions=len(names),
            publishers=len(publishers),
            readers=n_readers if has_ingest else 0,
            coordinates=coordinates,
            events_per_partition=len(positions),
            moved_events=len(moved),
            epochs=len(scenario.epochs),
            lost_responses=write_faults,
            in_flight=False,
            read_timeouts=False,
            policy=scenario.policy,
            successor=successor,
            attempts=6,
            retries=scenario.max_retries,
            passes=6,
            page_size=min(page_size, 6),
            overlap=True,
            bad_checkpoints=tuple(k for k in BAD_CHECKPOINT_KINDS if k in bad_kinds),
            positions=tuple(positions),
            moved_positions=tuple(moved),
            scope=scenario.scope,
            mutant=mutant,
        )
    except ConfigError as exc:
        raise _fail(f"no model configuration fits: {exc}") from None
    return Plan(
        config,
        partition,
        epoch,
        epoch_back,
        coord,
        coord_back,
        reshard_target,
        publishers,
        readers,
    )
