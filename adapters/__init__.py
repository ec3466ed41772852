"""fencepost.adapters: the incremental-sync tools data teams run, as conformance SUTs.

``fencepost adapter dlt|singer|airbyte [--config JSON]`` speaks the ``sync``
level of docs/conformance-protocol.md by driving the library's own public API
(:mod:`fencepost.adapters.runtime` holds the wire). Each library is an optional
extra (``pip install 'fencepost[dlt]'``). This package may import its tools,
:mod:`fencepost.inputs`, and nothing of the judge or the harness: the adapters
are judged, never judges. docs/real-tools.md has what each one finds.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.vocabulary.tools import TOOL_ADAPTERS


@dataclass(frozen=True, slots=True)
class AdapterInfo:
    """One adapter: its module here, the library's import name and the pip extra."""

    module: str
    library: str
    extra: str
    summary: str


#: The adapters, by the name ``fencepost adapter NAME`` takes (the vocabulary's
#: TOOL_ADAPTERS names them and says what each drives).
ADAPTERS: dict[str, AdapterInfo] = {
    "dlt": AdapterInfo("dlt_adapter", "dlt", "dlt", TOOL_ADAPTERS["dlt"]),
    "singer": AdapterInfo("singer_adapter", "singer_sdk", "singer", TOOL_ADAPTERS["singer"]),
    "airbyte": AdapterInfo("airbyte_adapter", "airbyte_cdk", "airbyte", TOOL_ADAPTERS["airbyte"]),
}


class ConfigError(ValueError):
    """A tool configuration the adapter cannot run: the message names the key and the fix."""
