"""Randomizing whole records: one mechanism per attribute, an explicit budget split.

Design: docs/design/core.md#records-and-the-budget-split.

Paper 004 Algorithm 1: every present attribute j is randomized with budget epsilon_j, and by
sequential composition the record's report is (sum over its reported j of epsilon_j)-LDP
(``RecordReports.privacy_loss``: the largest such sum over the records). The default split is
even over all g attributes (epsilon / g each), as in the paper. Missing values stay missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk.mechanisms.base import Mechanism, MechanismError, as_generator, check_epsilon
from reidrisk.mechanisms.registry import make_mechanism
from reidrisk.schema import Schema


def split_budget(epsilon: float, g: int, weights: Sequence[float] | None = None) -> np.ndarray:
    """Per-attribute budgets that add up to ``epsilon``.

    Parameters
    ----------
    epsilon : float
        The budget of one whole record (finite, > 0).
    g : int
        Number of attributes.
    weights : sequence of float, optional
        One positive finite weight per attribute; the budgets are proportional to them.
        ``None``: an even split, ``epsilon / g`` each.

    Returns
    -------
    numpy.ndarray (g,)
        The per-attribute budgets.
    """
    eps = check_epsilon(epsilon)
    if weights is None:
        return np.full(g, eps / g)
    w = np.asarray(weights, dtype=float)
    if w.shape != (g,) or (w <= 0).any() or not np.isfinite(w).all():
        raise MechanismError(
            f"budget weights must be {g} positive finite numbers (one per attribute), got {weights!r}"
        )
    return eps * w / w.sum()


@dataclass(frozen=True)
class RecordReports:
    """Randomized reports of n records: one report array per attribute, aligned by row.

    Parameters
    ----------
    schema : Schema
        The attributes, in column order.
    mechanisms : tuple of Mechanism
        One per attribute; each ``k`` equals its attribute's size.
    reports : tuple of numpy.ndarray
        One report array per attribute, all of the same length n.
    """

    schema: Schema
    mechanisms: tuple[Mechanism, ...]
    reports: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if not (len(self.schema) == len(self.mechanisms) == len(self.reports)):
            raise MechanismError("schema, mechanisms and reports must have one entry per attribute")
        ns = {len(r) for r in self.reports}
        if len(ns) != 1:
            raise MechanismError(f"report arrays have different lengths {sorted(ns)}; rows must align")
        for attr, mech in zip(self.schema, self.mechanisms):
            if mech.k != attr.size:
                raise MechanismError(
                    f"attribute {attr.name!r} has {attr.size} categories but its mechanism has k={mech.k}"
                )

    @property
    def n(self) -> int:
        return len(self.reports[0])

    def attribute_losses(self) -> np.ndarray:
        """(g,) the privacy loss of one report of each attribute (``Mechanism.privacy_loss``).

        Returns
        -------
        numpy.ndarray (g,)
            The losses.
        """
        return np.array([m.privacy_loss for m in self.mechanisms], dtype=np.float64)

    def spent(self) -> np.ndarray:
        """(n,) the privacy loss of each record's report: by sequential composition (paper 004
        Algorithm 1) the sum of the losses of the attributes it reported; an attribute a record
        did not report (missing, or not sampled by the protocol) spends nothing.

        Returns
        -------
        numpy.ndarray (n,)
            The losses.
        """
        return self.present().astype(np.float64) @ self.attribute_losses()

    @property
    def privacy_loss(self) -> float:
        """The guarantee of the release: the largest privacy loss of one record's report (the
        maximum of ``spent()`` over records; 0 for an empty set). Under attribute sampling
        (``Protocol(epsilon, attributes_per_person=k)``, k < g) this is at most ``epsilon``, not the sum over all g
        attributes. Which attributes are present is not randomized: the missingness pattern
        is released as it is (``reidrisk.collect.protocol`` module doc)."""
        return float(self.spent().max()) if self.n else 0.0

    @property
    def epsilon(self) -> float:
        """The budget one whole record spends: ``privacy_loss``."""
        return self.privacy_loss

    def present(self) -> np.ndarray:
        """(n, g) bool: which attributes each record reported.

        Returns
        -------
        numpy.ndarray (n, g) of bool
            True where the attribute was reported.
        """
        return np.column_stack([~m.is_missing(r) for m, r in zip(self.mechanisms, self.reports)])

    def supports(self) -> list:
        """Per-attribute support-membership matrices (n, f_j).

        Returns
        -------
        list of numpy.ndarray or scipy.sparse matrix
            One (n, f_j) matrix per attribute.
        """
        return [m.support(r) for m, r in zip(self.mechanisms, self.reports)]

    def validate(self) -> RecordReports:
        """Check every report against its mechanism (for reports received from clients).

        Returns
        -------
        RecordReports
            The reports in their mechanisms' dtypes.
        """
        for attr, mech, rep in zip(self.schema, self.mechanisms, self.reports):
            try:
                mech.validate_reports(rep)
            except MechanismError as exc:
                raise MechanismError(f"attribute {attr.name!r}: {exc}") from None
        return self

    def take(self, rows: np.ndarray) -> RecordReports:
        """The reports of a subset of rows.

        Parameters
        ----------
        rows : array_like
            Row indices or a boolean mask (n,).

        Returns
        -------
        RecordReports
            Those rows' reports, with the same schema and mechanisms.
        """
        return RecordReports(self.schema, self.mechanisms, tuple(r[rows] for r in self.reports))


class RecordRandomizer:
    """Client-side randomizer of whole records.

    Parameters
    ----------
    schema : Schema
        The attributes; each gets a mechanism with ``k`` equal to its size.
    mechanism : str or callable
        A registry name of ``make_mechanism`` (``"grr"``, ``"subset"``, ``"oue"``, ``"rappor"``,
        ``"olh"``, ...) or a callable ``(epsilon, k) -> Mechanism``.
    epsilon : float
        The budget of one whole record (finite, > 0).
    weights : sequence of float, optional
        Split of ``epsilon`` over the attributes, as in ``split_budget`` (even by default).
    """

    def __init__(
        self,
        schema: Schema,
        mechanism: str | Callable[[float, int], Mechanism],
        epsilon: float,
        weights: Sequence[float] | None = None,
    ) -> None:
        self.schema = schema
        self.epsilon = check_epsilon(epsilon)
        self.budgets = split_budget(self.epsilon, len(schema), weights)
        factory = mechanism if callable(mechanism) else (lambda e, k: make_mechanism(mechanism, e, k))
        self.mechanisms = tuple(factory(float(e), a.size) for e, a in zip(self.budgets, schema))

    def randomize(self, codes: np.ndarray, rng: np.random.Generator | int | None = None) -> RecordReports:
        """Randomize an encoded (n, g) matrix.

        Parameters
        ----------
        codes : numpy.ndarray (n, g)
            Codes valid for the schema (``MISSING`` where absent).
        rng : numpy.random.Generator or int, optional
            ``None`` (the default, for real answers): a fresh ChaCha20 generator keyed from the
            operating system (``reidrisk.mechanisms.secure_generator``); a seed only to simulate.

        Returns
        -------
        RecordReports
            One report array per attribute, with the schema and the mechanisms.
        """
        codes = self.schema.validate_codes(codes)
        rng = as_generator(rng)
        reports = tuple(m.perturb(codes[:, j], rng) for j, m in enumerate(self.mechanisms))
        return RecordReports(self.schema, self.mechanisms, reports)
