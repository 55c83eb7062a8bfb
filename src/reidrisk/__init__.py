"""reidrisk: how re-identifiable people are in the data you collect or release, and collection of
sensitive data under local differential privacy when people skip questions."""

from reidrisk.errors import ReidriskError

__version__ = "0.1.0"

__all__ = ["ReidriskError", "__version__"]
