"""Numerics for c-way tables through product channels (paper 004 eq. 5-13 generalised to c axes).

The randomizations of different attributes are independent given the true values, so the channel of
c attributes is the Kronecker product M_1 (x) ... (x) M_c of the single channels. Applied to a table
T (f_1, ..., f_c) it is the sequence of mode products ``T x_1 M_1 ... x_c M_c`` (``apply``): O(F sum f_j)
for F = prod f_j cells, never forming the Kronecker matrix. On top of that:

* ``support_tensor``  -- the c-way support counts W of the reports complete on c attributes;
* ``invert``          -- W x_j M_j^{-1} (the unbiased inversion, paper 004 eq. 6 on every axis);
* ``em``              -- the count-based EM of eq. 8-11 (corrected as in
  docs/design/core.md#count-em-correction) on the
  product channel;
* ``exact_em``        -- the report-level maximum-likelihood EM on c axes: each report's likelihood
  is the product of its per-attribute likelihoods ``L_j[i, x_j]`` (``Mechanism.log_prob``).

Both EMs run on the package's one engine (``reidrisk.estimation.em``: its iteration, SQUAREM
acceleration and stopping rules ``"noise"``, ``("noise", threshold)``, ``"discrepancy"``, a float
tolerance or ``None``); this module only builds the product channel and the grouped report
likelihood of c attributes, and returns the engine's ``EMResult`` with the table as probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from reidrisk.estimation import em as engine
from reidrisk.estimation.em import DEFAULT_MAX_ITER, EMResult

_CHUNK_ELEMS = 1 << 22


def check_stop(stop):
    """Validate a stopping rule (``reidrisk.estimation.em.parse_stop``).

    Parameters
    ----------
    stop : str, tuple, float or None
        The rule.

    Returns
    -------
    str, tuple, float or None
        ``stop``, unchanged.
    """
    engine.parse_stop(stop)
    return stop


def apply(T: np.ndarray, mats: Sequence[np.ndarray], transpose: bool = False) -> np.ndarray:
    """Mode products ``T x_1 A_1 ... x_c A_c`` with ``A_j = mats[j]`` (or its transpose):
    ``out[v_1..v_c] = sum_x prod_j A_j[v_j, x_j] T[x_1..x_c]``.

    Parameters
    ----------
    T : numpy.ndarray (f_1, ..., f_c)
        The table (a leading batch axis is not supported).
    mats : sequence of numpy.ndarray (f_j, f_j)
        One matrix per axis.
    transpose : bool
        Apply the transposes ``A_j^T`` instead.

    Returns
    -------
    numpy.ndarray (f_1, ..., f_c)
        The product.
    """
    out = np.asarray(T, dtype=np.float64)
    for ax, M in enumerate(mats):
        A = M.T if transpose else M
        out = np.moveaxis(np.tensordot(A, out, axes=([1], [ax])), 0, ax)
    return out


def support_tensor(supports: Sequence, rows: np.ndarray | None = None) -> np.ndarray:
    """c-way support counts ``W[v_1..v_c] = sum_i prod_j B_j[i, v_j]`` over the given rows.

    Row-wise Khatri-Rao products in row chunks of bounded memory, then one matrix product with the
    last axis; exact in float64.

    Parameters
    ----------
    supports : sequence of numpy.ndarray or scipy.sparse matrix
        c membership matrices (n, f_j).
    rows : numpy.ndarray, optional
        Boolean (n,) or an index array (default: all rows).

    Returns
    -------
    numpy.ndarray (f_1, ..., f_c) float64
        The counts.
    """
    idx = np.arange(supports[0].shape[0]) if rows is None else np.asarray(rows)
    if idx.dtype == bool:
        idx = np.flatnonzero(idx)
    sizes = [int(B.shape[1]) for B in supports]
    W = np.zeros(int(np.prod(sizes)), dtype=np.float64)
    if idx.size == 0:
        return W.reshape(sizes)
    inner = int(np.prod(sizes[:-1])) if len(sizes) > 1 else 1
    step = max(1, _CHUNK_ELEMS // max(inner, 1))

    def dense(B, sel):
        part = B[sel]
        return np.asarray(part.toarray() if sp.issparse(part) else part, dtype=np.float64)

    if len(sizes) == 1:
        for s in range(0, idx.size, step):
            W += dense(supports[0], idx[s:s + step]).sum(axis=0)
        return W.reshape(sizes)
    acc = np.zeros((inner, sizes[-1]))
    for s in range(0, idx.size, step):
        sel = idx[s:s + step]
        K = dense(supports[0], sel)
        for B in supports[1:-1]:
            D = dense(B, sel)
            K = (K[:, :, None] * D[:, None, :]).reshape(K.shape[0], -1)
        acc += K.T @ dense(supports[-1], sel)
    return acc.reshape(sizes)


def channel(p: float, q: float, f: int) -> np.ndarray:
    """Support matrix of a pure oracle: ``p`` on the diagonal, ``q`` elsewhere (f, f).

    Parameters
    ----------
    p, q : float
        P(the true value is supported) and P(a given other value is).
    f : int
        Domain size.

    Returns
    -------
    numpy.ndarray (f, f)
        The matrix.
    """
    M = np.full((f, f), float(q))
    np.fill_diagonal(M, float(p))
    return M


def invert(W: np.ndarray, n: float, mats: Sequence[np.ndarray]) -> np.ndarray:
    """Unbiased inversion ``(W x_j M_j^{-1}) / n``: a probability table that may hold negatives.

    Parameters
    ----------
    W : numpy.ndarray (f_1, ..., f_c)
        Support counts.
    n : float
        Reports behind them.
    mats : sequence of numpy.ndarray (f_j, f_j)
        The per-attribute support matrices.

    Returns
    -------
    numpy.ndarray (f_1, ..., f_c)
        The inverted table.
    """
    invs = [np.linalg.inv(np.asarray(M, dtype=np.float64)) for M in mats]
    return apply(W, invs) / float(n)


def project_simplex(T: np.ndarray) -> np.ndarray:
    """Euclidean projection of a table onto the probability simplex (same shape, sums to 1).

    The sort-based algorithm: the projection is ``max(t - tau, 0)`` with tau the unique shift that
    makes it sum to 1 (the norm-sub fixed point of Wang et al. 2020).

    Parameters
    ----------
    T : numpy.ndarray
        A table of any shape.

    Returns
    -------
    numpy.ndarray
        The projection, of the same shape.
    """
    t = np.asarray(T, dtype=np.float64).ravel()
    u = np.sort(t)[::-1]
    css = np.cumsum(u) - 1.0
    ind = np.arange(1, t.size + 1)
    cond = u - css / ind > 0
    r = ind[cond][-1]
    tau = css[cond][-1] / r
    return np.maximum(t - tau, 0.0).reshape(np.shape(T))


class _ProductChannel:
    """The product channel ``M_1 (x) ... (x) M_c`` on one table, as a batch of one (the channel
    protocol of ``reidrisk.estimation.em.PoissonCounts``)."""

    def __init__(self, mats):
        self.mats = mats
        shape = [M.shape[1] for M in mats]
        col = np.ones(shape)
        for ax, M in enumerate(mats):
            col = col * M.sum(axis=0).reshape([-1 if a == ax else 1 for a in range(len(shape))])
        self.colsum = col[None]

    def forward(self, T):
        return apply(T[0], self.mats)[None]

    def adjoint(self, D):
        return apply(D[0], self.mats, transpose=True)[None]

    def take(self, keep):
        return self


def _as_probabilities(fit: EMResult) -> EMResult:
    r = fit[0]
    return EMResult(r.estimate / r.estimate.sum(), r.iterations, r.converged)


def em(W: np.ndarray, n: float, mats: Sequence[np.ndarray], *, stop="noise",
       max_iter: int = DEFAULT_MAX_ITER, init: np.ndarray | None = None) -> EMResult:
    """Count-based EM on the product channel (paper 004 eq. 8-11 on c axes, corrected).

    The engine iterates ``T <- T * (D x_j M_j^T) / prod_j colsum(M_j)`` with
    ``D = W / (n T x_j M_j)`` (Poisson/Richardson-Lucy EM; for c = 1 this is
    ``estimation.frequency.em_counts``, for c = 2 ``estimation.pairs.em_tables``).

    Parameters
    ----------
    W : numpy.ndarray (f_1, ..., f_c)
        Support counts of the ``n`` reports complete on these attributes.
    n : float
        Those reports.
    mats : sequence of numpy.ndarray (f_j, f_j)
        The per-attribute support matrices ``M_j[v, x] = P(v supported | x)``.
    stop : str, tuple, float or None
        The engine's stopping rule (``reidrisk.estimation.em.parse_stop``).
    max_iter : int
        Most EM steps.
    init : numpy.ndarray (f_1, ..., f_c), optional
        Starting probabilities (default uniform).

    Returns
    -------
    EMResult
        ``estimate``: the table of probabilities; its iterations and whether it converged.
    """
    W = np.asarray(W, dtype=np.float64)
    n = float(n)
    if not n > 0:
        raise ValueError("EM needs n > 0 reports")
    mats = [np.asarray(M, dtype=np.float64) for M in mats]
    T0 = engine.positive_start(init, n, (1,) + W.shape)
    problem = engine.PoissonCounts(W[None], _ProductChannel(mats), max(W.size - 1, 1))
    return _as_probabilities(engine.run(problem, T0, stop=stop, max_iter=max_iter, n_reports=[n]))


def group_rows(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a likelihood matrix.

    Parameters
    ----------
    L : numpy.ndarray (n, f)
        One likelihood row per report.

    Returns
    -------
    unique : numpy.ndarray (U, f)
        The distinct rows.
    inverse : numpy.ndarray (n,)
        Each report's row in ``unique``.
    """
    uniq, inv = np.unique(np.asarray(L, dtype=np.float64), axis=0, return_inverse=True)
    return uniq, np.asarray(inv).ravel()


def likelihoods(log_prob: np.ndarray) -> np.ndarray:
    """Per-report likelihood rows scaled by their maximum: ``exp(lp - max_x lp)`` (n, f).

    The EM posterior is invariant to a per-report factor, so the scaling changes nothing but range.

    Parameters
    ----------
    log_prob : numpy.ndarray (n, f)
        ``log P(y_i | x)`` (``Mechanism.log_prob``).

    Returns
    -------
    numpy.ndarray (n, f)
        The scaled likelihoods, each row's largest 1.
    """
    lp = np.asarray(log_prob, dtype=np.float64)
    return np.exp(lp - lp.max(axis=1, keepdims=True))


def exact_em(log_probs: Sequence[np.ndarray], *, stop="noise", max_iter: int = DEFAULT_MAX_ITER,
             init: np.ndarray | None = None, group: bool = True) -> EMResult:
    """Report-level maximum-likelihood EM of a c-way table (docs/design/core.md#exact-em).

    With ``group`` (discrete reports) the distinct rows of each attribute are found once and
    ``exact_em_grouped`` runs on their counts; without it (continuous reports, where every row is
    distinct) each report is its own group, and a step costs O(n prod_j f_j).

    Parameters
    ----------
    log_probs : sequence of numpy.ndarray (n, f_j)
        ``log P(y_ij | x_j)`` of the n reports complete on the c attributes
        (``Mechanism.log_prob``).
    stop : str, tuple, float or None
        The engine's stopping rule (``reidrisk.estimation.em.parse_stop``).
    max_iter : int
        Most EM steps.
    init : numpy.ndarray (f_1, ..., f_c), optional
        Starting probabilities (default uniform).
    group : bool
        Group equal report rows (discrete reports).

    Returns
    -------
    EMResult
        ``estimate``: the table of probabilities.
    """
    if not group:
        Ls = [likelihoods(lp) for lp in log_probs]
        return exact_em_grouped(Ls, None, stop=stop, max_iter=max_iter, init=init)
    groups = [group_rows(likelihoods(lp)) for lp in log_probs]
    Us = [u for u, _ in groups]
    ushape = tuple(u.shape[0] for u in Us)
    flat = np.ravel_multi_index(tuple(inv for _, inv in groups), ushape)
    C = np.bincount(flat, minlength=int(np.prod(ushape))).reshape(ushape).astype(np.float64)
    return exact_em_grouped(Us, C, stop=stop, max_iter=max_iter, init=init)


def exact_em_grouped(Ls: Sequence[np.ndarray], C: np.ndarray | None, *, stop="noise",
                     max_iter: int = DEFAULT_MAX_ITER, init: np.ndarray | None = None
                     ) -> EMResult:
    """The exact EM on grouped reports.

    The likelihood of a report with rows (u_1..u_c) is ``s[u] = sum_x T[x] prod_j L_j[u_j, x_j]``;
    EM iterates ``T <- T * (sum_u C[u] / s[u] prod_j L_j[u_j, .]) / N``. A step costs
    O(prod_j U_j * max f) (matrix products or ``einsum`` contractions), independent of the number
    of reports.

    Parameters
    ----------
    Ls : sequence of numpy.ndarray (U_j, f_j)
        c likelihood matrices, one row per distinct report of attribute j (e.g. the at most
        C(f, h) subsets of the subset mechanism).
    C : numpy.ndarray (U_1, ..., U_c) or None
        How many reports have each combination of distinct rows (``None``: the rows of ``Ls``
        are aligned reports, one each).
    stop : str, float or None
        ``"noise"`` (on the exact log-likelihood ``sum_u C[u] log s[u]``), a float tolerance, or
        ``None`` (``"discrepancy"`` is for support counts).
    max_iter : int
        Most EM steps.
    init : numpy.ndarray (f_1, ..., f_c), optional
        Starting probabilities (default uniform).

    Returns
    -------
    EMResult
        ``estimate``: the table of probabilities.
    """
    Ls = [np.asarray(L, dtype=np.float64) for L in Ls]
    c = len(Ls)
    shape = tuple(L.shape[1] for L in Ls)
    letters = "abcdefghij"[:c]
    if C is None:  # one group per report: a shared row index
        upper_ops = ["i"] * c
        out_u = "i"
        C = np.ones(Ls[0].shape[0])
    else:
        upper_ops = list("ABCDEFGHIJ"[:c])
        out_u = "".join(upper_ops)
    operands = ",".join(f"{u}{a}" for u, a in zip(upper_ops, letters))
    den_expr = f"{letters},{operands}->{out_u}"
    num_expr = f"{out_u},{operands}->{letters}"
    C = np.asarray(C, dtype=np.float64)
    if c == 2 and out_u != "i":  # grouped pairs: plain matrix products
        def den(T):
            return Ls[0] @ T @ Ls[1].T

        def num(R):
            return Ls[0].T @ R @ Ls[1]
    elif out_u == "i":  # aligned reports: row-wise Khatri-Rao product of the other axes, once
        K = np.ones((Ls[0].shape[0], 1))
        for L in Ls[1:]:
            K = (K[:, :, None] * L[:, None, :]).reshape(K.shape[0], -1)
        L0 = Ls[0]

        def den(T):
            return np.einsum("ij,ij->i", L0 @ T.reshape(shape[0], -1), K)

        def num(R):  # (K^T (R * L0))^T: the tall operand on the right is the fast BLAS layout
            return (K.T @ (R[:, None] * L0)).T.reshape(shape)
    else:
        den_path = np.einsum_path(den_expr, np.empty(shape), *Ls, optimize="greedy")[0]
        num_path = np.einsum_path(num_expr, C, *Ls, optimize="greedy")[0]

        def den(T):
            return np.einsum(den_expr, T, *Ls, optimize=den_path)

        def num(R):
            return np.einsum(num_expr, R, *Ls, optimize=num_path)
    if not float(C.sum()) > 0:
        raise ValueError("the exact EM needs at least one report")
    T0 = engine.positive_start(init, 1.0, (1,) + shape)
    problem = engine.ReportMixture(den, num, C, max(int(np.prod(shape)) - 1, 1))
    return _as_probabilities(engine.run(problem, T0, stop=stop, max_iter=max_iter))
