"""The rlimit of every family of Z3 queries: the units measured, times a stated margin.

One home for every limit. A *family* is a kind of query: one cut-algebra theorem
(over every order and size ``fencepost prove`` runs it on), the decision of one
concrete cut comparison, one kind of protocol obligation, a review witness. For
each, ``measured`` is the most resource units one check of the family consumed
on the runs named in ``measured_on`` (z3-solver 5.4.1), and the limit is
``margin`` times that, never below :data:`FLOOR`. The tests recompute every
``measured`` figure from the same runs and compare it exactly (tests/proofs,
tests/solver), so a Z3 upgrade that changes what a query costs is noticed, and the
figures here are remeasured, not trusted.

Why a margin of 10: a query's consumption is exact for one Z3 version, but a
neighbouring query (another coordinate, a mutant, a lemma dropped) may need more;
ten times the largest measured leaves room for those and still ends a runaway
check after seconds, not hours. Why a floor: for families that need a few
thousand units (a fraction of a millisecond), ten times would be a limit of Z3's
start-up noise, and a test's variant of the theorem (another coordinate) would
fail for no reason; a million units is about a fifth of a second of Z3 work.
``fencepost prove --budgets`` prints the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

#: The least limit of any family, in resource units (about 0.2 s of Z3 work).
FLOOR: Final = 1_000_000

#: The margin every family gets over its measured figure, unless stated otherwise.
MARGIN: Final = 10

#: Where the theorem families were measured: everything ``fencepost prove`` runs.
_PROVE: Final = "fencepost prove (every order and size)"


@dataclass(frozen=True)
class Budget:
    """One family of Z3 queries and its limit.

    ``measured`` is the most resource units one check of the family consumed on the
    runs ``measured_on`` names (z3-solver 5.4.1); ``margin`` the factor the limit
    allows beyond it. ``rlimit`` is ``measured * margin``, at least :data:`FLOOR`.
    """

    family: str
    measured: int
    measured_on: str
    margin: int = MARGIN

    @property
    def rlimit(self) -> int:
        return max(self.measured * self.margin, FLOOR)


_TABLE: Final = (
    # The cut-algebra theorems (fencepost.properties.proofs.THEOREMS), by family.
    Budget("total_preorder", 883_657, _PROVE),
    Budget("spec_order_exact", 18_838, _PROVE),
    Budget("spec_order_sound", 1_752, _PROVE),
    Budget("before_below_through", 702, _PROVE),
    Budget("through_equals_before_next", 371, _PROVE),
    Budget("rewrite_sound", 917, _PROVE),
    Budget("rewrite_unsound", 37_505, _PROVE),
    Budget("string_has_exact_successor", 1_451_265, _PROVE),
    Budget("string_before_empty_is_nothing", 12, _PROVE),
    Budget("merge_glb", 7_534_518, _PROVE),
    Budget("merge_sound", 5_033_327, _PROVE),
    Budget("merge_monotone", 5_114_626, _PROVE),
    Budget("merge_deterministic", 5_136_861, _PROVE),
    # Concrete comparisons decided from the definition (the cross-checks' reference).
    # Inputs are arbitrary strings: the hardest of 600 random pairs of the cross-checks'
    # domain used 6,860,992 units, twelve times the hardest sample, hence a margin of 100.
    Budget(
        "cut_decision",
        585_146,
        "DECISION_SAMPLES in fencepost.properties.cut_decisions",
        100,
    ),
    # The protocol's induction (fencepost.properties.protocol_proof).
    Budget("protocol.initiation", 2_574, "fencepost prove --protocol"),
    Budget("protocol.consecution", 94_670, "fencepost prove --protocol"),
    Budget("protocol.safety", 93_919, "fencepost prove --protocol"),
    # The composed protocol's searches under a mutant (fencepost prove --protocol
    # --mutant M: too long to pin in the fast tests) used up to 4,765,977 units, 13
    # times the pinned figure: hence a margin of 20.
    Budget(
        "protocol.counterexample",
        372_023,
        "each mutant on the protocols its bug breaks (tests/proofs/test_protocol_proof.py)",
        20,
    ),
    # The relation's successors of concrete states (tests/proofs/test_protocol_relation.py).
    Budget(
        "protocol.successors",
        20_093,
        "the sampled states of tests/proofs/test_protocol_relation.py (fast form)",
    ),
    # Witnesses of design review (fencepost.review.witness).
    Budget("review.witness", 173, "fencepost review of every shipped contract"),
)

#: Every family's budget, by name.
BUDGETS: Final[Mapping[str, Budget]] = {b.family: b for b in _TABLE}


class UnknownFamily(KeyError):
    """A family of Z3 queries with no budget in :data:`BUDGETS`."""

    def __init__(self, family: str) -> None:
        super().__init__(
            f"no rlimit budget for the Z3 query family {family!r}; add it to "
            f"fencepost.solver.budgets with its measured figure, or pass rlimit= "
            f"(families: {', '.join(BUDGETS)})"
        )

    def __str__(self) -> str:
        return str(self.args[0])


def budget(family: str) -> Budget:
    """The budget of ``family``; :class:`UnknownFamily` names the table to add it to."""
    try:
        return BUDGETS[family]
    except KeyError:
        raise UnknownFamily(family) from None
