"""Endpoint kinds and order kinds (docs/semantics.md sections 1 and 2).

The model (:mod:`fencepost.model.cuts`), the implementation
(:class:`fencepost.impl.cuts.Endpoint`), the judge
(:class:`fencepost.judge.values.Endpoint`) and the Z3 encoding
(:mod:`fencepost.properties.cut_encoding`) each define what a kind means; the
names are these. tests/vocabulary/test_totality.py checks every home spells
exactly these.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: endpoint kind -> its meaning; ``nothing`` is the cut below every event.
ENDPOINT_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "nothing": "covers no event: the cut below every coordinate",
        "before": "covers every event strictly below the coordinate",
        "through": "covers every event at or below the coordinate",
    }
)

#: order kind (the wire's ``order.kind``) -> its meaning.
ORDER_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "integer": "integer coordinates; with ``successor`` every x has an exact next value x+1",
        "string": "strings compared by code point; no exact successor is assumed",
    }
)
