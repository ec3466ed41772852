"""The map between the model's coordinates and the implementation's orders.

The refinement check (:mod:`fencepost.properties.refinement`) runs the model
and the implementation in lockstep; every cut and provider token crosses this
map. It is faithful: model cuts and their images compare alike (tests/properties
checks every pair against two independent cut orders), and a value that names
no model coordinate maps to ``None`` rather than to a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fencepost.impl.cuts import NOTHING as IMPL_NOTHING
from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.orders import Coordinate, IntegerOrder, Order, StringOrder
from fencepost.model.cuts import BEFORE, THROUGH
from fencepost.model.cuts import NOTHING as MODEL_NOTHING
from fencepost.model.cuts import Cut as MCut
from fencepost.model.state import NO_TOKEN


@dataclass(frozen=True, slots=True)
class Coordinates:
    """The map between model coordinates (half units) and one implementation order.

    ``offsets``: integers with an exact successor; model coordinate ``x`` is
    ``x`` (events sit on integers only). ``millis``: integers without a
    successor; model half unit ``h`` is ``h``, so an event half-way between two
    claim coordinates sits on an odd number. ``keys``: strings by code point;
    ``x`` is ``"0x"`` and ``x + 0.5`` is ``"0x5"`` (``"00" < "005" < "01"``).
    """

    kind: str
    order: Order

    @property
    def successor(self) -> bool:
        return self.order.has_successor

    def to_impl(self, half: int) -> Coordinate:
        if self.kind == "offsets":
            return half // 2
        if self.kind == "millis":
            return half
        return f"{half // 2:02d}" + ("5" if half % 2 else "")

    def to_model(self, at: Coordinate) -> int | None:
        if self.kind == "keys":
            if not isinstance(at, str):
                return None
            found = re.fullmatch(r"(\d\d)(5?)", at)
            if found is None:
                return None
            return 2 * int(found.group(1)) + (1 if found.group(2) else 0)
        if not isinstance(at, int):
            return None
        return 2 * at if self.kind == "offsets" else at

    def cut_to_impl(self, cut: MCut) -> Cut:
        if cut == MODEL_NOTHING:
            return IMPL_NOTHING
        at = self.to_impl(cut.half)
        return Cut.through(at) if cut.kind == THROUGH else Cut.before(at)

    def cut_to_model(self, cut: Cut) -> MCut | None:
        """The model cut for an implementation cut; None if it names no model coordinate."""
        if cut.endpoint is Endpoint.NOTHING:
            return MODEL_NOTHING
        assert cut.at is not None
        half = self.to_model(cut.at)
        if half is None:
            return None
        return MCut(half, THROUGH if cut.endpoint is Endpoint.THROUGH else BEFORE)


ORDERS: dict[str, Coordinates] = {
    "offsets": Coordinates("offsets", IntegerOrder("offsets", successor_exact=True)),
    "millis": Coordinates("millis", IntegerOrder("millis", successor_exact=False)),
    "keys": Coordinates("keys", StringOrder("keys")),
}


def token_to_model(token: str | None) -> int | None:
    """The model's provider cursor for an implementation token (None: not one we issued).

    The implementation's ``None`` (no token yet) is the model's :data:`NO_TOKEN`.
    """
    if token is None:
        return NO_TOKEN
    return int(token) if token.isdigit() else None
