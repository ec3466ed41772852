"""``python -m fencepost`` runs the command line."""

from fencepost.cli import main

main()
