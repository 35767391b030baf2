"""The package's version, in one place below every layer (pyproject.toml reads it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
