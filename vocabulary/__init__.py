"""fencepost.vocabulary: the one home of every closed set of names the house uses.

The model, the implementation, the judge, the harness and the Z3 proofs are
deliberately independent versions of one semantics: each decides for itself
what a name *means*. The names themselves, and their one-line meanings, live
here once, so that a bug, a property, a backend or a phase is spelled the same
everywhere and adding one is one edit plus the homes it needs
(docs/changing.md lists them; tests/vocabulary/test_totality.py fails while a
name lacks a home).

This package imports nothing, not even other fencepost packages, and every
package may import it (tests/test_layout.py). Cost: constants only.

- :mod:`~fencepost.vocabulary.cuts`: endpoint kinds and order kinds;
- :mod:`~fencepost.vocabulary.outcomes`: attempt outcomes and withheld reasons;
- :mod:`~fencepost.vocabulary.rules`: the section-7 properties, the sync level's
  row properties and the protocol rules, each with its meaning;
- :mod:`~fencepost.vocabulary.mutants`: the known bugs, with bug text and source;
- :mod:`~fencepost.vocabulary.backends`: the store backends;
- :mod:`~fencepost.vocabulary.conformance`: protocol levels, conformance families,
  phases and worlds;
- :mod:`~fencepost.vocabulary.tools`: the incremental-sync tools with an adapter.
"""

from __future__ import annotations

from fencepost.vocabulary.backends import STORE_BACKENDS, BackendName
from fencepost.vocabulary.conformance import (
    DECLARABLE_LEVELS,
    FAMILIES,
    FAMILY_LEVELS,
    LEVELS,
    PHASES,
    SYNC_LEVEL,
    WORLDS,
    WorldName,
    exhaustive_phase,
)
from fencepost.vocabulary.cuts import ENDPOINT_KINDS, ORDER_KINDS
from fencepost.vocabulary.mutants import MUTANTS, MutantName
from fencepost.vocabulary.outcomes import OUTCOMES, WITHHELD_REASONS, WITHOUT_MODEL_REASON
from fencepost.vocabulary.rules import (
    PROPERTIES,
    PROTOCOL_RULES,
    ROW_PROPERTIES,
    RULES,
    WITHOUT_MODEL_INVARIANT,
)
from fencepost.vocabulary.tools import TOOL_ADAPTERS

__all__ = [
    "DECLARABLE_LEVELS",
    "ENDPOINT_KINDS",
    "FAMILIES",
    "FAMILY_LEVELS",
    "LEVELS",
    "MUTANTS",
    "ORDER_KINDS",
    "OUTCOMES",
    "PHASES",
    "PROPERTIES",
    "PROTOCOL_RULES",
    "ROW_PROPERTIES",
    "RULES",
    "STORE_BACKENDS",
    "SYNC_LEVEL",
    "TOOL_ADAPTERS",
    "WITHHELD_REASONS",
    "WITHOUT_MODEL_INVARIANT",
    "WITHOUT_MODEL_REASON",
    "WORLDS",
    "BackendName",
    "MutantName",
    "WorldName",
    "exhaustive_phase",
]
