"""Known bugs in what an ingest pass certifies, each written once.

Each subclasses :class:`~fencepost.impl.reader.PartitionReader` at ``_fetch``
(what a page is read to say) and leaves every other step, the conditional
checkpoint write included, to the production code.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fencepost.impl.cuts import Cut
from fencepost.impl.orders import Coordinate
from fencepost.impl.provider import Claim, Page
from fencepost.impl.reader import PartitionReader


class MaxObservedReader(PartitionReader):
    """max-observed: every page is read as a final claim ``through`` the greatest event
    observed so far in the pass, whatever the provider claimed (docs/procedure.md: "a token
    or the greatest event observed is not a coverage boundary")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._greatest: Coordinate | None = None

    def run_pass(self, max_pages: int | None = None) -> Cut:
        self._greatest = None
        return super().run_pass(max_pages)

    def _fetch(self, token: str | None) -> Page:
        page = super()._fetch(token)
        for event in page.events:
            at = self.order.validate(event.at, "page.events[].at")
            if self._greatest is None or self.order.compare(at, self._greatest) > 0:
                self._greatest = at
        if self._greatest is None:
            return dataclasses.replace(page, claim=None)
        return dataclasses.replace(page, claim=Claim(Cut.through(self._greatest), True))


class TrustingReader(PartitionReader):
    """provisional-ok at the ingest level: a provider's non-final claim ("caught up at this
    moment") is certified as final (apache/beam #37326)."""

    def _fetch(self, token: str | None) -> Page:
        page = super()._fetch(token)
        if page.claim is not None and not page.claim.final:
            return dataclasses.replace(page, claim=Claim(page.claim.cut, True))
        return page
