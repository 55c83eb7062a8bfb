"""The Gaussian copula over categorical marginals (paper 004 Section 4.2.3-4.2.5, eq. 15-24,
Algorithm 2; docs/design/core.md#gaussian-copula; docs/design/uniqueness.md#model).

A record is generated as x ~ N(0, Sigma), value_j = F_j^{-1}(Phi(x_j)), i.e. the category a with
t_j[a] <= x_j < t_j[a+1] on the normal scale (``thresholds``), so Phi is never evaluated. A cell of
c attributes therefore has the probability of a c-dimensional normal rectangle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.copula.bvn import bivariate_table
from reidrisk.copula.marginals import CopulaError, check_marginals, thresholds
from reidrisk.copula.matrix import SHRINKAGE, CorrelationFit, fit_correlation
from reidrisk.copula.mvn import RectangleProbability, rectangle_probability
from reidrisk.copula.nearest import PROJECTIONS, is_correlation_matrix
from reidrisk.copula.pairs import METHODS
from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import MISSING

FORMAT = "reidrisk.copula.GaussianCopula"
FORMAT_VERSION = 1
_CHUNK_ELEMENTS = 2**23
_EXACT_TABLE_LIMIT = 2**20


@dataclass(frozen=True)
class MonteCarloProbability:
    """Sampling estimate of cell probabilities.

    Parameters
    ----------
    prob : numpy.ndarray (m,)
        The estimated probabilities.
    se : numpy.ndarray (m,)
        Their standard errors.
    n_samples : int
        Records sampled per estimate.
    """

    prob: np.ndarray
    se: np.ndarray
    n_samples: int


class GaussianCopula:
    """Gaussian copula over g categorical attributes (scikit-learn conventions).

    Design: docs/design/core.md#gaussian-copula.

    Parameters
    ----------
    copula_fit : {"table", "mi"}
        (formerly ``method``) ``"table"``: maximum-likelihood pair fit (default); ``"mi"``: the
        paper's mutual-information match, sign from the table.
    shrink : {None, "eb"}
        Empirical-Bayes shrinkage of the pair correlations (needs ``pair_n`` in ``fit``).
    projection : {"dual", "higham", "clip"}
        ``nearest_correlation`` method, used when the assembled matrix is not positive definite.
    min_eigenvalue : float
        Smallest eigenvalue of the fitted Sigma.
    allow_missing_pairs : bool
        Treat absent pair tables as independent.

    Learned: ``marginals_`` (list of (f_j,) arrays), ``correlation_`` (g, g), ``thresholds_`` (list
    of (f_j + 1,) normal-scale cut points with -inf/+inf ends), ``fit_result_`` (CorrelationFit,
    None when built by ``from_parameters``/``from_dict``).
    """

    @renamed_keywords(method="copula_fit")
    def __init__(
        self,
        copula_fit: str = "table",
        shrink: str | None = None,
        projection: str = "dual",
        min_eigenvalue: float = 1e-6,
        allow_missing_pairs: bool = False,
    ) -> None:
        if copula_fit not in METHODS:
            raise CopulaError(f"copula_fit must be one of {METHODS}, got {copula_fit!r}")
        if shrink not in SHRINKAGE:
            raise CopulaError(f"shrink must be one of {SHRINKAGE}, got {shrink!r}")
        if projection not in PROJECTIONS:
            raise CopulaError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        self.copula_fit = copula_fit
        self.shrink = shrink
        self.projection = projection
        self.min_eigenvalue = float(min_eigenvalue)
        self.allow_missing_pairs = bool(allow_missing_pairs)

    method = renamed_attribute("copula_fit", "method")

    def __repr__(self) -> str:
        g = f", g={len(self.marginals_)}" if hasattr(self, "marginals_") else ""
        return f"GaussianCopula(copula_fit={self.copula_fit!r}, shrink={self.shrink!r}{g})"

    # ---- fitting -------------------------------------------------------------------------------
    def fit(self, marginals: Sequence, pair_tables, pair_n=None) -> GaussianCopula:
        """Fit from g estimated marginals (declared category order) and pair tables.

        Parameters
        ----------
        marginals : sequence of array_like
            The g marginal distributions.
        pair_tables : mapping
            (j, j') -> (f_j, f_j') probability table (``PairEstimates`` works).
        pair_n : None, float, mapping or numpy.ndarray (g, g), optional
            Records behind each pair table (as ``n_pairs`` of ``fit_correlation``).

        Returns
        -------
        GaussianCopula
            This copula, fitted (``marginals_``, ``correlation_``, ``fit_result_``).
        """
        result: CorrelationFit = fit_correlation(
            marginals, pair_tables, copula_fit=self.copula_fit, n_pairs=pair_n, shrink=self.shrink,
            projection=self.projection, min_eigenvalue=self.min_eigenvalue,
            allow_missing_pairs=self.allow_missing_pairs,
        )
        self._set(check_marginals(marginals), result.correlation)
        self.fit_result_: CorrelationFit | None = result
        return self

    @classmethod
    def from_parameters(cls, marginals: Sequence, correlation, **params) -> GaussianCopula:
        """A copula with given marginals and correlation matrix (must be positive definite).

        Parameters
        ----------
        marginals : sequence of array_like
            The g marginal distributions.
        correlation : array_like (g, g)
            A symmetric positive-definite matrix with unit diagonal.
        **params
            The constructor's parameters.

        Returns
        -------
        GaussianCopula
            The copula, ready to sample and to compute probabilities.
        """
        model = cls(**params)
        model._set(check_marginals(marginals), correlation)
        model.fit_result_ = None
        return model

    def _set(self, margs: list[np.ndarray], corr) -> None:
        corr = np.array(corr, dtype=np.float64)
        g = len(margs)
        if corr.shape != (g, g):
            raise CopulaError(f"correlation must be ({g}, {g}) for {g} marginals, got {corr.shape}")
        if not is_correlation_matrix(corr, 0.0, atol=1e-10):
            raise CopulaError(
                "correlation must be a symmetric positive-definite matrix with unit diagonal; "
                "project it with reidrisk.copula.nearest_correlation"
            )
        self.marginals_ = margs
        self.correlation_ = 0.5 * (corr + corr.T)
        self.thresholds_ = [thresholds(p) for p in margs]
        self._chol = np.linalg.cholesky(self.correlation_)

    def _check_fitted(self) -> None:
        if not hasattr(self, "correlation_"):
            raise CopulaError("this GaussianCopula is not fitted; call fit(...) first")

    @property
    def sizes_(self) -> np.ndarray:
        """Domain sizes f_j, shape (g,)."""
        self._check_fitted()
        return np.array([p.size for p in self.marginals_], dtype=np.int64)

    def _cols(self, cols) -> np.ndarray:
        g = len(self.marginals_)
        if cols is None:
            return np.arange(g)
        arr = np.atleast_1d(np.asarray(cols))
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise CopulaError(f"cols must be a non-empty list of attribute indices, got {cols!r}")
        if arr.min() < 0 or arr.max() >= g or np.unique(arr).size != arr.size:
            raise CopulaError(
                f"cols must be distinct attribute indices in 0..{g - 1}, got {arr.tolist()}"
            )
        return arr.astype(np.int64)

    # ---- generation (paper 004 Section 4.2.4) -------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator | int | None = None, cols=None) -> np.ndarray:
        """n synthetic complete records: int32 codes (n, g), or (n, len(cols)) for chosen columns
        (drawn from the sub-copula of those columns, the same distribution as their marginal).

        Parameters
        ----------
        n : int
            Records.
        rng : numpy.random.Generator or int, optional
            Source of the draws (``reidrisk.mechanisms.as_generator``).
        cols : sequence of int, optional
            The attributes drawn (default: all).

        Returns
        -------
        numpy.ndarray (n, len(cols)) int32
            The records' codes.
        """
        self._check_fitted()
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise CopulaError(f"n must be a non-negative integer, got {n!r}")
        n = int(n)
        gen = as_generator(rng)
        cols = self._cols(cols)
        sub = self.correlation_[np.ix_(cols, cols)]
        chol = self._chol if cols.size == len(self.marginals_) else np.linalg.cholesky(sub)
        sizes = self.sizes_[cols]
        out = np.empty((n, cols.size), dtype=np.int32)
        groups = [(f, np.flatnonzero(sizes == f)) for f in np.unique(sizes)]
        inner = {f: np.stack([self.thresholds_[cols[i]][1:-1] for i in idx]) for f, idx in groups}
        chunk = max(1, _CHUNK_ELEMENTS // (4 * cols.size))
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            x = gen.standard_normal((m, cols.size)) @ chol.T
            for f, idx in groups:
                # Category = number of interior thresholds <= x (t[a] <= x < t[a+1] -> a).
                xg = x[:, idx]
                codes = (xg >= inner[f][:, 0]).astype(np.int32)
                for k in range(1, f - 1):
                    codes += xg >= inner[f][:, k]
                out[s:s + m, idx] = codes
        return out

    # ---- cell probabilities ------------------------------------------------------------------
    def _bounds(self, cells, cols, allow_missing: bool):
        cols = self._cols(cols)
        cells = np.asarray(cells)
        if cells.ndim == 1:
            cells = cells[None, :]
        if cells.ndim != 2 or cells.shape[1] != cols.size:
            raise CopulaError(
                f"cells must have shape (m, {cols.size}) to match cols {cols.tolist()}, "
                f"got {cells.shape}"
            )
        if not np.issubdtype(cells.dtype, np.integer):
            raise CopulaError(f"cells must hold integer category codes, got dtype {cells.dtype}")
        sizes = self.sizes_[cols]
        missing = cells == MISSING
        bad = ((cells < 0) & ~(missing & allow_missing)) | (cells >= sizes[None, :])
        if bad.any():
            r, c = np.argwhere(bad)[0]
            hint = "" if allow_missing else " (MISSING is accepted only by cell_probability)"
            raise CopulaError(
                f"cell {r} has code {cells[r, c]} for attribute {cols[c]} with {sizes[c]} "
                f"categories; codes must be in 0..{sizes[c] - 1}{hint}"
            )
        lo = np.empty(cells.shape)
        up = np.empty(cells.shape)
        safe = np.where(missing, 0, cells)
        for i, j in enumerate(cols):
            t = self.thresholds_[j]
            lo[:, i] = np.where(missing[:, i], -np.inf, t[safe[:, i]])
            up[:, i] = np.where(missing[:, i], np.inf, t[safe[:, i] + 1])
        return cols, cells, lo, up

    def cell_probability_estimate(
        self, cells, cols=None, rtol: float = 1e-3, max_points: int = 2**15,
        rng: np.random.Generator | int | None = 0,
    ) -> RectangleProbability:
        """Probability of each cell (m, c) under the copula with its numerical error.

        A cell's probability is the normal rectangle prod_i [t_i[v_i], t_i[v_i + 1]) under the
        sub-correlation of ``cols`` (``rectangle_probability``): exact for c <= 2, randomized QMC
        to relative standard error ``rtol`` (at most ``max_points`` points) for c >= 3. A code
        ``MISSING`` leaves that attribute unconstrained (the probability of the other values).
        Cost for c >= 3: about m c^2 n_points (measured: docs/results/exact_table_cost.md).

        Parameters
        ----------
        cells : array_like (m, c)
            Codes of the cells, one row each (``MISSING`` leaves an attribute free).
        cols : sequence of int, optional
            The c attributes of the columns of ``cells`` (default: all, in order).
        rtol : float
            Target relative standard error of the QMC estimate (c >= 3).
        max_points : int
            Most QMC points per cell.
        rng : numpy.random.Generator or int, optional
            Scrambling of the QMC points (seeded by default: the same call gives the same
            numbers).

        Returns
        -------
        RectangleProbability
            The probabilities and their standard errors.
        """
        self._check_fitted()
        cols, cells, lo, up = self._bounds(cells, cols, allow_missing=True)
        if cols.size == 1:
            p = self.marginals_[cols[0]]
            prob = np.where(cells[:, 0] == MISSING, 1.0, p[np.maximum(cells[:, 0], 0)])
            return RectangleProbability(prob, np.zeros(prob.size), 0)
        return rectangle_probability(
            lo, up, self.correlation_[np.ix_(cols, cols)], rtol=rtol, max_points=max_points, rng=rng
        )

    def cell_probability(
        self, cells, cols=None, rtol: float = 1e-3, max_points: int = 2**15,
        rng: np.random.Generator | int | None = 0,
    ) -> np.ndarray:
        """Probabilities (m,) of cells (m, c) of attributes ``cols`` (see
        ``cell_probability_estimate`` for the method and its error).

        Parameters
        ----------
        cells, cols, rtol, max_points, rng
            As in ``cell_probability_estimate``.

        Returns
        -------
        numpy.ndarray (m,)
            The probabilities.
        """
        return self.cell_probability_estimate(
            cells, cols, rtol=rtol, max_points=max_points, rng=rng
        ).prob

    def cell_probability_mc(
        self,
        cells,
        cols=None,
        n_samples: int = 100_000,
        rng: np.random.Generator | int | None = None,
        qmc: bool = False,
        n_replicates: int = 8,
    ) -> MonteCarloProbability:
        """Sampling estimate of cell probabilities for any number of attributes (the paper's way).

        One sample of ``n_samples`` records of ``cols`` is drawn; sampled rows and query cells are
        encoded to one integer key each and matched by sorting. se = sqrt(p (1 - p) / n_samples).
        ``qmc=True`` draws ``n_replicates`` scrambled Sobol' sets instead and takes se from their
        spread.

        Parameters
        ----------
        cells : array_like (m, c)
            Codes of the cells, one row each.
        cols : sequence of int, optional
            The c attributes of the columns of ``cells`` (default: all, in order).
        n_samples : int
            Records sampled.
        rng : numpy.random.Generator or int, optional
            Source of the draws.
        qmc : bool
            Scrambled Sobol' sets instead of one random sample.
        n_replicates : int
            Sobol' sets (with ``qmc=True``).

        Returns
        -------
        MonteCarloProbability
            The estimates and their standard errors.
        """
        self._check_fitted()
        cols, cells, _, _ = self._bounds(cells, cols, allow_missing=False)
        n_samples = int(n_samples)
        if n_samples < 1:
            raise CopulaError(f"n_samples must be >= 1, got {n_samples}")
        gen = as_generator(rng)
        if not qmc:
            rows = self.sample(n_samples, gen, cols=cols)
            prob = self._match(rows, cells, cols)
            se = np.sqrt(prob * (1.0 - prob) / n_samples)
            return MonteCarloProbability(prob, se, n_samples)
        from scipy.special import ndtri
        from scipy.stats import qmc as _qmc

        if n_replicates < 2:
            raise CopulaError("qmc needs n_replicates >= 2")
        per = 1 << int(np.ceil(np.log2(max(n_samples // n_replicates, 2))))
        chol = np.linalg.cholesky(self.correlation_[np.ix_(cols, cols)])
        reps = []
        for _ in range(n_replicates):
            u = _qmc.Sobol(d=cols.size, scramble=True, seed=gen).random(per)
            x = ndtri(np.clip(u, 1e-300, 1 - 1e-16)) @ chol.T
            reps.append(self._match(self._discretize(x, cols), cells, cols))
        stacked = np.stack(reps)
        return MonteCarloProbability(
            stacked.mean(axis=0), stacked.std(axis=0, ddof=1) / np.sqrt(n_replicates),
            per * n_replicates
        )

    def _discretize(self, x: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, dtype=np.int32)
        for i, j in enumerate(cols):
            out[:, i] = np.searchsorted(self.thresholds_[j][1:-1], x[:, i], side="right")
        return out

    def _match(self, rows: np.ndarray, cells: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Fraction of sampled rows equal to each query cell."""
        sizes = self.sizes_[cols]
        if float(np.prod(sizes.astype(np.float64))) < 2.0**62:
            dims = tuple(int(f) for f in sizes)
            keys = np.asarray(np.ravel_multi_index(tuple(rows.T), dims))
            query = np.asarray(np.ravel_multi_index(tuple(cells.T.astype(np.int64)), dims))
        else:
            _, inv = np.unique(np.vstack([rows, cells]), axis=0, return_inverse=True)
            inv = inv.ravel()
            keys, query = inv[: len(rows)], inv[len(rows):]
        uniq, counts = np.unique(keys, return_counts=True)  # rows is non-empty
        pos = np.minimum(np.searchsorted(uniq, query), uniq.size - 1)
        return np.where(uniq[pos] == query, counts[pos], 0) / len(rows)

    # ---- contingency tables (paper 004 Section 4.2.5) ---------------------------------------
    def contingency_table(
        self, cols, n_samples: int | None = None, rng: np.random.Generator | int | None = None,
        rtol: float = 1e-3,
    ) -> np.ndarray:
        """Normalized contingency table of ``cols``, shape (f_c1, ..., f_cc), summing to 1.

        ``n_samples=None``: every cell's rectangle probability (exact for c <= 2, randomized QMC
        for c >= 3, then renormalized); otherwise the paper's way, the cell frequencies among
        ``n_samples`` generated records.

        Parameters
        ----------
        cols : sequence of int
            The attributes of the table.
        n_samples : int, optional
            Records generated to count the table from (default: computed, not sampled).
        rng : numpy.random.Generator or int, optional
            Source of the draws (sampling or QMC).
        rtol : float
            Target relative standard error of each cell's QMC estimate (three or more columns).

        Returns
        -------
        numpy.ndarray (f_c1, ..., f_cc)
            The table.
        """
        self._check_fitted()
        cols = self._cols(cols)
        dims = tuple(int(f) for f in self.sizes_[cols])
        if n_samples is not None:
            rows = self.sample(int(n_samples), rng, cols=cols)
            keys = np.ravel_multi_index(tuple(rows.T), dims)
            counts = np.bincount(keys, minlength=int(np.prod(dims)))
            return (counts / max(len(rows), 1)).reshape(dims)
        if cols.size == 2:
            a, b = (int(c) for c in cols)
            return bivariate_table(self.correlation_[a, b], self.marginals_[a], self.marginals_[b])
        size = int(np.prod(dims))
        if size > _EXACT_TABLE_LIMIT:
            raise CopulaError(
                f"the table of cols {cols.tolist()} has {size} cells; pass n_samples to sample it"
            )
        cells = np.stack(np.unravel_index(np.arange(size), dims), axis=1)
        prob = self.cell_probability(cells, cols, rtol=rtol, rng=0 if rng is None else rng)
        return (prob / prob.sum()).reshape(dims)

    # ---- persistence -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain-JSON representation (lists, floats, strings); no pickle.

        Returns
        -------
        dict
            Lists, numbers and strings only (``from_dict`` reads it).
        """
        self._check_fitted()
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "params": {
                "copula_fit": self.copula_fit, "shrink": self.shrink, "projection": self.projection,
                "min_eigenvalue": self.min_eigenvalue,
                "allow_missing_pairs": self.allow_missing_pairs,
            },
            "marginals": [p.tolist() for p in self.marginals_],
            "correlation": self.correlation_.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> GaussianCopula:
        """Inverse of ``to_dict``.

        Parameters
        ----------
        d : dict
            What ``to_dict`` wrote.

        Returns
        -------
        GaussianCopula
            The same copula.

        Raises
        ------
        CopulaError
            For a format version this reidrisk does not read.
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise CopulaError(f"not a serialized GaussianCopula (expected format {FORMAT!r})")
        if d.get("version") != FORMAT_VERSION:
            raise CopulaError(
                f"GaussianCopula format version {d.get('version')!r} is not supported "
                f"(this reidrisk reads version {FORMAT_VERSION})"
            )
        params = d.get("params", {})
        known = {"copula_fit", "shrink", "projection", "min_eigenvalue", "allow_missing_pairs"}
        if isinstance(params, dict) and "method" in params and "copula_fit" not in params:
            params = dict(params)  # written before the rename: the pair fit was "method"
            params["copula_fit"] = params.pop("method")
        if not isinstance(params, dict) or set(params) - known:
            raise CopulaError(f"unknown GaussianCopula params {sorted(set(params) - known)}")
        return cls.from_parameters(d["marginals"], d["correlation"], **params)
