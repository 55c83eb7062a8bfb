"""The base of every LDP mechanism: validated budget, exact channel, vectorized perturbation.

Design: docs/design/core.md#mechanisms.

Every mechanism here is a *pure* frequency oracle (Wang et al., USENIX Security 2017): each report
``y`` *supports* a set of input values ``S(y)`` and

    P(v in S(Y) | X = x) = p_support  if v == x,   q_support  otherwise.

The server therefore needs only the 0/1 support-membership matrix of the reports
(``Mechanism.support``): its column sums are the counts w of paper 004 eq. 5, and the Gram matrix
of the supports of two attributes gives the pair counts W of paper 004 Section 4.2.2. The expected
counts are ``M z`` with ``M = support_matrix()`` (diagonal p_support, elsewhere q_support), for every
mechanism alike.

Reports are mechanism-specific arrays (each mechanism's docstring says which); a missing input is
passed through as a missing report (``MISSING``, a row of ``MISSING``, or for the unary encodings a
row of ``oue.MISSING_BITS``) and supports nothing.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
import scipy.sparse as sp

from reidrisk.mechanisms.randomness import MechanismError, secure_generator
from reidrisk.schema import MISSING


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """Validate a privacy budget: finite and > 0.

    Parameters
    ----------
    epsilon : float
        The budget to check (anything ``float()`` accepts).
    name : str
        The parameter name the error message shows.

    Returns
    -------
    float
        ``epsilon`` as a float.

    Raises
    ------
    MechanismError
        If ``epsilon`` is not a number, not finite or not > 0.
    """
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise MechanismError(f"{name} must be a number, got {epsilon!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise MechanismError(
            f"{name} must be finite and > 0, got {epsilon!r}; pass a positive budget such as 1.0"
        )
    return eps


def check_integer(value, name: str, low: int, high: int | None = None) -> int:
    """Validate an integer parameter in low..high (inclusive).

    Parameters
    ----------
    value
        The value to check (a bool is not an integer here).
    name : str
        The parameter name the error message shows.
    low : int
        Smallest allowed value.
    high : int, optional
        Largest allowed value (``None``: no upper bound).

    Returns
    -------
    int
        ``value`` as an int.
    """
    try:
        ok = not isinstance(value, bool) and int(value) == value
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or int(value) < low or (high is not None and int(value) > high):
        span = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"
        raise MechanismError(f"{name} must be {span}, got {value!r}")
    return int(value)


def check_domain(k: int) -> int:
    """The domain size k as an int, or ``MechanismError``.

    Parameters
    ----------
    k : int
        Domain size: codes are 0..k-1; an integer >= 2.

    Returns
    -------
    int
        ``k``.
    """
    return check_integer(k, "domain size k", 2)


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """The Generator every random function draws from (one rule for the whole package).

    * ``None``: a fresh cryptographic generator, ChaCha20 keyed from the operating system
      (``randomness.secure_generator``) -- the default of every client that randomizes a real
      answer, and not reproducible;
    * an int or ``SeedSequence``: ``numpy.random.default_rng(rng)`` (PCG64), reproducible, for
      simulations, benchmarks and tests only (a known seed replays the noise);
    * a ``Generator``: used as it is, whatever its bit generator.

    Parameters
    ----------
    rng : numpy.random.Generator, int, numpy.random.SeedSequence or None
        As listed above.

    Returns
    -------
    numpy.random.Generator
        The generator to draw from.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return secure_generator()
    return np.random.default_rng(rng)


class Mechanism(ABC):
    """An epsilon-LDP randomizer for one categorical attribute with domain {0..k-1}.

    Subclasses set ``name`` and implement ``perturb``, ``support``, ``p_support``/``q_support``,
    ``log_prob`` (exact log-likelihood of reports given every input) and ``validate_reports``.

    Parameters
    ----------
    epsilon : float
        The privacy budget (finite, > 0).
    k : int
        Domain size: codes are 0..k-1 (integer >= 2).
    """

    name: str = "mechanism"
    #: whether a report supports each value independently of the others given the true one, so
    #: that the support size varies between reports (unary encodings, local hashing); ``False``
    #: where every report supports the same number of values (GRR, subset). Frequency
    #: estimation reads it for the noise of a report's inversion vector.
    independent_support: bool = False
    #: how a report names the values it supports, for code that writes support rows straight from
    #: the reports rather than through ``support``: ``"code"`` (a report is the one value it
    #: supports, an int array (n,): GRR), ``"codes"`` (a report is the h values it supports, an int
    #: array (n, h) whose missing rows start with ``MISSING``: subset), ``"bits"`` (a report is the
    #: 0/1 indicator of its support, an array (n, k) or ``PackedBits``: unary encodings), or
    #: ``None`` (only ``support`` tells; local hashing). A subclass that changes what a report is
    #: sets it again.
    report_layout: str | None = None

    def __init__(self, epsilon: float, k: int) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.k = check_domain(k)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:g}, k={self.k})"

    # ---- client side -------------------------------------------------------------------------
    @abstractmethod
    def perturb(self, values: np.ndarray, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Randomize a 1-D int array of codes (``MISSING`` passes through) into reports.

        The reports follow the exact channel under every bit generator.

        Parameters
        ----------
        values : numpy.ndarray (n,)
            Codes in 0..k-1, or ``MISSING``.
        rng : numpy.random.Generator or int, optional
            ``None`` (the default, for real answers) draws from a fresh cryptographic generator
            keyed from the operating system; pass a seed or Generator only to simulate (see
            ``as_generator``).
        """

    # ---- channel -----------------------------------------------------------------------------
    @property
    @abstractmethod
    def p_support(self) -> float:
        """P(true value in the report's support set)."""

    @property
    @abstractmethod
    def q_support(self) -> float:
        """P(a given other value in the report's support set)."""

    def support_matrix(self) -> np.ndarray:
        """k x k matrix M with M[v, x] = P(v in S(Y) | X = x): expected support counts are M z.

        Returns
        -------
        numpy.ndarray (k, k)
            M.
        """
        m = np.full((self.k, self.k), self.q_support)
        np.fill_diagonal(m, self.p_support)
        return m

    @abstractmethod
    def log_prob(self, reports: np.ndarray) -> np.ndarray:
        """Exact log P(report_i | X = x) for every report i and input x: array (n, k).

        Rows of missing reports are 0 (log 1: a missing report carries no information).

        Parameters
        ----------
        reports : numpy.ndarray
            Reports of this mechanism, one per row (the layout its ``perturb`` returns).

        Returns
        -------
        numpy.ndarray (n, k)
            ``log P(report_i | X = x)``.
        """

    def enumerate_outputs(self) -> np.ndarray:
        """All possible reports (for exact channels on small domains). Optional.

        Returns
        -------
        numpy.ndarray
            One possible report per row.
        """
        raise NotImplementedError(f"{self.name} does not enumerate its outputs")

    def channel(self) -> np.ndarray:
        """Exact channel Q[y, x] = P(Y = y | X = x) over ``enumerate_outputs()`` (small k only).

        Returns
        -------
        numpy.ndarray (n_outputs, k)
            Q.
        """
        return np.exp(self.log_prob(self.enumerate_outputs()))

    def max_log_ratio(self) -> float:
        """Worst-case log-likelihood ratio max_y max_{x,x'} log Q(y|x)/Q(y|x') of the channel.

        Here from the enumerated exact channel (small domains); every mechanism overrides it with
        the closed form of its channel probabilities, which holds at any domain size. A correct,
        non-wasteful mechanism returns ``epsilon`` (to rounding).

        Returns
        -------
        float
            The largest log-likelihood ratio.
        """
        q = self.log_prob(self.enumerate_outputs())
        return float(np.max(q.max(axis=1) - q.min(axis=1)))

    @property
    def privacy_loss(self) -> float:
        """The privacy loss of one report: the worst-case log-likelihood ratio of the exact channel
        (``max_log_ratio``), i.e. the smallest epsilon for which the mechanism is epsilon-LDP.

        Computed from the channel probabilities, not copied from the ``epsilon`` parameter, so a
        release states what its channel guarantees (the LDP definition of Wang et al., USENIX
        Security 2017, Section 2).
        """
        return float(self.max_log_ratio())

    # ---- server side -------------------------------------------------------------------------
    @abstractmethod
    def support(self, reports: np.ndarray) -> sp.csr_matrix | np.ndarray:
        """0/1 membership matrix (n, k): entry [i, v] = 1 if report i supports value v.

        Missing reports give all-zero rows. Sparse CSR when a report supports few values.

        Parameters
        ----------
        reports : numpy.ndarray
            Reports of this mechanism, one per row (the layout its ``perturb`` returns).

        Returns
        -------
        scipy.sparse.csr_matrix or numpy.ndarray (n, k)
            The 0/1 membership matrix.
        """

    @abstractmethod
    def is_missing(self, reports: np.ndarray) -> np.ndarray:
        """Boolean (n,) mask of missing reports.

        Parameters
        ----------
        reports : numpy.ndarray
            Reports of this mechanism, one per row (the layout its ``perturb`` returns).

        Returns
        -------
        numpy.ndarray (n,) of bool
            True where the report is missing.
        """

    @abstractmethod
    def validate_reports(self, reports: np.ndarray) -> np.ndarray:
        """Check reports received from clients; raise ``MechanismError`` naming the first bad row.

        Parameters
        ----------
        reports : numpy.ndarray
            Reports of this mechanism, one per row (the layout its ``perturb`` returns).

        Returns
        -------
        numpy.ndarray
            The reports in the mechanism's dtype.

        Raises
        ------
        MechanismError
            Naming the first bad row and what is wrong with it.
        """

    # ---- convenience ---------------------------------------------------------------------------
    def support_counts(self, reports: np.ndarray) -> tuple[np.ndarray, int]:
        """(w, n_present): column sums of the support matrix and the number of present reports.

        Parameters
        ----------
        reports : numpy.ndarray
            Reports of this mechanism, one per row (the layout its ``perturb`` returns).

        Returns
        -------
        w : numpy.ndarray (k,)
            How many reports support each value (float64).
        n_present : int
            Reports that are not missing.
        """
        s = self.support(reports)
        w = np.asarray(s.sum(axis=0)).ravel().astype(np.float64)
        return w, int((~self.is_missing(reports)).sum())

    def params(self) -> dict:
        """Parameters that identify the mechanism (for files and reports).

        Returns
        -------
        dict
            Name, budget, domain size and the mechanism's own settings.
        """
        return {"mechanism": self.name, "epsilon": self.epsilon, "k": self.k}


def report_matrix(reports, width: int, name: str, layout: str) -> np.ndarray:
    """The reports of a mechanism whose report is a row of ``width`` entries, as an (n, width)
    array.

    Parameters
    ----------
    reports : array_like
        The reports.
    width : int
        Entries of one report.
    name : str
        The mechanism's name, for the error message.
    layout : str
        What a row holds, for the error message.

    Returns
    -------
    numpy.ndarray (n, width)
        The reports.
    """
    y = np.asarray(reports)
    if y.ndim != 2 or y.shape[1] != width:
        raise MechanismError(
            f"{name} reports must have shape (n, {width}) ({layout}), got {y.shape}; pass the "
            "array returned by perturb()"
        )
    return y


def check_whole_rows(miss: np.ndarray, rows: np.ndarray, name: str, sentinel: int,
                     rule: str) -> None:
    """Raise if a report row mixes missing entries with present ones: a missing value is reported
    as a wholly missing row.

    Parameters
    ----------
    miss : numpy.ndarray (n, w) bool
        The entries equal to ``sentinel``.
    rows : numpy.ndarray
        The report rows, for the message.
    name : str
        The mechanism's name, for the message.
    sentinel : int
        The missing marker.
    rule : str
        Completes the message.
    """
    partial = miss.any(axis=1) & ~miss.all(axis=1)
    if partial.any():
        i = int(np.flatnonzero(partial)[0])
        row = np.asarray(rows[i])
        shown = f" = {row.tolist()}" if row.size <= 16 else ""
        raise MechanismError(f"{name} report row {i}{shown} mixes {sentinel} (missing) with "
                             f"values; {rule}")


def check_codes(values: np.ndarray, k: int, what: str = "values") -> np.ndarray:
    """Validate a 1-D array of codes in {MISSING, 0..k-1}; returns them as int64.

    Parameters
    ----------
    values : numpy.ndarray
        1-D integer codes.
    k : int
        Domain size.
    what : str
        The name the error message shows.

    Returns
    -------
    numpy.ndarray (n,) int64
        The codes.
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise MechanismError(f"{what} must be a 1-D array of codes, got shape {values.shape}")
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise MechanismError(f"{what} must be integer codes, got dtype {values.dtype}")
    bad = (values < MISSING) | (values >= k)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MechanismError(
            f"{what}[{i}] = {values[i]} is outside the domain 0..{k - 1} (or {MISSING} for missing); "
            "encode the data with the schema first"
        )
    return values.astype(np.int64, copy=False)
