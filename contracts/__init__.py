"""Provider contracts (TOML), shipped as package data and read with importlib.resources."""
