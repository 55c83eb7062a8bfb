"""Renamed public names keep working for a while, with a ``DeprecationWarning`` naming the new one.

One implementation for the whole package:

* ``renamed_keywords(old="new", ...)`` decorates a function (or an ``__init__``) so that a call with
  an old keyword name is forwarded to the new one;
* ``renamed_attribute("new", "old")`` is a read-only property under the old attribute name;
* ``renamed_function(new_function, "old_name")`` is the old function name, forwarding to the new.

Passing both the old and the new keyword is an error (``TypeError``, as Python does for a keyword
given twice). The warnings point at the caller (``stacklevel``), so ``-W error::DeprecationWarning``
finds the call sites to update.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(kind: str, old: str, new: str, stacklevel: int = 3) -> None:
    """Emit the one deprecation message for a renamed ``kind`` (keyword, attribute, ...).

    Parameters
    ----------
    kind : str
        What was renamed ("keyword", "attribute", ...).
    old, new : str
        The former and the current name.
    stacklevel : int
        Passed to ``warnings.warn`` so the warning points at the caller.
    """
    warnings.warn(f"the {kind} {old!r} is deprecated; use {new!r}", DeprecationWarning,
                  stacklevel=stacklevel)


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Accept each old keyword name (``old="new"``) with a ``DeprecationWarning``.

    Parameters
    ----------
    **renames : str
        The current keyword name of each former one (``old="new"``).

    Returns
    -------
    callable
        A decorator: the decorated function forwards each old keyword to the new one (a call
        with both raises ``TypeError``).
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{func.__qualname__}() got both {old!r} (deprecated) "
                                        f"and {new!r}; pass only {new!r}")
                    warn_renamed("keyword", old, new)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_attribute(new: str, old: str) -> property:
    """A read-only property ``old`` returning ``self.<new>`` with a ``DeprecationWarning``.

    Parameters
    ----------
    new : str
        The current attribute name.
    old : str
        The former name the property serves.

    Returns
    -------
    property
        To assign to ``old`` in the class body.
    """

    def get(self: Any) -> Any:
        warn_renamed("attribute", old, new)
        return getattr(self, new)

    return property(get, doc=f"Deprecated name of ``{new}``.")


def renamed_function(func: F, old: str) -> F:
    """The function ``func`` under its old name ``old``, with a ``DeprecationWarning`` per call.

    Parameters
    ----------
    func : callable
        The function under its current name.
    old : str
        The former name.

    Returns
    -------
    callable
        A wrapper named ``old`` that warns, then calls ``func``.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn_renamed("function", old, func.__name__)
        return func(*args, **kwargs)

    wrapper.__name__ = old
    wrapper.__qualname__ = old
    wrapper.__doc__ = f"Deprecated name of ``{func.__name__}``."
    return wrapper  # type: ignore[return-value]


__all__ = ["renamed_attribute", "renamed_function", "renamed_keywords", "warn_renamed"]
