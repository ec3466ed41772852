"""The production implementation with one known bug each: the one catalog of injected bugs.

Each bug is defined once and used everywhere an implementation-side bug is
needed: ``fencepost sut --mutant NAME``, the refinement check and the scenario
runner.
"""
