"""Provider contracts: what a source promises about positions, boundaries and finality.

A contract is a TOML file (``contracts/kafka.toml``; docs/contracts.md describes
every field) stating, each fact with its citation:

- the coordinate order: integer or string, whether ``succ(x)`` is exact, whether
  several events can share one position and how boundaries treat such ties;
- every boundary the API exposes, as a parameter (a resume position) or in a
  record (a claim), mapped to the cut it marks: ``before`` or ``through``;
- the claims fencepost may take finality from, and exactly what each guarantees;
- whether partitions share one order; how membership changes and is learned;
- pagination (token opacity, overlap, empty pages); caveats and unconfirmed facts.

A contract is not only documentation: it configures the runtime. :meth:`Contract.order`
builds the implementation's :class:`~fencepost.impl.orders.Order`,
:meth:`Contract.membership` the membership whose merge withholds ``incomparable``
exactly when the provider's partitions share no order, :meth:`Contract.check_claim`
decides whether a provider claim (boundary name and value) may certify a
checkpoint and as which cut, and :meth:`Contract.resume_from` turns a checkpoint
back into a provider resume position that skips nothing uncertified. The runtime
refuses what would make a claim untrue (a manufactured successor, a ``before``
boundary read as ``through``, a caught-up signal taken as finality); the review
tool (``fencepost review``) explains the same mistakes with witnesses.

Errors name the file, the line and the field: ``kinesis.toml:31: claims.x.guarantee: ...``.
"""

from __future__ import annotations

from fencepost.contracts.contract import (
    Contract,
    relation,
)
from fencepost.contracts.encodings import (
    decode,
    encode,
)
from fencepost.contracts.facts import (
    ENCODINGS_OF_KIND,
    LOAD_BEARING,
    Adjust,
    Boundary,
    Caveat,
    ClaimDecision,
    ClaimFacts,
    ContractError,
    ContractErrors,
    CoordinateKind,
    CrossOrder,
    CursorFacts,
    Delay,
    Discovery,
    Encoding,
    Epochs,
    Evidence,
    Frontier,
    Guarantee,
    Horizon,
    LateCommits,
    Lineage,
    MembershipChange,
    MembershipFacts,
    Mutability,
    NewPartitions,
    Occurs,
    OrderFacts,
    PaginationFacts,
    PartitionFacts,
    Possibility,
    Precision,
    ProviderInfo,
    Reads,
    ResumePosition,
    ResumeRule,
    Source,
    Surface,
    Ties,
    TokenKind,
    Unconfirmed,
    UnknownContract,
    Use,
    every_error,
)
from fencepost.contracts.loader import (
    CURSOR_FIELDS,
    FIELDS,
    load_contract,
    load_shipped_contract,
    looks_like_path,
    parse_contract,
    read_contract_file,
    shipped_contract_names,
    template_names,
    template_text,
)

__all__ = [
    "CURSOR_FIELDS",
    "ENCODINGS_OF_KIND",
    "FIELDS",
    "LOAD_BEARING",
    "Adjust",
    "Boundary",
    "Caveat",
    "ClaimDecision",
    "ClaimFacts",
    "Contract",
    "ContractError",
    "ContractErrors",
    "CoordinateKind",
    "CrossOrder",
    "CursorFacts",
    "Delay",
    "Discovery",
    "Encoding",
    "Epochs",
    "Evidence",
    "Frontier",
    "Guarantee",
    "Horizon",
    "LateCommits",
    "Lineage",
    "MembershipChange",
    "MembershipFacts",
    "Mutability",
    "NewPartitions",
    "Occurs",
    "OrderFacts",
    "PaginationFacts",
    "PartitionFacts",
    "Possibility",
    "Precision",
    "ProviderInfo",
    "Reads",
    "ResumePosition",
    "ResumeRule",
    "Source",
    "Surface",
    "Ties",
    "TokenKind",
    "Unconfirmed",
    "UnknownContract",
    "Use",
    "decode",
    "encode",
    "every_error",
    "load_contract",
    "load_shipped_contract",
    "looks_like_path",
    "parse_contract",
    "read_contract_file",
    "relation",
    "shipped_contract_names",
    "template_names",
    "template_text",
]
