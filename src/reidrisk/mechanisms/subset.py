"""The subset mechanism (k-subset / S2M): report a random h-subset of the domain.

Paper 004 eq. 2-3 (docs/design/core.md#subset-mechanism). For a domain of k values and budget eps:

    h = max(ceil(k / (1 + e^eps)), 1),      p = e^eps h / (k - h + e^eps h).

With probability p the report is {x} plus h - 1 values drawn without replacement from the k - 1
other values; otherwise it is h values drawn without replacement from those k - 1 others. Hence

    P(S | x) = p / C(k-1, h-1)      if x in S,
             = (1 - p) / C(k-1, h)  otherwise,

and the ratio of the two is p (k - h) / ((1 - p) h) = e^eps exactly (paper 004 eq. 25-28). A given
other value is in S with probability q = (h - p) / (k - 1). With h = 1 this is k-RR (``GRR``).

Reports are an int32 array of shape (n, h): row i holds the h chosen codes in *ascending* order (a
set: the order of a row carries no information about the input), or h copies of ``MISSING`` where
the input was missing.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from reidrisk._compat import renamed_keywords
from reidrisk.mechanisms.base import (
    Mechanism,
    MechanismError,
    as_generator,
    check_codes,
    check_integer,
    check_whole_rows,
    report_matrix,
)
from reidrisk.schema import MISSING

_CHUNK_CELLS = 1 << 22  # rows per chunk = _CHUNK_CELLS // k: bounds the (rows, k) scratch arrays
_MAX_ENUMERATED = 2_000_000


def _log_comb(n: int, r: int) -> float:
    """log C(n, r) for 0 <= r <= n."""
    return float(gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1))


def subset_size(epsilon: float, k: int) -> int:
    """h = max(ceil(k / (1 + e^eps)), 1) of paper 004 eq. 3.

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    k : int
        Domain size.

    Returns
    -------
    int
        h.
    """
    return max(math.ceil(k / (1.0 + math.exp(epsilon))), 1)


def _floyd_masks(x: np.ndarray, include: np.ndarray, k: int, h: int, rng: np.random.Generator):
    """Membership masks (c, k) of the subsets by Floyd's sampling algorithm, on all rows at once.

    Row r draws ``h - include[r]`` values uniformly without replacement from the k - 1 values other
    than ``x[r]`` (others index i <-> value (x + 1 + i) mod k), then adds x[r] if ``include[r]``.
    Floyd's algorithm: for j = m - t .. m - 1 draw u uniform on {0..j}; take u unless already taken,
    else take j. It costs O(h) vector operations over the rows (fast when h is small).
    """
    c = x.size
    m = k - 1
    mask = np.zeros(c * k, dtype=bool)
    start = np.arange(c, dtype=np.int64) * k
    off = x + 1
    late = include  # rows that draw h - 1 values start one step later
    for it in range(h):
        j = m - h + it
        u = rng.integers(0, j + 1, size=c)
        u += off
        u %= k
        u += start
        uj = (off + j) % k + start
        taken = mask[u]
        np.copyto(u, uj, where=taken)
        if it == 0:
            u = u[~late]
        mask[u] = True
    mask[start + x] = include
    return mask.reshape(c, k)


def _key_masks(x: np.ndarray, include: np.ndarray, k: int, h: int, rng: np.random.Generator):
    """Membership masks (c, k) of the subsets by random keys: the h (or h - 1) smallest keys win.

    Every value gets an i.i.d. uniform integer key; x's key is set to the maximum so that it is
    never among the winners. Rows where the key at the selection boundary is tied are drawn again,
    which makes the selection exactly uniform (ties are symmetric in the values). O(k) per row.
    """
    c = x.size
    dtype = np.uint16 if k <= 4096 else np.uint32
    top = np.iinfo(dtype).max
    keys = rng.integers(0, top, size=(c, k), dtype=dtype, endpoint=True)
    rows = np.arange(c)
    keys[rows, x] = top
    part = np.partition(keys, h - 1, axis=1)
    kth = part[:, h - 1]  # h-th smallest key
    above = part[:, h:].min(axis=1)  # (h+1)-th smallest (h <= k - 1)
    # exclude rows take the h smallest keys (x's key is the largest, so x is not among them unless
    # tied at the boundary); include rows take the h - 1 smallest, then x itself
    thr = kth.copy()
    tie = kth == above
    if h >= 2:
        below = part[:, : h - 1].max(axis=1)  # (h-1)-th smallest
        thr[include] = below[include]
        tie[include] = below[include] == kth[include]
    mask = keys <= thr[:, None]
    if h == 1:
        tie[include] = False
        mask[include] = False
    mask[rows, x] = include
    if tie.any():
        redo = np.flatnonzero(tie)
        mask[redo] = _key_masks(x[redo], include[redo], k, h, rng)
    return mask


@renamed_keywords(method="sampler")
def sample_subsets(
    x: np.ndarray,
    include: np.ndarray,
    k: int,
    h: int,
    rng: np.random.Generator,
    sampler: str = "auto",
) -> np.ndarray:
    """Sorted h-subsets (c, h) int32: x plus h - 1 uniform others where ``include``, else h others.

    Both samplers are exact; memory is bounded by working in row chunks.

    Parameters
    ----------
    x : numpy.ndarray (c,)
        The true codes in 0..k-1.
    include : numpy.ndarray (c,) bool
        Where the subset contains ``x``.
    k : int
        Domain size.
    h : int
        Subset size.
    rng : numpy.random.Generator
        The generator to draw from.
    sampler : {"auto", "floyd", "keys"}
        (formerly ``method``) "floyd" (O(h) vector steps, for small h), "keys" (O(k) per row, for
        large h) or "auto" (Floyd when h <= k / 5 or k <= 64, where it is the faster).

    Returns
    -------
    numpy.ndarray (c, h) int32
        The subsets, ascending within rows.
    """
    x = np.asarray(x, dtype=np.int64)
    include = np.asarray(include, dtype=bool)
    n = x.size
    method = sampler
    if method == "auto":
        method = "floyd" if 5 * h <= k or k <= 64 else "keys"
    samplers = {"floyd": _floyd_masks, "keys": _key_masks}
    if method not in samplers:
        raise MechanismError(
            f"unknown sampler {method!r}; choose 'auto', 'floyd' or 'keys'"
        )
    draw = samplers[method]
    out = np.empty((n, h), dtype=np.int32)
    chunk = max(1, _CHUNK_CELLS // k)
    for s in range(0, n, chunk):
        mask = draw(x[s : s + chunk], include[s : s + chunk], k, h, rng)
        # flatnonzero walks each row in ascending order: every row comes out sorted
        flat = np.flatnonzero(mask).reshape(-1, h)
        flat -= (np.arange(flat.shape[0], dtype=np.int64) * k)[:, None]
        out[s : s + chunk] = flat
    return out


class Subset(Mechanism):
    """Paper 004's subset mechanism (eq. 2-3). Reports: int32 (n, h), ascending codes per row,
    a row of ``MISSING`` for a missing input.

    Parameters
    ----------
    epsilon, k
        As in ``Mechanism``.
    h : int, optional
        Subset size, an integer in 1..k-1; ``None`` takes paper 004 eq. 3 (``subset_size``).
    """

    name = "subset"
    report_layout = "codes"

    def __init__(self, epsilon: float, k: int, h: int | None = None) -> None:
        super().__init__(epsilon, k)
        if h is None:
            h = subset_size(self.epsilon, self.k)
        self.h = check_integer(h, "subset size h", 1, self.k - 1)
        e = math.exp(self.epsilon)
        self._p = e * self.h / (self.k - self.h + e * self.h)

    def __repr__(self) -> str:
        return f"Subset(epsilon={self.epsilon:g}, k={self.k}, h={self.h})"

    @property
    def p(self) -> float:
        """Probability that the true value is in the report (paper 004 eq. 3)."""
        return self._p

    @property
    def p_support(self) -> float:
        return self._p

    @property
    def q_support(self) -> float:
        return (self.h - self._p) / (self.k - 1)

    def params(self) -> dict:
        return {**super().params(), "h": self.h}

    # ---- client ----------------------------------------------------------------------------------
    @renamed_keywords(method="sampler")
    def perturb(self, values, rng=None, sampler: str = "auto"):
        """Randomize codes (n,) into sorted h-subsets (n, h); ``MISSING`` rows pass through.

        Parameters
        ----------
        values, rng
            As in ``Mechanism.perturb``.
        sampler : {"auto", "floyd", "keys"}
            (formerly ``method``) as in ``sample_subsets``.

        Returns
        -------
        numpy.ndarray (n, h) int32
            The reports (rows of ``MISSING`` where missing).
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        out = np.full((x.size, self.h), MISSING, dtype=np.int32)
        present = np.flatnonzero(x != MISSING)
        include = rng.random(present.size) < self._p
        out[present] = sample_subsets(x[present], include, self.k, self.h, rng, sampler)
        return out

    # ---- channel ---------------------------------------------------------------------------------
    def log_prob_in(self) -> float:
        """log P(S | x) for a set S that contains x.

        Returns
        -------
        float
            The log probability.
        """
        return math.log(self._p) - _log_comb(self.k - 1, self.h - 1)

    def log_prob_out(self) -> float:
        """log P(S | x) for a set S that does not contain x.

        Returns
        -------
        float
            The log probability.
        """
        return math.log1p(-self._p) - _log_comb(self.k - 1, self.h)

    def log_prob(self, reports):
        """Exact log P(S_i | x), shape (n, k); rows of missing reports are 0.

        Parameters
        ----------
        reports : numpy.ndarray (n, h)
            Subset reports: h distinct codes a row, a row of ``MISSING`` where missing.

        Returns
        -------
        numpy.ndarray (n, k)
            ``log P(S_i | X = x)``.
        """
        y = self._as_reports(reports)
        n = y.shape[0]
        lp = np.empty((n, self.k))
        step = max(1, (1 << 18) // self.k)  # row blocks that stay in cache while scattering
        offsets = (np.arange(step, dtype=np.int64) * self.k)[:, None]
        for s in range(0, n, step):
            block, yb = lp[s : s + step], y[s : s + step]
            block.fill(self.log_prob_out())
            flat = yb + offsets[: len(yb)]
            present = yb[:, 0] != MISSING
            block.reshape(-1)[flat[present].ravel()] = self.log_prob_in()
            block[~present] = 0.0
        return lp

    def enumerate_outputs(self):
        """All C(k, h) subsets as an int32 array (C(k, h), h), ascending within rows.

        Returns
        -------
        numpy.ndarray (C(k, h), h) int32
            The reports.
        """
        count = math.comb(self.k, self.h)
        if count > _MAX_ENUMERATED:
            raise NotImplementedError(
                f"subset has C({self.k}, {self.h}) = {count} outputs; too many to enumerate"
            )
        combos = itertools.chain.from_iterable(itertools.combinations(range(self.k), self.h))
        return np.fromiter(combos, dtype=np.int32, count=count * self.h).reshape(count, self.h)

    def max_log_ratio(self):
        """log P(S|x) / P(S|x') for x in S, x' not in S: exactly epsilon (paper 004 eq. 25-28).

        Returns
        -------
        float
            epsilon.
        """
        return self.log_prob_in() - self.log_prob_out()

    # ---- server ----------------------------------------------------------------------------------
    def _as_reports(self, reports) -> np.ndarray:
        return report_matrix(reports, self.h, "subset", f"h = {self.h} codes per report")

    def support(self, reports):
        """CSR float32 (n, k): 1 for each of a report's h values; missing rows are empty.

        Parameters
        ----------
        reports : numpy.ndarray (n, h)
            Subset reports: h distinct codes a row, a row of ``MISSING`` where missing.

        Returns
        -------
        scipy.sparse.csr_matrix (n, k) float32
            The reports' membership matrix.
        """
        y = self._as_reports(reports)
        n = y.shape[0]
        present = y[:, 0] != MISSING if n else np.zeros(0, dtype=bool)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.where(present, self.h, 0), out=indptr[1:])
        indices = y[present].ravel().astype(np.int32)
        data = np.ones(indices.size, dtype=np.float32)
        return sp.csr_matrix((data, indices, indptr), shape=(n, self.k))

    def is_missing(self, reports):
        y = self._as_reports(reports)
        return y[:, 0] == MISSING

    def validate_reports(self, reports):
        """Check shape (n, h), integer codes in the domain, no repeated value within a row, and rows
        that are either wholly ``MISSING`` or wholly present. Returns the reports as int32.

        Parameters
        ----------
        reports : numpy.ndarray (n, h)
            Subset reports: h distinct codes a row, a row of ``MISSING`` where missing.

        Returns
        -------
        numpy.ndarray (n, h) int32
            The reports.

        Raises
        ------
        MechanismError
            Naming the first bad row.
        """
        y = self._as_reports(reports)
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise MechanismError(f"subset reports must be integer codes, got dtype {y.dtype}")
        bad = (y < MISSING) | (y >= self.k)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise MechanismError(
                f"subset report row {i} holds {y[i, j]}, outside the domain 0..{self.k - 1} "
                f"(or {MISSING} for missing); drop or re-collect that report"
            )
        miss = y == MISSING
        check_whole_rows(miss, y, "subset", MISSING,
                         "a row must be wholly missing or hold h distinct codes")
        if self.h > 1 and y.shape[0]:
            srt = np.sort(y, axis=1)
            dup = ((srt[:, 1:] == srt[:, :-1]) & ~miss[:, 1:]).any(axis=1)
            if dup.any():
                i = int(np.flatnonzero(dup)[0])
                raise MechanismError(
                    f"subset report row {i} = {y[i].tolist()} repeats a value; a report holds "
                    f"h={self.h} distinct codes"
                )
        return y.astype(np.int32, copy=False)
