"""The incremental-sync tools ``fencepost adapter NAME`` drives, by name.

Each has an adapter (:data:`fencepost.adapters.ADAPTERS`: its module, library and
pip extra), a review model (:data:`fencepost.review.tools.TOOLS`) and a page
docs/real-tools-<tool>.md. tests/vocabulary/test_totality.py fails while a tool
lacks a home. Cost: constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: tool name -> what the adapter drives.
TOOL_ADAPTERS: Mapping[str, str] = MappingProxyType(
    {
        "dlt": "dlt's incremental cursor (dlt.sources.incremental)",
        "singer": "a singer-sdk tap stream with a replication key",
        "airbyte": "an airbyte-cdk declarative incremental stream",
    }
)
