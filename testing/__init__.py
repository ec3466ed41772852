"""fencepost.testing: fencepost inside your own pytest suite.

- :mod:`fencepost.testing.plugin`: the pytest plugin (registered as the
  ``pytest11`` entry point ``fencepost``): ``pytest --fencepost-sut "CMD"`` adds
  one test per conformance phase, and the ``fencepost_conform`` fixture runs a
  conformance budget from inside a test;
- :mod:`fencepost.testing.strategies`: Hypothesis strategies for orders, cuts,
  memberships and checkpoint vectors, as the judge's values and their wire JSON.

Judge side: nothing here imports fencepost's implementation (``fencepost.impl``),
so a verdict on your implementation never rests on ours. See docs/pytest.md.
"""
