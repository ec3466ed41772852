"""fencepost.views: the command line's results as neutral reports (:mod:`fencepost.reports`).

One adapter per producer, on the side that owns the data: :mod:`.conform`
(harness reports and failures, with their transcripts and per-step states),
:mod:`.explore` (the model's counterexamples), :mod:`.scenarios` (scenario
results), :mod:`.check` (the gate), and :mod:`.output` (writing the page, the
Markdown summary and ``GITHUB_STEP_SUMMARY``). Rendering is
:mod:`fencepost.reports`' job; nothing here writes HTML or Markdown itself.
"""
