"""Machine-checked properties of fencepost.

- ``fencepost.properties.proofs``: Z3 proofs of the before/through cut algebra, derived
  from the downset definition of docs/semantics §2, and the Z3 decision procedure the
  implementation's comparison is cross-checked against.
"""
