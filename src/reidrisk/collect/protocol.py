"""Client protocols: which attributes a person reports and with what budget (paper 004 Section 4.1
and the sampling idea of Section 6.4; docs/design/collect.md#client-protocol).

A protocol fixes, for every person, the whole-record budget ``epsilon`` and the number k
(``attributes_per_person``) of attributes they report. Each reported attribute is randomized with
``epsilon / k``; the others are sent as missing, so every record report is ``epsilon``-LDP.

* ``k = g`` is the paper's protocol (Algorithm 1): every present attribute with ``epsilon / g``.
* ``k < g`` is attribute sampling (Section 6.4): each person reports only ``k`` attributes, chosen
  uniformly at random, each with the larger budget ``epsilon / k``.

``among="present"`` (default) draws the ``k`` attributes among those the person has (all of them
when they have ``k`` or fewer); ``among="all"`` among all ``g``, those the person lacks staying
missing. Both draws are independent of the values, so MCAR data stay MCAR and the pair estimators
stay unbiased; neither reveals more than the paper's protocol, which sends the whole missingness
pattern in the clear. A person with fewer than ``k`` present attributes reports each at
``epsilon / k`` (one budget, one mechanism and one estimator per attribute).

``choose_attributes_per_person`` picks the k minimising the expected error of the g marginals and
g (g - 1) / 2 pair tables the model is built from. For a pure frequency oracle (p, q, domain f)
the per-report inversion vector has ``sum_v E[a_i(v)^2 | x] = 1 + S`` whatever x is, with

    S(p, q, f) = (p (1 - p) + (f - 1) q (1 - q)) / (p - q)^2        (``variance_factor``),

so a pair estimated from the n_jj' reports having both attributes has the exact summed variance

    E || T_hat - T ||_F^2 = ((1 + S_j) (1 + S_j') - sum T^2) / n_jj'.                   (*)

With budget ``epsilon / k`` per attribute, ``n_jj'(k) = sum_i P_ij P_ij' c_k(|P_i|)``,
``c_k(s) = min(k, s) (min(k, s) - 1) / (s (s - 1))`` (``P`` the presence matrix; "present")
and ``n_j(k) = sum_i P_ij min(k, |P_i|) / |P_i|``. The criterion, for k = 1..g, caps each term at
its null model's largest distance (the server shrinks what the noise drowns):

    E(k) = mean over pairs of min((*), 1 - 1 / (f_j f_j'))  +  mean over attributes of
           min((1 + S_j - 1 / f_j) / n_j(k), 1 - 1 / f_j)

with ``sum T^2`` and ``sum p^2`` at their smallest. k = g is the paper's split, so sampling is
chosen only where it wins on this criterion. How well it picks k:
docs/design/collect.md#choosing-k-measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binom

from reidrisk._compat import (
    renamed_attribute,
    renamed_function,
    renamed_keywords,
    warn_renamed,
)
from reidrisk.mechanisms import MECHANISMS, make_mechanism
from reidrisk.mechanisms.base import (
    Mechanism,
    MechanismError,
    as_generator,
    check_epsilon,
)
from reidrisk.mechanisms.baselines import LOCAL_MECHANISMS
from reidrisk.mechanisms.record import RecordReports
from reidrisk.schema import MISSING, Schema

AMONG = ("present", "all")
PROTOCOL_FORMAT = "reidrisk-protocol"
PROTOCOL_VERSION = 1


class ProtocolError(MechanismError):
    """A protocol parameter or a report batch that breaks its protocol."""


def resolve_mechanism(name: str, epsilon: float, k: int, **kwargs) -> Mechanism:
    """A mechanism by name, from the shared registry or the collect baselines.

    The shared registry is ``reidrisk.mechanisms.MECHANISMS``; the baseline mechanisms, looked up
    first, are those defined in ``reidrisk.collect.baselines`` (``"negative"``,
    ``"laplace_index"``).

    Parameters
    ----------
    name : str
        Mechanism name, case-insensitive.
    epsilon : float
        Budget of the one attribute it randomizes.
    k : int
        Domain size of that attribute.
    **kwargs
        Extra options of the mechanism, as in ``reidrisk.mechanisms.make_mechanism``.

    Returns
    -------
    Mechanism
        The mechanism at ``epsilon`` on a domain of ``k`` values.

    Raises
    ------
    ProtocolError
        When ``name`` is in neither registry.
    """
    key = str(name).lower()
    if key in LOCAL_MECHANISMS:
        return LOCAL_MECHANISMS[key](epsilon, k, **kwargs)
    if key not in MECHANISMS:
        raise ProtocolError(
            f"unknown mechanism {name!r}; choose one of {sorted(set(MECHANISMS) | set(LOCAL_MECHANISMS))}"
        )
    return make_mechanism(key, epsilon, k, **kwargs)


@dataclass(frozen=True)
class Protocol:
    """How clients report: whole-record budget, attributes per person, mechanism, sampling rule.

    Design: docs/design/collect.md#client-protocol.

    Parameters
    ----------
    epsilon : float
        Budget of one person's whole report.
    attributes_per_person : int, optional
        k in the module doc (formerly ``k``): attributes each person reports (``None`` = all g,
        the paper's protocol).
    mechanism : str
        Registry name of the per-attribute randomizer (``"subset"``, the default, is the paper's).
    among : {"present", "all"}
        Which attributes are sampled (module doc).
    mechanism_options
        Extra keyword arguments of the mechanism (e.g. a hash range).
    """

    epsilon: float
    attributes_per_person: int | None = None
    mechanism: str = "subset"
    among: str = "present"
    mechanism_options: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        k = self.attributes_per_person
        if k is not None:
            if isinstance(k, bool) or int(k) != k or int(k) < 1:
                raise ProtocolError(
                    f"attributes_per_person must be an integer >= 1 (or None for all), got {k!r}"
                )
            object.__setattr__(self, "attributes_per_person", int(k))
        if self.among not in AMONG:
            raise ProtocolError(f"among must be one of {AMONG}, got {self.among!r}")
        object.__setattr__(self, "mechanism_options", dict(self.mechanism_options))

    @classmethod
    def planned(cls, schema: Schema, epsilon: float, *, n: int | None = None,
                missing_rate: float = 0.0, presence: np.ndarray | None = None,
                mechanism: str = "subset", among: str = "present",
                mechanism_options: dict | None = None) -> Protocol:
        """The attribute-sampling protocol with k chosen by ``choose_attributes_per_person``.

        What ``--attributes-per-person auto`` does on the command line: plan with the expected
        number of people ``n`` and MCAR ``missing_rate``, or with a ``presence`` matrix (n, g).
        A schema of one attribute gets k = 1 (``attributes_per_person=None``, all of it).

        Parameters
        ----------
        schema : Schema
            The attributes to collect (their domain sizes are read).
        epsilon : float
            Budget of one person's whole report.
        n : int, optional
            Expected number of people; required when ``presence`` is not given.
        missing_rate : float
            Expected MCAR missing rate in [0, 1), used with ``n``.
        presence : numpy.ndarray (n, g) of bool, optional
            Who has which attribute (e.g. of a pilot); used instead of ``n`` and ``missing_rate``.
        mechanism : str
            Registry name of the per-attribute randomizer (``resolve_mechanism``).
        among : {"present", "all"}
            Which attributes are sampled (module doc).
        mechanism_options : dict, optional
            Extra keyword arguments of the mechanism.

        Returns
        -------
        Protocol
            The protocol with the chosen ``attributes_per_person``.
        """
        sizes = list(schema.sizes)
        if len(sizes) < 2:
            return cls(epsilon, None, mechanism, among, mechanism_options or {})

        def factory(e, f):
            return resolve_mechanism(mechanism, e, f, **(mechanism_options or {}))

        choice = choose_attributes_per_person(sizes, epsilon, mechanism=factory, among=among,
                                              presence=presence, missing_rate=missing_rate, n=n)
        return cls(epsilon, choice.attributes_per_person, mechanism, among, mechanism_options or {})

    # ---- derived quantities ------------------------------------------------------------------
    def attributes_for(self, g: int) -> int:
        """Attributes reported per person for a schema of ``g`` attributes.

        Parameters
        ----------
        g : int
            Number of attributes of the schema.

        Returns
        -------
        int
            ``attributes_per_person`` capped at g (g when it is ``None``).
        """
        k = self.attributes_per_person
        return g if k is None else min(k, g)

    k = renamed_attribute("attributes_per_person", "k")
    k_for = renamed_function(attributes_for, "k_for")
    k_for.__doc__ = """Deprecated name of ``attributes_for``.

        Parameters
        ----------
        g : int
            Number of attributes of the schema.

        Returns
        -------
        int
            As ``attributes_for``.
        """

    def epsilon_per_attribute(self, g: int) -> float:
        """Budget of one reported attribute: ``epsilon / k``.

        Parameters
        ----------
        g : int
            Number of attributes of the schema (k is ``attributes_for(g)``).

        Returns
        -------
        float
            ``epsilon / attributes_for(g)``.
        """
        return self.epsilon / self.attributes_for(g)

    def is_paper_split(self, g: int) -> bool:
        """Whether this is the paper's even split over all g attributes.

        Parameters
        ----------
        g : int
            Number of attributes of the schema.

        Returns
        -------
        bool
            True when every person reports all g attributes (``attributes_for(g) == g``).
        """
        return self.attributes_for(g) == g

    def mechanisms(self, schema: Schema) -> tuple[Mechanism, ...]:
        """One mechanism per attribute, each with ``epsilon / k``.

        Parameters
        ----------
        schema : Schema
            The attributes; each mechanism is built on its attribute's domain size.

        Returns
        -------
        tuple of Mechanism
            In schema order, each this protocol's ``mechanism`` (with ``mechanism_options``) at
            ``epsilon_per_attribute(len(schema))``.
        """
        e = self.epsilon_per_attribute(len(schema))
        return tuple(resolve_mechanism(self.mechanism, e, a.size, **self.mechanism_options)
                     for a in schema)

    # ---- client side -------------------------------------------------------------------------
    def select(self, present: np.ndarray, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Which attributes each person reports, a subset of ``present``.

        Uniform random k-subsets (module doc), drawn by ranking i.i.d. uniform keys per row; no
        Python loop over people.

        Parameters
        ----------
        present : numpy.ndarray (n, g) of bool
            Which attributes each person has.
        rng : numpy.random.Generator, int or None
            Source of the draw; ``None``: a fresh secure generator, as in ``randomize``.

        Returns
        -------
        numpy.ndarray (n, g) of bool
            The attributes each person reports: a copy of ``present`` when k >= g, else at most k
            per row (exactly k among the present ones under "present" when the person has k or
            more; under "all", the present ones among k drawn from all g).
        """
        present = np.asarray(present, dtype=bool)
        n, g = present.shape
        k = self.attributes_for(g)
        if k >= g:
            return present.copy()
        rng = as_generator(rng)
        keys = rng.random((n, g))
        if self.among == "present":
            keys = np.where(present, keys, np.inf)
        ranks = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
        return (ranks < k) & present

    def randomize(self, schema: Schema, codes: np.ndarray,
                  rng: np.random.Generator | int | None = None) -> RecordReports:
        """Randomize an encoded (n, g) matrix as clients following this protocol would.

        Each person's reported attributes are chosen by ``select``; the others are sent as
        missing, and each reported one goes through its attribute's mechanism.

        Parameters
        ----------
        schema : Schema
            The attributes of ``codes``.
        codes : numpy.ndarray (n, g) of int
            Encoded values (``MISSING`` where a person has no value), checked against ``schema``.
        rng : numpy.random.Generator, int or None
            ``None`` (production clients): a fresh ChaCha20 generator keyed from the operating
            system (``reidrisk.mechanisms.secure_generator``); simulations and tests pass a seed.

        Returns
        -------
        RecordReports
            The reports, with this protocol's mechanisms.
        """
        codes = schema.validate_codes(codes)
        rng = as_generator(rng)
        chosen = self.select(codes != MISSING, rng)
        sent = np.where(chosen, codes, MISSING).astype(np.int32)
        mechs = self.mechanisms(schema)
        reports = tuple(m.perturb(sent[:, j], rng) for j, m in enumerate(mechs))
        return RecordReports(schema, mechs, reports)

    # ---- server side -------------------------------------------------------------------------
    def check_reports(self, reports: RecordReports) -> RecordReports:
        """Check that a batch of reports follows this protocol.

        Every attribute's mechanism must be this protocol's mechanism at ``epsilon / k``, and no
        person may report more than k attributes (else their report would exceed ``epsilon``).

        Parameters
        ----------
        reports : RecordReports
            The batch to check.

        Returns
        -------
        RecordReports
            ``reports`` itself, unchanged, when it follows the protocol.

        Raises
        ------
        ProtocolError
            Naming the attribute with another mechanism or budget, or the first row that reports
            more than k attributes.
        """
        g = len(reports.schema)
        e = self.epsilon_per_attribute(g)
        for attr, mech in zip(reports.schema, reports.mechanisms):
            if mech.name != self.mechanism.lower():
                raise ProtocolError(
                    f"attribute {attr.name!r} was randomized with {mech.name!r}, but the protocol "
                    f"declares {self.mechanism!r}"
                )
            if not math.isclose(mech.epsilon, e, rel_tol=1e-9):
                raise ProtocolError(
                    f"attribute {attr.name!r} has budget {mech.epsilon:g}, but the protocol gives "
                    f"each reported attribute epsilon / k = {self.epsilon:g} / "
                    f"{self.attributes_for(g)} = {e:g}"
                )
        counts = reports.present().sum(axis=1)
        k = self.attributes_for(g)
        if counts.size and counts.max() > k:
            i = int(np.argmax(counts))
            raise ProtocolError(
                f"row {i} reports {int(counts[i])} attributes, more than the protocol's k = {k}; its "
                f"report would spend {int(counts[i]) * e:g} > epsilon = {self.epsilon:g}. Reject "
                "the batch or re-collect it with the declared protocol"
            )
        return reports

    def to_dict(self) -> dict:
        """The protocol as a JSON-ready dict (the inverse of ``from_dict``).

        Returns
        -------
        dict
            ``format``, ``version``, ``epsilon``, ``attributes_per_person``, ``mechanism``,
            ``among`` and ``mechanism_options``.
        """
        return {"format": PROTOCOL_FORMAT, "version": PROTOCOL_VERSION, "epsilon": self.epsilon,
                "attributes_per_person": self.attributes_per_person, "mechanism": self.mechanism,
                "among": self.among,
                "mechanism_options": dict(self.mechanism_options)}

    @classmethod
    def from_dict(cls, d: dict) -> Protocol:
        """The protocol a ``to_dict`` dict describes.

        Parameters
        ----------
        d : dict
            As written by ``to_dict``; files written before the rename may carry the number of
            attributes per person under ``"k"``, and ``among`` defaults to ``"present"``.

        Returns
        -------
        Protocol
            The protocol, validated as by the constructor.

        Raises
        ------
        ProtocolError
            When the format or version is not this one's, or a required key is missing.
        """
        if d.get("format") != PROTOCOL_FORMAT:
            raise ProtocolError(f"not a reidrisk protocol: 'format' must be {PROTOCOL_FORMAT!r}")
        if d.get("version") != PROTOCOL_VERSION:
            raise ProtocolError(
                f"protocol version {d.get('version')!r} is not supported (expected {PROTOCOL_VERSION})"
            )
        # files written before the rename carry the count under "k"
        per_person = d.get("attributes_per_person", d.get("k"))
        try:
            return cls(d["epsilon"], per_person, d["mechanism"], d.get("among", "present"),
                       d.get("mechanism_options") or {})
        except KeyError as exc:
            raise ProtocolError(f"protocol entry lacks the key {exc.args[0]!r}") from None


# ---------------------------------------------------------------------------------------------
# choosing k
# ---------------------------------------------------------------------------------------------
def variance_factor(mech: Mechanism) -> float:
    """The variance factor S of a pure frequency oracle (module doc).

    ``S = (p (1 - p) + (f - 1) q (1 - q)) / (p - q)^2``: n times the summed cell variance of the
    inversion estimate of one distribution, less the ``1 - sum p^2`` term.

    Parameters
    ----------
    mech : Mechanism
        The oracle (its ``p_support``, ``q_support`` and ``k`` = f are read).

    Returns
    -------
    float
        S(p, q, f).

    Raises
    ------
    ProtocolError
        When the mechanism is not a frequency oracle with 0 <= q < p <= 1.
    """
    p, q, f = float(mech.p_support), float(mech.q_support), mech.k
    if not 0 <= q < p <= 1:
        raise ProtocolError(f"{mech!r} is not a frequency oracle with 0 <= q < p <= 1")
    return (p * (1 - p) + (f - 1) * q * (1 - q)) / (p - q) ** 2


@renamed_keywords(k="attributes_per_person")
def pair_coverage(attributes_per_person: int, g: int, *, among: str = "present",
                  presence: np.ndarray | None = None, missing_rate: float = 0.0,
                  n: int | None = None) -> np.ndarray:
    """Expected number of people reporting each pair together, (g, g) (diagonal: each attribute).

    From a presence matrix when given (exact expectation over the sampling), else from an MCAR
    missing rate and ``n`` (module doc, ``n_jj'(k)``).

    Parameters
    ----------
    attributes_per_person : int
        k, the number of attributes each person reports (capped at g).
    g : int
        Number of attributes.
    among : {"present", "all"}
        Which attributes are sampled (module doc).
    presence : numpy.ndarray (n, g) of bool, optional
        Who has which attribute; when given, ``missing_rate`` and ``n`` are not used.
    missing_rate : float
        MCAR missing rate in [0, 1), used with ``n`` when ``presence`` is not given.
    n : int, optional
        Number of people, required when ``presence`` is not given.

    Returns
    -------
    numpy.ndarray (g, g) of float
        Off the diagonal ``n_jj'(k)``, on it ``n_j(k)`` (module doc).
    """
    if among not in AMONG:
        raise ProtocolError(f"among must be one of {AMONG}, got {among!r}")
    k = min(int(attributes_per_person), g)
    if presence is not None:
        P = np.asarray(presence, dtype=bool)
        if P.ndim != 2 or P.shape[1] != g:
            raise ProtocolError(f"presence must be an (n, {g}) boolean matrix, got {P.shape}")
        s = P.sum(axis=1).astype(np.float64)
        if among == "all":
            c2 = np.full(s.shape, k * (k - 1) / (g * (g - 1)) if g > 1 else 0.0)
            c1 = np.full(s.shape, k / g)
        else:
            t = np.minimum(k, s)
            with np.errstate(divide="ignore", invalid="ignore"):
                c2 = np.where(s >= 2, t * (t - 1) / (s * (s - 1)), 0.0)
                c1 = np.where(s >= 1, t / s, 0.0)
        Pf = P.astype(np.float64)
        out = (Pf * c2[:, None]).T @ Pf
        np.fill_diagonal(out, (Pf * c1[:, None]).sum(axis=0))
        return out
    if n is None:
        raise ProtocolError("pair_coverage needs a presence matrix or n (with missing_rate)")
    m = float(missing_rate)
    if not 0 <= m < 1:
        raise ProtocolError(f"missing_rate must be in [0, 1), got {missing_rate!r}")
    r = 1.0 - m
    # p2, p1: the shares c2, c1 above, in expectation over MCAR presence
    if among == "all":
        p2 = k * (k - 1) / (g * (g - 1)) if g > 1 else 0.0
        p1 = k / g
    else:
        s2 = 2 + np.arange(g - 1)  # present count given both j and j' present
        w2 = binom.pmf(np.arange(g - 1), g - 2, r) if g >= 2 else np.ones(1)
        t2 = np.minimum(k, s2)
        p2 = float(np.sum(w2 * t2 * (t2 - 1) / (s2 * (s2 - 1))))
        s1 = 1 + np.arange(g)
        w1 = binom.pmf(np.arange(g), g - 1, r)
        p1 = float(np.sum(w1 * np.minimum(k, s1) / s1))
    out = np.full((g, g), n * r * r * p2)
    np.fill_diagonal(out, n * r * p1)
    return out


@dataclass(frozen=True)
class SamplingChoice:
    """Result of ``choose_attributes_per_person`` (formerly ``KChoice`` of ``choose_k``).

    Parameters
    ----------
    attributes_per_person : int
        The chosen k (formerly ``k``).
    candidates : numpy.ndarray (K,)
        The candidate values of k, 1..g (formerly ``ks``).
    errors : numpy.ndarray (K,)
        The criterion E(k) of the module doc for each candidate (``pair_errors`` +
        ``marginal_errors``).
    paper_error : float
        The same for k = g (the paper's split).
    gain : float
        ``paper_error / errors[k]`` (>= 1; 1 when the paper's split is chosen).
    pair_errors, marginal_errors : numpy.ndarray (K,)
        Expected mean squared error of a pair table and of a marginal, capped.
    """

    attributes_per_person: int
    candidates: np.ndarray
    errors: np.ndarray
    paper_error: float
    gain: float
    pair_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))
    marginal_errors: np.ndarray = field(default_factory=lambda: np.zeros(0))

    k = renamed_attribute("attributes_per_person", "k")
    ks = renamed_attribute("candidates", "ks")

    def summary(self) -> str:
        """One sentence on the choice, for the command line and reports.

        Returns
        -------
        str
            The chosen k, out of g, and the expected gain over the paper's split (or why the
            paper's split or k = 1 was chosen).
        """
        k = self.attributes_per_person
        g = int(self.candidates.max()) if self.candidates.size else k
        if k >= g:
            return (f"k = {k} (= g, the paper's even split): sampling fewer attributes would "
                    "not reduce the expected error")
        if k == 1:
            return (f"k = 1 of {g} attributes per person: at this budget and number of people no "
                    "pair table can be estimated better than independence, so each person spends "
                    f"the whole budget on one attribute (expected error {self.gain:.3g}x smaller "
                    f"than the paper's split over all {g}); the model will be the product of the "
                    "marginals")
        return (f"k = {k} of {g} attributes per person: expected error "
                f"{self.gain:.3g}x smaller than the paper's split over all {g}")


def _variance_factors(sizes: list[int], epsilon: float, k: int,
                      make: Callable[[float, int], Mechanism]) -> np.ndarray:
    e = epsilon / k
    cache: dict[int, float] = {}
    return np.array([cache.setdefault(f, variance_factor(make(e, f))) for f in sizes])


def _factory(mechanism) -> Callable[[float, int], Mechanism]:
    return mechanism if callable(mechanism) else (lambda e, f: resolve_mechanism(mechanism, e, f))


@renamed_keywords(ks="candidates")
def expected_pair_errors(sizes: Sequence[int] | np.ndarray, epsilon: float,
                         candidates: Sequence[int] | np.ndarray, *,
                         mechanism: str | Callable[[float, int], Mechanism] = "subset",
                         among: str = "present", presence: np.ndarray | None = None,
                         missing_rate: float = 0.0, n: int | None = None) -> np.ndarray:
    """The pair term of E(k): the mean expected pair-table error, one value per k.

    Mean over pairs of the expected squared Frobenius error (*) of the pair inversion, each pair
    capped at ``1 - 1 / (f_j f_j')`` (module doc). Pairs never reported together (k = 1) count at
    their cap.

    Parameters
    ----------
    sizes : sequence of int
        Domain sizes f_j of the g >= 2 attributes.
    epsilon : float
        The whole-record budget.
    candidates : sequence of int
        The values of k to evaluate.
    mechanism : str or callable
        Registry name or factory ``(epsilon, f) -> Mechanism`` (a pure frequency oracle).
    among : {"present", "all"}
        Which attributes are sampled (module doc).
    presence : numpy.ndarray (n, g) of bool, optional
        Who has which attribute.
    missing_rate : float
        Expected MCAR missing rate, used with ``n`` when ``presence`` is not given.
    n : int, optional
        Number of people, required when ``presence`` is not given.

    Returns
    -------
    numpy.ndarray (len(candidates),)
        The capped mean pair error for each candidate k.

    Raises
    ------
    ProtocolError
        When there are fewer than two attributes.
    """
    sizes = [int(f) for f in sizes]
    g = len(sizes)
    if g < 2:
        raise ProtocolError("choosing k needs at least two attributes (pairs)")
    eps = check_epsilon(epsilon)
    make = _factory(mechanism)
    iu = np.triu_indices(g, 1)
    fj = np.asarray(sizes, dtype=np.float64)
    floor = 1.0 / np.outer(fj, fj)[iu]
    cap = 1.0 - floor
    out = []
    for k in candidates:
        S = _variance_factors(sizes, eps, min(int(k), g), make)
        cov = pair_coverage(k, g, among=among, presence=presence, missing_rate=missing_rate, n=n)[iu]
        num = np.outer(1 + S, 1 + S)[iu] - floor
        with np.errstate(divide="ignore"):
            err = np.where(cov > 0, num / np.where(cov > 0, cov, 1.0), cap)
        out.append(float(np.minimum(err, cap).mean()))
    return np.asarray(out)


@renamed_keywords(ks="candidates")
def expected_marginal_errors(sizes: Sequence[int] | np.ndarray, epsilon: float,
                             candidates: Sequence[int] | np.ndarray, *,
                             mechanism: str | Callable[[float, int], Mechanism] = "subset",
                             among: str = "present", presence: np.ndarray | None = None,
                             missing_rate: float = 0.0, n: int | None = None) -> np.ndarray:
    """The marginal term of E(k): the mean expected marginal error, one value per k.

    Mean over attributes of the expected squared error ``(1 + S_j - 1 / f_j) / n_j(k)`` of the
    marginal inversion, each capped at ``1 - 1 / f_j`` (module doc).

    Parameters
    ----------
    sizes : sequence of int
        Domain sizes f_j of the g attributes.
    epsilon : float
        The whole-record budget.
    candidates : sequence of int
        The values of k to evaluate.
    mechanism : str or callable
        Registry name or factory ``(epsilon, f) -> Mechanism`` (a pure frequency oracle).
    among : {"present", "all"}
        Which attributes are sampled (module doc).
    presence : numpy.ndarray (n, g) of bool, optional
        Who has which attribute.
    missing_rate : float
        Expected MCAR missing rate, used with ``n`` when ``presence`` is not given.
    n : int, optional
        Number of people, required when ``presence`` is not given.

    Returns
    -------
    numpy.ndarray (len(candidates),)
        The capped mean marginal error for each candidate k.
    """
    sizes = [int(f) for f in sizes]
    g = len(sizes)
    eps = check_epsilon(epsilon)
    make = _factory(mechanism)
    fj = np.asarray(sizes, dtype=np.float64)
    cap = 1.0 - 1.0 / fj
    out = []
    for k in candidates:
        S = _variance_factors(sizes, eps, min(int(k), g), make)
        cov = np.diag(pair_coverage(k, g, among=among, presence=presence,
                                    missing_rate=missing_rate, n=n))
        with np.errstate(divide="ignore"):
            err = np.where(cov > 0, (1 + S - 1.0 / fj) / np.where(cov > 0, cov, 1.0), cap)
        out.append(float(np.minimum(err, cap).mean()))
    return np.asarray(out)


def choose_attributes_per_person(
        sizes: Sequence[int] | np.ndarray, epsilon: float, *,
        mechanism: str | Callable[[float, int], Mechanism] = "subset", among: str = "present",
        presence: np.ndarray | None = None, missing_rate: float = 0.0,
        n: int | None = None) -> SamplingChoice:
    """The number of attributes per person that minimizes the expected error E(k) (module doc).

    E(k) is the expected error of the estimates the model is built from (pair tables and
    marginals).

    Plan with what is known before collection: the domain sizes, the budget, and either a
    presence matrix or the number of people and the expected missing rate.

    Parameters
    ----------
    sizes : sequence of int
        Domain sizes f_j of the g attributes.
    epsilon : float
        The whole-record budget.
    mechanism : str or callable
        Registry name or factory ``(epsilon, f) -> Mechanism`` (a pure frequency oracle); default
        ``"subset"``.
    among : {"present", "all"}
        Which attributes are sampled (module doc).
    presence : numpy.ndarray (n, g) of bool, optional
        Who has which attribute, e.g. of a pilot or of the data in a simulation.
    missing_rate : float
        Expected MCAR missing rate in [0, 1), used with ``n`` when ``presence`` is not given.
    n : int, optional
        Number of people, required when ``presence`` is not given.

    Returns
    -------
    SamplingChoice
        k in 1..g; k = g is the paper's split, k = 1 gives up the pairs for the marginals.
    """
    g = len(sizes)
    if presence is None and n is None:
        raise ProtocolError("choosing attributes_per_person needs the presence matrix or n "
                            "(people) and missing_rate")
    ks = np.arange(1, g + 1)
    opts: dict[str, Any] = dict(mechanism=mechanism, among=among, presence=presence,
                                missing_rate=missing_rate, n=n)
    pair = expected_pair_errors(sizes, epsilon, ks, **opts)
    marg = expected_marginal_errors(sizes, epsilon, ks, **opts)
    errs = pair + marg
    i = int(np.argmin(errs))
    paper = float(errs[-1])
    gain = float(paper / errs[i]) if errs[i] > 0 else 1.0
    return SamplingChoice(int(ks[i]), ks, errs, paper, gain, pair, marg)


# the former names keep working, with a DeprecationWarning
Protocol.__init__ = renamed_keywords(  # type: ignore[method-assign]
    k="attributes_per_person")(Protocol.__init__)
choose_k = renamed_function(choose_attributes_per_person, "choose_k")
choose_k.__doc__ = """Deprecated name of ``choose_attributes_per_person``.

Parameters
----------
sizes, epsilon, mechanism, among, presence, missing_rate, n
    As in ``choose_attributes_per_person``.

Returns
-------
SamplingChoice
    As ``choose_attributes_per_person``.
"""


def __getattr__(name: str):
    if name == "KChoice":  # the result class's former name
        warn_renamed("class", "KChoice", "SamplingChoice")
        return SamplingChoice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AMONG", "Protocol", "ProtocolError", "SamplingChoice", "choose_attributes_per_person",
    "choose_k", "expected_marginal_errors", "expected_pair_errors", "pair_coverage",
    "resolve_mechanism", "variance_factor",
]
