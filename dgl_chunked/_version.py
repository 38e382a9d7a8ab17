"""The package version (a leaf module, so every layer may read it)."""

__version__ = "0.1.0"
