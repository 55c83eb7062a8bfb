"""Assemble the copula correlation matrix Sigma from all pair fits (paper 004 Section 4.2.3 and
Algorithm 2 lines 14-23; docs/design/core.md#correlation-matrix).

Each off-diagonal entry is a pair fit (``fit_pair_correlations``, all pairs in one batch); an
optional empirical-Bayes shrinkage toward 0 damps noisy pairs; if the assembled matrix is not
positive definite it is projected to the nearest correlation matrix (``nearest_correlation``).

Shrinkage (``shrink="eb"``): model rho_hat = rho + e with rho ~ (0, s) across pairs and
e ~ (0, se^2). The method-of-moments signal variance is s = max(mean(rho_hat^2) - mean(se^2), 0)
and the posterior mean of rho is rho_hat * s / (s + se^2) (James-Stein style). It needs the number
of records behind each pair table (for se).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk._compat import renamed_keywords
from reidrisk.copula.marginals import CopulaError, check_marginals
from reidrisk.copula.nearest import PROJECTIONS, is_correlation_matrix, nearest_correlation
from reidrisk.copula.pairs import METHODS, PairFits, fit_pair_correlations

SHRINKAGE = (None, "eb")


@dataclass(frozen=True)
class CorrelationFit:
    """Fitted copula correlation.

    Parameters
    ----------
    correlation : numpy.ndarray (g, g)
        Positive-definite correlation matrix (the model's Sigma).
    raw : numpy.ndarray (g, g)
        Assembled pair correlations after shrinkage, before projection.
    standard_error : numpy.ndarray (g, g)
        Standard errors of the pair fits (nan without n; 0 on the diagonal).
    pair_fits : PairFits
        The per-pair results.
    projected : bool
        Whether the projection changed the matrix.
    signal_variance : float or None
        The empirical-Bayes s (None without shrinkage).
    """

    correlation: np.ndarray
    raw: np.ndarray
    standard_error: np.ndarray
    pair_fits: PairFits
    projected: bool
    signal_variance: float | None


def _table_items(pair_tables) -> list:
    if isinstance(pair_tables, Mapping):
        return list(pair_tables.items())
    if hasattr(pair_tables, "items"):
        return list(pair_tables.items())
    raise CopulaError(
        "pair_tables must be a mapping (j, j') -> (f_j, f_j') probability table "
        f"(or PairEstimates), got {type(pair_tables).__name__}"
    )


def _pair_n_lookup(n_pairs, pair_tables, g: int):
    """None, a scalar or (g, g) array, or a function (j, j') -> n."""
    if n_pairs is None:
        n_pairs = getattr(pair_tables, "n_present", None)
        if n_pairs is None:
            return None
    if isinstance(n_pairs, Mapping):
        def look(j, k):
            if (j, k) in n_pairs:
                return n_pairs[(j, k)]
            if (k, j) in n_pairs:
                return n_pairs[(k, j)]
            raise CopulaError(f"n_pairs has no entry for pair ({j}, {k})")
        return look
    arr = np.asarray(n_pairs, dtype=np.float64)
    if arr.ndim == 0 or arr.shape == (g, g):
        return arr
    raise CopulaError(
        f"n_pairs must be None, a number, a mapping (j, j') -> n or a ({g}, {g}) array, "
        f"got shape {arr.shape}"
    )


def collect_pairs(pair_tables, g: int, allow_missing: bool = False):
    """Normalize pair tables to j < j' in lexicographic order.

    Parameters
    ----------
    pair_tables : mapping
        (j, j') -> (f_j, f_j') probability table (a ``PairEstimates`` works); a table keyed
        (j', j) with j' > j is transposed.
    g : int
        Number of attributes.
    allow_missing : bool
        Whether pairs may be absent (else every one of the g (g - 1) / 2 is required).

    Returns
    -------
    pairs : numpy.ndarray (P, 2)
        The pairs, j < j', in lexicographic order.
    tables : list of numpy.ndarray
        Their (f_j, f_j') tables, in the same order.

    Raises
    ------
    CopulaError
        For a key that is no pair of distinct attributes, a pair given twice, or a missing pair.
    """
    items = _table_items(pair_tables)
    keys = [k for k, _ in items]
    try:
        arr = np.array(keys, dtype=np.int64).reshape(len(keys), 2)
    except (TypeError, ValueError):
        raise CopulaError("pair table keys must be (j, j') attribute index pairs") from None
    bad = (arr[:, 0] == arr[:, 1]) | (arr.min(axis=1) < 0) | (arr.max(axis=1) >= g)
    if bad.any():
        j, k = arr[np.flatnonzero(bad)[0]]
        raise CopulaError(f"pair ({j}, {k}) is not a pair of distinct attributes in 0..{g - 1}")
    swap = arr[:, 0] > arr[:, 1]
    pairs = np.sort(arr, axis=1)
    code = pairs[:, 0] * g + pairs[:, 1]
    order = np.argsort(code, kind="stable")
    dup = np.flatnonzero(np.diff(code[order]) == 0)
    if dup.size:
        j, k = pairs[order[dup[0]]]
        raise CopulaError(f"pair ({j}, {k}) is given twice (as ({j}, {k}) and ({k}, {j}))")
    expected = g * (g - 1) // 2
    if not allow_missing and len(code) != expected:
        present = np.zeros(g * g, dtype=bool)
        present[code] = True
        iu = np.triu_indices(g, 1)
        first = np.flatnonzero(~present[iu[0] * g + iu[1]])[0]
        raise CopulaError(
            f"pair table for ({iu[0][first]}, {iu[1][first]}) is missing ({len(code)} of "
            f"{expected} pairs given); estimate every pair or pass allow_missing_pairs=True to "
            "treat absent pairs as independent"
        )
    tables = [
        np.asarray(items[i][1], dtype=np.float64).T if swap[i]
        else np.asarray(items[i][1], dtype=np.float64)
        for i in order.tolist()
    ]
    return pairs[order], tables


@renamed_keywords(method="copula_fit")
def fit_correlation(
    marginals: Sequence,
    pair_tables,
    copula_fit: str = "table",
    n_pairs=None,
    shrink: str | None = None,
    projection: str = "dual",
    min_eigenvalue: float = 1e-6,
    allow_missing_pairs: bool = False,
) -> CorrelationFit:
    """Fit Sigma (g, g) from g marginals and the pair tables (see the module docstring).

    Parameters
    ----------
    marginals : sequence of array_like
        The g marginal distributions.
    pair_tables : mapping
        (j, j') -> (f_j, f_j') probability table (a ``PairEstimates`` works).
    copula_fit : {"table", "mi"}
        How each pair's correlation is fitted (``reidrisk.copula.pairs``; formerly ``method``).
    n_pairs : None, float, mapping or numpy.ndarray (g, g), optional
        Records behind each table: None (then ``pair_tables.n_present`` if present), a number,
        a mapping (j, j') -> n, or a (g, g) array. Needed for standard errors and shrinkage.
    shrink : {None, "eb"}
        Empirical-Bayes shrinkage of the pair correlations toward 0 (module docstring).
    projection : {"dual", "higham", "clip"}
        How a matrix that is not positive definite is projected (``nearest_correlation``).
    min_eigenvalue : float
        Smallest eigenvalue the fitted matrix must have.
    allow_missing_pairs : bool
        Treat absent pairs as independent instead of refusing them.

    Returns
    -------
    CorrelationFit
        The matrix, the raw pair correlations, their standard errors and the pair fits.
    """
    if copula_fit not in METHODS:
        raise CopulaError(f"copula_fit must be one of {METHODS}, got {copula_fit!r}")
    if shrink not in SHRINKAGE:
        raise CopulaError(f"shrink must be one of {SHRINKAGE}, got {shrink!r}")
    if projection not in PROJECTIONS:
        raise CopulaError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    margs = check_marginals(marginals)
    g = len(margs)
    pairs, tables = collect_pairs(pair_tables, g, allow_missing_pairs)
    look = _pair_n_lookup(n_pairs, pair_tables, g)
    if look is None:
        n = None
    elif isinstance(look, np.ndarray):
        n = np.broadcast_to(look, (g, g))[pairs[:, 0], pairs[:, 1]] if pairs.size else np.zeros(0)
    else:
        n = np.array([look(j, k) for j, k in pairs.tolist()], dtype=np.float64)
    if shrink == "eb" and n is None:
        raise CopulaError("shrink='eb' needs the records per pair table: pass n_pairs")
    fits = fit_pair_correlations(margs, pairs, tables, copula_fit=copula_fit, n=n)
    rho = fits.rho.copy()
    signal = None
    if shrink == "eb" and rho.size:
        se2 = fits.se**2
        ok = np.isfinite(se2)
        signal = float(max(np.mean(rho[ok] ** 2) - np.mean(se2[ok]), 0.0)) if ok.any() else 0.0
        factor = np.where(ok, signal / np.maximum(signal + se2, 1e-300), 0.0)
        rho = rho * factor
    raw = np.eye(g)
    se = np.full((g, g), np.nan)
    np.fill_diagonal(se, 0.0)
    if pairs.size:
        raw[pairs[:, 0], pairs[:, 1]] = raw[pairs[:, 1], pairs[:, 0]] = rho
        se[pairs[:, 0], pairs[:, 1]] = se[pairs[:, 1], pairs[:, 0]] = fits.se
    if is_correlation_matrix(raw, min_eigenvalue):
        corr, projected = raw.copy(), False
    else:
        corr = nearest_correlation(raw, projection=projection, min_eigenvalue=min_eigenvalue)
        projected = True
    return CorrelationFit(corr, raw, se, fits, projected, signal)


@renamed_keywords(method="copula_fit")
def fit_correlation_matrix(
    marginals: Sequence,
    pair_tables,
    copula_fit: str = "table",
    n_pairs=None,
    shrink: str | None = None,
    **kwargs,
) -> np.ndarray:
    """Sigma (g, g) only; see ``fit_correlation`` for the details.

    Parameters
    ----------
    marginals, pair_tables, copula_fit, n_pairs, shrink
        As in ``fit_correlation``.
    **kwargs
        ``fit_correlation``'s other keywords.

    Returns
    -------
    numpy.ndarray (g, g)
        ``fit_correlation(...).correlation``.
    """
    return fit_correlation(marginals, pair_tables, copula_fit, n_pairs, shrink,
                           **kwargs).correlation
