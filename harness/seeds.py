"""Seeds: every case the harness runs is named by one integer, and the integer alone reproduces it.

- a non-negative seed is a *random* case; ``seed % len(FAMILIES)`` picks the
  family (:data:`FAMILIES`, the vocabulary's: algebra, publisher, checkpointer,
  composed), and a
  ``random.Random(seed)`` draws the world and every step
  (:mod:`fencepost.harness.randomized`);
- a negative seed is an *exhaustive* case: a scripted base
  (:mod:`fencepost.harness.bases`) plus inserted steps, each chosen among every
  step possible at its position (:mod:`fencepost.harness.exhaustive`).

The budgets here bound what one case may contain (lost responses per request,
misconfigurations and crashes per run).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fencepost.harness.bases import BASE_NAMES, BASES
from fencepost.vocabulary.conformance import FAMILIES as FAMILIES
from fencepost.vocabulary.conformance import FAMILY_LEVELS as FAMILY_LEVELS

#: Lost responses one request may get in a random schedule (more only makes it give up).
FAULT_BUDGET = 2
#: Misconfigurations per random run.
INJECT_BUDGET = 2
#: Crashes of a busy worker per random run (the worker restarts with no memory).
CRASH_BUDGET = 1

_DIGIT = 1 << 20


# --- seeds ---------------------------------------------------------------------------------


#: Room for scripted bases in an exhaustive seed (their index is part of the seed).
_BASE_SLOTS = 32


@dataclass(frozen=True, slots=True)
class ExhaustiveCase:
    """A scripted base (by name; ``"algebra"`` is the algebra level's small-bounds cases)
    plus inserted steps: ``(position, choice index)`` pairs, applied in order, each
    choosing among the steps possible at that position of the schedule so far."""

    base: str
    insertions: tuple[tuple[int, int], ...] = ()

    @property
    def family(self) -> str:
        return "algebra" if self.base == "algebra" else BASES[self.base].family

    @property
    def seed(self) -> int:
        code = 0
        for position, choice in self.insertions:
            if not (0 <= position < 1024 and 0 <= choice < 1023):
                raise ValueError("an insertion is outside the encodable bounds")
            code = code * _DIGIT + (position * 1024 + choice + 1)
        return -(1 + BASE_NAMES.index(self.base) + _BASE_SLOTS * code)

    @staticmethod
    def from_seed(seed: int) -> ExhaustiveCase:
        if seed >= 0:
            raise ValueError("exhaustive cases have negative seeds")
        code = -seed - 1
        index = code % _BASE_SLOTS
        if index >= len(BASE_NAMES):
            raise ValueError(f"seed {seed} names scripted base #{index}; there is no such base")
        code //= _BASE_SLOTS
        digits: list[int] = []
        while code:
            digits.append(code % _DIGIT)
            code //= _DIGIT
        insertions = tuple(((d - 1) // 1024, (d - 1) % 1024) for d in reversed(digits))
        return ExhaustiveCase(BASE_NAMES[index], insertions)


def family_of(seed: int) -> str:
    """The family a seed's case belongs to."""
    if seed < 0:
        return ExhaustiveCase.from_seed(seed).family
    return FAMILIES[seed % len(FAMILIES)]


def seed_for(rng: random.Random, family: str) -> int:
    """A fresh random seed of ``family``."""
    return rng.getrandbits(40) * len(FAMILIES) + FAMILIES.index(family)
