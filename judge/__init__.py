"""The judge: fencepost's independent reading of docs/semantics.md, which decides every verdict."""
