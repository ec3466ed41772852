"""The conformance harness's closed sets: protocol levels, families, phases and worlds.

- :data:`LEVELS`: the levels of docs/conformance-protocol.md the frontier world
  tests, in the order the harness tests them; :data:`SYNC_LEVEL` the level of an
  incremental-sync tool (the late-commit world);
- :data:`FAMILIES`: a random case's family, ``seed % len(FAMILIES)``
  (:mod:`fencepost.harness.seeds`), with the levels each needs
  (:data:`FAMILY_LEVELS`);
- :data:`PHASES`: the phases of a frontier-world run (:func:`exhaustive_phase`
  names one per scripted base; ``fencepost.harness.conformance.phase_plan`` puts
  them in order);
- :data:`WORLDS`: the worlds ``fencepost conform --world`` takes, with the levels
  each tests.

Seeds depend on the order of :data:`FAMILIES`: reordering it changes what every
saved seed replays. Cost: constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: The levels of docs/conformance-protocol.md, in the order the harness tests them.
LEVELS: tuple[str, ...] = ("algebra", "checkpointer", "publisher")
#: The level of an incremental-sync tool, tested only in the late-commit world.
SYNC_LEVEL = "sync"
#: Every level a ``hello_ok`` may declare.
DECLARABLE_LEVELS: tuple[str, ...] = (*LEVELS, SYNC_LEVEL)

#: A random case's family -> the levels a SUT must declare for it (order fixes seeds).
FAMILY_LEVELS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "algebra": frozenset({"algebra"}),
        "publisher": frozenset({"publisher"}),
        "checkpointer": frozenset({"checkpointer"}),
        "composed": frozenset({"publisher", "checkpointer"}),
    }
)
#: The families in seed order: ``seed % len(FAMILIES)`` picks one.
FAMILIES: tuple[str, ...] = tuple(FAMILY_LEVELS)

#: The phases' names (one per scripted base for :func:`exhaustive_phase`).
PROBES_PHASE = "error handling"
ALGEBRA_EXHAUSTIVE_PHASE = "algebra exhaustive"
ALGEBRA_RANDOM_PHASE = "algebra random"
EXHAUSTIVE_PHASES = "exhaustive"
RANDOM_SCHEDULES_PHASE = "random schedules"

#: phase (``exhaustive`` stands for every :func:`exhaustive_phase`) -> what it runs,
#: in run order.
PHASES: Mapping[str, str] = MappingProxyType(
    {
        PROBES_PHASE: "unparsable and unexpected messages: an error back, and running on",
        ALGEBRA_EXHAUSTIVE_PHASE: "compare and merge on every small case of each order",
        ALGEBRA_RANDOM_PHASE: "compare and merge on random cases",
        EXHAUSTIVE_PHASES: "a scripted base with every step possible inserted, to a depth",
        RANDOM_SCHEDULES_PHASE: "random worlds, faults and interleavings of the other families",
    }
)


def exhaustive_phase(base: str, depth: int) -> str:
    """The name of the phase that runs the scripted base ``base`` exhaustively."""
    return f"{base} exhaustive (depth {depth})"


@dataclass(frozen=True, slots=True)
class WorldName:
    """One world: its name on the command line, the levels it tests, and what it is."""

    name: str
    levels: tuple[str, ...]
    summary: str


#: The worlds, by the name ``--world`` takes; the first is the default.
WORLDS: Mapping[str, WorldName] = MappingProxyType(
    {
        w.name: w
        for w in (
            WorldName(
                "frontier",
                LEVELS,
                "providers making final claims, checkpoints and a published frontier",
            ),
            WorldName(
                "late-commits",
                (SYNC_LEVEL,),
                "a table whose writers commit out of cursor order within a declared bound",
            ),
        )
    }
)
