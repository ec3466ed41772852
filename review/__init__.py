"""Design review of provider contracts (``fencepost review``).

- :mod:`fencepost.review.rules`: the rules (stable ids, severities) and
  :func:`~fencepost.review.rules.review_contract`;
- :mod:`fencepost.review.witness`: Z3 encodings that produce witnesses, event
  positions under which a contract's derived claim is false;
- :mod:`fencepost.review.findings`: findings and witnesses as plain data, with
  an arithmetic re-check of every witness;
- :mod:`fencepost.review.tools`: a sync tool's configuration (dlt, singer-sdk,
  airbyte-cdk; the adapters' keys) read into one plan, without importing the tools;
- :mod:`fencepost.review.sync`: the rules that judge a plan against a contract's
  ``[cursor]`` facts, with Z3 witnesses told in rows and commit times;
- :mod:`fencepost.review.report`: text, Markdown and JSON reports and the exit code.

Contracts themselves are loaded by :mod:`fencepost.contracts`, which the
runtime uses too; nothing in ``fencepost.impl`` imports this package.
"""
