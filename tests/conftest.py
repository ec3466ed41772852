"""Shared pytest configuration.

Fast tests run by default. Long explorations and soak runs carry
``@pytest.mark.slow`` and run with ``--run-slow``, in their bounded form (CI runs
them so); ``--run-slow --full-length`` runs them whole (tests/lengths.py).

The suite runs on every core (pytest-xdist, ``-n auto --dist loadscope`` in
pyproject.toml): each module runs whole on one worker, so a module-scoped world is
built once. See tests/README.md, "Parallel runs".
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from lengths import Length

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
    derandomize=False,
    max_examples=200,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run tests marked slow (long explorations, soak and crash runs), bounded",
    )
    parser.addoption(
        "--full-length",
        action="store_true",
        default=False,
        help="with --run-slow: run the slow tests whole instead of bounded (about an hour)",
    )


@pytest.fixture
def length(request: pytest.FixtureRequest) -> Length:
    """The slow tests' length: bounded by default, whole under ``--full-length``."""
    return Length(full=bool(request.config.getoption("--full-length")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --run-slow (CI does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


# PostgreSQL fixtures (pg_dsn, pg_schema, pg_store): FENCEPOST_DATABASE_URL or a
# throwaway pgserver; PostgreSQL tests fail, never skip, when neither works.
# store_backends: the store contract suite's backends (store_factory, store).
# proof_memo: the protocol proof decided once per worker (fixture shared_protocol_proof).
pytest_plugins = ["pg_server", "store_backends", "proof_memo"]
