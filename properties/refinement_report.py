"""What a refinement run reports: findings, the failure that stops an example, counts.

A :class:`Finding` is one thing wrong at a step; :class:`RefinementFailure`
stops the example with every finding and the trace of what ran;
:class:`RunStats` counts examples, steps and the kinds of transitions
exercised (:func:`coverage_key`); :class:`RefinementReport` is the result of a
whole run, with the shrunk :class:`FailureReport` if any.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from fencepost.model.state import Action, split_write_detail


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong at a step.

    ``kind`` is ``invariant`` (a docs/semantics.md section 7 property broken on the
    implementation's durable state), ``mismatch`` (the implementation did
    something the model does not allow here, or its durable state differs
    from the model's), or ``model`` (the model itself broke an invariant).
    ``name`` is the invariant's name or the mismatch category:
    ``publisher-protocol``, ``publisher-decision`` (what an attempt did after
    reading the checkpoints), ``publisher-settlement`` (after a write: its
    answer, a lost response, a conflict), ``reader-protocol``,
    ``reader-certify`` (checkpoint writes), ``store-fencing`` (the store
    applied or refused a conditional write against the model),
    ``state-record``, ``state-checkpoints``, ``state-outcomes``,
    ``state-membership`` (the abstraction disagrees), ``impl-error``.
    """

    kind: str
    name: str
    message: str

    def __str__(self) -> str:
        return f"[{self.name}] {self.message}"


class RefinementFailure(AssertionError):
    """The implementation left the model's behaviour or broke a section-7 invariant."""

    def __init__(self, step: str, findings: Sequence[Finding], trace: Sequence[str]) -> None:
        self.step = step
        self.findings = tuple(findings)
        self.trace = tuple(trace)
        lines = [f"refinement check failed after: {step}"]
        lines.extend(f"  - {f}" for f in self.findings)
        lines.append("what the run did (model steps and implementation calls):")
        lines.extend(f"  {n}. {t}" for n, t in enumerate(self.trace, 1))
        super().__init__("\n".join(lines))


@dataclass
class RunStats:
    """Counts of one run, shared by every example of the machine class.

    ``coverage`` counts what the runs exercised, keyed by :func:`coverage_key`
    (model transitions, with their outcome) plus the harness's own events
    (``publisher crash``).
    """

    examples: int = 0
    steps: int = 0
    streams: Iterator[int] = field(default_factory=itertools.count)
    coverage: Counter[str] = field(default_factory=Counter)


def coverage_key(action: Action) -> str:
    """A model transition's kind with the choice that matters: outcome, decision, claim.

    A checkpoint write also names why it was made when not for a new claim
    (``progress``, ``again``) and, on a conflict, what the reader decided
    (``keep``, ``rewrite``, ``gave_up``): ``write_checkpoint:conflict:rewrite``.
    """
    kind = action.kind
    if kind == "read_publication":
        return f"{kind}:{action.detail}" if action.detail else kind
    if kind == "read_checkpoints":
        return f"{kind}:{action.detail}"
    if kind == "write_publication":
        return f"{kind}:{action.outcome}"
    if kind == "write_checkpoint":
        _, purpose, decision = split_write_detail(action.detail)
        extra = ("" if purpose == "claim" else f":{purpose}") + (f":{decision}" if decision else "")
        return f"{kind}:{action.outcome}{extra}"
    if kind == "read_checkpoint":
        return f"{kind}:{action.detail}" if action.detail else kind
    if kind == "fetch_page" and action.page is not None:
        page = action.page
        shape = "empty" if page.start == page.end else "overlap" if page.overlap else "new"
        return f"{kind}:{shape}:{page.claim_kind or 'no claim'}"
    if kind == "reshard":
        return f"{kind}:epoch {action.epoch}"
    return kind


@dataclass(frozen=True)
class FailureReport:
    """One failing example, after shrinking: its findings, program and trace."""

    findings: tuple[str, ...]
    names: frozenset[str]
    program: str
    trace: tuple[str, ...]


@dataclass(frozen=True)
class RefinementReport:
    """The result of :func:`run_refinement`.

    ``examples`` and ``steps`` count every example the run executed
    (shrinking replays included); ``failures`` holds the shrunk failing
    example, if any, with the Hypothesis program that reproduces it;
    ``coverage`` counts the kinds of transitions the run exercised
    (:func:`coverage_key`).
    """

    backend: str
    examples: int
    steps: int
    seed: int | None
    mutant: str | None
    seconds: float
    failures: tuple[FailureReport, ...]
    coverage: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def summary(self) -> str:
        """One line: what ran and the verdict."""
        planted = f" with mutant {self.mutant}" if self.mutant else ""
        verdict = "model and implementation agree" if self.passed else "FAILED"
        return (
            f"{self.backend}{planted}: {self.examples} examples, {self.steps} steps, "
            f"{len(self.coverage)} kinds of transitions, {verdict} ({self.seconds:.1f}s)"
        )

    def details(self, trace_lines: int = 40) -> tuple[str, ...]:
        """One text per failure: the findings, the shrunk program, the end of the trace."""
        out = []
        for failure in self.failures:
            lines = ["findings:", *(f"  {f}" for f in failure.findings)]
            lines += ["program (Hypothesis):", *(f"  {p}" for p in failure.program.splitlines())]
            lines += ["what happened (last steps):"]
            lines += [f"  {t}" for t in failure.trace[-trace_lines:]]
            out.append("\n".join(lines))
        return tuple(out)

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "examples": self.examples,
            "steps": self.steps,
            "seed": self.seed,
            "mutant": self.mutant,
            "seconds": round(self.seconds, 3),
            "passed": self.passed,
            "coverage": dict(sorted(self.coverage.items())),
            "failures": [
                {"findings": list(f.findings), "program": f.program, "trace": list(f.trace)}
                for f in self.failures
            ],
        }
