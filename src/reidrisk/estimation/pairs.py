"""Pairwise distributions from LDP reports (paper 004 Section 4.2.2, eq. 12-13).

Design: docs/design/core.md#pair-estimation.

Counting. Let ``B_j`` be the (n, f_j) 0/1 support matrix of attribute j (``Mechanism.support``; zero
rows where j is missing) and ``B = [B_1 .. B_g]``. Then ``W_jj' = B_j^T B_j'`` counts, among the
reports having both attributes, those whose set for j contains k and whose set for j' contains k'
(eq. 12-13): ONE Gram matrix ``B^T B`` holds every pair as a block, and its diagonal blocks hold the
single-attribute counts. The number of reports having both attributes is ``P^T P`` for the (n, g)
presence matrix P. Both products are computed exactly (integer counts): row chunks of B are written
straight from the reports and added up by float32 symmetric rank-k updates, flushed to int64 before
any count could pass 2^24.

Estimation. The randomizations of two attributes are independent given the true values, so the pair
channel is the Kronecker product of the two single channels: ``E[W] = M_j Z M_j'^T`` with Z the true
(f_j, f_j') count table. For pure oracles ``M = a I + q 1 1^T`` (``a = p - q``), so

* inversion: ``Z = M_j^{-1} W M_j'^{-1}`` with ``M^{-1} X = (X - q/(a + f q) 1 1^T X) / a``;
* EM (eq. 8-11 applied to the pair channel): ``D = W / (M_j Z M_j'^T)``,
  ``Z <- Z * (M_j^T D M_j') / outer(colsum_j, colsum_j')``,

all in O(f_j f_j') per pair and step, without forming a Kronecker product or a matrix product.
Pairs with equal shapes (up to transposition) are stacked and iterated together as 3-D arrays;
each pair stops on its own rule (see ``reidrisk.estimation.frequency`` for ``stop="noise"``). A
mechanism whose support matrix is not of the p/q form falls back to batched dense products
``M_j Z M_j'^T`` and ``np.linalg.solve`` for the inversion.

Shrinkage (``estimate_pairs(..., shrink=True)``, the default). Every table but the raw inversion
keeps only a share of its departure from the independence table of the (shrunk) marginals, the
weight of ``interaction_weights``, which charges only the noise of the interaction
(``interaction_noise``): docs/design/core.md#pair-shrinkage, measured in
docs/results/pair_shrink.md.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from reidrisk._compat import renamed_attribute, renamed_keywords
from reidrisk.estimation.em import EMResult
from reidrisk.estimation.frequency import (
    DEFAULT_MAX_ITER,
    FACE_TOL,
    SURE_SE_MAX,
    EstimationError,
    FrequencyEstimate,
    _Channels,
    _check_method,
    _em_tables,
    _marginals_from_counts,
    _mech_channel,
    _per_report_noise,
    _weight_inputs,
    norm_sub,
    shrink_shares,
)
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING

PAIR_METHODS = ("em", "inversion", "norm_sub")

DENSE_DENSITY = 0.05
"""Above this fraction of non-zeros in B the Gram matrix is one dense BLAS product, else sparse."""

_CHUNK_ROWS_MAX = 1 << 23  # < 2^24: every float32 partial count in a chunk is an exact integer
_CHUNK_BYTES = 4 << 20


# ---------------------------------------------------------------------------------------------
# counting
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairCounts:
    """All single and pair support counts of a set of records, as one Gram matrix.

    Parameters
    ----------
    gram : numpy.ndarray (F, F) of int64
        ``B^T B`` with ``F = sum f_j``; block (j, j') is ``W_jj'``.
    offsets : numpy.ndarray (g + 1,) of int64
        Attribute j owns rows and columns ``offsets[j]:offsets[j+1]``.
    n_pair : numpy.ndarray (g, g) of int64
        Reports having both attributes (diagonal: having attribute j).
    n : int
        The number of records.
    dense : bool
        Whether the dense (BLAS) path was used.
    """

    gram: np.ndarray
    offsets: np.ndarray
    n_pair: np.ndarray
    n: int
    dense: bool

    def __post_init__(self) -> None:
        for name in ("gram", "offsets", "n_pair"):
            a = np.array(getattr(self, name), dtype=np.int64, copy=True)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def g(self) -> int:
        return self.offsets.size - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def _check(self, j: int) -> int:
        if isinstance(j, bool) or int(j) != j or not 0 <= int(j) < self.g:
            raise EstimationError(
                f"attribute index must be an integer in 0..{self.g - 1}, got {j!r}"
            )
        return int(j)

    def block(self, j: int, jp: int) -> np.ndarray:
        """The (f_j, f_j') pair counts ``W_jj'`` of two attributes (eq. 12-13).

        Parameters
        ----------
        j, jp : int
            The attributes' indices, in 0..g-1 (j == jp gives the diagonal block, whose
            diagonal is ``w_j``).

        Returns
        -------
        numpy.ndarray (f_j, f_j') of int64
            A read-only view of the Gram block.

        Raises
        ------
        EstimationError
            For an index that is not an integer in 0..g-1.
        """
        j, jp = self._check(j), self._check(jp)
        o = self.offsets
        return self.gram[o[j]:o[j + 1], o[jp]:o[jp + 1]]

    def counts(self, j: int) -> np.ndarray:
        """The single-attribute support counts ``w_j`` (eq. 5).

        Parameters
        ----------
        j : int
            The attribute's index, in 0..g-1.

        Returns
        -------
        numpy.ndarray (f_j,) of int64
            The diagonal of the Gram block (j, j), a copy.
        """
        return np.diag(self.block(j, j)).copy()

    def n_present(self, j: int, jp: int | None = None) -> int:
        """The number of reports having attribute j (and j', when given).

        Parameters
        ----------
        j : int
            The attribute's index, in 0..g-1.
        jp : int, optional
            A second attribute's index.

        Returns
        -------
        int
            ``n_pair[j, jp]`` (``n_pair[j, j]`` without ``jp``).
        """
        j = self._check(j)
        return int(self.n_pair[j, j if jp is None else self._check(jp)])

    def __add__(self, other: PairCounts) -> PairCounts:
        """The counts of two disjoint sets of records together. Every count is a sum over records
        (``B^T B = sum_i b_i b_i^T``, likewise ``P^T P`` and n), so partitions of a batch add up
        exactly (int64) to the counts of the whole batch. ``dense``: whether both were dense."""
        if not isinstance(other, PairCounts):
            return NotImplemented
        if not np.array_equal(self.offsets, other.offsets):
            raise EstimationError(
                f"cannot add counts over domains {self.sizes.tolist()} and "
                f"{other.sizes.tolist()}; count every partition with the same schema")
        return PairCounts(self.gram + other.gram, self.offsets, self.n_pair + other.n_pair,
                          self.n + other.n, self.dense and other.dense)

    @classmethod
    def zeros(cls, sizes) -> PairCounts:
        """The counts of no records, the start of a sum over partitions.

        Parameters
        ----------
        sizes : sequence of int
            The attributes' domain sizes.

        Returns
        -------
        PairCounts
            Zero counts over those domains, ``n = 0``, ``dense = True`` (the neutral element of
            ``+``).
        """
        sizes = [int(f) for f in sizes]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        F, g = int(offsets[-1]), len(sizes)
        return cls(np.zeros((F, F), np.int64), offsets, np.zeros((g, g), np.int64), 0, True)


def _row_writer(mech, reports):
    """How the support rows of one attribute are written into a chunk buffer, and their count.

    Returns ``(fill, nnz, present, h)``: ``fill(buf, start, stop, off)`` sets the support of reports
    ``start:stop`` into rows ``off:off + f``, columns ``0:stop - start`` of the zeroed float32
    buffer ``buf`` (B^T of the chunk: one row per category plus a spare last row); ``nnz``: the
    number of ones of the whole support matrix (for unary encodings its expectation); ``present``
    (n,) bool: the reports that are not missing; ``h``: the number of values every present report
    supports when it is fixed (GRR 1, subset h), else None. Reports whose mechanism names their
    ``report_layout`` (GRR, subset, unary encodings as arrays or ``PackedBits``) are written
    straight from the reports -- a code is the row of its one, a bit is the entry -- and any other
    mechanism's through its own ``support`` of the chunk's rows, so no (n, f) support matrix of
    the whole batch is built.
    """

    layout = mech.report_layout
    codes = None
    if layout == "code" and isinstance(reports, np.ndarray) and reports.ndim == 1:
        codes = reports[:, None]
    elif layout == "codes" and isinstance(reports, np.ndarray) \
            and reports.ndim == 2:
        codes = reports
    if codes is not None:
        present = codes[:, 0] != MISSING
        nnz = int(np.count_nonzero(present)) * codes.shape[1]

        def fill(buf, start, stop, off):
            _scatter_codes(buf, codes[start:stop], off, mech.k)
        return fill, nnz, present, int(codes.shape[1])
    packed = hasattr(reports, "unpack")
    if layout == "bits" and (
            packed or isinstance(reports, np.ndarray) and reports.ndim == 2):
        # each bit is 1 with probability p or q, so a present report sets about p + (k - 1) q of
        # them: the expectation decides dense or sparse without reading every bit
        present = ~np.asarray(reports.missing if packed else mech.is_missing(reports))
        nnz = int(present.sum() * (mech.p_support + (mech.k - 1) * mech.q_support))

        def fill(buf, start, stop, off):
            y = reports.unpack(start, stop) if packed else reports[start:stop]
            view = buf[off:off + y.shape[1], : stop - start]
            view[...] = y.T  # 0/1 bits; a missing row holds MISSING_BITS ...
            # ... and counts nothing: the chunk's slice of the mask, cast as the product goes (no
            # float copy of the whole mask, an n x 4-byte allocation per attribute per call)
            np.multiply(view, present[start:stop], out=view)
        return fill, nnz, present, None
    support = mech.support(reports)  # any other mechanism: its own support matrix
    if sp.issparse(support):
        support = support.tocsr()
        if not support.has_canonical_format:  # duplicates add up, as in toarray()
            support = support.copy()
            support.sum_duplicates()
        nnz = int(support.nnz)
    else:
        nnz = int(np.count_nonzero(support))
    present = ~np.asarray(mech.is_missing(reports), dtype=bool)
    return functools.partial(_fill_support, support), nnz, present, None


def _scatter_codes(buf, codes, off: int, f: int) -> None:
    """Ones at rows ``off + codes`` of the columns of ``buf`` (codes (m, h) in 0..f-1, one row of
    codes per column); a ``MISSING`` code (-1) sets the spare last row instead, through the row
    lookup's last entry (a negative index counts from the end), so no mask is taken."""
    col = _row_lookup(off, f, buf.shape[0], buf.shape[1])[codes]
    col += _column_index(codes.shape[0])
    buf.reshape(-1)[col.ravel()] = 1.0


@functools.lru_cache(maxsize=1024)
def _row_lookup(off: int, f: int, height: int, stride: int) -> np.ndarray:
    """Flat offsets of rows ``off .. off + f - 1`` of a (height, stride) buffer, then of its last
    row (where a ``MISSING`` code, index -1, lands); read-only."""
    lut = np.arange(off, off + f + 1, dtype=np.intp)
    lut[-1] = height - 1
    lut *= stride
    lut.setflags(write=False)
    return lut


@functools.lru_cache(maxsize=8)
def _column_index(m: int) -> np.ndarray:
    """(m, 1) column numbers 0..m-1 (read-only)."""
    r = np.arange(m, dtype=np.intp)[:, None]
    r.setflags(write=False)
    return r


def _fill_support(support, buf, start, stop, off) -> None:
    """Rows ``start:stop`` of a support matrix (dense or CSR) into the chunk buffer (B^T)."""
    part = support[start:stop]
    if not sp.issparse(part):
        buf[off:off + part.shape[1], : stop - start] = part.T
        return
    r = np.repeat(np.arange(stop - start), np.diff(part.indptr))
    buf[off + part.indices, r] = part.data


def _fill_presence(present, buf, start, stop, off) -> None:
    """Row ``off`` of the chunk buffer: which of reports ``start:stop`` are present (0/1)."""
    buf[off, : stop - start] = present[start:stop]


def _exact_gram(fills: list, sizes: list, n: int) -> np.ndarray:
    """``B^T B`` (F, F) int64 for B the row-wise concatenation of the attributes' supports
    (``fills`` from ``_row_writer``), exactly.

    Row chunks of B, of at most ``_CHUNK_BYTES``, are written transposed (one row per category:
    each attribute's block is then a few long rows, written without short inner loops) into one
    reused float32 buffer and added into a float32 accumulator by the BLAS's symmetric rank-k
    update (``ssyrk``: ``C += B_c^T B_c``, upper triangle, half the work of a general product).
    The accumulator is flushed into int64 before any entry could pass 2^24 (up to which float32
    holds every integer exactly), i.e. every ``_CHUNK_ROWS_MAX`` rows. The buffer has one spare
    row (where missing codes go), which the update includes and the result drops.
    """
    from scipy.linalg.blas import ssyrk

    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    F = int(offs[-1])
    width = F + 1
    G = np.zeros((F, F), dtype=np.int64)
    if n == 0 or F == 0:
        return G
    rows = int(max(1, min(_CHUNK_ROWS_MAX, _CHUNK_BYTES // (4 * width), n)))
    buf = np.empty((width, rows), dtype=np.float32)
    acc = np.zeros((width, width), dtype=np.float32, order="F")
    since = 0
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        m = stop - start
        if since + m > _CHUNK_ROWS_MAX:
            G += np.rint(acc[:F, :F]).astype(np.int64)
            acc[:] = 0.0
            since = 0
        buf.fill(0.0)
        for fill, off in zip(fills, offs[:-1]):
            fill(buf, start, stop, int(off))
        Bt = buf if m == rows else np.ascontiguousarray(buf[:, :m])  # the last, shorter chunk
        # C += A^T A with A = B_c = Bt^T (F-contiguous view of the C-contiguous buffer: no copy)
        acc = ssyrk(1.0, Bt.T, beta=1.0, c=acc, trans=1, lower=0, overwrite_c=1)
        since += m
    G += np.rint(acc[:F, :F]).astype(np.int64)
    upper = np.triu(G)
    return upper + np.triu(upper, 1).T


def pair_counts(record_reports: RecordReports, dense: bool | None = None) -> PairCounts:
    """Every pair's support counts ``W_jj'`` as blocks of one Gram matrix.

    See docs/design/core.md#pair-estimation. Cost O(n F^2) dense, O(n s^2) sparse with s
    supported values per record. No per-record Python work.

    The dense product writes row chunks of B straight from the reports (``_row_writer``) and adds
    them up with the BLAS's symmetric rank-k update (``_exact_gram``): on one thread about as fast
    as a bare float32 ``B.T @ B`` of the whole one-hot matrix (``docs/results/scale.md``) while
    holding only one chunk of B. Counts are exact integers either way.

    Parameters
    ----------
    record_reports : RecordReports
        The reports of n records over g attributes.
    dense : bool, optional
        Force the dense (``True``) or sparse (``False``) product; by default dense when more
        than ``DENSE_DENSITY`` of the entries of B are non-zero (OUE/RAPPOR/OLH, small domains),
        else a sparse ``B^T @ B`` (GRR/subset over large domains, few attributes per report).

    Returns
    -------
    PairCounts
        The Gram matrix, the attributes' offsets, the reports having each pair and n.
    """
    mechs, reports = record_reports.mechanisms, record_reports.reports
    n = record_reports.n
    sizes = [int(m.k) for m in mechs]
    F = int(sum(sizes))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    writers = [_row_writer(m, r) for m, r in zip(mechs, reports)]
    if dense is None:
        nnz = sum(w[1] for w in writers)
        dense = n > 0 and nnz > DENSE_DENSITY * n * F
    if dense:
        gram = _exact_gram([w[0] for w in writers], sizes, n)
    else:
        supports = record_reports.supports()
        B = sp.hstack([sp.csr_matrix(s, dtype=np.float64) for s in supports], format="csr")
        B.data[:] = 1.0  # membership, whatever the stored 0/1 dtype was
        gram = np.rint((B.T @ B).toarray()).astype(np.int64)
    fixed = [w[3] for w in writers]
    if writers and all(h is not None for h in fixed):
        # every present report supports exactly h_j values of attribute j (GRR, subset), so the
        # block (j, j') of B^T B sums to h_j h_j' times the reports having both: P^T P exactly
        h = np.array(fixed, dtype=np.int64)
        starts = offsets[:-1]
        sums = np.add.reduceat(np.add.reduceat(gram, starts, axis=0), starts, axis=1)
        n_pair = sums // np.outer(h, h)
    else:
        # P^T P by the same chunked update, each attribute's presence written as one row of the
        # chunk straight from its mask (no (n, g) presence matrix of the whole batch)
        n_pair = _exact_gram([functools.partial(_fill_presence, w[2]) for w in writers],
                             [1] * len(writers), n)
    return PairCounts(gram, offsets, n_pair, n, bool(dense))


# ---------------------------------------------------------------------------------------------
# structured pair channel: M = a I + q 1 1^T on both sides, batched over a leading axis
# ---------------------------------------------------------------------------------------------
def _as_stack(W) -> tuple[np.ndarray, bool]:
    W = np.asarray(W, dtype=np.float64)
    if W.ndim not in (2, 3):
        raise EstimationError(f"pair counts must be (f1, f2) or (P, f1, f2), got shape {W.shape}")
    return (W[None], True) if W.ndim == 2 else (W, False)


def invert_tables(W, a1, q1, a2, q2) -> np.ndarray:
    """Unbiased inversion of pair counts: ``Z = M_1^{-1} W M_2^{-1}`` in closed form.

    With ``M_i = a_i I + q_i 1 1^T``, ``M^{-1} X = (X - q/(a + f q) 1 1^T X) / a``. ``E[Z]`` is
    the true count table; for GRR/subset ``sum Z`` equals the number of reports exactly.

    Parameters
    ----------
    W : array_like (P, f1, f2) or (f1, f2)
        Pair support counts.
    a1, q1 : float or array_like (P,)
        The first attribute's channel parameters, ``a_1 = p_1 - q_1`` and ``q_1``.
    a2, q2 : float or array_like (P,)
        The second attribute's.

    Returns
    -------
    numpy.ndarray
        The estimated count tables, shaped like ``W`` (entries may be negative).

    Raises
    ------
    EstimationError
        For ``W`` that is neither 2-D nor 3-D.
    """
    W3, squeeze = _as_stack(W)
    P, f1, f2 = W3.shape
    Z = _Channels.structured(a1, q1, a2, q2, f1, f2, P).inverse(W3)
    return Z[0] if squeeze else Z


def em_tables(W, n, a1, q1, a2, q2, stop="noise", max_iter: int = DEFAULT_MAX_ITER,
              init=None) -> EMResult:
    """EM for pair tables through the Kronecker pair channel (paper 004 eq. 8-13, corrected).

    Iterates ``D = W / (M_1 Z M_2^T)``, ``Z <- Z * (M_1^T D M_2) / outer(c_1, c_2)`` on all
    tables at once, with ``c_i = a_i + f_i q_i`` the column sums and every product in O(f1 f2),
    by the one engine (``reidrisk.estimation.em``); each table stops on its own rule, with
    ``f1 f2 - 1`` free parameters (docs/design/core.md#count-em-correction).

    Parameters
    ----------
    W : array_like (P, f1, f2) or (f1, f2)
        Pair support counts.
    n : float or array_like (P,)
        Reports having both attributes (the scale of the start).
    a1, q1 : float or array_like (P,)
        The first attribute's channel parameters, ``a_1 = p_1 - q_1`` and ``q_1``.
    a2, q2 : float or array_like (P,)
        The second attribute's.
    stop, max_iter
        As in ``em_counts``.
    init : array_like, optional
        A positive start shaped like ``W``, any scale (rescaled to n); default uniform.

    Returns
    -------
    EMResult
        ``estimate`` (counts) shaped like ``W``; ``iterations`` and ``converged`` (P,), or
        scalars for a 2-D ``W``.
    """
    W3, squeeze = _as_stack(W)
    P, f1, f2 = W3.shape
    ch = _Channels.structured(a1, q1, a2, q2, f1, f2, P)
    init3 = None if init is None else np.asarray(init, dtype=np.float64).reshape(W3.shape)
    fit = _em_tables(W3, n, ch, stop=stop, max_iter=max_iter, init=init3)
    return fit[0] if squeeze else fit


# ---------------------------------------------------------------------------------------------
# estimates of every pair
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PairEstimates(Mapping):
    """Estimated pair distributions: a read-only mapping ``(j, j') -> (f_j, f_j')`` table.

    Looking up ``(j', j)`` returns the transpose; ``table(a, b)`` accepts names or indices.

    Parameters
    ----------
    tables : dict
        ``tables[(j, j')]`` (j < j'): the (f_j, f_j') table, probabilities summing to 1 (for
        ``"inversion"`` the raw unbiased estimate, which may be negative).
    n_present : dict
        Per pair, the reports having both attributes.
    estimator : str
        The estimator used (formerly ``method``).
    iterations : dict
        Per pair, the EM steps taken (0 for closed forms).
    converged : dict
        Per pair, whether the stopping rule was met (True for closed forms).
    marginals : tuple of FrequencyEstimate
        The single-attribute estimates (the EM's starting point).
    names : tuple of str
        The attribute names in schema order.
    shrink : dict
        Per pair, the share of the table's departure from the independence table of the marginals
        kept by the default shrinkage (``estimate_pairs``; 1 = not shrunk; empty when
        ``estimate_pairs(..., shrink=False)``).
    """

    tables: dict
    n_present: dict
    estimator: str
    iterations: dict
    converged: dict
    marginals: tuple[FrequencyEstimate, ...]
    names: tuple[str, ...] = field(default=())
    shrink: dict = field(default_factory=dict)

    method = renamed_attribute("estimator", "method")

    def __getitem__(self, key) -> np.ndarray:
        j, jp = key
        if (j, jp) in self.tables:
            return self.tables[(j, jp)]
        if (jp, j) in self.tables:
            return self.tables[(jp, j)].T
        raise KeyError(key)

    def __iter__(self):
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def __contains__(self, key) -> bool:
        try:
            j, jp = key
        except (TypeError, ValueError):
            return False
        return (j, jp) in self.tables or (jp, j) in self.tables

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def table(self, a: int | str, b: int | str) -> np.ndarray:
        """The table of two attributes given by index or name, in the order asked.

        Parameters
        ----------
        a, b : int or str
            The attributes' indices or names.

        Returns
        -------
        numpy.ndarray (f_a, f_b)
            Their estimated table (the transpose of the stored one when ``a`` comes after ``b``).

        Raises
        ------
        KeyError
            For a name that is not an attribute's, or a pair that was not estimated.
        """
        idx = {nm: i for i, nm in enumerate(self.names)}
        ja = idx[a] if isinstance(a, str) else a
        jb = idx[b] if isinstance(b, str) else b
        return self[(ja, jb)]


def _normalize_pairs(pairs, g: int) -> list[tuple[int, int]]:
    if pairs is None:
        return [(j, jp) for j in range(g) for jp in range(j + 1, g)]
    out = set()
    for pr in pairs:
        try:
            j, jp = (int(x) for x in pr)
        except (TypeError, ValueError):
            raise EstimationError(f"pairs must be (j, j') index tuples, got {pr!r}") from None
        if j == jp or not (0 <= j < g and 0 <= jp < g):
            raise EstimationError(
                f"pair {pr!r} must name two different attributes among 0..{g - 1}"
            )
        out.add((min(j, jp), max(j, jp)))
    return sorted(out)


@renamed_keywords(method="estimator")
def estimate_pairs(record_reports: RecordReports, estimator: str = "em",
                   pairs: Iterable | None = None,
                   *, stop="noise", max_iter: int = DEFAULT_MAX_ITER,
                   counts: PairCounts | None = None, marginals: Sequence | None = None,
                   shrink: bool = True, start: Sequence[np.ndarray] | None = None
                   ) -> PairEstimates:
    """Estimate the distribution of every attribute pair (paper 004 Section 4.2.2, eq. 12-13).

    Each pair (j, j') uses only the ``n~_jj'`` reports having both attributes (eq. 13), through the
    Gram counts of ``pair_counts`` (docs/design/core.md#pair-estimation). A pair without reports
    having both attributes raises ``EstimationError`` naming it. Pairs with equal shapes are
    iterated together (one 3-D array per shape).

    Parameters
    ----------
    record_reports : RecordReports
        The reports of n records over g attributes.
    estimator : {"em", "inversion", "norm_sub"}
        (formerly ``method``)

        * ``"em"`` (default): ``em_tables`` started from the outer product of the marginal EM
          estimates (``marginals``, computed from the Gram diagonal when not given);
        * ``"inversion"``: ``invert_tables``, raw and unbiased (may be negative);
        * ``"norm_sub"``: the inversion projected onto ``{Z >= 0, sum Z = n~_jj'}``.
    pairs : iterable of (j, j'), optional
        Default: all j < j'.
    stop, max_iter
        As in ``em_counts``.
    counts : PairCounts, optional
        The Gram counts of ``pair_counts``, to reuse them.
    marginals : list of FrequencyEstimate, optional
        One marginal estimate per attribute, in schema order, used as they are: the EM starts from
        them and, with ``shrink``, the tables shrink toward their independence table. Default:
        computed from the Gram diagonal.
    start : list of numpy.ndarray, optional
        One probability vector per attribute to start the EM from instead of the marginal
        estimates' ``probs`` (the pair EM starts from their outer product).
    shrink : bool
        ``True`` (default): the marginals computed here are shrunk toward uniform
        (``reidrisk.estimation.frequency``, "Shrinkage toward uniform"), and every table but the
        raw inversion keeps only a share of its departure from the independence table of the
        marginals (``outer(p_j, p_j')``; the marginals given, or those computed here), with the
        weight of ``interaction_weights``: Stein's unbiased risk estimate charging the table's
        own noise in the interaction directions, or the estimated share of the pair inversion's
        dependence that is signal where that weight is too uncertain
        (docs/design/core.md#pair-shrinkage; measured in docs/results/pair_shrink.md).
        ``False``: the estimator as it is (for ``"em"`` the maximum-likelihood table).

    Returns
    -------
    PairEstimates
        The table of every pair asked for, with its reports, iterations, convergence and
        shrinkage weight, and the marginals.

    Raises
    ------
    EstimationError
        For an unknown estimator, a bad pair, counts of other attributes, marginals or start
        vectors not one per attribute of its domain size, or a pair never reported together.
    """
    method = _check_method(estimator, PAIR_METHODS)
    mechs = record_reports.mechanisms
    names = tuple(a.name for a in record_reports.schema)
    plist = _normalize_pairs(pairs, len(mechs))
    counts = _checked_counts(record_reports, counts)
    chans = [_mech_channel(m) for m in mechs]
    if marginals is None:
        marginals = _marginals_from_counts(
            [counts.counts(j) for j in range(len(mechs))],
            [counts.n_present(j) for j in range(len(mechs))],
            mechs, names, method, stop=stop, max_iter=max_iter, channels=chans, shrink=shrink)
    marginals = tuple(marginals)
    probs = _checked_vectors([getattr(m, "probs", None) for m in marginals], mechs, names,
                             "marginal estimates")
    if start is not None:
        start = _checked_vectors(start, mechs, names, "start vectors")
    _require_reported_together(counts, plist, names)
    p0 = None if method != "em" else (probs if start is None else start)
    fits = []
    for batch in _pair_batches(plist, counts, chans):
        T, its, conv = _estimate_batch(batch, method, p0, stop, max_iter)
        lams = np.ones(batch.size)
        if shrink and batch.structured and method != "inversion":
            T, lams = _shrink_batch(batch, T, mechs, marginals)
        fits.append((batch.pairs, batch.npair, T, its, conv, lams))  # the counts are let go
    return _pair_estimates(fits, plist, method, marginals, names, shrink)


def _checked_counts(record_reports: RecordReports, counts: PairCounts | None) -> PairCounts:
    """The Gram counts of the reports (``pair_counts``, eq. 12-13), or the ones given once they
    are checked to be over the reports' attributes and domains.

    Parameters
    ----------
    record_reports : RecordReports
        The reports.
    counts : PairCounts or None
        Counts computed earlier, or None to count now.

    Returns
    -------
    PairCounts
        Counts over the reports' g attributes with their domain sizes.

    Raises
    ------
    EstimationError
        Given counts of other attributes or other domain sizes.
    """
    mechs = record_reports.mechanisms
    if counts is None:
        counts = pair_counts(record_reports)
    if counts.g != len(mechs) or list(counts.sizes) != [m.k for m in mechs]:
        raise EstimationError("counts do not match the reports' attributes; recompute pair_counts")
    return counts


def _checked_vectors(vectors: Sequence, mechs, names: Sequence[str], what: str) -> list:
    """One probability vector per attribute (``estimate_pairs``'s marginals' ``probs`` or
    ``start``), checked to have its attribute's number of values and to be finite.

    Parameters
    ----------
    vectors : sequence
        The vectors, one per attribute (``None`` for a missing one).
    mechs : sequence of Mechanism
        The attributes' mechanisms (their domain sizes ``k``).
    names : sequence of str
        The attributes' names, for the messages.
    what : str
        What the vectors are, for the messages (``"marginal estimates"``, ``"start vectors"``).

    Returns
    -------
    list of numpy.ndarray
        The vectors as float arrays.

    Raises
    ------
    EstimationError
        Not one vector per attribute, or one of another size or not finite (naming the
        attribute).
    """
    vectors = list(vectors)
    if len(vectors) != len(mechs):
        raise EstimationError(f"{len(vectors)} {what} for {len(mechs)} attributes; "
                              "pass one per attribute")
    out = []
    for v, mech, name in zip(vectors, mechs, names):
        try:
            p = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            p = np.full(1, np.nan)
        if p.shape != (mech.k,) or not np.all(np.isfinite(p)):
            raise EstimationError(
                f"{what}: attribute {name!r} needs {mech.k} finite probabilities (one per value), "
                f"got {v!r}; pass one vector per attribute in schema order")
        out.append(p)
    return out


def _require_reported_together(counts: PairCounts, plist: list[tuple[int, int]],
                               names: tuple[str, ...]) -> None:
    """Refuse a pair that no report holds both attributes of: ``n~_jj' = 0`` in eq. 13 leaves its
    table without data (docs/design/core.md#pair-estimation).

    Parameters
    ----------
    counts : PairCounts
        The Gram counts.
    plist : list of (int, int)
        The pairs asked for, j < j'.
    names : tuple of str
        The attribute names, for the message.

    Raises
    ------
    EstimationError
        Naming the first pair never reported together and the fix.
    """
    for j, jp in plist:
        if counts.n_present(j, jp) == 0:
            raise EstimationError(
                f"attributes {names[j]!r} and {names[jp]!r} are never reported together, so their "
                "joint distribution cannot be estimated; collect reports with both or leave the "
                "pair out (pairs=...)"
            )


@dataclass(frozen=True)
class _PairBatch:
    """Pairs whose tables share one shape (f1, f2), stacked for one 3-D estimation.

    Parameters
    ----------
    pairs : list of (int, int)
        The pairs, each oriented (smaller domain, larger domain), so the key may have j > j'.
    W : numpy.ndarray (P, f1, f2) of float64
        Their Gram blocks ``W_jj'`` (eq. 12-13).
    npair : numpy.ndarray (P,) of float64
        ``n~_jj'``, the reports having both attributes.
    channels : _Channels
        The pair channels ``Z -> M_j Z M_j'^T``.
    structured : bool
        Whether every channel of the batch is of the p/q form (``M = a I + q 1 1^T``).
    """

    pairs: list[tuple[int, int]]
    W: np.ndarray
    npair: np.ndarray
    channels: _Channels
    structured: bool

    @property
    def size(self) -> int:
        """P, the number of pairs in the batch."""
        return len(self.pairs)


def _pair_batches(plist: list[tuple[int, int]], counts: PairCounts, chans: list):
    """The pairs grouped by table shape and channel form, each group as one ``_PairBatch``.

    Every pair is oriented as (smaller domain, larger domain), so that e.g. (2, 9) and (9, 2)
    tables share one batch (``_pair_estimates`` transposes them back). Yielded one batch at a
    time, so only one batch's counts are stacked at once (docs/design/core.md#pair-estimation).

    Parameters
    ----------
    plist : list of (int, int)
        The pairs, j < j'.
    counts : PairCounts
        The Gram counts.
    chans : list
        Each attribute's channel (``frequency._mech_channel``).

    Yields
    ------
    _PairBatch
        One per (f1, f2, structured), in the order the pairs first reach them.
    """
    fs = counts.sizes
    groups: dict[tuple[int, int, bool], list[tuple[int, int]]] = {}
    for j, jp in plist:
        o = (j, jp) if fs[j] <= fs[jp] else (jp, j)
        group = (int(fs[o[0]]), int(fs[o[1]]), chans[j].structured and chans[jp].structured)
        groups.setdefault(group, []).append(o)
    for (f1, f2, structured), prs in groups.items():
        J = np.array([pr[0] for pr in prs])
        K = np.array([pr[1] for pr in prs])
        W = np.stack([counts.block(j, jp) for j, jp in prs]).astype(np.float64)
        npair = counts.n_pair[J, K].astype(np.float64)
        ch = _Channels.of_pairs([chans[j] for j in J], [chans[j] for j in K], f1, f2, structured)
        yield _PairBatch(prs, W, npair, ch, structured)


def _estimate_batch(batch: _PairBatch, method: str, p0: list | None, stop, max_iter: int):
    """The batch's probability tables by the estimator, before any shrinkage.

    ``"em"``: the pair EM (eq. 8-11 through the Kronecker pair channel, ``_em_tables``) started
    from the outer product of the start vectors ``p0`` (clipped at 0; uniform where that is all
    zero), normalized to sum 1. ``"inversion"``: ``M_j^{-1} W M_j'^{-1} / n~_jj'``; ``"norm_sub"``:
    that inversion projected onto ``{Z >= 0, sum Z = n~_jj'}`` first
    (docs/design/core.md#pair-estimation).

    Parameters
    ----------
    batch : _PairBatch
        The pairs and their counts.
    method : {"em", "inversion", "norm_sub"}
        The estimator.
    p0 : list of numpy.ndarray or None
        Per attribute, the EM's start vector (None unless ``method == "em"``).
    stop, max_iter
        As in ``em_counts``.

    Returns
    -------
    T : numpy.ndarray (P, f1, f2)
        The tables.
    its : numpy.ndarray (P,) of int
        EM steps taken (0 for the closed forms).
    conv : numpy.ndarray (P,) of bool
        Whether each stopping rule was met (True for the closed forms).
    """
    prs, W, npair, ch = batch.pairs, batch.W, batch.npair, batch.channels
    if method == "em":
        assert p0 is not None
        init = np.stack([np.outer(np.clip(p0[j], 0, None), np.clip(p0[jp], 0, None))
                         for j, jp in prs])
        init[init.sum(axis=(1, 2)) <= 0] = 1.0
        fit = _em_tables(W, npair, ch, stop=stop, max_iter=max_iter, init=init)
        Z, its, conv = fit.estimate, np.asarray(fit.iterations), np.asarray(fit.converged)
        return Z / Z.sum(axis=(1, 2), keepdims=True), its, conv
    Z = ch.inverse(W)
    if method == "norm_sub":
        Z = norm_sub(Z.reshape(len(prs), -1), npair).reshape(Z.shape)
    return (Z / npair[:, None, None], np.zeros(len(prs), dtype=np.int64),
            np.ones(len(prs), dtype=bool))


def _shrink_batch(batch: _PairBatch, T: np.ndarray, mechs, marginals) -> tuple:
    """The batch's tables shrunk toward the independence table of their marginals, and the share
    of departure kept (docs/design/core.md#pair-shrinkage).

    ``T <- I + lam (T - I)`` with ``I = outer(p_j, p_j')`` the product of the two marginal
    estimates (shrunk toward uniform by default) and ``lam`` from ``interaction_weights``: the
    marginals come from far more information than the interaction (every report of each
    attribute, and they are shrunk by their own rule), so only the interaction's noise is charged.
    Structured channels only.

    Parameters
    ----------
    batch : _PairBatch
        The pairs and their counts (structured channels).
    T : numpy.ndarray (P, f1, f2)
        The estimator's tables (``_estimate_batch``).
    mechs : sequence of Mechanism
        Each attribute's mechanism.
    marginals : sequence of FrequencyEstimate
        Each attribute's estimate (its ``probs``, clipped at 0 and renormalized, give ``I``).

    Returns
    -------
    T : numpy.ndarray (P, f1, f2)
        The shrunk tables.
    lams : numpy.ndarray (P,)
        The share of each table's departure from the independence table kept.
    """
    prs, W, npair, ch = batch.pairs, batch.W, batch.npair, batch.channels
    P, f1, f2 = T.shape
    J = [j for j, _ in prs]
    K = [jp for _, jp in prs]
    terms = {j: _per_report_noise(mechs[j], total_known=False) for j in {*J, *K}}
    t1, v1 = np.array([terms[j] for j in J]).reshape(-1, 2).T
    t2, v2 = np.array([terms[j] for j in K]).reshape(-1, 2).T
    noise = _interaction_noise(t1, v1, f1, t2, v2, f2, npair)
    lams = interaction_weights(T, ch.inverse(W) / npair[:, None, None], noise)
    probs = {j: _distribution(marginals[j].probs) for j in {*J, *K}}
    p1 = np.array([probs[j] for j in J]).reshape(P, f1)
    p2 = np.array([probs[k] for k in K]).reshape(P, f2)
    ind = p1[:, :, None] * p2[:, None, :]
    return ind + lams[:, None, None] * (T - ind), lams


def interaction_weights(tables, inversions, noise) -> np.ndarray:
    """The default pair shrinkage weights of P tables of one shape (``estimate_pairs``).

    The interaction analogue of ``frequency.shrink_weights`` (docs/design/core.md#pair-shrinkage).
    With ``e = T - outer(r_T, c_T)`` the estimate's departure from the product of its own margins,
    ``D = T~ - outer(r, c)`` the inversion's (the departure of the independence statistic,
    ``reidrisk.estimation.dependence``), ``d = (f1 - 1)(f2 - 1)`` interaction directions and
    ``s2 = noise / d`` the inversion's noise per direction (``interaction_noise``):

    1. the weight that minimises Stein's unbiased risk estimate, ``(e . D - s2 (df - 2)) /
       ||e||^2``, charging the estimate's own noise: the EM (or norm-sub) moves with the noise only
       on the face of the simplex it lands on, ``s`` cells above ``FACE_TOL`` standard errors, of
       which ``df = s - (f1 + f2 - 1)`` directions are interaction (at most ``d``); where the truth
       is skewed the face is small and the EM far more accurate than the inversion;
    2. where that weight's standard error ``sqrt(s2 ||e||^2 + 2 s2^2 df) / ||e||^2`` is above
       ``SURE_SE_MAX`` (the data do not determine it), the estimated share of the inversion's
       dependence that is signal, ``max(0, 1 - noise / ||D||^2)`` (``shrink_weight``;
       ``E||D||^2 = ||signal||^2 + noise``), which does not depend on the face.

    Clipped to [0, 1]; 0 for a table equal to the product of its margins.

    Parameters
    ----------
    tables : array_like (P, f1, f2)
        The constrained estimates (each sums to 1).
    inversions : array_like (P, f1, f2)
        The unbiased pair inversions of the same counts (probabilities).
    noise : array_like (P,)
        Each inversion's noise trace in its interaction directions (``interaction_noise``).

    Returns
    -------
    numpy.ndarray (P,)
        The weights.

    Raises
    ------
    EstimationError
        Arrays of mismatched shapes, or a noise that is not finite and >= 0.
    """
    T, Y, noise = _weight_inputs("interaction_weights", tables, inversions, noise, 3,
                                 "(P, f1, f2) tables and inversions and (P,) noises", "noise")
    P, f1, f2 = T.shape
    dims = (f1 - 1) * (f2 - 1)
    if P == 0 or dims == 0:
        return np.ones(P)
    s2 = noise / dims
    D = Y - Y.sum(axis=2)[:, :, None] * Y.sum(axis=1)[:, None, :]
    e = T - T.sum(axis=2)[:, :, None] * T.sum(axis=1)[:, None, :]
    ee = np.sum(e * e, axis=(1, 2))
    free = np.sum(T > FACE_TOL * np.sqrt(s2)[:, None, None], axis=(1, 2))
    df = np.clip(free - (f1 + f2 - 1), 0, dims)
    safe_ee = np.where(ee > 0, ee, 1.0)
    sure = (np.sum(e * D, axis=(1, 2)) - s2 * np.maximum(df - 2, 0)) / safe_ee
    se = np.sqrt(s2 * ee + 2.0 * s2 * s2 * df) / safe_ee
    share = shrink_shares(np.square(D).reshape(P, -1).sum(axis=1), noise)
    lam = np.where(se <= SURE_SE_MAX, sure, share)
    return np.where(ee > 0, np.clip(lam, 0.0, 1.0), 0.0)


def _distribution(p) -> np.ndarray:
    """``p`` clipped at 0 and normalized to sum 1 (uniform when nothing is left)."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
    total = p.sum()
    return p / total if total > 0 else np.full(p.size, 1.0 / p.size)


def interaction_noise(n, mech, mech2) -> float:
    """Trace of a pair inversion's covariance in its ``(f1 - 1)(f2 - 1)`` interaction directions.

    The pair inversion ``M_1^{-1} W M_2^{-T} / n`` (eq. 12-13 inverted) is the mean of the
    reports' vectors ``b_1 (x) b_2``, independent given the true values (``inversion_noise``). Its
    interaction part is the double centring ``C_1 X C_2`` (``C = I - 1 1^T / f``), whose
    per-report second moment factorizes: ``tr(C_i E[b_i b_i^T]) = E||b_i||^2 - E(sum b_i)^2 / f_i
    = (1 + t_i) - (1 + v_i) / f_i`` with ``(t_i, v_i)`` the terms of ``inversion_noise`` (the
    pair form, ``M^{-1} B``), less the true value's own part ``(1 - 1 / f_1)(1 - 1 / f_2)``. Exact
    for the fixed database the reports came from, like ``inversion_noise``. The departure from
    independence ``D = T - r c^T`` that ``estimate_pairs`` shrinks centres at the estimated margins
    instead of the uniform ones, which changes its noise by terms of order 1 per report against
    ``t_i`` of order ``1 / epsilon^2`` where shrinkage matters.

    Parameters
    ----------
    n : float
        Number of reports having both attributes (> 0).
    mech : Mechanism
        The first attribute's mechanism (a pure oracle, ``M = a I + q 1 1^T``).
    mech2 : Mechanism
        The second attribute's mechanism.

    Returns
    -------
    float
        The trace, on the scale of the table's probabilities (at least 0).

    Raises
    ------
    EstimationError
        ``n <= 0``, or a mechanism's support probabilities violate ``0 <= q < p <= 1``.
    """
    if not float(n) > 0:
        raise EstimationError(f"interaction_noise needs n > 0 reports, got {n}")
    t1, v1 = _per_report_noise(mech, total_known=False)
    t2, v2 = _per_report_noise(mech2, total_known=False)
    return float(_interaction_noise(t1, v1, mech.k, t2, v2, mech2.k, float(n))[0])


def _interaction_noise(t1, v1, f1: int, t2, v2, f2: int, n) -> np.ndarray:
    """``interaction_noise`` of P pairs from their attributes' per-report terms ``(t, v)``
    (``frequency._per_report_noise(..., total_known=False)``), floats or (P,) arrays."""
    t1, v1, t2, v2, n = (np.asarray(x, dtype=np.float64) for x in (t1, v1, t2, v2, n))
    per = ((1 + t1) - (1 + v1) / f1) * ((1 + t2) - (1 + v2) / f2) - (1 - 1 / f1) * (1 - 1 / f2)
    return np.atleast_1d(np.maximum(per, 0.0) / n)


def _pair_estimates(fits: list, plist: list[tuple[int, int]], method: str,
                    marginals: tuple, names: tuple[str, ...], shrink: bool) -> PairEstimates:
    """The batches' tables as one ``PairEstimates``: each keyed (j, j') with j < j' (transposed
    back where its batch oriented it the other way), read-only, in the order of ``plist``.

    Parameters
    ----------
    fits : list of (pairs, npair, T, its, conv, lams)
        Each batch's oriented pairs and ``n~_jj'`` (``_PairBatch``) with its tables, EM steps,
        convergence and shrinkage weights.
    plist : list of (int, int)
        The pairs asked for, j < j'.
    method : str
        The estimator.
    marginals : tuple of FrequencyEstimate
        The single-attribute estimates.
    names : tuple of str
        The attribute names.
    shrink : bool
        Whether the tables were shrunk (their weights are then kept).

    Returns
    -------
    PairEstimates
        The estimates of every pair asked for.
    """
    tables, n_present, iterations, converged, kept = {}, {}, {}, {}, {}
    for prs, npair, T, its, conv, lams in fits:
        for i, (j, jp) in enumerate(prs):
            key, t = ((j, jp), np.array(T[i])) if j < jp else ((jp, j), np.array(T[i].T))
            t.setflags(write=False)
            tables[key] = t
            n_present[key] = int(npair[i])
            iterations[key] = int(its[i])
            converged[key] = bool(conv[i])
            if shrink:
                kept[key] = float(lams[i])
    order = {pr: i for i, pr in enumerate(plist)}
    tables = dict(sorted(tables.items(), key=lambda kv: order[kv[0]]))
    return PairEstimates(tables, n_present, method, iterations, converged, marginals, names, kept)
