"""The protocol proof, decided once per test worker and shared by every test that reads it.

Registered as a pytest plugin by tests/conftest.py. ``fencepost prove --protocol``,
``fencepost check --only proofs`` and tests/proofs/test_protocol_proof.py all run
:func:`fencepost.properties.protocol_proof.prove_protocol` on the same arguments
(the whole proof, and the same mutants): the same Z3 queries, a few seconds each
time. Here each distinct call is decided once per worker and its outcomes handed to
every later caller, so the tests still check what the commands print, their JSON
and their exit codes from real Z3 outcomes, without proving the same thing again.

- :func:`memo_prove_protocol`: ``prove_protocol`` with the same signature, memoized
  on every argument but ``report`` (which is called with each outcome, as the real
  one does, in order).
- fixture ``shared_protocol_proof``: ``prove_protocol`` replaced by the memo for one
  test (the commands call it through ``prove_all``), and the command's search for a
  refuted obligation's break among reachable states (an exploration of the mutant
  model) memoized the same way.

Each xdist worker keeps its own memo (a worker runs whole modules: at most one
decision per worker of the full proof, instead of one per test). Cost: the outcomes
are kept (a few thousand small objects and the Z3 models of refuted obligations)
until the worker exits.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import pytest

from fencepost.properties import protocol_proof
from fencepost.properties.protocol_actions import PROTOCOLS
from fencepost.properties.protocol_cti import Reachability, search_reachable
from fencepost.properties.protocol_proof import Outcome

#: The real prover, taken before any test can replace it.
_REAL: Callable[..., list[Outcome]] = protocol_proof.prove_protocol
_SIGNATURE = inspect.signature(_REAL)
_DECIDED: dict[tuple[Hashable, ...], list[Outcome]] = {}
_SEARCHED: dict[tuple[str, str | None, str, str | None], Reachability] = {}


def _key(arguments: dict[str, Any]) -> tuple[Hashable, ...]:
    def frozen(value: Any) -> Hashable:
        if isinstance(value, str) or value is None or isinstance(value, int):
            return value
        return tuple(value)

    return tuple((name, frozen(value)) for name, value in sorted(arguments.items()))


def memo_prove_protocol(*args: Any, **kwargs: Any) -> list[Outcome]:
    """``prove_protocol(*args, **kwargs)``, decided once per distinct arguments."""
    bound = _SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    report: Callable[[Outcome], None] | None = arguments.pop("report")
    key = _key(arguments)
    if key not in _DECIDED:
        _DECIDED[key] = _REAL(**arguments)
    outcomes = _DECIDED[key]
    if report is not None:
        for outcome in outcomes:
            report(outcome)
    return list(outcomes)


def shared_prove_all() -> list[Outcome]:
    """``prove_all()`` (every obligation of every protocol, no mutant), memoized."""
    return [o for p in PROTOCOLS for o in memo_prove_protocol(p)]


def memo_search_reachable(
    protocol: str, mutant: str | None, lemma: str, action: str | None = None
) -> Reachability:
    """``search_reachable`` (a lemma's break among reachable states), once per arguments."""
    key = (protocol, mutant, lemma, action)
    if key not in _SEARCHED:
        _SEARCHED[key] = search_reachable(protocol, mutant, lemma, action)
    return _SEARCHED[key]


@pytest.fixture
def shared_protocol_proof(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """For one test: ``prove_protocol`` (hence ``prove_all``) answers from the memo."""
    from fencepost.commands import prove_protocol as command

    monkeypatch.setattr(protocol_proof, "prove_protocol", memo_prove_protocol)
    monkeypatch.setattr(command, "search_reachable", memo_search_reachable)
    yield
