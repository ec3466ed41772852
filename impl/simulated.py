"""A deterministic paginated source for demos and tests.

:class:`SimulatedSource` is a :class:`~fencepost.impl.provider.Provider` whose
whole ground truth (every event of every partition, its coordinate) and every
page are pure functions of the seed: a process killed with ``kill -9`` and
restarted with the same seed talks to the same source, and a test can judge
any stored checkpoint or published record against the truth.

It behaves the way real sources do at their edges:

- coordinates are millisecond timestamps on a dense order (no exact
  successor) and several events share one timestamp;
- pages are sometimes empty and sometimes repeat the last events of the
  previous page (overlap);
- final claims come in both kinds: ``before t`` (everything strictly earlier
  than the next unseen event's timestamp) and ``through t`` (only when every
  event at ``t`` has been delivered);
- some claims are non-final, and those are deliberately too strong (they name
  an event not delivered yet): a reader that certified one would be caught;
- the last page of a partition carries ``through <last timestamp>``, final,
  and no next token (a closed shard).

Only the provider timeouts (``timeout_rate``) depend on call history, not on
the token: they model the network, not the source.
"""

from __future__ import annotations

import random

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import IntegerOrder, Order
from fencepost.impl.provider import Claim, Event, Page, ProviderTimeout
from fencepost.impl.records import Membership

#: The simulated sources' order: millisecond timestamps, dense (no exact successor).
SIMULATED_ORDER = IntegerOrder("event-time-ms", successor_exact=False)

_BASE_TIME = 1_700_000_000_000
_STEPS = (0, 0, 1, 2, 3, 7, 20)


def _check_rate(value: float, name: str) -> float:
    if type(value) not in (int, float) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)


class SimulatedSource:
    """``partitions`` partitions of ``events`` events each, reproducible from ``seed``."""

    def __init__(
        self,
        seed: int,
        partitions: int,
        events: int,
        *,
        empty_rate: float = 0.15,
        overlap_rate: float = 0.3,
        nonfinal_rate: float = 0.15,
        timeout_rate: float = 0.0,
        max_page: int = 5,
    ) -> None:
        if type(partitions) is not int or partitions < 1:
            raise ValueError(f"partitions must be a positive int, got {partitions!r}")
        if type(events) is not int or events < 1:
            raise ValueError(f"events must be a positive int (per partition), got {events!r}")
        if type(max_page) is not int or max_page < 1:
            raise ValueError(f"max_page must be a positive int, got {max_page!r}")
        self.seed = seed
        self.order: Order = SIMULATED_ORDER
        self.empty_rate = _check_rate(empty_rate, "empty_rate")
        self.overlap_rate = _check_rate(overlap_rate, "overlap_rate")
        self.nonfinal_rate = _check_rate(nonfinal_rate, "nonfinal_rate")
        self.timeout_rate = _check_rate(timeout_rate, "timeout_rate")
        self.max_page = max_page
        self.partitions: tuple[str, ...] = tuple(f"p{i:03d}" for i in range(partitions))
        self._times = {p: self._generate(p, events) for p in self.partitions}
        self._events = {
            p: tuple(Event(f"{p}-{i:06d}", at) for i, at in enumerate(times))
            for p, times in self._times.items()
        }
        self._network = random.Random(f"{seed}/network")
        #: Pages served so far (all partitions), for progress reports.
        self.fetches = 0

    def _generate(self, partition: str, count: int) -> tuple[int, ...]:
        """Non-decreasing timestamps; a step of 0 puts several events at one timestamp."""
        rng = random.Random(f"{self.seed}/{partition}/events")
        at = _BASE_TIME + rng.randint(0, 1000)
        times = []
        for _ in range(count):
            at += rng.choice(_STEPS)
            times.append(at)
        return tuple(times)

    # --- ground truth ----------------------------------------------------------------

    @property
    def scope(self) -> str:
        """The query scope: names the whole ground truth, so another seed is another scope."""
        counts = {len(e) for e in self._events.values()}
        return f"simulated:seed={self.seed}:partitions={len(self.partitions)}:events={counts.pop()}"

    def membership(self, epoch: int = 1) -> Membership:
        """The membership of every simulated partition, on :data:`SIMULATED_ORDER`."""
        return Membership(
            epoch=epoch,
            scope=self.scope,
            partitions={p: self.order.name for p in self.partitions},
            orders={self.order.name: self.order},
        )

    def events(self, partition: str) -> tuple[Event, ...]:
        """Every event of ``partition``, in order (the ground truth)."""
        return self._events[partition]

    def all_event_ids(self) -> list[str]:
        return [e.id for p in self.partitions for e in self._events[p]]

    def final_cut(self, partition: str) -> Cut:
        """The cut a partition reaches when fully read: through its last timestamp."""
        return Cut.through(self._times[partition][-1])

    def covered_ids(self, cut: Cut) -> list[str]:
        """Ids of every event (any partition) whose position is in ``D(cut)``."""
        if cut.is_nothing:
            return []
        assert type(cut.at) is int
        limit = cut.at
        through = cut.endpoint is Endpoint.THROUGH
        return [
            event.id
            for p in self.partitions
            for event, at in zip(self._events[p], self._times[p], strict=True)
            if (at <= limit if through else at < limit)
        ]

    # --- the Provider protocol ---------------------------------------------------------

    @staticmethod
    def _parse(token: str | None) -> tuple[int, int]:
        if token is None:
            return 0, 0
        try:
            head, step = token.split("s", 1)
            if not head.startswith("o"):
                raise ValueError(token)
            offset, count = int(head[1:]), int(step)
        except ValueError:
            raise InvalidValue("token", token, "not a token this simulated source issued") from None
        if offset < 0 or count < 0:
            raise InvalidValue("token", token, "not a token this simulated source issued")
        return offset, count

    def fetch_page(self, partition: str, token: str | None) -> Page:
        """The page at ``token``: a pure function of (seed, partition, token)."""
        if partition not in self._events:
            raise InvalidValue("partition", partition, "not a partition of this simulated source")
        if self.timeout_rate and self._network.random() < self.timeout_rate:
            raise ProviderTimeout(f"simulated timeout fetching {partition} at {token!r}")
        self.fetches += 1
        offset, step = self._parse(token)
        events = self._events[partition]
        rng = random.Random(f"{self.seed}/{partition}/{offset}/{step}")
        if offset >= len(events):
            return Page((), None, Claim(self.final_cut(partition), True))
        if rng.random() < self.empty_rate:
            return Page((), f"o{offset}s{step + 1}", None)
        end = min(len(events), offset + rng.randint(1, self.max_page))
        start = offset
        if offset > 0 and rng.random() < self.overlap_rate:
            start = max(0, offset - rng.randint(1, 3))
        delivered = events[start:end]
        if end == len(events):
            return Page(delivered, None, Claim(self.final_cut(partition), True))
        times = self._times[partition]
        last, upcoming = times[end - 1], times[end]
        roll = rng.random()
        claim: Claim | None
        if roll < self.nonfinal_rate:
            # Too strong on purpose: covers the next, undelivered event.
            claim = Claim(Cut.through(upcoming), False)
        elif roll < self.nonfinal_rate + 0.3 and upcoming > last:
            claim = Claim(Cut.through(last), True)
        elif roll < self.nonfinal_rate + 0.7:
            claim = Claim(Cut.before(upcoming), True)
        else:
            claim = None
        return Page(delivered, f"o{end}s{step + 1}", claim)
