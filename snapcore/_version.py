"""The package's version, in one place below every layer (pyproject.toml's ``version``)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
