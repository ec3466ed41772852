"""Value classes: the kinds of coordinates and names each run's world is drawn from.

Implementations go wrong on particular values, not on values in general:
integers compared as text (9 against 10), a minimum started from a fixed
sentinel (2^31 - 1), doubles (2^53 + 1), 64-bit integers (2^63 + 1), strings
compared by UTF-16 units (above U+FFFF), names compared ignoring case or after
Unicode normalisation, a merge that is right for two members only, idle
members, epochs assumed to go up by one. Every level draws its coordinates and
names from the classes of :data:`CLASSES` (docs/conformance.md, "Value
classes"), and every summary counts, per level, the runs whose world (or
algebra batch) held each class, so a class no run drew is visible.

Cost: O(V log V) per run for V coordinates and names.
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fencepost.judge.values import Coordinate

#: Each class: its stable name and what it holds.
CLASSES: Mapping[str, str] = {
    "negative": "a negative integer coordinate",
    "zero": "coordinate 0",
    "digit_counts": "integer coordinates of different digit counts (9 and 10: text order differs)",
    "two_pow_31": "an integer at or past 2^31 - 1 (a 32-bit sentinel)",
    "two_pow_53": "an integer past 2^53 (not exact as a double)",
    "two_pow_63": "an integer at 2^63 - 1 or past it (the 64-bit edge)",
    "beyond_64_bits": "an integer past 2^64",
    "successor_edge": "x and x+1 on an exact order (through x is before x+1)",
    "empty_string": "the empty string as a coordinate",
    "prefix": "a string coordinate that is a proper prefix of another",
    "case_variants": "string coordinates differing only in case",
    "combining_marks": "a string coordinate with a combining mark",
    "astral": "a string coordinate with a character above U+FFFF",
    "names_case_only": "partition names differing only in case",
    "names_normalisation": "partition names equal after Unicode normalisation (NFC)",
    "three_members": "three or more members in one epoch",
    "idle_member": "a member with no events (or no checkpoint in a merge)",
    "epoch_skip": "membership epochs that skip numbers",
    "incomparable_orders": "members of one stream on two orders that cannot be compared",
}


def coordinate_classes(values: Iterable[Coordinate], successor: bool = False) -> set[str]:
    """The coordinate classes ``values`` hold together (``successor``: they are of an
    order with an exact successor, where x beside x+1 is a successor edge)."""
    values = list(values)
    found: set[str] = set()
    ints = sorted({v for v in values if isinstance(v, int)})
    strs = sorted({v for v in values if isinstance(v, str)})
    for v in ints:
        if v < 0:
            found.add("negative")
        if v == 0:
            found.add("zero")
        if v >= 2**31 - 1:
            found.add("two_pow_31")
        if v > 2**53:
            found.add("two_pow_53")
        if v >= 2**63 - 1:
            found.add("two_pow_63")
        if v > 2**64:
            found.add("beyond_64_bits")
    if len({len(str(abs(v))) for v in ints}) > 1:
        found.add("digit_counts")
    if successor and any(b - a == 1 for a, b in itertools.pairwise(ints)):
        found.add("successor_edge")
    folded: dict[str, str] = {}
    for s in strs:
        if s == "":
            found.add("empty_string")
        if any(ord(ch) > 0xFFFF for ch in s):
            found.add("astral")
        if any(unicodedata.combining(ch) for ch in s):
            found.add("combining_marks")
        other = folded.setdefault(s.casefold(), s)
        if other != s:
            found.add("case_variants")
    for a in strs:
        if a and any(b != a and b.startswith(a) for b in strs):
            found.add("prefix")
            break
    return found


def name_classes(epochs: Iterable[tuple[int, Iterable[str], bool]]) -> set[str]:
    """The name and membership classes of ``(epoch, member names, has an idle member)``."""
    found: set[str] = set()
    numbers: list[int] = []
    for epoch, members, idle in epochs:
        names = list(members)
        numbers.append(epoch)
        if len(names) >= 3:
            found.add("three_members")
        if idle:
            found.add("idle_member")
        if len({n.casefold() for n in names}) < len(names):
            found.add("names_case_only")
        if len({unicodedata.normalize("NFC", n) for n in names}) < len(set(names)):
            found.add("names_normalisation")
    numbers.sort()
    if any(b - a > 1 for a, b in itertools.pairwise(numbers)):
        found.add("epoch_skip")
    return found


def world_classes(setup: object) -> frozenset[str]:
    """The classes a schedule world holds (a :class:`~fencepost.harness.world.WorldSetup`)."""
    from fencepost.harness.world import WorldSetup

    assert isinstance(setup, WorldSetup)
    coordinates: list[Coordinate] = []
    epochs = []
    orders = False
    for epoch in setup.epochs:
        for part in epoch.partitions:
            coordinates.extend(ev.at for ev in part.events)
            if part.end is not None:
                coordinates.append(part.end)
            orders = orders or part.order is not None
        epochs.append(
            (
                epoch.epoch,
                [p.name for p in epoch.partitions],
                any(not p.events for p in epoch.partitions),
            )
        )
    successor = setup.order.successor
    found = coordinate_classes(coordinates, successor) | name_classes(epochs)
    if orders:
        found.add("incomparable_orders")
    return frozenset(found)


@dataclass(frozen=True)
class ClassCounts:
    """Per level, how many runs held each value class (every class listed, 0 included)."""

    runs: Mapping[str, Mapping[str, int]]

    @staticmethod
    def of(seen: Iterable[tuple[str, frozenset[str]]]) -> ClassCounts:
        counts: dict[str, dict[str, int]] = {}
        for level, classes in seen:
            row = counts.setdefault(level, dict.fromkeys(CLASSES, 0))
            for name in classes:
                row[name] += 1
        return ClassCounts(counts)
