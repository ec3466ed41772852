"""What a paginated source hands a partition reader: events, pages and coverage claims.

A :class:`Provider` is the adapter to a real source (Kafka, Kinesis, a change
stream, a REST list). It knows nothing about checkpoints: it returns one
:class:`Page` per token. The page's :class:`Claim`, when present, is the
*source's* statement about coverage: with ``final=True`` it promises that every
event in the claim's downset has been enumerated on the pages returned so far
(this one included) and will never change. Only such claims can become
certified coverage; a non-final claim ("caught up at this moment", a provisional
watermark) never does.

The largest event coordinate seen and the continuation token are not coverage:
the reader never derives a cut from either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate


class ProviderTimeout(Exception):
    """A fetch's response was lost or timed out: the reader learned nothing and may refetch.

    Fetching is a read, so refetching the same token is always safe.
    """


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a partition: a stable id and its position in the partition's order.

    Several events may share one coordinate; the id tells them apart and keys
    their durable outcome.
    """

    id: str
    at: Coordinate

    def __post_init__(self) -> None:
        if type(self.id) is not str or not self.id:
            raise InvalidValue("event.id", self.id, "an event id is a non-empty string")
        if type(self.at) not in (int, str):
            raise InvalidValue("event.at", self.at, "an event position is an int or a str")


@dataclass(frozen=True, slots=True)
class Claim:
    """A coverage claim made by the source; only a ``final`` claim can be certified."""

    cut: Cut
    final: bool

    def __post_init__(self) -> None:
        if not isinstance(self.cut, Cut):
            raise InvalidValue("claim.cut", self.cut, "a Cut is required")
        if type(self.final) is not bool:
            raise InvalidValue("claim.final", self.final, "final is true or false")


@dataclass(frozen=True, slots=True)
class Page:
    """One fetched page.

    ``events`` may be empty and may repeat events of earlier pages (overlap).
    ``next_token`` continues after this page; ``None`` means the source has no
    further page for now (refetching this page's token later may return more).
    ``claim`` is the source's coverage claim made with this page, if any.
    """

    events: tuple[Event, ...]
    next_token: str | None
    claim: Claim | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.events, tuple):
            raise InvalidValue("page.events", self.events, "a tuple of Event is required")
        for i, event in enumerate(self.events):
            if not isinstance(event, Event):
                raise InvalidValue(f"page.events[{i}]", event, "an Event is required")
        if self.next_token is not None and type(self.next_token) is not str:
            raise InvalidValue("page.next_token", self.next_token, "the token is a string or None")
        if self.claim is not None and not isinstance(self.claim, Claim):
            raise InvalidValue("page.claim", self.claim, "a Claim or None is required")


class Provider(Protocol):
    """A paginated source of events, partition by partition."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        """The page at ``token`` (``None``: the partition's start).

        May raise :class:`ProviderTimeout` when the fetch's response is lost.
        """
        ...
