"""fencepost: publish merged event frontiers that stay true.

The command line (``fencepost.cli``, ``fencepost.gate``) and these subpackages,
one per top-level folder (README.md's "Layout" table says who may import whom;
tests/test_package_docs.py checks this list is every subpackage):

- ``fencepost.vocabulary``: the names every package shares, each closed set once
  (docs/changing.md: what moves together when one grows).
- ``fencepost.model``: the executable formal model of the publication protocol
  (its own cut semantics, invariants, mutants); the spec a checker is handed.
- ``fencepost.explorer``: the checker: bounded breadth-first exploration of the model.
- ``fencepost.impl``: the production implementation (cut algebra, stores,
  partition reader, publisher).
- ``fencepost.mutants``: the implementation with one known bug each.
- ``fencepost.sut``: the implementation behind the wire (``fencepost sut``).
- ``fencepost.judge``: the independent judge of section 7 and the outcome rules.
- ``fencepost.harness``: the JSON-lines conformance harness for any implementation.
- ``fencepost.audit``: the audit of recorded histories (``fencepost audit``).
- ``fencepost.inputs``: the one reader of untrusted input (TOML, JSON lines).
- ``fencepost.properties``: Z3 proofs and the model/implementation refinement check.
- ``fencepost.solver``: every Z3 query under a deterministic resource limit.
- ``fencepost.contracts``: provider contracts, the TOML files and their loader.
- ``fencepost.review``: design review of provider contracts and sync tools.
- ``fencepost.scenarios``: the scenario library and its runners.
- ``fencepost.reports``: report data rendered as HTML, Markdown, text and JUnit.
- ``fencepost.testing``: the pytest plugin and Hypothesis strategies.
- ``fencepost.adapters``: the incremental-sync tools as conformance SUTs.
- ``fencepost.commands``: one module per subcommand of the command line.
- ``fencepost.views``: each command's results turned into report data.
"""

__version__ = "0.1.0"
