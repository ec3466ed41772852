"""``python -m fencepost.sut NAME``: run one catalog mutant as a SUT.

The same as ``fencepost sut --mutant NAME``, without the command-line layer
(for harnesses that want the shortest start-up). Exit status 2 for an unknown
name, with the catalog listed on stderr.
"""

from __future__ import annotations

import sys

from fencepost.mutants import CATALOG
from fencepost.sut.adapter import serve_stdio


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in CATALOG:
        print(
            f"usage: python -m fencepost.sut NAME\nknown mutants: {', '.join(sorted(CATALOG))}",
            file=sys.stderr,
        )
        return 2
    return serve_stdio(CATALOG[argv[0]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
