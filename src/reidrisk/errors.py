"""The root of reidrisk's exceptions.

Every error the package raises on purpose derives from ``ReidriskError``. Each capability's own
error also keeps its builtin base (``ValueError`` for bad input, ``RuntimeError`` for a state or
storage problem), so ``except ValueError`` keeps catching them::

    class SchemaError(ReidriskError, ValueError): ...

The ``reidrisk`` command translates a ``ReidriskError`` raised by any subcommand into one line
``Error: <message>`` with exit code 2, in one place (``reidrisk.cli.ReidriskGroup``); ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

__all__ = ["InputError", "ReidriskError"]


class ReidriskError(Exception):
    """Base class of every error reidrisk raises on purpose; its message names the value and the
    fix."""


class InputError(ReidriskError, ValueError):
    """Bad command-line input that no capability's own error type describes (an option value that
    only the command interprets, e.g. ``--db FILE:RATE``)."""
