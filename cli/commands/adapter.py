"""``fencepost adapter NAME [--config JSON]``: a real sync tool as a conformance SUT.

Speaks the ``sync`` level of docs/conformance-protocol.md on stdin/stdout by
driving the named library's public API (docs/real-tools.md); run it under
``fencepost conform --world late-commits -- fencepost adapter NAME``. The
configuration is passed to the tool under its own keys. Exit status: 0 after
the harness's shutdown, 2 for an unknown adapter, a bad configuration or a
library that is not installed (with the pip command that installs it).

The library is imported, and the configuration checked by it, before ``hello``
is answered: airbyte-cdk's import is 2 s of CPU (up to 10 s at a load of 20), dlt's
and singer-sdk's under one. Answering first and importing later would move that
cost into the first sync, under the per-message ``--timeout`` instead of the
start-up budget ``--startup-timeout`` made for it, and would turn a configuration
the library refuses into failed syncs instead of exit 2 before the search starts.
"""

from __future__ import annotations

import importlib
import sys

import click

from fencepost.adapters import ADAPTERS, ConfigError


def _config(value: str | None) -> dict[str, object]:
    from fencepost.inputs.jsonlines import MessageError, decode_line

    if value is None:
        return {}
    try:
        return decode_line(value)
    except MessageError as exc:
        raise click.BadParameter(
            f"{exc.problem}; give one JSON object, e.g. '{{\"lag\": 10}}'", param_hint="--config"
        ) from None


@click.command(name="adapter", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", type=click.Choice(sorted(ADAPTERS)))
@click.option(
    "--config",
    "config_text",
    metavar="JSON",
    default=None,
    help="The tool's configuration, one JSON object under the tool's own keys.",
)
def command(name: str, config_text: str | None) -> None:
    """Run the sync tool NAME (dlt, singer, airbyte) behind the conformance protocol.

    Example: fencepost conform --world late-commits -- fencepost adapter dlt --config '{"lag": 10}'
    """
    from fencepost.adapters.runtime import protect_stdout, serve_stdio

    info = ADAPTERS[name]
    config = _config(config_text)
    wire = protect_stdout()
    try:
        importlib.import_module(info.library)
    except ImportError as exc:
        click.echo(
            f"fencepost adapter {name}: the library {info.library!r} is not installed ({exc}); "
            f"install it with: pip install 'fencepost[{info.extra}]'",
            err=True,
        )
        sys.exit(2)
    module = importlib.import_module(f"fencepost.adapters.{info.module}")
    try:
        tool = module.build(config)
    except ConfigError as exc:
        click.echo(f"fencepost adapter {name}: --config: {exc}", err=True)
        sys.exit(2)
    sys.exit(serve_stdio(tool, wire))
