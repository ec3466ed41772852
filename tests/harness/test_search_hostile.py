"""The exhaustive search against SUTs that end attempts early, late, or read what they should not.

A wrong implementation once crashed the harness itself: its cutover read a
member's checkpoint from the previous epoch, its run stopped earlier than the
base schedule, and the insertion pruning indexed past the points it had
(``IndexError`` in ``_redundant_read``), which exited 1 like a finding. Each SUT
here deviates from the base schedules in one such way; every base is searched at
depth 1 and must end in a verdict (conformant or a failure with its rule), never
a :class:`HarnessError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from fencepost.harness.bases import BASES
from fencepost.harness.exhaustive import exhaustive
from fencepost.harness.rules import Rule
from fencepost.impl.cuts import Cut
from fencepost.impl.records import Checkpoint
from fencepost.impl.stores import DefiniteStoreError, PublicationWrite
from fencepost.mutants import CORRECT, Variant
from fencepost.mutants.stores import PublisherProxy, publisher_over
from fencepost.sut.adapter import InProcessSut


class PreviousEpochStore(PublisherProxy):
    """Cutover reads a member's checkpoint from the previous epoch, and uses it."""

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        current = list(super().read_checkpoints(stream, epoch))
        if epoch > 1:
            have = {c.partition for c in current}
            older = super().read_checkpoints(stream, epoch - 1)
            current += [replace(c, epoch=epoch) for c in older if c.partition not in have]
        return current


class EarlyEndStore(PublisherProxy):
    """Ends every attempt after its first read: the checkpoint read fails."""

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        raise DefiniteStoreError("gave up before reading the checkpoints")


class LateReadStore(PublisherProxy):
    """Keeps reading after its write: two more calls the base schedule never answers."""

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        result = super().write_publication(stream, expected_revision, epoch, cut, op_id)
        self.read_publication(stream)
        self.read_membership(stream)
        return result


VARIANTS = {
    name: Variant(name, publisher=publisher_over(store))
    for name, store in (
        ("previous-epoch", PreviousEpochStore),
        ("early-end", EarlyEndStore),
        ("late-reads", LateReadStore),
    )
}

PUBLISHER_BASES = sorted(name for name, base in BASES.items() if base.setup.publishers)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_exhaustive_search_ends_in_a_verdict_on_deviating_suts(variant: str) -> None:
    factory = InProcessSut(VARIANTS[variant])
    rules: set[Rule] = set()
    runs = 0
    for base in PUBLISHER_BASES:
        # A HarnessError here (the IndexError of the issue, or any other) fails the test.
        for _case, result in exhaustive(factory, base, 1, timeout=5.0):
            runs += 1
            if result.first is not None:
                rules.add(result.first.rule)
    assert runs >= len(PUBLISHER_BASES)
    # Each deviation is caught as what it is, not as a crash of the harness.
    assert rules, f"{variant} deviates from the protocol, yet every run passed"


def test_the_correct_sut_passes_the_same_search() -> None:
    factory = InProcessSut(replace(CORRECT))
    for base in PUBLISHER_BASES[:3]:
        for case, result in exhaustive(factory, base, 1, timeout=5.0):
            assert result.ok, (case, result.first)
