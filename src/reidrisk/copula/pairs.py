"""Fit the copula correlation of attribute pairs from estimated pair tables, all pairs at once.

Paper 004, Section 4.2.3 (eq. 14 and the "suboptimal approach" after eq. 24), as read in
docs/design/core.md#pair-correlations: for each pair (j, j') choose rho so that the discretized
bivariate normal table (``bivariate_table``, fixed marginals F_j, F_j') reproduces the estimated
pair table Z_jj'.

Two criteria:

* ``"table"`` (default): maximize sum_cells Z log P(rho), i.e. minimize KL(Z || P(rho)). This is the
  maximum-likelihood (polychoric) correlation of the pair table given the marginals; it fits the
  sign and the strength together.
* ``"mi"``: the paper's criterion, match the mutual information (eq. 14, natural log) of P(rho) to
  that of Z. MI does not determine the sign of rho (and with asymmetric marginals MI(rho) differs
  from MI(-rho)), so the match is solved on both sides, rho = +r and rho = -r', and the solution
  whose table is closer to Z in KL divergence is kept. At independence both sides give rho = 0.

Both are solved for every pair at once: all cells of all pairs live in one flat array (no loop over
pairs or cells), each pair's solution is bracketed (for "table": the whole interval for 2 x 2
tables, whose likelihood is unimodal, else a 15-point grid scan), then safeguarded Newton steps
(bisection whenever a step leaves the bracket) converge to ~1e-10. Derivatives are analytic:
d Phi2 / d rho = phi2 (Plackett's identity). Fitted rho lies in [-RHO_MAX, RHO_MAX]; a table with
an empty cell that only |rho| -> 1 explains (common after norm-sub of LDP estimates) ends there.

Many pairs are fitted in consecutive batches of ``reidrisk.batches.BATCH_PAIRS`` by one batch
function (``fit_pair_batch``), mapped in this process or, inside a ``reidrisk.batches.pair_map``
block with more than ``DISTRIBUTE_PAIRS`` pairs, over a cluster's workers. A pair's fit reads only
its own cells, so the result does not depend on the batching.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.batches import map_pairs, split
from reidrisk.copula.bvn import (
    FIXED_RHO_MAX,
    _fixed_rho_cdf,
    _owen_cdf,
    bvn_pdf,
    bvn_pdf_drho,
)
from reidrisk.copula.marginals import (
    SUM_TOLERANCE,
    CopulaError,
    check_marginal,
    check_marginals,
    cumulative,
    thresholds,
)

RHO_MAX = 0.9999
"""Fitted correlations are confined to [-RHO_MAX, RHO_MAX] (|rho| = 1 makes Sigma singular)."""

METHODS = ("table", "mi")
_GRID = np.concatenate(([-RHO_MAX], np.linspace(-0.96, 0.96, 13), [RHO_MAX]))
_FLOOR = 1e-300
_SCORE_FLOOR = 1e-150
_TOL = 1e-10
_MAX_ITER = 60


@dataclass(frozen=True)
class PairFit:
    """Fitted correlation of one pair.

    Parameters
    ----------
    rho : float
        The copula correlation, in [-RHO_MAX, RHO_MAX].
    se : float
        Its standard error (nan when no number of records was given; inf where the information
        is not positive; see ``fit_pair_correlations``).
    kl : float
        KL(Z || P(rho)) in nats, Z the estimated table and P(rho) the fitted model table.
    mutual_information : float
        Mutual information of the estimated table (eq. 14, nats).
    copula_fit : {"table", "mi"}
        The criterion the fit used (formerly ``method``; module docstring).
    converged : bool
        Whether the solver met its tolerance.
    """

    rho: float
    se: float
    kl: float
    mutual_information: float
    copula_fit: str
    converged: bool

    method = renamed_attribute("copula_fit", "method")


@dataclass(frozen=True)
class PairFits:
    """Fitted correlations of P pairs, as arrays aligned with ``pairs``.

    Parameters
    ----------
    pairs : numpy.ndarray (P, 2) of int
        Attribute indices (j, j') of each pair.
    rho : numpy.ndarray (P,)
        The copula correlations, in [-RHO_MAX, RHO_MAX].
    se : numpy.ndarray (P,)
        Their standard errors (nan when no number of records was given), as in ``PairFit``.
    kl : numpy.ndarray (P,)
        KL(Z || P(rho)) of each pair, in nats.
    mutual_information : numpy.ndarray (P,)
        Mutual information of each estimated table (eq. 14, nats).
    copula_fit : {"table", "mi"}
        The criterion (formerly ``method``), one for all pairs.
    converged : numpy.ndarray (P,) of bool
        Whether each pair's solver met its tolerance.
    iterations : int
        Newton iterations of the solver, the largest over the batches (and, for ``"mi"``, over
        the two signs); 0 when there are no pairs.
    """

    pairs: np.ndarray
    rho: np.ndarray
    se: np.ndarray
    kl: np.ndarray
    mutual_information: np.ndarray
    copula_fit: str
    converged: np.ndarray
    iterations: int

    method = renamed_attribute("copula_fit", "method")


class PairBatch:
    """All cells of the discretized bivariate tables of many pairs, as flat arrays.

    Pair p has (f_a + 1)(f_b + 1) CDF corners, of which the (f_a - 1)(f_b - 1) interior ones
    depend on rho; its f_a f_b cells follow in row-major order (cell (a, b) of pair p at index
    ``cell_start[p] + a f_b + b``).

    Parameters
    ----------
    marginals : sequence of numpy.ndarray
        g probability vectors (declared category order), already checked
        (``check_marginals``).
    pairs : array_like of int, shape (P, 2)
        Attribute indices (a, b) of each pair into ``marginals``.
    """

    def __init__(self, marginals: Sequence[np.ndarray], pairs: np.ndarray) -> None:
        margs = [np.asarray(m, dtype=np.float64) for m in marginals]
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.marginals = margs
        self.pairs = pairs
        self.n_pairs = len(pairs)
        sizes = np.array([m.size for m in margs], dtype=np.int64)
        off = np.concatenate(([0], np.cumsum(sizes + 1)))[:-1]
        t_flat = np.concatenate([thresholds(m) for m in margs])
        c_flat = np.concatenate([cumulative(m)[0] for m in margs])
        p_flat = np.concatenate(margs)
        p_off = np.concatenate(([0], np.cumsum(sizes)))[:-1]
        ja, jb = pairs[:, 0], pairs[:, 1]
        fa, fb = sizes[ja], sizes[jb]
        self.f_a, self.f_b = fa, fb
        idx = np.arange(self.n_pairs)

        # Corners (r, c), r = 0..f_a, c = 0..f_b, row-major per pair.
        n_corner = (fa + 1) * (fb + 1)
        corner_start = np.concatenate(([0], np.cumsum(n_corner)))[:-1]
        c_pair = np.repeat(idx, n_corner)
        local = np.arange(n_corner.sum()) - corner_start[c_pair]
        width = fb[c_pair] + 1
        r, c = local // width, local % width
        ra, cb = fa[c_pair], fb[c_pair]
        static = np.zeros(local.size)
        right = (c == cb) & (r > 0)
        static[right] = c_flat[off[ja[c_pair[right]]] + r[right]]
        bottom = (r == ra) & (c > 0)
        static[bottom] = c_flat[off[jb[c_pair[bottom]]] + c[bottom]]
        interior = (r > 0) & (r < ra) & (c > 0) & (c < cb)
        self._static = static
        self._int_idx = np.flatnonzero(interior)
        self._int_pair = c_pair[interior]
        self._int_h = t_flat[off[ja[self._int_pair]] + r[interior]]
        self._int_k = t_flat[off[jb[self._int_pair]] + c[interior]]

        # Cells (a, b), a = 0..f_a-1, b = 0..f_b-1, row-major per pair.
        n_cell = fa * fb
        self.cell_start = np.concatenate(([0], np.cumsum(n_cell)))
        cell_pair = np.repeat(idx, n_cell)
        local = np.arange(n_cell.sum()) - self.cell_start[:-1][cell_pair]
        a, b = local // fb[cell_pair], local % fb[cell_pair]
        base = corner_start[cell_pair]
        w = fb[cell_pair] + 1
        self._i00 = base + a * w + b
        self._i01 = self._i00 + 1
        self._i10 = self._i00 + w
        self._i11 = self._i10 + 1
        self.cell_pair = cell_pair
        self.cell_a, self.cell_b = a, b
        # Product of the fixed marginals per cell (the independence table).
        self.indep = p_flat[p_off[ja[cell_pair]] + a] * p_flat[p_off[jb[cell_pair]] + b]

    # ---- evaluation ----------------------------------------------------------------------------
    def _gather(self, corner: np.ndarray) -> np.ndarray:
        return corner[self._i11] - corner[self._i01] - corner[self._i10] + corner[self._i00]

    def cells(self, rho: np.ndarray) -> np.ndarray:
        """Cell probabilities of every pair (flat), for per-pair correlations.

        Parameters
        ----------
        rho : numpy.ndarray, shape (P,)
            One correlation per pair, in [-1, 1].

        Returns
        -------
        numpy.ndarray
            Flat cell probabilities of every pair, in the batch's cell order.
        """
        corner = self._static.copy()
        corner[self._int_idx] = _owen_cdf(self._int_h, self._int_k, rho[self._int_pair])
        return np.maximum(self._gather(corner), 0.0)

    def cells_at(self, rho: float) -> np.ndarray:
        """``cells`` with one correlation for every pair (the bracketing scan).

        Computed by Drezner & Wesolowsky's integral for |rho| <= ``FIXED_RHO_MAX``
        (``bvn._fixed_rho_cdf``, several times cheaper per corner), else like ``cells``.

        Parameters
        ----------
        rho : float
            The correlation of every pair.

        Returns
        -------
        numpy.ndarray
            Flat cell probabilities of every pair, as ``cells``.
        """
        if abs(rho) > FIXED_RHO_MAX:
            return self.cells(np.full(self.n_pairs, float(rho)))
        if not hasattr(self, "_corner_terms"):
            h, k = self._int_h, self._int_k
            self._corner_terms = (ndtr(h), ndtr(k), 0.5 * (h * h + k * k), h * k)
        corner = self._static.copy()
        corner[self._int_idx] = _fixed_rho_cdf(*self._corner_terms, rho)
        return np.maximum(self._gather(corner), 0.0)

    def slope(self, rho: np.ndarray) -> np.ndarray:
        """dP/drho per cell (flat) without the cell probabilities.

        Parameters
        ----------
        rho : numpy.ndarray, shape (P,)
            One correlation per pair.

        Returns
        -------
        numpy.ndarray
            Flat dP/drho per cell.
        """
        corner = np.zeros(self._static.size)
        corner[self._int_idx] = bvn_pdf(self._int_h, self._int_k, rho[self._int_pair])
        return self._gather(corner)

    def subset(self, mask: np.ndarray) -> PairBatch:
        """The batch of the pairs selected by a boolean mask.

        Parameters
        ----------
        mask : numpy.ndarray of bool, shape (P,)
            The pairs to keep.

        Returns
        -------
        PairBatch
            The batch of the selected pairs.
        """
        return PairBatch(self.marginals, self.pairs[mask])

    def cell_mask(self, mask: np.ndarray) -> np.ndarray:
        """Per-cell boolean mask of the cells of the pairs selected by ``mask``.

        Parameters
        ----------
        mask : numpy.ndarray of bool, shape (P,)
            The selected pairs.

        Returns
        -------
        numpy.ndarray of bool
            One entry per cell: whether its pair is selected.
        """
        return mask[self.cell_pair]

    def derivatives(self, rho: np.ndarray, second: bool = True):
        """(P, dP/drho, d2P/drho2) per cell; derivatives from phi2 (Plackett's identity).

        Parameters
        ----------
        rho : numpy.ndarray, shape (P,)
            One correlation per pair.
        second : bool
            Also return the second derivative (else ``None`` in its place).

        Returns
        -------
        tuple of numpy.ndarray
            Flat cell probabilities, first and second derivatives (or None).
        """
        r = rho[self._int_pair]
        prob = self.cells(rho)
        pdf = bvn_pdf(self._int_h, self._int_k, r)
        corner = np.zeros(self._static.size)
        corner[self._int_idx] = pdf
        d1 = self._gather(corner)
        if not second:
            return prob, d1, None
        corner[self._int_idx] = bvn_pdf_drho(self._int_h, self._int_k, r, pdf=pdf)
        return prob, d1, self._gather(corner)

    def per_pair(self, values: np.ndarray) -> np.ndarray:
        """Sum a flat per-cell array within each pair -> (P,).

        Parameters
        ----------
        values : numpy.ndarray
            One number per cell (flat, in the batch's cell order).

        Returns
        -------
        numpy.ndarray, shape (P,)
            The sums per pair.
        """
        return np.bincount(self.cell_pair, weights=values, minlength=self.n_pairs)

    def tables(self, rho: np.ndarray) -> list[np.ndarray]:
        """The (f_a, f_b) model tables of all pairs.

        Parameters
        ----------
        rho : array_like, shape (P,)
            One correlation per pair.

        Returns
        -------
        list of numpy.ndarray
            One (f_a, f_b) table per pair.
        """
        flat = self.cells(np.asarray(rho, dtype=np.float64))
        return [
            flat[s:e].reshape(fa, fb)
            for s, e, fa, fb in zip(self.cell_start[:-1], self.cell_start[1:], self.f_a, self.f_b)
        ]


def _safe_log(x: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(x, _FLOOR))


def _mutual_information_flat(batch: PairBatch, target: np.ndarray) -> np.ndarray:
    """Eq. 14 (nats) of each estimated table with its own row and column sums."""
    starts = batch.cell_start[:-1]
    # Row sums: group by (pair, a); column sums: group by (pair, b).
    row_key = starts[batch.cell_pair] + batch.cell_a * batch.f_b[batch.cell_pair]
    row_sum = np.bincount(row_key, weights=target, minlength=batch.cell_pair.size)
    col_key = starts[batch.cell_pair] + batch.cell_b
    col_sum = np.bincount(col_key, weights=target, minlength=batch.cell_pair.size)
    row = row_sum[row_key]
    col = col_sum[col_key]
    pos = target > 0
    terms = np.zeros(target.size)
    terms[pos] = target[pos] * np.log(target[pos] / (row[pos] * col[pos]))
    return np.maximum(batch.per_pair(terms), 0.0)


def _model_mi(batch: PairBatch, prob, d1):
    """Mutual information of the model tables and its derivative in rho, per pair.

    d MI / d rho = sum_cells dP log(P / (p_a p_b)) (the "+ dP" term sums to 0)."""
    mask = batch.indep > 0
    log_ratio = np.where(mask, _safe_log(prob) - _safe_log(batch.indep), 0.0)
    mi = batch.per_pair(np.where(mask, prob * log_ratio, 0.0))
    return mi, batch.per_pair(d1 * log_ratio)


def _solve_table(batch: PairBatch, target: np.ndarray):
    """Maximize sum Z log P(rho) per pair: bracket, then safeguarded Newton.

    For a 2 x 2 table every cell is affine in Phi2(h, k; rho), which is increasing in rho, so the
    log-likelihood (concave in Phi2) is unimodal in rho and the whole interval is a valid bracket.
    Larger tables are bracketed by a grid scan first (guard against a second local maximum).
    """
    n = batch.n_pairs
    x = np.zeros(n)
    lo = np.full(n, -RHO_MAX)
    hi = np.full(n, RHO_MAX)
    wide = (batch.f_a > 2) | (batch.f_b > 2)
    if wide.any():
        sub = batch.subset(wide) if not wide.all() else batch
        sub_target = target[batch.cell_mask(wide)]
        loglik = np.stack([
            sub.per_pair(sub_target * _safe_log(sub.cells_at(r))) for r in _GRID
        ])
        best = np.argmax(loglik, axis=0)
        x[wide] = _GRID[best]
        lo[wide] = _GRID[np.maximum(best - 1, 0)]
        hi[wide] = _GRID[np.minimum(best + 1, _GRID.size - 1)]
    converged = np.zeros(n, dtype=bool)
    active = _Active(batch, target)
    it = 0
    for it in range(1, _MAX_ITER + 1):  # noqa: B007 - the count is returned
        sub, i, t = active.batch, active.idx, active.target
        prob, d1, d2 = sub.derivatives(x[i])
        # floored at 1e-150 (not _FLOOR) so that (d1 / prob)^2 stays finite in float64
        inv = 1.0 / np.maximum(prob, _SCORE_FLOOR)
        g1 = sub.per_pair(t * d1 * inv)
        g2 = sub.per_pair(t * (d2 * inv - (d1 * inv) ** 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(g2 < 0, -g1 / g2, np.nan)
        x[i], lo[i], hi[i], converged[i] = _safeguarded_step(x[i], lo[i], hi[i], g1 > 0, step,
                                                             converged[i])
        if converged.all():
            break
        active.update(converged)
    return x, converged, it


class _Active:
    """The pairs a solver still iterates, as a sub-batch of the full one (``batch``, its per-cell
    ``target`` or None, ``idx``: their indices in the full batch).

    Every pair's iteration reads only its own cells (elementwise work and per-pair sums), so
    leaving the converged pairs out changes no result, only the work: the sub-batch is rebuilt
    whenever at most half of its pairs are still iterating, so each step costs about the cells of
    the pairs that are still iterating (most pairs converge in a few Newton steps, a few need
    bisection) instead of all cells until the slowest pair is done.
    """

    def __init__(self, batch: PairBatch, target: np.ndarray | None) -> None:
        self.full, self.full_target = batch, target
        self.batch, self.target = batch, target
        self.idx = np.arange(batch.n_pairs)

    def update(self, converged: np.ndarray) -> None:
        live = ~converged[self.idx]
        if 2 * int(live.sum()) > live.size:
            return
        keep = ~converged
        self.idx = np.flatnonzero(keep)
        self.batch = self.full.subset(keep)
        if self.full_target is not None:
            self.target = self.full_target[self.full.cell_mask(keep)]


def _safeguarded_step(x, lo, hi, below, step, converged):
    """One bracketed Newton step per pair (bisection when the step leaves [lo, hi]).

    ``below``: the root/maximum lies above x. Converged pairs keep their x.
    """
    lo = np.where(below, x, lo)
    hi = np.where(below, hi, x)
    newton = x + step
    ok = np.isfinite(newton) & (newton >= lo) & (newton <= hi)
    x_new = np.where(ok, newton, 0.5 * (lo + hi))
    done = (ok & (np.abs(step) < _TOL)) | (hi - lo < _TOL)
    x_new = np.where(converged, x, x_new)
    return x_new, lo, hi, converged | done


def _solve_mi(batch: PairBatch, target_mi: np.ndarray, sign: float):
    """Solve MI(sign * r) = target_mi for r in [0, RHO_MAX] per pair (MI increasing in r)."""
    n = batch.n_pairs
    lo = np.zeros(n)
    hi = np.full(n, RHO_MAX)
    # Start from the continuous-Gaussian relation MI = -log(1 - rho^2) / 2. Discretizing cannot
    # raise MI (data processing), so this start lies at or below the solution.
    x = np.clip(np.sqrt(-np.expm1(-2.0 * target_mi)), 0.0, RHO_MAX)
    prob, _, _ = batch.derivatives(np.full(n, sign * RHO_MAX), second=False)
    mi_max, _ = _model_mi(batch, prob, np.zeros_like(prob))
    at_max = mi_max <= target_mi
    none = target_mi <= 0
    x = np.where(at_max, RHO_MAX, np.where(none, 0.0, x))
    converged = at_max | none
    active = _Active(batch, None)
    active.update(converged)
    it = 0
    for it in range(1, _MAX_ITER + 1):  # noqa: B007 - the count is returned
        if converged.all():
            break
        sub, i = active.batch, active.idx
        prob, d1, _ = sub.derivatives(sign * x[i], second=False)
        mi, dmi = _model_mi(sub, prob, d1)
        g = mi - target_mi[i]
        g1 = sign * dmi
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(g1 > 0, -g / g1, np.nan)
        x[i], lo[i], hi[i], converged[i] = _safeguarded_step(x[i], lo[i], hi[i], g < 0, step,
                                                             converged[i])
        if converged.all():
            break
        active.update(converged)
    return sign * x, converged, it


def _information(batch: PairBatch, target: np.ndarray, prob: np.ndarray, d1: np.ndarray,
                 d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected Fisher information per record of each pair at its fitted rho.

    Observed: ``-sum_cells Z (P'' / P - (P' / P)^2)``, the curvature of the objective
    ``sum Z log P(rho)``; expected: ``sum_cells P'^2 / P``. At ``|rho| = RHO_MAX`` a cell's
    probability (a difference of four CDF corners near 0.5) can round to 0 while its slope does
    not, so ``1 / P`` must not be taken at the log floor ``_FLOOR``: ``(P' / 1e-300)^2``
    overflows, and ``0 * inf`` is NaN for the empty cells. Two facts keep every term finite
    without hiding a NaN: a cell with ``Z = 0`` adds exactly nothing to the objective or to any of
    its derivatives, so the observed sum runs over the cells with ``Z > 0`` only; and ``P`` is
    floored at ``_SCORE_FLOOR`` (1e-150), the floor of the solver's own score and curvature
    (``_solve_table``), so that ``(P' / P)^2 <= P'^2 1e300`` stays below the float64 range for
    every slope ``|P'| < 1e4`` (the bivariate normal density at ``RHO_MAX`` is below 12).
    """
    inv = 1.0 / np.maximum(prob, _SCORE_FLOOR)
    seen = target > 0
    terms = np.zeros(target.size)
    r1 = d1[seen] * inv[seen]
    terms[seen] = target[seen] * (d2[seen] * inv[seen] - r1 * r1)
    return -batch.per_pair(terms), batch.per_pair(d1 * d1 * inv)


def _check_tables(batch: PairBatch, tables: Sequence) -> np.ndarray:
    arrays = [np.asarray(t, dtype=np.float64) for t in tables]
    if len(arrays) != batch.n_pairs:
        raise CopulaError(f"got {len(arrays)} pair tables for {batch.n_pairs} pairs")
    shapes = [a.shape for a in arrays]
    expected = list(zip(batch.f_a.tolist(), batch.f_b.tolist()))
    if shapes != expected:
        i = next(i for i, (s, e) in enumerate(zip(shapes, expected)) if s != e)
        ja, jb = batch.pairs[i]
        raise CopulaError(
            f"pair table ({ja}, {jb}) has shape {shapes[i]}, expected {expected[i]} from the "
            f"marginals of attributes {ja} and {jb}"
        )
    flat = [a.reshape(-1) for a in arrays]
    target = np.concatenate(flat) if flat else np.zeros(0)
    bad_value = ~np.isfinite(target) | (target < 0)
    if bad_value.any():
        p = batch.pairs[batch.cell_pair[np.flatnonzero(bad_value)[0]]]
        raise CopulaError(
            f"pair table ({p[0]}, {p[1]}) has negative or non-finite entries; project the "
            "estimate onto the simplex first (e.g. norm-sub)"
        )
    sums = batch.per_pair(target)
    bad = np.abs(sums - 1.0) > SUM_TOLERANCE
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        p = batch.pairs[i]
        raise CopulaError(
            f"pair table ({p[0]}, {p[1]}) sums to {sums[i]:.8g}, not 1; pass probabilities, not "
            "counts (divide by the pair's total)"
        )
    return target / sums[batch.cell_pair]


@renamed_keywords(method="copula_fit")
def fit_pair_correlations(
    marginals: Sequence,
    pairs,
    tables: Sequence,
    copula_fit: str = "table",
    n=None,
) -> PairFits:
    """Fit rho for every pair at once (paper 004 Section 4.2.3; see the module docstring).

    Parameters
    ----------
    marginals : sequence of array_like
        g probability vectors (declared category order).
    pairs : array_like of int, shape (P, 2)
        Distinct attribute indices of each pair.
    tables : sequence of array_like
        P estimated pair tables, table p of shape (f[pairs[p, 0]], f[pairs[p, 1]]), each
        summing to 1.
    copula_fit : {"table", "mi"}
        The criterion (formerly ``method``; module docstring).
    n : float or array_like of shape (P,), optional
        The number of records behind each table (for the standard errors; None: no errors).

    Returns
    -------
    PairFits
        The fitted correlations, aligned with ``pairs``.

    Notes
    -----
    The standard error is 1 / sqrt(n I(rho)), I the observed Fisher information per record of the
    multinomial likelihood sum Z log P(rho) at the fitted rho (analytic second derivative); where
    it is not positive (possible for ``"mi"``, whose rho is not the likelihood maximum) the expected
    information sum (dP/drho)^2 / P is used. For tables estimated from LDP reports, pass an
    effective n (the multinomial variance understates the randomization noise). Pairs whose table
    does not depend on rho (a marginal concentrated on one category) get rho = 0.
    """
    method = copula_fit
    if method not in METHODS:
        raise CopulaError(f"copula_fit must be one of {METHODS}, got {method!r}")
    margs = check_marginals(marginals)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    g, n_p = len(margs), len(pairs)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= g or np.any(pairs[:, 0] == pairs[:, 1])):
        raise CopulaError(f"pairs must be distinct attribute indices in 0..{g - 1}")
    tables = list(tables)
    if len(tables) != n_p:
        raise CopulaError(f"got {len(tables)} pair tables for {n_p} pairs")
    n_arr = None
    if n is not None:
        n_arr = np.broadcast_to(np.asarray(n, dtype=np.float64), (n_p,))
        if np.any(~np.isfinite(n_arr)) or np.any(n_arr <= 0):
            raise CopulaError("n (records per pair table) must be finite and > 0")
    if n_p == 0:
        empty = np.zeros(0)
        return PairFits(pairs, empty, empty, empty, empty, method, np.zeros(0, bool), 0)
    parts = split(n_p)
    fits = map_pairs(fit_pair_batch, (margs, method),
                     [(pairs[b], tables[b], None if n_arr is None else n_arr[b]) for b in parts],
                     n_p)
    if len(fits) == 1:
        return fits[0]
    def joined(name: str) -> np.ndarray:
        return np.concatenate([getattr(f, name) for f in fits])

    return PairFits(pairs, joined("rho"), joined("se"), joined("kl"),
                    joined("mutual_information"), method, joined("converged"),
                    max(f.iterations for f in fits))


def fit_pair_batch(shared: tuple, batch: tuple) -> PairFits:
    """The fits of one batch of pairs.

    ``fit_pair_correlations`` maps it over batches of ``reidrisk.batches.BATCH_PAIRS`` pairs, on
    this machine or on a cluster's workers. Every step of a pair reads only its own cells, so a
    pair's fit does not depend on the other pairs of its batch.

    Parameters
    ----------
    shared : tuple
        ``(marginals, copula_fit)``: the g checked probability vectors and the criterion.
    batch : tuple
        ``(pairs, tables, n)``: the batch's (P, 2) checked attribute indices, its P tables and its
        (P,) checked records per table (or None).

    Returns
    -------
    PairFits
        The batch's fits, aligned with its pairs.
    """
    margs, method = shared
    pairs, tables, n_arr = batch
    cells = PairBatch(margs, pairs)
    target = _check_tables(cells, tables)
    mi_hat = _mutual_information_flat(cells, target)
    neg_entropy = cells.per_pair(np.where(target > 0, target * _safe_log(target), 0.0))
    n_p = cells.n_pairs

    d1_0 = cells.slope(np.zeros(n_p))
    info0 = cells.per_pair(d1_0**2 / np.maximum(cells.indep, _FLOOR))
    degenerate = info0 < 1e-20

    if method == "table":
        rho, converged, iters = _solve_table(cells, target)
    else:
        pos, conv_p, it_p = _solve_mi(cells, mi_hat, +1.0)
        neg, conv_n, it_n = _solve_mi(cells, mi_hat, -1.0)
        kl_pos = neg_entropy - cells.per_pair(target * _safe_log(cells.cells(pos)))
        kl_neg = neg_entropy - cells.per_pair(target * _safe_log(cells.cells(neg)))
        take_neg = kl_neg < kl_pos
        rho = np.where(take_neg, neg, pos)
        converged = np.where(take_neg, conv_n, conv_p)
        iters = max(it_p, it_n)
    rho = np.where(degenerate, 0.0, rho)
    converged = converged | degenerate

    prob, d1, d2 = cells.derivatives(rho)
    kl = np.maximum(neg_entropy - cells.per_pair(target * _safe_log(prob)), 0.0)
    if n_arr is None:
        se = np.full(n_p, np.nan)
    else:
        observed, expected = _information(cells, target, prob, d1, d2)
        info = np.where(observed > 0, observed, expected)
        with np.errstate(divide="ignore"):
            se = np.where(info > 0, 1.0 / np.sqrt(n_arr * info), np.inf)
        se = np.where(degenerate, np.inf, se)
    return PairFits(pairs, rho, se, kl, mi_hat, method, converged, int(iters))


@renamed_keywords(method="copula_fit")
def fit_pair_correlation(table, marg_j, marg_j2, copula_fit: str = "table", n=None) -> PairFit:
    """Fit rho for one pair table given the marginals of its two attributes.

    ``fit_pair_correlations`` does many pairs at once; this is the same fit for one.

    Parameters
    ----------
    table : array_like, shape (f_j, f_j')
        The estimated pair table, summing to 1.
    marg_j : array_like
        The probability vector of attribute j (the table's rows).
    marg_j2 : array_like
        The probability vector of attribute j' (the table's columns).
    copula_fit : {"table", "mi"}
        The criterion (formerly ``method``; module docstring).
    n : float, optional
        The number of records behind the table (for the standard error).

    Returns
    -------
    PairFit
        The pair's fitted correlation.
    """
    pa, pb = check_marginal(marg_j, "j"), check_marginal(marg_j2, "j'")
    fits = fit_pair_correlations([pa, pb], [[0, 1]], [table], copula_fit=copula_fit, n=n)
    return PairFit(
        rho=float(fits.rho[0]), se=float(fits.se[0]), kl=float(fits.kl[0]),
        mutual_information=float(fits.mutual_information[0]), copula_fit=copula_fit,
        converged=bool(fits.converged[0]),
    )
