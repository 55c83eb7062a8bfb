"""Nearest correlation matrix (paper 004 Section 4.2.3: "if Sigma is not positive definite, project
to the nearest correlation matrix"; docs/design/core.md#correlation-matrix).

``"higham"``: N. J. Higham, "Computing the nearest correlation matrix - a problem from finance",
IMA J. Numer. Anal. 22 (2002), Algorithm 3.3 with unit weights: alternating projections with
Dykstra's correction between S = {X symmetric, eigenvalues >= delta} and U = {X, diag(X) = 1};
the limit is the Frobenius-nearest matrix in the intersection. It converges linearly.

``"dual"`` (default; the same answer in fewer eigendecompositions): the Lagrangian dual of
min ||X - A||_F^2 / 2 subject to diag(X) = 1, X >= delta I (J. Malick, SIAM J. Matrix Anal. Appl.
26 (2004); S. Boyd and L. Xiao, ibid. 27 (2005)). With A' = A - delta I and b = 1 - delta it is the
smooth convex problem in y (g,)

    min_y theta(y) = ||P+(A' + diag(y))||_F^2 / 2 - b sum(y),  grad = diag(P+(A' + diag(y))) - b,

P+ the projection onto the positive semidefinite cone (negative eigenvalues set to 0); it is
solved by L-BFGS and X = P+(A' + diag(y*)) + delta I.

``"clip"``: one eigenvalue clip to delta followed by the rescaling D^{-1/2} X D^{-1/2} (fastest,
not the nearest).

Every method ends with the rescaling to an exact unit diagonal (a congruence, so the result stays
positive definite); at convergence it moves the entries by about the stopping tolerance.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from reidrisk._compat import renamed_keywords
from reidrisk.copula.marginals import CopulaError

PROJECTIONS = ("dual", "higham", "clip")


def _check_square(a) -> np.ndarray:
    arr = np.array(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise CopulaError(f"expected a square matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise CopulaError("matrix has non-finite entries")
    return arr


def is_correlation_matrix(a, min_eigenvalue: float = 0.0, atol: float = 1e-12) -> bool:
    """True when a is symmetric with unit diagonal and smallest eigenvalue > min_eigenvalue.

    Parameters
    ----------
    a : array_like
        The matrix.
    min_eigenvalue : float
        The eigenvalues must exceed it (tested by a Cholesky factorization of a - min I).
    atol : float
        Tolerance of the symmetry and of the unit diagonal.

    Returns
    -------
    bool
        Whether ``a`` is such a correlation matrix.
    """
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or not np.all(np.isfinite(arr)):
        return False
    if not np.allclose(arr, arr.T, atol=atol, rtol=0):
        return False
    if not np.allclose(np.diag(arr), 1.0, atol=atol, rtol=0):
        return False
    # A - delta I has a Cholesky factor exactly when every eigenvalue of A exceeds delta.
    try:
        np.linalg.cholesky(0.5 * (arr + arr.T) - min_eigenvalue * np.eye(arr.shape[0]))
    except np.linalg.LinAlgError:
        return False
    return True


def _project_psd(r: np.ndarray, delta: float) -> np.ndarray:
    w, v = np.linalg.eigh(r)
    x = (v * np.maximum(w, delta)) @ v.T
    return 0.5 * (x + x.T)


def _unit_scale(x: np.ndarray) -> np.ndarray:
    d = 1.0 / np.sqrt(np.diag(x))
    y = x * d[:, None] * d[None, :]
    np.fill_diagonal(y, 1.0)
    return 0.5 * (y + y.T)


def _dual(arr: np.ndarray, delta: float, tol: float, max_iter: int) -> np.ndarray:
    g = arr.shape[0]
    shifted = arr - delta * np.eye(g)
    b = 1.0 - delta

    def theta(y):
        w, v = np.linalg.eigh(shifted + np.diag(y))
        wp = np.maximum(w, 0.0)
        grad = np.einsum("ij,j,ij->i", v, wp, v) - b
        return 0.5 * float(wp @ wp) - b * float(y.sum()), grad

    res = minimize(
        theta, np.zeros(g), jac=True, method="L-BFGS-B",
        options={"gtol": tol, "ftol": 1e-15, "maxiter": max_iter, "maxcor": 20},
    )
    return _project_psd(shifted + np.diag(res.x), 0.0) + delta * np.eye(g)


@renamed_keywords(method="projection")
def nearest_correlation(
    a,
    projection: str = "dual",
    min_eigenvalue: float = 1e-6,
    tol: float = 1e-9,
    max_iter: int = 1000,
) -> np.ndarray:
    """The correlation matrix nearest to symmetric a (g, g) in Frobenius norm, with eigenvalues
    >= ``min_eigenvalue`` (so its Cholesky factor exists). A matrix that already is such a
    correlation matrix is returned unchanged (as a copy).

    Parameters
    ----------
    a : array_like (g, g)
        A symmetric matrix with unit diagonal (assembled pair correlations).
    projection : {"dual", "higham", "clip"}
        The projection (module docstring; formerly ``method``).
    min_eigenvalue : float
        Smallest eigenvalue of the result, in [0, 1).
    tol : float
        Higham's iteration stops when two iterates agree to ``tol`` (relative Frobenius norm);
        the dual solver when the diagonal residual is below ``tol`` (or the dual objective
        stalls).
    max_iter : int
        Most iterations of either.

    Returns
    -------
    numpy.ndarray (g, g)
        The nearest correlation matrix.
    """
    method = projection
    if method not in PROJECTIONS:
        raise CopulaError(f"projection must be one of {PROJECTIONS}, got {method!r}")
    if not 0 <= min_eigenvalue < 1:
        raise CopulaError(f"min_eigenvalue must be in [0, 1), got {min_eigenvalue}")
    arr = _check_square(a)
    if is_correlation_matrix(arr, min_eigenvalue):
        return arr
    arr = 0.5 * (arr + arr.T)
    if method == "clip":
        return _unit_scale(_project_psd(arr, min_eigenvalue))
    if method == "dual":
        return _unit_scale(_dual(arr, min_eigenvalue, tol, max_iter))
    y = arr.copy()
    np.fill_diagonal(y, 1.0)
    ds = np.zeros_like(arr)
    x = y
    for _ in range(max_iter):
        r = y - ds
        x = _project_psd(r, min_eigenvalue)
        ds = x - r
        y_new = x.copy()
        np.fill_diagonal(y_new, 1.0)
        change = np.linalg.norm(y_new - y) / max(float(np.linalg.norm(y_new)), 1.0)
        gap = np.linalg.norm(y_new - x) / max(float(np.linalg.norm(y_new)), 1.0)
        y = y_new
        if change < tol and gap < tol:
            break
    return _unit_scale(x)
