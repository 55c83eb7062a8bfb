"""Client mechanisms of two baselines of paper 004 Section 5, outside the registry ``MECHANISMS``.

* ``NegativeSurvey`` (``"negative"``) -- the client of MDN (Groat et al., multidimensional negative
  surveys, paper 004 ref. [23]).
* ``LaplaceIndex`` (``"laplace_index"``) -- the client of PDE/ETE (Sei and Ohsuga 2020, paper 004
  ref. [5]).

Both papers are not available to us; each class documents the reading we implement.

``LOCAL_MECHANISMS`` maps their names to the classes: a collection protocol
(``reidrisk.collect.protocol.resolve_mechanism``) looks a name up there after ``MECHANISMS``.
Formerly ``reidrisk.collect.baselines.mechanisms``, which re-exports these names.
"""

from __future__ import annotations

import math

import numpy as np

from reidrisk.mechanisms.base import Mechanism, MechanismError, as_generator, check_codes
from reidrisk.schema import MISSING


class NegativeSurvey(Mechanism):
    """Epsilon-LDP negative survey: the person reports one value that is (probably) *not* theirs.

    A negative survey asks for a category the respondent does not belong to; the pure form (the
    reported value is never the true one) is not epsilon-LDP for any finite epsilon (the report
    rules the reported value out). Our reading, the epsilon-LDP negative survey, reports the true
    value with the *small* probability ``r = 1 / (1 + (k - 1) e^eps)`` and each other value with
    ``s = e^eps r``; as eps -> infinity it becomes the pure negative survey. The ratio s / r is e^eps
    exactly.

    As a frequency oracle a report y supports every value except y: ``p_support = 1 - r`` (the true
    value is supported unless it was reported) and ``q_support = 1 - s``. This channel equals the
    subset mechanism of paper 004 eq. 2-3 with the set size forced to ``h = k - 1`` (the set is the
    complement of y), which is why MDN does poorly when epsilon is large (the optimal h is small).

    Reports: int64 codes (n,), ``MISSING`` where the input was missing.

    Parameters
    ----------
    epsilon : float
        The LDP budget, > 0.
    k : int
        Domain size (>= 2).
    """

    name = "negative"

    @property
    def _r(self) -> float:
        return 1.0 / (1.0 + (self.k - 1) * math.exp(self.epsilon))

    @property
    def _s(self) -> float:
        return math.exp(self.epsilon) * self._r

    @property
    def p_support(self) -> float:
        return 1.0 - self._r

    @property
    def q_support(self) -> float:
        return 1.0 - self._s

    def perturb(self, values, rng=None):
        """Randomize codes into negative reports; ``MISSING`` passes through.

        Parameters
        ----------
        values : numpy.ndarray (n,)
            Codes in 0..k-1, or ``MISSING``.
        rng : numpy.random.Generator or int, optional
            Source of the randomness (see ``Mechanism.perturb``; ``None``: cryptographic).

        Returns
        -------
        numpy.ndarray of int64 (n,)
            The reported codes: the true one with probability ``r``, each other one with ``s``.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        out = x.copy()
        present = x != MISSING
        other = present & (rng.random(x.size) >= self._r)
        shift = rng.integers(1, self.k, size=x.size)
        out[other] = (x[other] + shift[other]) % self.k
        return out

    def log_prob(self, reports):
        y = self._as_reports(reports)
        lp = np.full((y.size, self.k), math.log(self._s))
        present = y != MISSING
        lp[np.flatnonzero(present), y[present]] = math.log(self._r)
        lp[~present] = 0.0
        return lp

    def enumerate_outputs(self):
        return np.arange(self.k)

    def max_log_ratio(self):
        return math.log(self._s) - math.log(self._r)

    def _as_reports(self, reports) -> np.ndarray:
        y = np.asarray(reports)
        if y.ndim != 1:
            raise MechanismError(f"negative-survey reports must be a 1-D array of codes, got {y.shape}")
        return y

    def support(self, reports):
        """The values each report supports: every value except the reported one.

        Parameters
        ----------
        reports : numpy.ndarray (n,)
            Negative-survey reports (codes, ``MISSING`` for a missing input).

        Returns
        -------
        numpy.ndarray of float32 (n, k)
            1 everywhere except at the reported value; missing rows are all 0.
        """
        y = self._as_reports(reports)
        s = np.ones((y.size, self.k), dtype=np.float32)
        present = y != MISSING
        s[np.flatnonzero(present), y[present]] = 0.0
        s[~present] = 0.0
        return s

    def is_missing(self, reports):
        return self._as_reports(reports) == MISSING

    def validate_reports(self, reports):
        return check_codes(self._as_reports(reports), self.k, what="negative-survey report")


class LaplaceIndex(Mechanism):
    """PDE client (our reading): Laplace noise on the category index, no categorical randomizer.

    Paper 004 says of PDE/ETE only that it "does not transform the numerical values into categorical
    values": PDE perturbs a sensed *number* and ETE estimates its distribution by deconvolving the
    known noise. Reading the category index 0..k-1 as that number, the report is
    ``y = x + Laplace(b)`` with ``b = (k - 1) / eps`` (the index range is the sensitivity), so
    ``P(y | x) / P(y | x') <= exp(|x - x'| / b) <= e^eps``. Sensing errors, which PDE/ETE also model,
    are zero here (the values are exact). Not a frequency oracle: there is no support set, so
    ``p_support``/``q_support``/``support`` raise; estimation uses ``log_prob`` (the exact Laplace
    density) in the report-level EM.

    Reports: float64 (n,), NaN where the input was missing.

    Parameters
    ----------
    epsilon : float
        The LDP budget, > 0.
    k : int
        Domain size (>= 2).
    """

    name = "laplace_index"

    @property
    def scale(self) -> float:
        """Laplace scale b = (k - 1) / eps."""
        return (self.k - 1) / self.epsilon

    @property
    def p_support(self) -> float:
        raise MechanismError("laplace_index reports have no support set; use log_prob")

    @property
    def q_support(self) -> float:
        raise MechanismError("laplace_index reports have no support set; use log_prob")

    def perturb(self, values, rng=None):
        """Add Laplace noise of scale ``(k - 1) / eps`` to each code; missing gives NaN.

        Parameters
        ----------
        values : numpy.ndarray (n,)
            Codes in 0..k-1, or ``MISSING``.
        rng : numpy.random.Generator or int, optional
            Source of the randomness (see ``Mechanism.perturb``; ``None``: cryptographic).

        Returns
        -------
        numpy.ndarray of float64 (n,)
            ``code + Laplace(scale)``, NaN where the input was missing.
        """
        rng = as_generator(rng)
        x = check_codes(values, self.k)
        out = np.full(x.size, np.nan)
        present = x != MISSING
        out[present] = x[present] + rng.laplace(0.0, self.scale, size=int(present.sum()))
        return out

    def log_prob(self, reports):
        y = self._as_reports(reports)
        present = ~np.isnan(y)
        lp = np.zeros((y.size, self.k))
        b = self.scale
        lp[present] = -np.log(2 * b) - np.abs(y[present, None] - np.arange(self.k)[None, :]) / b
        return lp

    def max_log_ratio(self):
        return (self.k - 1) / self.scale

    def _as_reports(self, reports) -> np.ndarray:
        y = np.asarray(reports)
        if y.ndim != 1:
            raise MechanismError(f"laplace_index reports must be a 1-D float array, got {y.shape}")
        return y

    def support(self, reports):
        raise MechanismError("laplace_index reports have no support set; use log_prob")

    def is_missing(self, reports):
        return np.isnan(np.asarray(self._as_reports(reports), dtype=np.float64))

    def validate_reports(self, reports):
        y = self._as_reports(reports)
        if y.size and not np.issubdtype(y.dtype, np.floating):
            raise MechanismError(f"laplace_index reports must be floats, got dtype {y.dtype}")
        if np.isinf(y).any():
            i = int(np.flatnonzero(np.isinf(y))[0])
            raise MechanismError(f"laplace_index report row {i} is infinite; reports are finite "
                                 "numbers (NaN for missing)")
        return y.astype(np.float64, copy=False)


LOCAL_MECHANISMS: dict[str, type[Mechanism]] = {
    "negative": NegativeSurvey,
    "laplace_index": LaplaceIndex,
}
