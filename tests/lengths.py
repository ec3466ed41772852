"""How long the slow tests run: bounded (``--run-slow``, what CI runs) or full.

``pytest --run-slow`` runs every ``slow`` test in its bounded form: the same
checks over a deterministic part of their space (every n-th state, fewer
examples, fewer seeds, shorter soaks): about 20 minutes on 2 cores beside the
fast suite's 9 to 12. ``pytest --run-slow --full-length`` runs them whole (over
an hour on 2 cores). An environment variable named by a test overrides both, for
one long run of one test.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Length:
    """The run's length: ``full`` under ``--full-length``, bounded otherwise."""

    full: bool

    def pick(self, *, full: int, bounded: int, env: str | None = None) -> int:
        """``full`` or ``bounded`` by the run's length; ``env``, when set, wins.

        A malformed override is a usage error naming the variable, not a crash.
        """
        if env is not None and env in os.environ:
            raw = os.environ[env]
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(
                    f"{env}={raw!r} is not an integer; unset it or give a count"
                ) from None
            if value < 1:
                raise ValueError(f"{env}={raw!r} must be at least 1")
            return value
        return full if self.full else bounded
