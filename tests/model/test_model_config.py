"""Model configuration: validation names the field and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from fencepost.model.config import DEFAULTS, ConfigError, ModelConfig, default_config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"part": "everything"}, "part must be one of"),
        ({"policy": "sometimes"}, "policy must be one of"),
        ({"partitions": 0}, "partitions=0 is outside"),
        ({"partitions": True}, "partitions must be an integer"),
        ({"publishers": 2.0}, "publishers must be an integer"),
        ({"epochs": 99}, "epochs=99 is outside"),
        ({"lost_responses": 1}, "lost_responses must be true or false"),
        ({"mutant": "nope"}, "unknown mutant 'nope'"),
        ({"bad_checkpoints": ("weird",)}, "bad_checkpoints entry must be one of"),
        ({"bad_checkpoints": ["provisional"]}, "bad_checkpoints must be a tuple"),
        ({"positions": (0.25, 0.5), "events_per_partition": 2}, "not a multiple of 0.5"),
        ({"positions": (0.0,), "events_per_partition": 2}, "lists 1 events but"),
        ({"positions": (float("nan"),), "events_per_partition": 1}, "not a finite"),
        ({"positions": (5,), "events_per_partition": 1}, "lies outside"),
        ({"successor": True, "positions": (0.5,), "events_per_partition": 1}, "between integer"),
        ({"events_per_partition": 9}, "does not fit in coordinates"),
        ({"scope": ""}, "scope must be a non-empty string"),
    ],
)
def test_bad_values_raise_a_specific_error(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**changes)


def test_default_layouts_share_coordinates_and_sit_between_them() -> None:
    dense = ModelConfig(events_per_partition=3, coordinates=1)
    assert dense.own_halves == (0, 0, 1)  # 0, 0 and 0.5
    succ = ModelConfig(events_per_partition=3, coordinates=2, successor=True)
    assert succ.own_halves == (0, 0, 2)
    assert ModelConfig().moved_halves == (0,)


def test_defaults_exist_for_every_part_and_overrides_are_validated() -> None:
    assert set(DEFAULTS) == {"ingest", "publication", "composed"}
    assert default_config("ingest", readers=1).readers == 1
    with pytest.raises(ConfigError, match="partitions"):
        default_config("composed", partitions=-1)
    with pytest.raises(ConfigError, match="part must be one of"):
        default_config("nope")
