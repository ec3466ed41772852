"""The audit: check the recorded history of a live system (docs/audit.md).

A judge: it reads logs of store operations as their callers saw them and
decides, without importing the implementation it judges (``fencepost.impl``),
whether the publication record of each stream is linearizable and whether the
docs/semantics.md section 7 properties decidable from the log hold.

- :mod:`fencepost.audit.log`: the log format, read strictly (``file:line`` errors);
- :mod:`fencepost.audit.register`: linearizability of a revision-conditional register;
- :mod:`fencepost.audit.stream`: one stream's registers and properties;
- :mod:`fencepost.audit.run`: whole logs, sorted externally, streamed per stream;
- :mod:`fencepost.audit.timeline`: violations drawn as timelines;
- :mod:`fencepost.audit.brute`: a brute-force checker to cross-check against;
- :mod:`fencepost.audit.synth`: simulated histories with real linearization points.
"""
