"""The ``fencepost`` command line.

Each subcommand lives in its own module under ``fencepost.commands`` and is
imported only when invoked, so ``fencepost prove`` never pays for importing the
PostgreSQL driver and a broken optional piece cannot break unrelated commands.
Exit codes follow one convention everywhere: 0 the property holds / the run
succeeded, 1 a violation or finding was found, 2 a usage error or bad input, 3
fencepost's own error (never a verdict).
"""

from __future__ import annotations

import importlib

import click

from fencepost import __version__

#: subcommand name -> (module under fencepost.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "explore": ("explore", "Exhaustively explore the protocol model within bounds."),
    "prove": ("prove", "Prove the cut algebra, or (--protocol) section 7 at any size, with Z3."),
    "demo": ("demo", "Ingest a simulated source or a real PostgreSQL outbox, and publish."),
    "sut": ("sut", "Speak the conformance protocol with fencepost's own implementation."),
    "conform": ("conform", "Test any implementation through the JSON-lines protocol."),
    "scenarios": ("scenarios", "Run the scenario library against model, impl or a SUT."),
    "check": ("check", "The CI gate: proofs, exploration, refinement, scenarios, conformance."),
    "review": ("review", "Review provider contracts and report findings."),
    "contracts": ("contracts", "List and show the shipped provider contracts."),
    "audit": ("audit", "Check the recorded history of a live system (docs/audit.md)."),
    "adapter": ("adapter", "Run dlt, singer-sdk or airbyte-cdk as a conformance SUT (sync level)."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"fencepost.commands.{entry[0]}")
        command = module.command
        if not isinstance(command, click.Command):
            raise TypeError(f"fencepost.commands.{entry[0]}.command is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fencepost")
def main() -> None:
    """fencepost: publish merged event frontiers that stay true.

    Exit codes: 0 success / all properties hold, 1 violation or finding, 2 usage error
    or bad input, 3 fencepost's own error.
    """
