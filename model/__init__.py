"""The executable formal model of fencepost: the spec (it knows nothing of ``fencepost.impl``).

Core API, re-exported here: :class:`ModelConfig` and :func:`default_config`
(bounds), :func:`initial`, :func:`actions`, :func:`step`, :func:`successors`
and :func:`matching` (the state machine), :data:`INVARIANTS` (the oracle of
docs/semantics.md section 7) and :data:`MUTANTS` (known bugs to switch on).
What a checker is handed is :data:`fencepost.model.spec.SPEC` (pure functions);
the checker itself is another package, :mod:`fencepost.explorer`, which this
one never imports.
"""

from fencepost.model.config import DEFAULTS, PARTS, ConfigError, ModelConfig, default_config
from fencepost.model.cuts import BEFORE, NOTHING, THROUGH, Cut, before, through
from fencepost.model.invariants import INVARIANTS, Invariant, violations
from fencepost.model.machine import actions, initial, matching, step, successors
from fencepost.model.merge import merge
from fencepost.model.mutants import MUTANTS, Mutant
from fencepost.model.state import Action, Checkpoint, Page, Record, State

__all__ = [
    "BEFORE",
    "DEFAULTS",
    "INVARIANTS",
    "MUTANTS",
    "NOTHING",
    "PARTS",
    "THROUGH",
    "Action",
    "Checkpoint",
    "ConfigError",
    "Cut",
    "Invariant",
    "ModelConfig",
    "Mutant",
    "Page",
    "Record",
    "State",
    "actions",
    "before",
    "default_config",
    "initial",
    "matching",
    "merge",
    "step",
    "successors",
    "through",
    "violations",
]
