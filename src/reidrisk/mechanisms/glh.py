"""General local hashing (GLH) and optimized local hashing (OLH).

Paper 002 eq. 3 (docs/design/pie.md#mechanisms) and Wang et al. (USENIX Security 2017): the client
draws a hash function H uniformly from a family mapping {0..k-1} to {0..g-1}, then reports (H, y)
where y is g-ary randomized response on H(x):

    P((H, y) | x) = (1/|family|) * p'                  if H(x) = y,
                  = (1/|family|) * (1 - p') / (g - 1)  otherwise,    p' = e^eps / (e^eps + g - 1).

The report supports S = {v : H(v) = y}. The ratio for two inputs is at most p' (g - 1) / (1 - p')
= e^eps, reached by any (H, y) with H(x) = y != H(x'). OLH is GLH with the variance-optimal
g = max(2, round(e^eps + 1)).

Two hash families are offered.

* ``"linear"`` (default): H_(a,b)(x) = ((a x + b) mod P) mod g with a prime P >= k (default
  2^31 - 1), a uniform on {1..P-1} and b uniform on {0..P-1}. For x != x' the pair
  ((a x + b) mod P, (a x' + b) mod P) is uniform over the P (P-1) ordered pairs of distinct
  residues, so the collision probability is exactly c = (sum_i c_i^2 - P) / (P (P - 1)), where
  c_i counts the residues mod P that are i mod g. c is not exactly 1/g (|c - 1/g| < 1/P), so
  q_support is computed exactly as c p' + (1 - c)(1 - p')/(g - 1) rather than taken as 1/g; with
  the default P it differs from 1/g by less than 1e-9. Reports are int64 (n, 3) = (a, b, y).
* ``"tables"``: m fixed lookup tables h_j : {0..k-1} -> {0..g-1}, j uniform on {0..m-1} (the
  authors' simulation of the family in paper 002; m = 1 means one table shared by all users).
  The collision probability of a pair is the fraction of tables where the two values collide, so
  the support matrix is exact but not of the p/q form; ``q_support`` is the mean of its
  off-diagonal entries. Reports are int64 (n, 2) = (j, y).

Missing inputs give a row of ``MISSING`` (-1). ``log_prob`` includes the log(1/|family|) term of the
hash choice, so it is the exact log-likelihood of the whole report.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from reidrisk.mechanisms.base import (
    Mechanism,
    MechanismError,
    as_generator,
    check_codes,
    check_domain,
    check_epsilon,
    check_integer,
    check_whole_rows,
    report_matrix,
)
from reidrisk.schema import MISSING

DEFAULT_PRIME: int = 2_147_483_647
"""2^31 - 1, the default modulus of the linear hash family (keeps a * x + b within int64)."""

_CHUNK_CELLS = 1 << 21
_MAX_ENUMERATED = 2_000_000


def optimal_g(epsilon: float) -> int:
    """Variance-optimal hash range of OLH: max(2, round(e^eps + 1)) (Wang et al. 2017).

    Parameters
    ----------
    epsilon : float
        The privacy budget.

    Returns
    -------
    int
        The hash range g.
    """
    if epsilon > math.log(DEFAULT_PRIME):  # e^eps itself would overflow a float beyond ~709
        g = DEFAULT_PRIME + 1
    else:
        g = max(2, round(math.exp(epsilon) + 1.0))
    if g > DEFAULT_PRIME:
        raise MechanismError(
            f"epsilon={epsilon:g} gives an OLH range g={g} beyond 2^31 - 1; use 'grr' at such "
            "budgets"
        )
    return g


def _is_prime(p: int) -> bool:
    if p < 2:
        return False
    d = np.arange(2, math.isqrt(p) + 1, dtype=np.int64)
    return not bool((p % d == 0).any())


class LinearHashFamily:
    """H_(a,b)(x) = ((a x + b) mod P) mod g, a in {1..P-1}, b in {0..P-1}; parameters (a, b).

    Parameters
    ----------
    prime : int
        The prime modulus P, in k..2^31 - 1.
    k : int
        Domain size.
    g : int
        Hash range.
    """

    kind = "linear"
    n_params = 2

    def __init__(self, prime: int, k: int, g: int) -> None:
        prime = check_integer(prime, "prime", 2)
        if not _is_prime(prime):
            raise MechanismError(f"prime must be a prime number, got {prime!r}")
        if not k <= prime <= DEFAULT_PRIME:
            raise MechanismError(
                f"prime must lie in k={k}..{DEFAULT_PRIME} (so that distinct values stay distinct "
                f"and a * x + b fits in int64), got {prime}"
            )
        self.prime, self.k, self.g = prime, k, g

    @property
    def size(self) -> int:
        return self.prime * (self.prime - 1)

    def collision(self) -> Fraction:
        """Exact P(H(x) = H(x')) for x != x' (the same for every pair).

        Returns
        -------
        fractions.Fraction
            The collision probability.
        """
        P, g = self.prime, self.g
        base, rem = divmod(P, g)
        sq = rem * (base + 1) ** 2 + (g - rem) * base**2
        return Fraction(sq - P, P * (P - 1))

    def collision_matrix(self) -> np.ndarray:
        """Exact P(H(v) = H(x)) for every pair (k, k).

        Returns
        -------
        numpy.ndarray (k, k)
            ``collision()`` off the diagonal, 1 on it.
        """
        c = np.full((self.k, self.k), float(self.collision()))
        np.fill_diagonal(c, 1.0)
        return c

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """One random member of the family per report: (a, b) rows.

        Parameters
        ----------
        n : int
            Reports.
        rng : numpy.random.Generator
            Source of the draws.

        Returns
        -------
        numpy.ndarray (n, n_params) int64
            One hash function's parameters per row.
        """
        a = rng.integers(1, self.prime, size=n)
        b = rng.integers(0, self.prime, size=n)
        return np.column_stack([a, b]).astype(np.int64)

    def hash_own(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        """H_i(x_i) for every row i: shape (n,).

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Each row's hash parameters.
        x : numpy.ndarray (n,)
            Each row's value.

        Returns
        -------
        numpy.ndarray (n,)
            ``H_i(x_i)``.
        """
        return (params[:, 0] * x + params[:, 1]) % self.prime % self.g

    def hash_all(self, params: np.ndarray) -> np.ndarray:
        """H_i(v) for every row i and value v: shape (n, k).

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Each row's hash parameters.

        Returns
        -------
        numpy.ndarray (n, k)
            ``H_i(v)`` for every value v.
        """
        v = np.arange(self.k, dtype=np.int64)
        h = params[:, 0:1] * v
        h += params[:, 1:2]
        h %= self.prime
        h %= self.g
        return h

    def enumerate(self) -> np.ndarray:
        """Every member of the family (small primes only).

        Returns
        -------
        numpy.ndarray (P (P - 1), 2) int64
            One (a, b) per row.
        """
        a, b = np.meshgrid(np.arange(1, self.prime), np.arange(self.prime), indexing="ij")
        return np.column_stack([a.ravel(), b.ravel()]).astype(np.int64)

    def bad_params(self, params: np.ndarray) -> np.ndarray:
        """Rows whose (a, b) lie outside the family.

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Hash parameters of reports received.

        Returns
        -------
        numpy.ndarray (n,) of bool
            True where they name no member of the family.
        """
        a, b = params[:, 0], params[:, 1]
        return (a < 1) | (a >= self.prime) | (b < 0) | (b >= self.prime)

    def describe(self) -> dict:
        """The family's parameters, for files and reports.

        Returns
        -------
        dict
            The kind and the prime.
        """
        return {"hash": self.kind, "prime": self.prime}

    def summary(self) -> str:
        """The family's parameter ranges in words.

        Returns
        -------
        str
            The ranges of a and b.
        """
        return f"a in 1..{self.prime - 1}, b in 0..{self.prime - 1}"


class TableHashFamily:
    """m fixed lookup tables (m, k) with entries in {0..g-1}; the parameter is the table index j.

    Parameters
    ----------
    tables : numpy.ndarray (m, k) or (k,)
        The lookup tables, integers in 0..g-1.
    k : int
        Domain size.
    g : int
        Hash range.
    """

    kind = "tables"
    n_params = 1

    def __init__(self, tables: np.ndarray, k: int, g: int) -> None:
        t = np.asarray(tables)
        if t.ndim == 1:
            t = t[None, :]
        if t.ndim != 2 or t.shape[1] != k or t.shape[0] < 1:
            raise MechanismError(f"hash tables must have shape (m, k={k}), got {np.shape(tables)}")
        if not np.issubdtype(t.dtype, np.integer) or t.min() < 0 or t.max() >= g:
            raise MechanismError(
                f"hash tables must hold integers in 0..g-1 = 0..{g - 1}; rebuild them for g={g}"
            )
        self.tables = t.astype(np.int64)
        self.k, self.g = k, g
        self._collision: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.tables.shape[0]

    def collision_matrix(self) -> np.ndarray:
        """Exact P(H(v) = H(x)) for every pair (k, k): the fraction of tables where they collide.

        Returns
        -------
        numpy.ndarray (k, k)
            The collision probabilities (1 on the diagonal).
        """
        if self._collision is None:
            hits = np.zeros((self.k, self.k))
            for table in self.tables:  # m tables, each compared with itself in one k x k step
                hits += table[:, None] == table[None, :]
            self._collision = hits / self.size
        return self._collision.copy()

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """One random table index per report: rows (j,).

        Parameters
        ----------
        n : int
            Reports.
        rng : numpy.random.Generator
            Source of the draws.

        Returns
        -------
        numpy.ndarray (n, n_params) int64
            One hash function's parameters per row.
        """
        return rng.integers(0, self.size, size=(n, 1)).astype(np.int64)

    def hash_own(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        """H_i(x_i) for every row i: shape (n,).

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Each row's hash parameters.
        x : numpy.ndarray (n,)
            Each row's value.

        Returns
        -------
        numpy.ndarray (n,)
            ``H_i(x_i)``.
        """
        return self.tables[params[:, 0], x]

    def hash_all(self, params: np.ndarray) -> np.ndarray:
        """H_i(v) for every row i and value v: shape (n, k).

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Each row's hash parameters.

        Returns
        -------
        numpy.ndarray (n, k)
            ``H_i(v)`` for every value v.
        """
        return self.tables[params[:, 0]]

    def enumerate(self) -> np.ndarray:
        """Every member of the family: the table indices.

        Returns
        -------
        numpy.ndarray (m, 1) int64
            One index per row.
        """
        return np.arange(self.size, dtype=np.int64)[:, None]

    def bad_params(self, params: np.ndarray) -> np.ndarray:
        """Rows whose table index is out of range.

        Parameters
        ----------
        params : numpy.ndarray (n, n_params)
            Hash parameters of reports received.

        Returns
        -------
        numpy.ndarray (n,) of bool
            True where they name no member of the family.
        """
        return (params[:, 0] < 0) | (params[:, 0] >= self.size)

    def describe(self) -> dict:
        """The family's parameters, for files and reports.

        Returns
        -------
        dict
            The kind, the number of tables and the tables.
        """
        return {"hash": self.kind, "m": self.size, "tables": self.tables.tolist()}

    def summary(self) -> str:
        """The family's parameter range in words.

        Returns
        -------
        str
            The range of the table index.
        """
        return f"table index in 0..{self.size - 1}"


class GLH(Mechanism):
    """General local hashing with range g (paper 002 eq. 3); ``g=None`` picks the OLH optimum.

    Reports: int64 (n, 3) = (a, b, y) for the linear family, (n, 2) = (j, y) for tables; a row of
    ``MISSING`` for a missing input. Design: docs/design/core.md#glh-and-olh.

    Parameters
    ----------
    epsilon : float
        The budget.
    k : int
        Domain size.
    g : int, optional
        Hash range (>= 2); ``None`` picks the OLH optimum ``max(2, round(e^eps + 1))``.
    prime : int, optional
        Modulus of the linear hash family (default 2^31 - 1).
    tables : numpy.ndarray (m, k), optional
        Switches to a finite family of lookup tables (see ``GLH.with_random_tables``).
    """

    name = "glh"
    independent_support = True

    def __init__(
        self,
        epsilon: float,
        k: int,
        g: int | None = None,
        *,
        prime: int | None = None,
        tables: np.ndarray | None = None,
    ) -> None:
        super().__init__(epsilon, k)
        if g is None:
            g = optimal_g(self.epsilon)
        self.g = check_integer(g, "hash range g", 2)
        if tables is not None:
            if prime is not None:
                raise MechanismError("pass either prime (linear hash family) or tables, not both")
            self.family: TableHashFamily | LinearHashFamily = TableHashFamily(tables, self.k, self.g)
        else:
            prime = DEFAULT_PRIME if prime is None else prime
            self.family = LinearHashFamily(prime, self.k, self.g)
        e = math.exp(self.epsilon)
        self._p = e / (e + self.g - 1)
        self._lie = 1.0 / (e + self.g - 1)  # probability of each specific wrong hash value

    @classmethod
    def with_random_tables(
        cls, epsilon: float, k: int, m: int, g: int | None = None, rng=None
    ) -> GLH:
        """GLH over m fully random tables drawn once from ``rng`` (the authors' construction).

        The tables are public parameters of the mechanism (every report names its table), so a
        seed is fine here.

        Parameters
        ----------
        epsilon, k
            As in ``GLH``.
        m : int
            Number of tables (>= 1).
        g : int, optional
            Hash range (>= 2); ``None`` picks the OLH optimum.
        rng : numpy.random.Generator or int, optional
            Draws the tables; ``None``: a fresh secure generator.

        Returns
        -------
        GLH
            The mechanism over those tables.
        """
        g = optimal_g(check_epsilon(epsilon)) if g is None else check_integer(g, "hash range g", 2)
        m = check_integer(m, "number of hash tables m", 1)
        tables = as_generator(rng).integers(0, g, size=(m, check_domain(k)))
        return cls(epsilon, k, g, tables=tables)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, k={self.k}, g={self.g})"

    @property
    def p_support(self) -> float:
        return self._p

    def support_matrix(self) -> np.ndarray:
        """Exact M[v, x] = c_vx p' + (1 - c_vx) (1 - p') / (g - 1), c_vx = P(H(v) = H(x)).

        Returns
        -------
        numpy.ndarray (k, k)
            M.
        """
        c = self.family.collision_matrix()
        m = c * self._p + (1.0 - c) * self._lie
        np.fill_diagonal(m, self._p)
        return m

    @property
    def q_support(self) -> float:
        """Exact for the linear family; the mean off-diagonal support probability for tables."""
        if isinstance(self.family, LinearHashFamily):
            c = float(self.family.collision())
            return c * self._p + (1.0 - c) * self._lie
        m = self.support_matrix()
        return float((m.sum() - np.trace(m)) / (self.k * (self.k - 1)))

    def params(self) -> dict:
        return {**super().params(), "g": self.g, **self.family.describe()}

    @property
    def report_width(self) -> int:
        return self.family.n_params + 1

    # ---- client ----------------------------------------------------------------------------------
    def perturb(self, values, rng=None):
        """Randomize codes (n,) into reports (n, n_params + 1): hash parameters, then y.

        ``rng=None``: a fresh cryptographic generator (see ``Mechanism.perturb``).

        Parameters
        ----------
        values, rng
            As in ``Mechanism.perturb``.

        Returns
        -------
        numpy.ndarray (n, n_params + 1) int64
            The reports.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        out = np.full((x.size, self.report_width), MISSING, dtype=np.int64)
        present = np.flatnonzero(x != MISSING)
        xs = x[present]
        params = self.family.draw(xs.size, rng)
        hx = self.family.hash_own(params, xs)
        keep = rng.random(xs.size) < self._p
        shift = rng.integers(1, self.g, size=xs.size)  # uniform over the g - 1 wrong values
        y = np.where(keep, hx, (hx + shift) % self.g)
        out[present, :-1] = params
        out[present, -1] = y
        return out

    # ---- channel ---------------------------------------------------------------------------------
    def log_prob(self, reports):
        """Exact log P((H, y)_i | x), shape (n, k), including log(1/|family|); missing rows 0.

        Parameters
        ----------
        reports : numpy.ndarray (n, n_params + 1)
            GLH reports (as in ``Mechanism.log_prob``).

        Returns
        -------
        numpy.ndarray (n, k)
            ``log P(report_i | X = x)``.
        """
        r = self._as_reports(reports)
        const = -math.log(self.family.size)
        lut = np.array([math.log(self._lie) + const, math.log(self._p) + const])
        lp = lut[self._matches(r).view(np.uint8)]
        lp[self.is_missing(r)] = 0.0
        return lp

    def enumerate_outputs(self):
        """All (hash parameters, y) pairs, int64 (|family| g, n_params + 1); small families only.

        Returns
        -------
        numpy.ndarray (|family| g, n_params + 1) int64
            The reports.
        """
        total = self.family.size * self.g
        if total > _MAX_ENUMERATED:
            raise NotImplementedError(
                f"{self.name} has {total} outputs; enumerate with a small prime or few tables"
            )
        params = self.family.enumerate()
        y = np.tile(np.arange(self.g, dtype=np.int64), params.shape[0])
        return np.column_stack([np.repeat(params, self.g, axis=0), y])

    def max_log_ratio(self):
        """log(p' (g - 1) / (1 - p')) = epsilon exactly.

        Returns
        -------
        float
            epsilon.
        """
        return math.log(self._p) - math.log(self._lie)

    # ---- server ----------------------------------------------------------------------------------
    def _as_reports(self, reports) -> np.ndarray:
        return report_matrix(reports, self.report_width, self.name,
                             f"{self.family.kind} hash parameters, then y")

    def support(self, reports):
        """Dense float32 (n, k): 1 where H_i(v) = y_i. Hashes every report against all k values,
        in row chunks to bound memory; missing rows are all 0.

        Parameters
        ----------
        reports : numpy.ndarray (n, n_params + 1)
            GLH reports (as in ``Mechanism.support``).

        Returns
        -------
        numpy.ndarray (n, k) float32
            1 where the report's hash of the value equals its y.
        """
        return self._matches(self._as_reports(reports)).astype(np.float32)

    def _matches(self, r: np.ndarray) -> np.ndarray:
        """Bool (n, k): H_i(v) == y_i, all False on missing rows."""
        out = np.zeros((r.shape[0], self.k), dtype=bool)
        present = np.flatnonzero(r[:, -1] != MISSING)
        chunk = max(1, _CHUNK_CELLS // self.k)
        for s in range(0, present.size, chunk):
            rows = present[s : s + chunk]
            rr = r[rows].astype(np.int64, copy=False)
            out[rows] = self.family.hash_all(rr[:, :-1]) == rr[:, -1:]
        return out

    def is_missing(self, reports):
        return self._as_reports(reports)[:, -1] == MISSING

    def support_counts(self, reports):
        """(w, n_present): how many reports support each value, hashing in row chunks without
        building the (n, k) support matrix (same counts as ``support(reports).sum(axis=0)``).

        Parameters
        ----------
        reports : numpy.ndarray (n, n_params + 1)
            GLH reports (as in ``Mechanism.support_counts``).

        Returns
        -------
        w : numpy.ndarray (k,)
            How many reports support each value.
        n_present : int
            Reports that are not missing.
        """
        r = self._as_reports(reports)
        present = np.flatnonzero(r[:, -1] != MISSING)
        w = np.zeros(self.k, dtype=np.int64)
        chunk = max(1, _CHUNK_CELLS // self.k)
        for s in range(0, present.size, chunk):
            rr = r[present[s : s + chunk]].astype(np.int64, copy=False)
            w += np.count_nonzero(self.family.hash_all(rr[:, :-1]) == rr[:, -1:], axis=0)
        return w.astype(np.float64), int(present.size)

    def validate_reports(self, reports):
        """Check shape, integer dtype, hash parameters in range, y in 0..g-1, and missing rows
        wholly ``MISSING``. Returns the reports as int64.

        Parameters
        ----------
        reports : numpy.ndarray (n, n_params + 1)
            GLH reports (as in ``Mechanism.validate_reports``).

        Returns
        -------
        numpy.ndarray (n, n_params + 1) int64
            The reports.

        Raises
        ------
        MechanismError
            Naming the first bad row.
        """
        r = self._as_reports(reports)
        if r.size and not np.issubdtype(r.dtype, np.integer):
            raise MechanismError(f"{self.name} reports must be integers, got dtype {r.dtype}")
        r = r.astype(np.int64, copy=False)
        miss = r == MISSING
        check_whole_rows(miss, r, self.name, MISSING, "a missing report is wholly missing")
        present = ~miss[:, 0]
        bad = np.zeros(r.shape[0], dtype=bool)
        bad[present] = self.family.bad_params(r[present, :-1])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MechanismError(
                f"{self.name} report row {i} has hash parameters {r[i, :-1].tolist()} outside the "
                f"{self.family.kind} hash family ({self.family.summary()}); re-collect it with "
                "this mechanism's parameters"
            )
        bad_y = present & ((r[:, -1] < 0) | (r[:, -1] >= self.g))
        if bad_y.any():
            i = int(np.flatnonzero(bad_y)[0])
            raise MechanismError(
                f"{self.name} report row {i} has hash value y={r[i, -1]} outside 0..{self.g - 1} "
                f"(g={self.g}); re-collect it with this mechanism's parameters"
            )
        return r


class OLH(GLH):
    """Optimized local hashing: GLH with g = max(2, round(e^eps + 1)) (Wang et al. 2017).

    Parameters
    ----------
    epsilon, k
        As in ``GLH``.
    g : int, optional
        Accepted only when equal to the optimum above (anything else raises ``MechanismError``).
    **kwargs
        ``prime`` or ``tables``, as in ``GLH``.
    """

    name = "olh"

    def __init__(self, epsilon: float, k: int, g: int | None = None, **kwargs) -> None:
        best = optimal_g(check_epsilon(epsilon))
        if g is not None and g != best:
            raise MechanismError(
                f"OLH fixes g = max(2, round(e^eps + 1)) = {best}, got g={g!r}; use 'glh' to "
                "choose g"
            )
        super().__init__(epsilon, k, best, **kwargs)
