"""The checker: bounded breadth-first exploration of a model handed over as pure functions.

The model (``fencepost.model``) is the spec; this package checks it, as
stateright's checkers check a ``Model`` and porcupine's checker a model of
``Init`` and ``Step``. It is handed the model through
:class:`fencepost.model.spec.Spec` (initial state, successors, invariants,
sometimes properties, canonical key, the transition relation factored by what
each move reads) and uses no other name of the model (``tests/test_layout.py``
checks it); the model imports nothing of it.

Core API, re-exported here: :func:`explore` and :func:`explore_parts` (with
their results, :class:`ExploreResult` and :class:`Exploration`, and the verdicts
:data:`HOLDS`, :data:`VIOLATED`, :data:`INCOMPLETE`, :data:`VACUOUS`), and the
renderers of :mod:`fencepost.explorer.render`. :mod:`fencepost.explorer.keys`
holds the interned keys that make it fast (docs/performance.md, Explorer).
"""

from fencepost.explorer.render import (
    counterexample_dot,
    graphs_dot,
    render_counterexample,
    render_unreached,
)
from fencepost.explorer.search import (
    HOLDS,
    INCOMPLETE,
    VACUOUS,
    VIOLATED,
    Exploration,
    ExploreProgress,
    ExploreResult,
    Reached,
    Step,
    Violation,
    explore,
    explore_parts,
    memory_in_use,
)

__all__ = [
    "HOLDS",
    "INCOMPLETE",
    "VACUOUS",
    "VIOLATED",
    "Exploration",
    "ExploreProgress",
    "ExploreResult",
    "Reached",
    "Step",
    "Violation",
    "counterexample_dot",
    "explore",
    "explore_parts",
    "graphs_dot",
    "memory_in_use",
    "render_counterexample",
    "render_unreached",
]
