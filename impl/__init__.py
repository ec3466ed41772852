"""fencepost.impl: the production implementation.

The cut algebra (``orders``, ``cuts``, ``merge``), the durable records
(``records``), their JSON wire form (``codec``), the store protocols
(``stores``) and the processes that use them. Nothing here knows about the
model or the checkers: the implementation must stand on its own so that
checking it against the model means something.
"""
