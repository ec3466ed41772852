"""Machine-checked properties of fencepost.

- ``fencepost.properties.proofs``: Z3 proofs of the before/through cut algebra, derived
  from the downset definition of docs/semantics.md section 2, and the Z3 decision procedure the
  implementation's comparison is cross-checked against.
- ``fencepost.properties.refinement``: the model and the implementation in lockstep (a
  Hypothesis state machine over memory, SQLite or PostgreSQL): :func:`run_refinement`.
- ``fencepost.properties.lockstep``: workers whose every store call waits for the
  controller (deterministic interleaving at store-call granularity).

The refinement check's teeth are the catalog of known bugs, ``fencepost.mutants.CATALOG``.
"""
