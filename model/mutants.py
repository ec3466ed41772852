"""Known bugs the model can switch on, one at a time, to show the invariants have teeth.

Each mutant changes exactly one decision inside the model's transitions (the
places are marked ``mutant ==`` in :mod:`fencepost.model.machine`). The default
bounds of every part listed in :attr:`Mutant.expected` reach a counterexample
that breaks the named invariant; tests/model pins that.

The names, bug texts and sources are the vocabulary's
(:data:`fencepost.vocabulary.MUTANTS`: one bug, one name, one text wherever it
runs); what the model keeps here is where each bug shows in the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.vocabulary.mutants import MUTANTS as NAMES


@dataclass(frozen=True, slots=True)
class Mutant:
    """A deliberately broken variant of the protocol.

    ``expected`` pairs each part whose transitions the bug lives in with the
    invariant its shortest counterexample breaks there. ``name`` is a key of
    :data:`fencepost.vocabulary.MUTANTS`, which says what the bug is.
    """

    name: str
    expected: tuple[tuple[str, str], ...]

    @property
    def description(self) -> str:
        """What is wrong, in domain words (the vocabulary's text)."""
        return NAMES[self.name].bug

    @property
    def field_bug(self) -> str:
        """Where the bug was seen, or which rule it misreads (the vocabulary's text)."""
        return NAMES[self.name].source

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts whose transitions this mutant changes."""
        return tuple(part for part, _ in self.expected)


_ALL = (
    Mutant("relabel", (("publication", "no_relabeling"),)),
    Mutant("skip-missing", (("publication", "soundness"),)),
    Mutant("max-observed", (("ingest", "checkpoint_truth"),)),
    Mutant("epsilon", (("publication", "soundness"),)),
    Mutant("blind-success", (("publication", "lost_response_honesty"),)),
    Mutant("stale-cut-retry", (("publication", "monotone_publication"),)),
    Mutant("epoch-blind", (("publication", "soundness"),)),
    Mutant("provisional-ok", (("ingest", "checkpoint_truth"), ("publication", "soundness"))),
    Mutant("scope-blind", (("publication", "soundness"),)),
    Mutant("overwrite", (("ingest", "checkpoint_monotonicity"),)),
    Mutant("cutover-regress", (("publication", "monotone_publication"),)),
    Mutant("fence-blind", (("publication", "epoch_fence"),)),
)

#: name -> mutant, in a stable order.
MUTANTS: dict[str, Mutant] = {m.name: m for m in _ALL}
