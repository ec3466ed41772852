"""The executable formal model of fencepost (knows nothing of ``fencepost.impl``)."""
