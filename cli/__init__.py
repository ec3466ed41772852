"""fencepost: publish merged event frontiers that stay true.

Subpackages:

- ``fencepost.model``: the executable formal model of the publication protocol
  (its own cut semantics, invariants, mutants, bounded explorer).
- ``fencepost.impl``: the production implementation (cut algebra, stores,
  partition reader, publisher).
- ``fencepost.properties``: Z3 proofs and the model/implementation refinement check.
- ``fencepost.harness``: the JSON-lines conformance harness for any implementation.
- ``fencepost.review``: design review of provider contracts.
"""

__version__ = "0.1.0"
