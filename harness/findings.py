"""Findings: the failures of a conformance run grouped into one per distinct bug.

Every phase of ``fencepost conform`` runs whatever an earlier phase found (so one
report shows every kind of failure), which means one bug is usually found again by
several phases: a relabelling merge breaks ``soundness`` in three exhaustive bases.
Reported per phase, the reader sees the same bug five times and has to work out
that it is one. A :class:`Finding` is one bug: the failures that broke the same
rule with the same **signature** (the set of rules the harness flagged in the
transcript, ``VIOLATION <rule>``: a relabelling shows ``no_relabeling`` before
``soundness``; a lost-response bug that breaks ``soundness`` shows
``lost_response_honesty`` instead), represented by its shortest counterexample
(fewest schedule steps, then fewest transcript lines, then the earliest phase),
with every phase that saw it listed.

Guarantees: every failure belongs to exactly one finding; findings keep the order
in which their first failure was found; the per-phase failures themselves are
unchanged (JUnit, ``--report`` and ``--save FOLDER`` still carry each one).

Cost: linear in the failures and their transcripts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fencepost.harness.conformance import Failure

#: The prefix the harness writes before a broken rule in a transcript note.
_FLAG = "VIOLATION "


@dataclass(frozen=True, slots=True)
class Finding:
    """One distinct bug: its shortest counterexample and every phase that found it."""

    #: The shortest counterexample (the one reports show and replay).
    failure: Failure
    #: The phases that found it, in the order they ran (the shortest's phase included).
    phases: tuple[str, ...]
    #: The rules flagged along the way (the signature), sorted.
    signature: tuple[str, ...]

    @property
    def rule(self) -> str:
        return self.failure.violation.rule.value

    @property
    def also_seen(self) -> tuple[str, ...]:
        """The phases other than the shortest counterexample's own."""
        return tuple(p for p in self.phases if p != self.failure.phase)


def signature(failure: Failure) -> tuple[str, ...]:
    """The rules the harness flagged in ``failure``'s transcript, its own rule included."""
    flagged = {failure.violation.rule.value}
    for line in failure.transcript:
        if line.direction == "**" and line.text.startswith(_FLAG):
            flagged.add(line.text[len(_FLAG) :].split(":", 1)[0].strip())
    return tuple(sorted(flagged))


def _length(failure: Failure) -> tuple[int, int]:
    return (len(failure.actions), len(failure.transcript))


def group(failures: Iterable[Failure]) -> tuple[Finding, ...]:
    """``failures`` grouped by broken rule and signature (see the module docstring)."""
    groups: dict[tuple[str, tuple[str, ...]], list[Failure]] = {}
    for failure in failures:
        key = (failure.violation.rule.value, signature(failure))
        groups.setdefault(key, []).append(failure)
    findings = []
    for (_, sig), members in groups.items():
        shortest = min(members, key=_length)  # min keeps the earliest of equal lengths
        phases = tuple(dict.fromkeys(f.phase for f in members if f.phase))
        findings.append(Finding(shortest, phases, sig))
    return tuple(findings)


def one_line(finding: Finding) -> str:
    """The finding in one line: the rule, what broke, the phase (for the closing recap).

    The message is whole (what broke is at its end: "expected before 1, got through 1");
    the other phases are named when there are at most three, counted otherwise.
    """
    failure = finding.failure
    v = failure.violation
    where = failure.phase or "the handshake"
    also = finding.also_seen
    if len(also) > 3:
        where += f"; also seen in {len(also)} more phases"
    elif also:
        where += f"; also seen in {', '.join(also)}"
    return f"{v.rule.value}: {v.message} (phase {where})"


def plural(count: int, word: str) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{count} {word}{'' if count == 1 else 's'}"
