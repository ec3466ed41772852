"""fencepost's own implementation behind the conformance protocol (``fencepost sut``).

The production publisher, partition reader and cut algebra of :mod:`fencepost.impl`
run unchanged; only their stores and provider speak the wire
(:mod:`fencepost.sut.adapter`, reading it with :mod:`fencepost.sut.wire`).
``python -m fencepost.sut`` serves stdin/stdout. This package is the *judged*
side: the harness (:mod:`fencepost.harness`) and the judge never import it.

- :class:`~fencepost.sut.adapter.InProcessSut`: a harness SUT factory running
  sessions on threads (no subprocess), optionally with one catalog mutant;
- :func:`~fencepost.sut.adapter.serve_stdio`: one session over stdin/stdout.
"""
