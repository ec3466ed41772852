"""Package marker; see the package docstring of fencepost."""
