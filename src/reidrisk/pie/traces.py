"""Markov-chain matching of location traces and rating histories (paper 002, Section 5.1).

Spec/pie.md Section 10. The adversary's auxiliary information about user u is a first-order
Markov chain fitted by maximum likelihood on u's training sequence: the visit-probability vector
``pi_u(x)`` (count of x / training length) and the transition matrix ``A_u(x, x')`` (count of
x -> x' / count of transitions leaving x). The score of u for an observed sequence y_1..y_T is

    s_u(y) = sum_{t : p_t > 0} ln(p_t / delta),   p_1 = pi_u(y_1), p_t = A_u(y_{t-1}, y_t),

with delta = 1e-8 (the "trans" model), or with p_t = pi_u(y_t) for every t (the "visit" model).
This is ln L~_u(y) - T ln delta where L~ replaces every zero factor by delta.

Vectorization: only the nonzero log-factors are stored, as sparse matrices over the symbols and
the transitions seen in training (n_users x vocabulary); the release is turned into count
matrices over the same vocabularies; then score[v, u] = counts_v . L_u for all pairs at once is
one sparse matrix product (symbols or transitions never seen in training have p = 0 and add 0).

Knowledge models (paper Section 5.2): *maximum knowledge* trains on the personal data itself;
*partial knowledge* trains on other data of the same users (the background period).
LDP obfuscation goes through the core mechanisms: ``obfuscate`` perturbs every released event
with a ``reidrisk.mechanisms.GRR`` over the region domain, or a ``GLH`` with one lookup table shared
by all users and known to the adversary (the authors' set-up, docs/design/pie.md#mechanisms), in
which case ``adversary_view`` maps the training data through the same table and both sides live on
the g hash values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from reidrisk.data.traces import Sequences
from reidrisk.errors import ReidriskError
from reidrisk.mechanisms import GLH, GRR, Mechanism
from reidrisk.mechanisms.base import as_generator
from reidrisk.mechanisms.glh import TableHashFamily
from reidrisk.pie.pse import (
    DETCurve,
    Identification,
    KLEstimate,
    det_curve,
    genuine_impostor,
    identification_error,
    pse,
)

DELTA = 1e-8
"""Smoothing constant of the score (the authors' value,
docs/design/pie.md#markov-chain-matching)."""

MODELS = ("trans", "visit")

_MAX_PAIR_DOMAIN = 3_037_000_499
"""Largest domain whose transition keys x * k + x' fit in int64 (floor(sqrt(2^63 - 1)))."""


class MatchError(ReidriskError, ValueError):
    """The two sides of a match do not fit (different domains, a release user without background,
    an unsupported mechanism). The message names the value and the fix."""


@dataclass(frozen=True, eq=False)
class MarkovModel:
    """Per-user Markov chains fitted on training sequences
    (docs/design/pie.md#markov-chain-matching).

    Parameters
    ----------
    users : numpy.ndarray (n,)
        The users.
    k : int
        The symbol domain.
    delta : float
        The smoothing constant.
    symbols : numpy.ndarray (S,)
        The sorted symbols seen in training.
    log_visit : scipy.sparse.csr_matrix (n, S)
        ln(pi_u(x) / delta) where pi_u(x) > 0.
    transitions : numpy.ndarray (R,)
        The sorted transition keys x * k + x' seen in training.
    log_trans : scipy.sparse.csr_matrix (n, R)
        ln(A_u(x, x') / delta) where A_u(x, x') > 0.
    """

    users: np.ndarray
    k: int
    delta: float
    symbols: np.ndarray
    log_visit: sp.csr_matrix
    transitions: np.ndarray
    log_trans: sp.csr_matrix

    @property
    def n(self) -> int:
        return int(self.users.size)


@dataclass(frozen=True, eq=False)
class MatchResult:
    """Scores of every release (row) against every background user (column) and what follows.

    Parameters
    ----------
    scores : numpy.ndarray (n_release, n_background)
        The scores.
    truth : numpy.ndarray (n_release,)
        The column of each release's own user.
    identification : Identification
        The best-score rule.
    pse : KLEstimate
        The k-NN estimate of D(f_G || f_I) in bits from the genuine scores and one impostor
        score per release (docs/design/pie.md#k-nn-divergence-estimator).
    genuine, impostor : numpy.ndarray
        Those two samples.
    """

    scores: np.ndarray
    truth: np.ndarray
    identification: Identification
    pse: KLEstimate
    genuine: np.ndarray
    impostor: np.ndarray

    def det(self, thresholds: int | np.ndarray = 1000) -> DETCurve:
        """The DET curve of the genuine and impostor scores (``det_curve``).

        Parameters
        ----------
        thresholds : int or numpy.ndarray
            As in ``det_curve``.

        Returns
        -------
        DETCurve
            FAR and FRR at each threshold, and the equal error rate.
        """
        return det_curve(self.genuine, self.impostor, thresholds)


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0 < delta < 1:
        raise MatchError(f"smoothing delta={delta!r} must be in (0, 1), e.g. 1e-8")
    return delta


def _transition_keys(seqs: Sequences) -> tuple[np.ndarray, np.ndarray]:
    """(owner row, key = x * k + x') of every consecutive pair within a user's sequence."""
    if seqs.k > _MAX_PAIR_DOMAIN:
        raise MatchError(f"a domain of {seqs.k} symbols is too large to key transitions in 64 bits "
                         f"(at most {_MAX_PAIR_DOMAIN}); for GLH use a hash range g below that")
    owner = seqs.owner()
    same = owner[1:] == owner[:-1]
    keys = seqs.codes[:-1][same] * np.int64(seqs.k) + seqs.codes[1:][same]
    return owner[1:][same], keys


def _cell_counts(rows: np.ndarray, keys: np.ndarray, n: int):
    """Vocabulary (sorted unique keys) and the nonzero (row, column, count) cells, row-major."""
    vocab, col = np.unique(keys, return_inverse=True)
    width = max(1, vocab.size)
    cells, cnt = np.unique(rows * np.int64(width) + col.ravel(), return_counts=True)
    return vocab, cells // width, cells % width, cnt.astype(float)


def _csr(r: np.ndarray, c: np.ndarray, data: np.ndarray, shape) -> sp.csr_matrix:
    return sp.csr_matrix((data, (r, c)), shape=shape)


def fit_markov(train: Sequences, delta: float = DELTA) -> MarkovModel:
    """Fit pi_u and A_u by maximum likelihood on each user's training sequence
    (docs/design/pie.md#markov-chain-matching).

    Users with an empty training sequence get no nonzero factor (every score 0).

    Parameters
    ----------
    train : Sequences
        One training sequence per user.
    delta : float
        Smoothing constant of the score (default 1e-8, the authors' value).

    Returns
    -------
    MarkovModel
        The fitted chains.
    """
    delta = _check_delta(delta)
    n, k = train.n, train.k
    lengths = train.lengths.astype(float)
    symbols, r, c, cnt = _cell_counts(train.owner(), train.codes, n)
    log_visit = _csr(r, c, np.log(cnt / lengths[r] / delta), (n, symbols.size))
    t_rows, t_keys = _transition_keys(train)
    transitions, r, c, cnt = _cell_counts(t_rows, t_keys, n)
    # transitions leaving x for user u: the sum of the counts of u's cells with source x
    _, src, = np.unique(r * np.int64(k) + transitions[c] // k, return_inverse=True)
    leaving = np.bincount(src.ravel(), weights=cnt)[src.ravel()] if cnt.size else cnt
    log_trans = _csr(r, c, np.log(cnt / leaving / delta), (n, transitions.size))
    return MarkovModel(train.users, k, delta, symbols, log_visit, transitions, log_trans)


def _counts(rows: np.ndarray, keys: np.ndarray, vocab: np.ndarray, n: int) -> sp.csr_matrix:
    """CSR (n, vocab) counting each key per row; keys outside the vocabulary are dropped."""
    pos = np.searchsorted(vocab, keys)
    ok = pos < vocab.size
    ok[ok] = vocab[pos[ok]] == keys[ok]
    m = sp.csr_matrix((np.ones(int(ok.sum())), (rows[ok], pos[ok])), shape=(n, vocab.size))
    m.sum_duplicates()
    return m


def score_matrix(model: MarkovModel, release: Sequences, kind: str = "trans") -> np.ndarray:
    """score[v, u] = s_u(y_v) for every release v and every model user u, (n_release, n_users).

    One sparse product per term; no loop over users or events.

    Parameters
    ----------
    model : MarkovModel
        The fitted users (``fit_markov``).
    release : Sequences
        The released sequences to score.
    kind : {"trans", "visit"}
        "trans": pi for the first event, A for each transition; "visit": pi for every event.

    Returns
    -------
    numpy.ndarray (n_release, n_users)
        The scores.
    """
    if kind not in MODELS:
        raise MatchError(f"unknown model {kind!r}; choose one of {list(MODELS)}")
    if release.k != model.k:
        raise MatchError(f"the release is over {release.k} symbols but the model over {model.k}; "
                         "both must use the same region (or hash) domain")
    n = release.n
    owner = release.owner()
    if kind == "visit":
        counts = _counts(owner, release.codes, model.symbols, n)
        return (counts @ model.log_visit.T).toarray()
    first = release.offsets[:-1][release.lengths > 0]
    rows = np.flatnonzero(release.lengths > 0)
    out = (_counts(rows, release.codes[first], model.symbols, n) @ model.log_visit.T).toarray()
    t_rows, t_keys = _transition_keys(release)
    if t_keys.size:
        out += (_counts(t_rows, t_keys, model.transitions, n) @ model.log_trans.T).toarray()
    return out


def _truth(background: Sequences, release: Sequences) -> np.ndarray:
    order = np.argsort(background.users, kind="stable")
    pos = np.searchsorted(background.users[order], release.users)
    pos = np.minimum(pos, background.n - 1)
    found = background.users[order][pos] == release.users
    if not found.all():
        bad = release.users[np.flatnonzero(~found)[0]]
        raise MatchError(f"release user {bad.item()!r} has no background sequence "
                         f"({int((~found).sum())} such users); every released user must be among "
                         "the background users")
    return order[pos]


def match(background: Sequences, release: Sequences, kind: str = "trans", delta: float = DELTA,
          bootstrap: int = 100, rng: np.random.Generator | int | None = 0,
          impostors: str = "one") -> MatchResult:
    """Fit the Markov model on ``background``, score every release against every user, and
    measure the identification error rate (best-score rule) and the PSE
    (docs/design/pie.md#k-nn-divergence-estimator, docs/design/pie.md#markov-chain-matching).

    Parameters
    ----------
    background : Sequences
        The adversary's training data, one sequence per user.
    release : Sequences
        The released sequences; its ``users`` say which background user each belongs to (the
        ground truth).
    kind
        As in ``score_matrix``.
    delta
        As in ``fit_markov``.
    bootstrap : int
        Half-sample re-estimates of the PSE interval (``reidrisk.pie.pse.pse``).
    rng : numpy.random.Generator or int
        Draws the tie-breaking offsets, the impostor pairing, the jitter and the bootstrap
        (default 0).
    impostors : {"one", "all"}
        "one" impostor score per release against a random other user (the authors' sampling,
        M = N) or "all" the other users' scores (M = N (n - 1)); see
        ``reidrisk.pie.pse.genuine_impostor``.

    Returns
    -------
    MatchResult
        The scores, the identification error and the PSE estimate.
    """
    if background.n < 2:
        raise MatchError(f"need at least 2 background users, got {background.n}")
    truth = _truth(background, release)
    rng = as_generator(rng)
    scores = score_matrix(fit_markov(background, delta), release, kind)
    ident = identification_error(scores, truth, rng)
    gen, imp = genuine_impostor(scores, truth, rng, impostors)
    est = pse(gen, imp, bootstrap=bootstrap, rng=rng)
    return MatchResult(scores, truth, ident, est, gen, imp)


def maximum_knowledge(personal: Sequences, events: int | None = None, kind: str = "trans",
                      **kwargs) -> MatchResult:
    """Maximum-knowledge model: the adversary trains on the whole personal data and sees its
    first ``events`` events -- the paper's Fig. 5.

    Parameters
    ----------
    personal : Sequences
        The personal data, both the training data and the release.
    events : int, optional
        How many first events of each sequence the adversary sees (``None``: all).
    kind, **kwargs
        As in ``match``.

    Returns
    -------
    MatchResult
        As ``match``.
    """
    return match(personal, personal.head(events), kind, **kwargs)


def partial_knowledge(background: Sequences, personal: Sequences, train_events: int | None = None,
                      events: int | None = None, kind: str = "trans", **kwargs) -> MatchResult:
    """Partial-knowledge model: the adversary trains on the first ``train_events`` events of the
    background period and sees the first ``events`` events of the personal data (Fig. 6).

    Parameters
    ----------
    background : Sequences
        The background period, the adversary's training data.
    personal : Sequences
        The personal data, the release.
    train_events, events : int, optional
        How many first events of each sequence are trained on and seen (``None``: all).
    kind, **kwargs
        As in ``match``.

    Returns
    -------
    MatchResult
        As ``match``.
    """
    return match(background.head(train_events), personal.head(events), kind, **kwargs)


def _shared_table(mechanism: GLH) -> np.ndarray:
    fam = mechanism.family
    if not isinstance(fam, TableHashFamily) or fam.size != 1:
        raise MatchError(
            "matching GLH reports needs one hash table shared by all users and known to the "
            "adversary (the authors' set-up); build the mechanism with "
            "GLH.with_random_tables(epsilon, k, m=1, g=g, rng=seed)"
        )
    return fam.tables[0]


def obfuscate(release: Sequences, mechanism: Mechanism, rng: np.random.Generator | int | None = None
              ) -> Sequences:
    """Perturb every event of ``release`` with ``mechanism``; the result is over the k regions
    (GRR) or the g hash values (GLH).

    Parameters
    ----------
    release : Sequences
        The sequences to perturb.
    mechanism : Mechanism
        ``GRR`` over the k regions, or a one-table ``GLH``.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).

    Returns
    -------
    Sequences
        The reports as sequences.
    """
    if mechanism.k != release.k:
        raise MatchError(f"the mechanism is over k={mechanism.k} symbols but the traces over "
                         f"{release.k}; build it with k={release.k}")
    rng = as_generator(rng)
    if isinstance(mechanism, GRR):
        return release.with_codes(mechanism.perturb(release.codes, rng), release.k, release.labels)
    if isinstance(mechanism, GLH):
        _shared_table(mechanism)
        reports = mechanism.perturb(release.codes, rng)
        return release.with_codes(reports[:, -1], mechanism.g)
    raise MatchError(f"obfuscation of traces supports GRR and GLH, got {type(mechanism).__name__}")


def adversary_view(background: Sequences, mechanism: Mechanism | None) -> Sequences:
    """The background as the adversary fits it against ``mechanism``'s reports: unchanged for no
    mechanism or GRR; mapped through the shared hash table for GLH
    (docs/design/pie.md#markov-chain-matching).

    Parameters
    ----------
    background : Sequences
        The adversary's training data.
    mechanism : Mechanism or None
        The mechanism of the reports (a GLH must have one shared table).

    Returns
    -------
    Sequences
        The background as the adversary fits it.
    """
    if mechanism is None or isinstance(mechanism, GRR):
        return background
    if isinstance(mechanism, GLH):
        table = _shared_table(mechanism)
        if mechanism.k != background.k:
            raise MatchError(f"the mechanism is over k={mechanism.k} symbols but the traces over "
                             f"{background.k}")
        return background.with_codes(table[background.codes], mechanism.g)
    raise MatchError(f"obfuscation of traces supports GRR and GLH, got {type(mechanism).__name__}")


__all__ = [
    "DELTA", "MODELS", "MarkovModel", "MatchError", "MatchResult", "adversary_view", "fit_markov",
    "match", "maximum_knowledge", "obfuscate", "partial_knowledge", "score_matrix",
]
