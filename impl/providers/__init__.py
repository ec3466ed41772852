"""Providers for real sources: adapters from a source's pages to fencepost pages.

- :mod:`fencepost.impl.providers.postgres_outbox`: a transactional outbox in
  PostgreSQL, whose coverage comes from the snapshot's ``xmin``, never from the
  greatest id seen (docs/outbox.md);
- :mod:`fencepost.impl.providers.outbox_load`: writer processes, the naive
  poller it is compared with and the run that measures both (``fencepost demo
  --source postgres-outbox`` and the tests).
"""
