"""Unary-encoding mechanisms and optimized unary encoding (OUE).

Design: docs/design/core.md#oue-and-rappor.

Unary encoding (Wang et al., USENIX Security 2017, "Locally differentially private protocols for
frequency estimation", section 4.3): the input x becomes a length-k bit vector that is one-hot at x;
each bit is then reported independently, bit x as 1 with probability ``p_bit`` and every other bit
as 1 with probability ``q_bit``. The report supports the values whose bit is 1, so
p_support = p_bit and q_support = q_bit, and

    log P(y | x) = sum_v [y_v log q + (1 - y_v) log(1 - q)]
                   + y_x log(p / q) + (1 - y_x) log((1 - p) / (1 - q)).

The worst-case log-likelihood ratio is log(p (1 - q) / (q (1 - p))), for a report with y_x = 1 and
y_x' = 0.

OUE chooses p = 1/2 and q = 1 / (e^eps + 1), which makes that ratio exactly e^eps and minimizes the
variance of the count estimates.

Reports are uint8 arrays (n, k) of 0/1 bits. A missing input gives a row whose every entry is
``MISSING_BITS`` (255), so ``is_missing`` only reads the first column.
"""

from __future__ import annotations

import itertools
import math
from abc import abstractmethod

import numpy as np

from reidrisk.mechanisms.base import (
    Mechanism,
    MechanismError,
    as_generator,
    check_codes,
    check_whole_rows,
    report_matrix,
)
from reidrisk.mechanisms.randomness import random_bytes
from reidrisk.schema import MISSING

MISSING_BITS: int = 255
"""Value of every entry of a unary-encoded report whose input was missing."""

_CHUNK_CELLS = 1 << 22
_MAX_ENUMERATED_K = 16


class UnaryEncoding(Mechanism):
    """Base of bitwise unary encodings: subclasses define ``p_bit`` and ``q_bit``.

    Reports: uint8 (n, k), bits 0/1, a row of ``MISSING_BITS`` where the input was missing.

    Parameters
    ----------
    epsilon : float
        The privacy budget (finite, > 0).
    k : int
        Domain size, the number of bits of a report (integer >= 2).
    """

    name = "unary"
    independent_support = True
    report_layout = "bits"

    @property
    @abstractmethod
    def p_bit(self) -> float:
        """P(bit x = 1 | X = x)."""

    @property
    @abstractmethod
    def q_bit(self) -> float:
        """P(bit v = 1 | X = x) for v != x."""

    @property
    def p_support(self) -> float:
        return self.p_bit

    @property
    def q_support(self) -> float:
        return self.q_bit

    # ---- client ----------------------------------------------------------------------------------
    def perturb(self, values, rng=None):
        """Randomize codes (n,) into bits (n, k) uint8; missing rows are all ``MISSING_BITS``.

        ``rng=None``: a fresh cryptographic generator (see ``Mechanism.perturb``).

        Parameters
        ----------
        values, rng
            As in ``Mechanism.perturb``.

        Returns
        -------
        numpy.ndarray (n, k) uint8
            The reports.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        n = x.size
        out = np.empty((n, self.k), dtype=np.uint8)
        chunk = max(1, _CHUNK_CELLS // self.k)
        p, q = self.p_bit, self.q_bit
        # Each bit is 1 with probability q, drawn from one random byte u per bit: 1 if u < t,
        # 0 if u > t, and for u == t (probability 1/256) 1 with probability 256 q - t from a
        # float64 uniform, where t = floor(256 q). In total t/256 + (256 q - t)/256 = q to
        # within 2**-53, at one byte of the generator's stream per bit instead of eight. The
        # bytes come from ``random_bytes`` (64 random bits per word under every bit generator).
        t = math.floor(256.0 * q)
        frac = 256.0 * q - t
        for s in range(0, n, chunk):
            xs = x[s : s + chunk]
            block = out[s : s + chunk]
            u = random_bytes(rng, block.shape)
            np.less(u, t, out=block, casting="unsafe")
            ties = np.flatnonzero(u == t)
            block.reshape(-1)[ties] = rng.random(ties.size) < frac
            present = np.flatnonzero(xs != MISSING)
            block[present, xs[present]] = rng.random(present.size) < p
            block[xs == MISSING] = MISSING_BITS
        return out

    def perturb_packed(self, values, rng=None) -> PackedBits:
        """Randomize codes (n,) straight into bit-packed reports (``PackedBits``): 8x smaller.

        The same channel and the same draws as ``perturb``: the rows are randomized ``perturb``'s
        chunk at a time (``_CHUNK_CELLS // k`` rows, which is how ``perturb`` consumes ``rng``),
        each chunk packed (``np.packbits`` along the bits) into the (n, ceil(k/8)) output before the
        next is drawn, so for the same seed ``perturb_packed(x, s).unpack() == perturb(x, s)`` and
        the peak memory is the packed output plus one chunk (a few MiB), not n x k bytes.

        Parameters
        ----------
        values, rng
            As in ``Mechanism.perturb``.

        Returns
        -------
        PackedBits
            The reports, 8 bits a byte.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        n = x.size
        bits = np.empty((n, packed_width(self.k)), dtype=np.uint8)
        chunk = max(1, _CHUNK_CELLS // self.k)
        for s in range(0, n, chunk):
            block = self.perturb(x[s : s + chunk], rng=rng)
            block[x[s : s + chunk] == MISSING] = 0
            bits[s : s + chunk] = np.packbits(block, axis=1)
        return PackedBits(bits, x == MISSING, self.k)

    def pack(self, reports) -> PackedBits:
        """Bit-pack unpacked reports (uint8 (n, k), rows of ``MISSING_BITS`` where missing).

        Parameters
        ----------
        reports : numpy.ndarray
            Unary reports, uint8 (n, k) (as in ``Mechanism.support``).

        Returns
        -------
        PackedBits
            The same reports, 8 bits a byte.
        """
        y = self._as_reports(reports)
        missing = np.asarray(self.is_missing(y), dtype=bool)
        bits = np.packbits(y == 1, axis=1)
        bits[missing] = 0
        return PackedBits(bits, missing, self.k)

    # ---- channel ---------------------------------------------------------------------------------
    def _log_terms(self) -> tuple[float, float, float, float]:
        p, q = self.p_bit, self.q_bit
        return math.log(p), math.log1p(-p), math.log(q), math.log1p(-q)

    def log_prob(self, reports):
        """Exact log P(y_i | x) as a product of independent Bernoulli bits, shape (n, k).

        Computed as base_i + y_ix log(p/q) + (1 - y_ix) log((1-p)/(1-q)) with
        base_i = ones_i log q + (k - ones_i) log(1 - q); missing rows are 0.

        Parameters
        ----------
        reports : numpy.ndarray
            Unary reports, uint8 (n, k) (as in ``Mechanism.log_prob``).

        Returns
        -------
        numpy.ndarray (n, k)
            ``log P(y_i | X = x)``.
        """
        y = self._as_reports(reports)
        if y.dtype == bool:
            y = y.view(np.uint8)
        lp1, lp0, lq1, lq0 = self._log_terms()
        ones = (y == 1).sum(axis=1, dtype=np.float64)
        base = ones * lq1 + (self.k - ones) * lq0
        base[self.is_missing(y)] = 0.0
        lut = np.zeros(MISSING_BITS + 1)  # per-bit term by report entry; missing entries add 0
        lut[0], lut[1] = lp0 - lq0, lp1 - lq1
        lp = lut[y]
        lp += base[:, None]
        return lp

    def enumerate_outputs(self):
        """All 2^k bit vectors, uint8 (2^k, k) (k <= 16).

        Returns
        -------
        numpy.ndarray (2^k, k) uint8
            The reports.
        """
        if self.k > _MAX_ENUMERATED_K:
            raise NotImplementedError(f"{self.name} has 2^{self.k} outputs; too many to enumerate")
        return np.array(list(itertools.product((0, 1), repeat=self.k)), dtype=np.uint8)

    def max_log_ratio(self):
        """log(p (1 - q) / (q (1 - p))): a report with bit x set and bit x' clear.

        Returns
        -------
        float
            The largest log-likelihood ratio.
        """
        lp1, lp0, lq1, lq0 = self._log_terms()
        return (lp1 - lq1) - (lp0 - lq0)

    # ---- server ----------------------------------------------------------------------------------
    def _as_reports(self, reports) -> np.ndarray:
        return report_matrix(reports, self.k, self.name, f"bit arrays, k = {self.k}")

    def support(self, reports):
        """Dense float32 (n, k): the report's bits; missing rows are all 0.

        Parameters
        ----------
        reports : numpy.ndarray
            Unary reports, uint8 (n, k) (as in ``Mechanism.support``).

        Returns
        -------
        numpy.ndarray (n, k) float32
            The bits.
        """
        y = self._as_reports(reports)
        return (y == 1).astype(np.float32)

    def is_missing(self, reports):
        y = self._as_reports(reports)
        return y[:, 0] == MISSING_BITS

    def support_counts(self, reports):
        """(w, n_present): column sums of the bits, without building the float support matrix.

        Rows are summed in blocks of 257 into uint16 (257 * 255 < 2^16, so no overflow), then
        into int64; a missing row adds ``MISSING_BITS`` to every column, which is subtracted.

        Parameters
        ----------
        reports : numpy.ndarray
            Unary reports, uint8 (n, k).

        Returns
        -------
        w : numpy.ndarray (k,)
            How many reports set each bit.
        n_present : int
            Reports that are not missing.
        """
        y = self._as_reports(reports)
        if y.dtype != np.uint8:
            return super().support_counts(reports)
        n_missing = int(self.is_missing(y).sum())
        block = 257
        whole = y.shape[0] // block * block
        w = np.zeros(self.k, dtype=np.int64)
        chunk = max(block, _CHUNK_CELLS // self.k // block * block)
        for s in range(0, whole, chunk):
            part = y[s : min(whole, s + chunk)]
            w += part.reshape(-1, block, self.k).sum(axis=1, dtype=np.uint16).sum(
                axis=0, dtype=np.int64)
        w += y[whole:].sum(axis=0, dtype=np.int64)
        w -= MISSING_BITS * n_missing
        return w.astype(np.float64), y.shape[0] - n_missing

    def validate_reports(self, reports):
        """Check shape (n, k), integer/bool dtype, entries 0/1, and missing rows wholly
        ``MISSING_BITS``. Returns the reports as uint8.

        Parameters
        ----------
        reports : numpy.ndarray
            Unary reports, uint8 (n, k) (as in ``Mechanism.validate_reports``).

        Returns
        -------
        numpy.ndarray (n, k) uint8
            The reports.

        Raises
        ------
        MechanismError
            Naming the first bad row.
        """
        y = self._as_reports(reports)
        if y.size and not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
            raise MechanismError(f"{self.name} reports must be 0/1 integers, got dtype {y.dtype}")
        miss = y == MISSING_BITS
        bad = ~((y == 0) | (y == 1) | miss)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise MechanismError(
                f"{self.name} report row {i}, bit {j} is {y[i, j]}; bits must be 0 or 1 (or every "
                f"entry {MISSING_BITS} for a missing value)"
            )
        check_whole_rows(miss, y, self.name, MISSING_BITS,
                         f"a missing report has every entry {MISSING_BITS}")
        return y.astype(np.uint8, copy=False)


def packed_width(k: int) -> int:
    """Bytes of one bit-packed report of a k-bit unary encoding: ceil(k / 8).

    Parameters
    ----------
    k : int
        Bits of one report.

    Returns
    -------
    int
        ceil(k / 8).
    """
    return -(-int(k) // 8)


class PackedBits:
    """Unary reports bit-packed (8 reports bits per byte): the compact form of an (n, k) uint8
    report matrix, for storing and counting large batches (``UnaryEncoding.perturb_packed``).

    ``bits`` uint8 (n, ceil(k/8)): ``np.packbits`` of each row (first bit in the high bit; zero
    bytes on a missing row); ``missing`` bool (n,); ``k`` the number of bits. ``unpack(start,
    stop)`` gives rows start:stop in the mechanisms' report layout (uint8 (m, k), a row of
    ``MISSING_BITS`` where missing), so a batch is unpacked a chunk at a time.

    Parameters
    ----------
    bits : numpy.ndarray (n, ceil(k / 8)) uint8
        The packed rows.
    missing : array_like (n,) of bool
        The missing reports.
    k : int
        Bits of a report (the domain size).
    """

    __slots__ = ("bits", "missing", "k")

    def __init__(self, bits, missing, k: int) -> None:
        bits = np.asarray(bits, dtype=np.uint8)
        missing = np.asarray(missing, dtype=bool)
        if bits.ndim != 2 or bits.shape[1] != packed_width(k):
            raise MechanismError(f"packed unary reports of k = {k} bits must be (n, "
                                 f"{packed_width(k)}) bytes, got shape {bits.shape}")
        if missing.shape != (bits.shape[0],):
            raise MechanismError(f"the missing mask must be ({bits.shape[0]},), got "
                                 f"{missing.shape}")
        self.bits, self.missing, self.k = bits, missing, int(k)

    def __len__(self) -> int:
        return self.bits.shape[0]

    @property
    def nbytes(self) -> int:
        return self.bits.nbytes + self.missing.nbytes

    def unpack(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows start:stop as uint8 (m, k) reports (``MISSING_BITS`` rows where missing).

        Parameters
        ----------
        start, stop : int, optional
            The rows (default: all).

        Returns
        -------
        numpy.ndarray (stop - start, k) uint8
            The reports.
        """
        out = np.unpackbits(self.bits[start:stop], axis=1, count=self.k)
        out[self.missing[start:stop]] = MISSING_BITS
        return out

    def take(self, rows) -> PackedBits:
        """The reports of a subset of rows, still packed.

        Parameters
        ----------
        rows : array_like
            Row indices or a boolean mask (n,).

        Returns
        -------
        PackedBits
            Those rows.
        """
        return PackedBits(self.bits[rows], self.missing[rows], self.k)


class OUE(UnaryEncoding):
    """Optimized unary encoding (Wang et al. 2017): p = 1/2, q = 1 / (e^eps + 1).

    Parameters
    ----------
    epsilon, k
        As in ``UnaryEncoding``.
    """

    name = "oue"

    @property
    def p_bit(self) -> float:
        return 0.5

    @property
    def q_bit(self) -> float:
        return 1.0 / (math.exp(self.epsilon) + 1.0)
