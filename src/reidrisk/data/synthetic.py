"""Synthetic categorical populations with a known latent dependence structure.

A population is drawn through a latent Gaussian (the same model the copula of paper 004, eq.
15-24, fits): ``Z ~ N(0, R)`` with unit-diagonal correlation ``R``, and column j is cut at the
thresholds ``Phi^{-1}(p_j1), Phi^{-1}(p_j1 + p_j2), ...`` of its marginal ``p_j``, so value k is
drawn with probability exactly ``p_jk`` and pairs depend on each other only through ``R``. The
population itself is the ground truth: its exact tables are counted from ``codes``
(``reidrisk.data.tables``).

Dependence structures (``R = (1 - d) I + d C`` with ``C`` a correlation matrix, so ``R`` is positive
definite with smallest eigenvalue >= 1 - d for every ``d`` in [0, 1)):

- ``"factor"``: ``C = s s^T`` with random signs ``s_j = +-1`` (one latent factor): every pair has
  latent correlation ``+-d``.
- ``"random"``: ``C`` from ``max(2, g // 5)`` Gaussian factors with random loadings, rescaled to
  unit diagonal: heterogeneous correlations with ``|rho| <= d``.

``dependence = 0`` gives independent attributes. A (g, g) correlation matrix may be passed instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from reidrisk.data.tables import contingency
from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import Attribute, Schema

STRUCTURES = ("factor", "random")
_CHUNK_ROWS = 1 << 16


@dataclass(frozen=True, eq=False)
class Population:
    """A synthetic population and the model it was drawn from.

    Parameters
    ----------
    schema : Schema
        Attributes ``A1..Ag`` with categories ``"0".."f_j - 1"``.
    codes : numpy.ndarray
        int32 (n, g), complete (no ``MISSING``).
    correlation : numpy.ndarray
        The latent correlation matrix R (g, g).
    marginals : tuple of numpy.ndarray
        One probability vector (f_j,) per attribute, the model's exact single-attribute
        distributions.
    """

    schema: Schema
    codes: np.ndarray
    correlation: np.ndarray
    marginals: tuple[np.ndarray, ...]

    @property
    def n(self) -> int:
        return int(self.codes.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        return self.schema.sizes

    def table(self, cols: Sequence[int], normalize: bool = True) -> np.ndarray:
        """The population's exact c-way table over ``cols`` (see ``tables.contingency``).

        Parameters
        ----------
        cols, normalize
            As in ``tables.contingency``.

        Returns
        -------
        numpy.ndarray
            The table, one axis per column of ``cols``.
        """
        return contingency(self.codes, self.sizes, cols, normalize=normalize)


def _check_sizes(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(sizes)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"sizes must be a non-empty list of domain sizes, got {sizes!r}")
    if not np.issubdtype(arr.dtype, np.integer) or (arr < 2).any():
        raise ValueError(f"every domain size must be an integer >= 2, got {list(arr)}")
    return arr.astype(np.int64)


def _check_marginals(marginals, sizes: np.ndarray, rng: np.random.Generator) -> tuple:
    if isinstance(marginals, str):
        if marginals == "uniform":
            return tuple(np.full(f, 1.0 / f) for f in sizes)
        if marginals == "random":
            return tuple(rng.dirichlet(np.ones(f)) for f in sizes)
        raise ValueError(
            f"marginals must be 'random', 'uniform' or a list of probability vectors, got "
            f"{marginals!r}"
        )
    if len(marginals) != len(sizes):
        raise ValueError(f"marginals lists {len(marginals)} vectors for {len(sizes)} attributes")
    out = []
    for j, (p, f) in enumerate(zip(marginals, sizes)):
        p = np.asarray(p, dtype=float)
        if p.shape != (f,) or (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-9):
            raise ValueError(
                f"marginals[{j}] must be {f} non-negative probabilities summing to 1, got {p}"
            )
        out.append(p / p.sum())
    return tuple(out)


def _loadings(g: int, rng: np.random.Generator, structure: str) -> np.ndarray:
    """Unit-norm factor loadings L (g, k) with C = L L^T a correlation matrix."""
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {list(STRUCTURES)}, got {structure!r}")
    if structure == "factor":
        return rng.choice([-1.0, 1.0], size=(g, 1))
    w = rng.standard_normal((g, max(2, g // 5)))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def _check_dependence(dependence: float | np.ndarray) -> float:
    d = float(dependence)
    if not 0.0 <= d < 1.0:
        raise ValueError(
            f"dependence must be in [0, 1) (0 = independent attributes), got {dependence!r}"
        )
    return d


def latent_correlation(
    g: int,
    dependence: float,
    rng: np.random.Generator | int | None = None,
    structure: str = "factor",
) -> np.ndarray:
    """A (g, g) correlation matrix ``(1 - d) I + d C`` (see the module docstring).

    Parameters
    ----------
    g : int
        Number of attributes.
    dependence : float
        d in [0, 1).
    rng, structure
        As in ``make_population``.

    Returns
    -------
    numpy.ndarray (g, g)
        The correlation matrix.
    """
    d = _check_dependence(dependence)
    loadings = _loadings(g, as_generator(rng), structure)
    return _correlation_from(loadings, d)


def _correlation_from(loadings: np.ndarray, d: float) -> np.ndarray:
    g = loadings.shape[0]
    r = (1.0 - d) * np.eye(g) + d * (loadings @ loadings.T)
    np.fill_diagonal(r, 1.0)
    return r


def _check_correlation(r: float | np.ndarray, g: int) -> np.ndarray:
    r = np.array(r, dtype=float)  # a copy: the Population freezes it
    if r.shape != (g, g):
        raise ValueError(
            f"a correlation matrix for {g} attributes must be ({g}, {g}), got {r.shape}"
        )
    if not np.allclose(r, r.T) or not np.allclose(np.diag(r), 1.0):
        raise ValueError("the correlation matrix must be symmetric with a unit diagonal")
    if np.linalg.eigvalsh(r).min() <= 0:
        raise ValueError("the correlation matrix must be positive definite")
    return r


def thresholds(p: np.ndarray) -> np.ndarray:
    """Latent cut points ``Phi^{-1}(cumsum(p)[:-1])`` of one marginal, shape (f - 1,).

    Parameters
    ----------
    p : numpy.ndarray (f,)
        The marginal's probabilities.

    Returns
    -------
    numpy.ndarray (f - 1,)
        The cut points.
    """
    cum = np.clip(np.cumsum(p)[:-1], 0.0, 1.0)
    return ndtri(cum)


def make_population(
    n: int,
    sizes: Sequence[int] | np.ndarray,
    dependence: float | np.ndarray = 0.5,
    rng: np.random.Generator | int | None = None,
    marginals: str | Sequence[Sequence[float]] = "random",
    structure: str = "factor",
) -> Population:
    """Draw n complete records over attributes of domain sizes ``sizes`` through a latent Gaussian.

    Attributes are named ``A1..Ag`` with categories ``"0".."f_j - 1"``.

    Parameters
    ----------
    n : int
        Number of records (>= 1).
    sizes : sequence of int
        Domain size f_j of each of the g attributes.
    dependence : float or numpy.ndarray
        d in [0, 1) (see the module docstring) or a (g, g) correlation matrix.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).
    marginals : str or sequence of sequence of float
        ``"random"`` (each p_j ~ Dirichlet(1, ..., 1)), ``"uniform"`` or a list of g probability
        vectors.
    structure : {"factor", "random"}
        The correlation structure C for a scalar ``dependence`` (see the module docstring).

    Returns
    -------
    Population
        The schema, the codes and the latent model.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    sizes = _check_sizes(sizes)
    g = sizes.size
    rng = as_generator(rng)
    if np.ndim(dependence) == 0:
        # R = (1 - d) I + d L L^T: draw Z = sqrt(1 - d) E + sqrt(d) F L^T, O(n g k) not O(n g^2).
        d = _check_dependence(dependence)
        loadings = _loadings(g, rng, structure)
        corr = _correlation_from(loadings, d)
        scales = (np.sqrt(1.0 - d), np.sqrt(d))
    else:
        corr = _check_correlation(dependence, g)
        loadings = np.linalg.cholesky(corr)
        scales = (0.0, 1.0)
    probs = _check_marginals(marginals, sizes, rng)
    cuts = [thresholds(p) for p in probs]
    codes = np.empty((n, g), dtype=np.int32)
    for start in range(0, n, _CHUNK_ROWS):
        rows = min(n, start + _CHUNK_ROWS) - start
        z = rng.standard_normal((rows, loadings.shape[1])) @ loadings.T
        z *= scales[1]
        if scales[0] > 0:
            z += scales[0] * rng.standard_normal((rows, g))
        for j in range(g):
            codes[start:start + rows, j] = np.searchsorted(cuts[j], z[:, j], side="right")
    schema = Schema(tuple(
        Attribute(f"A{j + 1}", tuple(str(k) for k in range(f))) for j, f in enumerate(sizes)
    ))
    for p in probs:
        p.setflags(write=False)
    corr.setflags(write=False)
    return Population(schema, codes, corr, probs)


def make_binary_population(
    g: int,
    n: int = 10_000,
    rng: np.random.Generator | int | None = None,
    dependence: float | np.ndarray = 0.0,
    marginals: str | Sequence[Sequence[float]] = "uniform",
    structure: str = "factor",
) -> Population:
    """The synthetic data of paper 004, Section 5.2: n = 10,000 people, g binary attributes
    (f_j = 2; the paper uses g = 10..200).

    The paper says only that "the attribute values of each individual were determined randomly".
    The literal reading, and the default here, is independent fair coins (``dependence=0``,
    ``marginals="uniform"``); ``dependence``/``marginals`` give correlated or skewed variants.

    Parameters
    ----------
    g : int
        Number of binary attributes (>= 1).
    n : int
        Number of people (default 10,000).
    rng, dependence, marginals, structure
        As in ``make_population``.

    Returns
    -------
    Population
        As ``make_population``.
    """
    if isinstance(g, bool) or int(g) != g or g < 1:
        raise ValueError(f"g must be a positive integer, got {g!r}")
    return make_population(n, [2] * int(g), dependence, rng, marginals, structure)


__all__ = [
    "Population", "latent_correlation", "make_binary_population", "make_population", "thresholds",
]
