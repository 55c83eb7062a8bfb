"""k-ary / generalized randomized response (k-RR, GRR).

Paper 000 eq. 2 and paper 002 eq. 2 (docs/design/core.md#grr, docs/design/pie.md#mechanisms):
keep the true value with probability p = e^eps / (e^eps + k - 1), otherwise report one of the k - 1
other values uniformly (q = 1 / (e^eps + k - 1) each). Reports are codes; ``MISSING`` passes through.
This is the subset mechanism of paper 004 with h = 1.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from reidrisk.mechanisms.base import Mechanism, MechanismError, as_generator, check_codes
from reidrisk.schema import MISSING


class GRR(Mechanism):
    """k-RR: reports are int codes of shape (n,), ``MISSING`` where the input was missing.

    Parameters
    ----------
    epsilon, k
        As in ``Mechanism``.
    """

    name = "grr"
    report_layout = "code"

    @property
    def p_support(self) -> float:
        e = np.exp(self.epsilon)
        return float(e / (e + self.k - 1))

    @property
    def q_support(self) -> float:
        return float(1.0 / (np.exp(self.epsilon) + self.k - 1))

    def perturb(self, values, rng=None):
        """Randomize codes (n,) into codes (n,); ``MISSING`` passes through. ``rng=None``: a fresh
        cryptographic generator (see ``Mechanism.perturb``).

        Parameters
        ----------
        values : numpy.ndarray (n,)
            Codes in 0..k-1, or ``MISSING``.
        rng : numpy.random.Generator or int, optional
            Source of the randomness (see ``Mechanism.perturb``).

        Returns
        -------
        numpy.ndarray (n,) int64
            The reports.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        lie = rng.random(x.size) >= self.p_support
        lie &= x != MISSING
        # a uniform draw over the k-1 other values: shift by 1..k-1 modulo k. Computed in place
        # without boolean indexing (x + shift < 2k, so one conditional subtraction wraps it).
        out = rng.integers(1, self.k, size=x.size)
        out *= lie
        out += x
        out -= self.k * (out >= self.k)
        return out

    def _as_reports(self, reports) -> np.ndarray:
        y = np.asarray(reports)
        if y.ndim != 1:
            raise MechanismError(f"GRR reports must be a 1-D array of codes, got shape {y.shape}")
        return y

    def log_prob(self, reports):
        y = self._as_reports(reports)
        lp = np.full((y.size, self.k), np.log(self.q_support))
        present = y != MISSING
        lp[np.flatnonzero(present), y[present]] = np.log(self.p_support)
        lp[~present] = 0.0
        return lp

    def enumerate_outputs(self):
        return np.arange(self.k)

    def max_log_ratio(self):
        return float(np.log(self.p_support) - np.log(self.q_support))

    def support(self, reports):
        y = self._as_reports(reports)
        present = y != MISSING
        # CSR directly: row i holds one entry (its code) when present, none when missing
        indptr = np.zeros(y.size + 1, dtype=np.int64)
        np.cumsum(present, out=indptr[1:])
        cols = y[present]
        data = np.ones(cols.size, dtype=np.float32)
        return sp.csr_matrix((data, cols, indptr), shape=(y.size, self.k))

    def is_missing(self, reports):
        return self._as_reports(reports) == MISSING

    def support_counts(self, reports):
        """(w, n_present) by one ``bincount`` of the codes (no support matrix is built).

        Parameters
        ----------
        reports : numpy.ndarray (n,)
            GRR reports (codes, ``MISSING`` where missing).

        Returns
        -------
        w : numpy.ndarray (k,)
            How many reports name each value.
        n_present : int
            Reports that are not missing.
        """
        y = self._as_reports(reports)
        w = np.bincount(np.asarray(y, dtype=np.int64) + 1, minlength=self.k + 1)
        return w[1:].astype(np.float64), int(y.size - w[0])

    def validate_reports(self, reports):
        return check_codes(self._as_reports(reports), self.k, what="report")
