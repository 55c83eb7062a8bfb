"""The common life cycle of every compared method (paper 004 Section 5).

A method is constructed with its parameters, gives the client its randomizer for a protocol
(``protocol(epsilon, attributes_per_person, among)``: the same budget split for every method, only
the mechanism differs), is fitted on the reports (``fit(reports)``, returns self; learned state in attributes
ending in ``_``) and answers c-way contingency queries (``table(cols)``: a probability array of
shape ``(f_cols[0], ..., f_cols[c-1])``, non-negative, summing to 1). Methods that need the true
data (the reference ``TruePairsCopula``) say so with ``needs_truth = True`` and are fitted with
``fit_truth(schema, codes)`` instead.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from reidrisk._compat import renamed_keywords
from reidrisk.collect.protocol import Protocol
from reidrisk.errors import ReidriskError
from reidrisk.schema import Schema, SchemaError


class NotFittedError(ReidriskError, RuntimeError):
    """``table`` was called before ``fit``."""


class Method(ABC):
    """Base of the compared methods (module doc). ``mechanism``: the client's mechanism name."""

    name: str = "method"
    label: str = "method"
    mechanism: str | None = "subset"
    needs_truth: bool = False

    @renamed_keywords(k="attributes_per_person")
    def protocol(self, epsilon: float, attributes_per_person: int | None = None,
                 among: str = "present") -> Protocol:
        """The client protocol of this method for a budget and a budget split.

        Parameters
        ----------
        epsilon : float
            Budget of one person's whole report.
        attributes_per_person : int, optional
            Attributes each person reports (formerly ``k``); ``None`` (default): all of them.
        among : {"present", "all"}
            Which attributes are sampled (``reidrisk.collect.protocol.Protocol``).

        Returns
        -------
        Protocol
            The protocol with this method's ``mechanism``.

        Raises
        ------
        NotImplementedError
            For a method with no client of its own (``mechanism = None``).
        """
        if self.mechanism is None:
            raise NotImplementedError(f"{self.label} has no client of its own")
        return Protocol(epsilon, attributes_per_person, self.mechanism, among)

    @abstractmethod
    def fit(self, reports) -> Method:
        """Learn from the reports.

        Parameters
        ----------
        reports : RecordReports, CollectedReports or CALMReports
            The randomized reports of every person, as this method's ``protocol`` produces them
            (``CALMReports`` for ``CALM``).

        Returns
        -------
        Method
            This method, fitted (learned state in the attributes ending in ``_``).
        """

    def fit_truth(self, schema: Schema, codes: np.ndarray) -> Method:
        """Learn from the true data (only for ``needs_truth`` methods; the others raise).

        Parameters
        ----------
        schema : Schema
            The attributes of ``codes``.
        codes : numpy.ndarray (n, g)
            The true records as integer codes, ``MISSING`` where a value is missing.

        Raises
        ------
        NotImplementedError
            Always, here: this method is fitted on reports.
        """
        raise NotImplementedError(f"{self.label} is fitted on reports, not on the true data")

    @abstractmethod
    def _table(self, cols: list[int]) -> np.ndarray:
        """Unnormalized or normalized c-way table for attribute indices ``cols``."""

    def table(self, cols: Sequence[int | str]) -> np.ndarray:
        """The estimated c-way probability table of ``cols``.

        Parameters
        ----------
        cols : sequence of int or str
            c distinct attributes, by name or index (a single one is also accepted).

        Returns
        -------
        numpy.ndarray (f_cols[0], ..., f_cols[c-1])
            Non-negative, summing to 1; the uniform table when the estimate has no mass.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        SchemaError
            For an unknown, out-of-range or repeated column.
        """
        schema = getattr(self, "schema_", None)
        if schema is None:
            raise NotFittedError(f"{self.label}: call fit() before table()")
        idx = _columns(schema, cols)
        t = np.asarray(self._table(idx), dtype=np.float64)
        t = np.clip(t, 0.0, None)
        s = t.sum()
        if not np.isfinite(s) or s <= 0:
            shape = tuple(int(schema.sizes[j]) for j in idx)
            return np.full(shape, 1.0 / np.prod(shape))
        return t / s

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _columns(schema: Schema, cols) -> list[int]:
    if isinstance(cols, (str, int, np.integer)):
        cols = [cols]
    out = [schema.index(c) if isinstance(c, str) else int(c) for c in cols]
    g = len(schema)
    if not out or any(not 0 <= j < g for j in out) or len(set(out)) != len(out):
        raise SchemaError(f"columns {list(cols)} must be distinct attributes of the schema (0..{g - 1})")
    return out


def product_table(marginals: Sequence[np.ndarray], cols: Sequence[int]) -> np.ndarray:
    """Outer product of the marginals of ``cols`` (independence).

    Parameters
    ----------
    marginals : sequence of array_like
        The g marginal distributions, indexed by attribute.
    cols : sequence of int
        The c attribute indices of the table, in its axis order.

    Returns
    -------
    numpy.ndarray (f_cols[0], ..., f_cols[c-1])
        ``marginals[cols[0]] x ... x marginals[cols[c-1]]`` (a 0-d 1.0 for no column).
    """
    t = np.ones(())
    for j in cols:
        t = np.multiply.outer(t, np.asarray(marginals[j], dtype=np.float64))
    return t
