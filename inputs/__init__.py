"""Reading untrusted input files: every mistake located by file and line.

- :mod:`fencepost.inputs.tomllines`: TOML documents with a line index, so that an
  error in a contract or a scenario names ``file:line: field: problem``.
"""
