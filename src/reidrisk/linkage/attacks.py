"""Linkage attacks of paper 001 (Sections 2.3 and 3) and a global one-to-one assignment attack.

Each attack sees the original table X and the release Y (never the true mapping) and returns a
``Linking``: for each row of Y the row position in X it claims, -1 when it gives up. Read as in
docs/design/linkage.md#attacks:

- E1 identify-rand: candidates = rows of X with the same QI vector; one of them uniformly at random.
- E2 identify-sa: candidates as E1; the one nearest on one SA column (``sa_column``).
- E3 identify-sort: rows of X and of Y ranked by the sum of their SA values; equal ranks matched
  (the r-th smallest row of Y -> the r-th smallest row of X; a Y row ranked beyond |X| gives up).
- E4 identify-sa21: QI ignored; the row of X nearest on one SA column.
- EUC1 (Section 3.2, Algorithm 1): candidates as E1; the smallest Euclidean distance over the SA
  columns; no candidate -> give up (-1). The paper's "assign the same index" is *not* done: it
  would read the true mapping whenever rows are not shuffled.
- EUC2 (Algorithm 2): as EUC1, but a row without a QI match is compared with every row of X.
- assign (ours): one global one-to-one assignment of Y rows to X rows minimizing the sum of a mixed
  distance over all columns (see ``assign``).

The distance attacks (E2, E4, EUC1, EUC2, assign) measure SA distance with ``metric``: the paper's
``"euclidean"``, ``"scaled"`` (columns divided by their sd), ``"log"`` (Euclidean on asinh(v / c)
per column: relative differences, for multiplicative noise) or ``"auto"`` (default:
``choose_metric``, without the true mapping).
Ties are broken uniformly at random with the given generator (``rng``). ``scale=True``
standardizes each SA column by its standard deviation in X before distances (default off, as in
the paper, except for ``assign``). "The same QI vector" means a QI vector the released one covers:
released ranges, sets, top/bottom codes and ``*`` are read as the original values they cover
(``generalization.read_release``; ``read_labels=False``: equal values only), and X is indexed by
an integer key per QI vector for each group of released rows read alike. Nearest neighbours
inside a QI block are found for all small blocks at once (candidate pairs expanded and sorted in
chunks) and with a KD-tree (``scipy.spatial.cKDTree``) per large block and for the whole of X; no
Python loop runs per row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from reidrisk.linkage.generalization import QIMatch, read_release
from reidrisk.linkage.release import LinkageError, Release, check_columns, numeric_matrix
from reidrisk.mechanisms.base import as_generator

#: a QI block with at most this many X rows is searched by expanding candidate pairs
SMALL_BLOCK = 48
#: candidate pairs handled per chunk (memory: pairs x |s| float64)
PAIR_CHUNK = 500_000
#: SA distances of the distance attacks: the paper's (raw values), Euclidean on the columns
#: divided by their standard deviation in X, and Euclidean on asinh(v / c) per column
#: (differences of logarithms for values well above c: relative differences)
METRICS = ("euclidean", "scaled", "log")
#: released rows ``choose_metric`` looks at
AUTO_SAMPLE = 2000


@dataclass(frozen=True, eq=False)
class Linking:
    """An attack's answer.

    Parameters
    ----------
    guess : numpy.ndarray int64 (len(release),)
        The row position in X claimed for each row of Y (-1: gave up).
    attack : str
        The attack's name.
    seconds : float
        Its wall time.
    distance : numpy.ndarray, optional
        Distance to the claimed row in the attack's own metric (float; NaN where not defined or
        given up).
    metric : str
        The SA distance used (``"euclidean"`` or ``"log"``; empty for attacks without one).
    """

    guess: np.ndarray
    attack: str
    seconds: float
    distance: np.ndarray | None = None
    metric: str = ""

    @property
    def n(self) -> int:
        return int(self.guess.shape[0])

    @property
    def gave_up(self) -> int:
        return int((self.guess < 0).sum())


# ---- input checks -----------------------------------------------------------------------------

def _frames(original, release) -> tuple[pd.DataFrame, pd.DataFrame]:
    y = release.data if isinstance(release, Release) else release
    x = original.data if isinstance(original, Release) else original
    for what, f in (("original", x), ("release", y)):
        if not isinstance(f, pd.DataFrame):
            raise LinkageError(f"the {what} must be a pandas DataFrame, got {type(f).__name__}")
    if len(y) > len(x):
        raise LinkageError(f"the release has {len(y)} rows, more than the original's {len(x)}; "
                           "each released row must descend from a distinct original row — check "
                           "that the files are not swapped")
    if len(x) == 0:
        raise LinkageError("the original table has no rows")
    return x.reset_index(drop=True), y.reset_index(drop=True)


def _columns(x, y, qi, sa) -> tuple[list[str], list[str]]:
    qi = check_columns(x, qi or [], "QI", "the original")
    sa = check_columns(x, sa or [], "SA", "the original")
    check_columns(y, qi, "QI", "the release")
    check_columns(y, sa, "SA", "the release")
    overlap = set(qi) & set(sa)
    if overlap:
        raise LinkageError(f"column(s) {sorted(overlap)} listed both as QI and SA; list each once")
    return qi, sa


def _sa(x, y, sa, scale: bool, metric: str = "euclidean", match: QIMatch | None = None
        ) -> tuple[np.ndarray, np.ndarray, str]:
    """X's and Y's SA columns in the coordinates of ``metric`` (``"auto"``: ``choose_metric`` on
    ``match``, or on the SA alone without it), standardized by X's standard deviation with
    ``scale``; and the metric used."""
    if not sa:
        raise LinkageError("this attack needs at least one SA column (sa=[...])")
    if metric not in METRICS and metric != "auto":
        raise LinkageError(f"unknown SA distance {metric!r}; use one of {[*METRICS, 'auto']}")
    xs = numeric_matrix(x, sa, "the original")
    ys = numeric_matrix(y, sa, "the release")
    if metric == "auto":
        metric = choose_metric(match if match is not None else read_release(x, y, []), xs, ys,
                               scale)
    xs, ys = _coordinates(xs, ys, metric, scale)
    return xs, ys, metric


def _coordinates(xs, ys, metric: str, scale: bool) -> tuple[np.ndarray, np.ndarray]:
    scale = scale or metric == "scaled"
    if metric == "log":
        c = np.array([_log_unit(xs[:, j]) for j in range(xs.shape[1])])
        xs, ys = np.arcsinh(xs / c), np.arcsinh(ys / c)
    if scale:
        sd = xs.std(axis=0, ddof=1) if len(xs) > 1 else np.ones(xs.shape[1])
        sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
        xs, ys = xs / sd, ys / sd
    return xs, ys


def _log_unit(column: np.ndarray) -> float:
    """The unit c of the log distance's asinh(v / c) for one SA column: the 5th percentile of its
    nonzero |values| in X (1 when all are 0)."""
    nonzero = np.abs(column[column != 0])
    return float(np.percentile(nonzero, 5)) if len(nonzero) else 1.0


def choose_metric(match: QIMatch, xs: np.ndarray, ys: np.ndarray, scale: bool = False,
                  sample: int = AUTO_SAMPLE) -> str:
    """The SA distance an attacker would pick without the true mapping: the one under which the
    attack's links are most often mutual.

    Each released row descends from a distinct original row, so under a distance that fits the
    noise the original row a released row finds nearest (among the rows its QI vector covers)
    finds that released row nearest in return (among the released rows of the same QI vector);
    a wrong link usually breaks this. For each of ``METRICS``, on up to ``sample`` released rows
    (evenly spaced; ties broken by a generator of its own, so the attack's draws are untouched),
    the share of mutual links; the metric with the larger share wins, the earlier of
    ``METRICS`` on a tie (the paper's ``"euclidean"`` when rows are released exactly). With
    ``scale`` (as ``assign`` does) the candidates are the scaled Euclidean and the scaled log
    distance.

    Parameters
    ----------
    match : QIMatch
        The release's QI read against the original (``generalization.read_release``).
    xs, ys : numpy.ndarray (n, s), (m, s)
        Raw SA values of X and Y.
    scale : bool
        Whether the attack standardizes the columns.
    sample : int
        Released rows looked at.

    Returns
    -------
    str
        One of ``METRICS``.
    """
    m = len(ys)
    chosen = np.zeros(m, dtype=bool)
    chosen[np.linspace(0, m - 1, min(sample, m)).astype(np.int64)] = True
    best, best_share = METRICS[0], -1.0
    for metric in METRICS if not scale else ("euclidean", "log"):
        a, b = _coordinates(xs, ys, metric, scale)
        gen = np.random.default_rng(0)
        mutual = linked = 0
        for rows, kx, ky in match.groups:
            pick = np.flatnonzero(chosen[rows])
            if not len(pick):
                continue
            g, _ = _block_nearest(kx, a, ky[pick], b[rows[pick]], gen, False)
            ok = g >= 0
            back, _ = _block_nearest(ky, b[rows], kx[g[ok]], a[g[ok]], gen, False)
            mutual += int((back == pick[ok]).sum())
            linked += int(ok.sum())
        share = mutual / linked if linked else 0.0
        if share > best_share + 1e-12:
            best, best_share = metric, share
    return best


def _one_column(sa: list[str], sa_column: str | None) -> list[str]:
    if sa_column is None:
        if not sa:
            raise LinkageError("this attack needs an SA column (sa=[...] or sa_column=...)")
        return [sa[0]]
    return [sa_column]


# ---- nearest neighbours with random ties ---------------------------------------------------------

def _nearest_tree(rows: np.ndarray, xs: np.ndarray, queries: np.ndarray, gen: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
    """For each query the nearest of X's ``rows`` (Euclidean on ``xs``) with random ties.

    Duplicate points are merged first (a random duplicate is returned). A KD-tree gives each query
    its nearest distinct point; a ball of that radius (relative tolerance 1e-9) counts the distinct
    points tied with it, and only the rare tied queries draw one of them at random.
    """
    pts = xs[rows]
    uniq, inv = np.unique(pts, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    tree = cKDTree(uniq)
    dist, pick = tree.query(queries, k=1)
    pick = np.asarray(pick, dtype=np.int64).reshape(-1)
    dist = np.asarray(dist, dtype=np.float64).reshape(-1)
    if len(uniq) > 1:
        far = np.flatnonzero(dist > 0)          # a distance-0 match is a unique point: no tie
        if len(far):
            radius = dist[far] * (1 + 1e-9)
            count = tree.query_ball_point(queries[far], radius, return_length=True)
            tied = far[count > 1]
            if len(tied):                       # rare: one small Python step per tied query
                balls = tree.query_ball_point(queries[tied], dist[tied] * (1 + 1e-9))
                pick[tied] = [b[int(gen.integers(len(b)))] for b in map(sorted, balls)]
    order = np.argsort(inv, kind="stable")
    ucount = np.bincount(inv, minlength=len(uniq))
    ustart = np.concatenate(([0], np.cumsum(ucount)[:-1]))
    member = order[ustart[pick] + (gen.random(len(queries)) * ucount[pick]).astype(np.int64)]
    return rows[member], dist


def _block_nearest(kx, xs, ky, ys, gen, fallback: bool) -> tuple[np.ndarray, np.ndarray]:
    """EUC1/EUC2 core: for each Y row the X row with the same key nearest on ``xs``/``ys`` (random
    ties); rows without a key match get -1, or with ``fallback`` the nearest X row overall."""
    m = len(ky)
    guess = np.full(m, -1, dtype=np.int64)
    dist = np.full(m, np.nan)
    ox = np.argsort(kx, kind="stable")
    ukeys, starts, counts = np.unique(kx[ox], return_index=True, return_counts=True)
    pos = np.searchsorted(ukeys, ky)
    pos_c = np.minimum(pos, len(ukeys) - 1)
    found = ukeys[pos_c] == ky
    cnt = np.where(found, counts[pos_c], 0)
    small = np.flatnonzero(found & (cnt <= SMALL_BLOCK))
    big = np.flatnonzero(found & (cnt > SMALL_BLOCK))
    # small blocks: expand (y, candidate) pairs chunk by chunk, sort by (y, distance, random)
    if len(small):
        csum = np.cumsum(cnt[small])
        bounds = np.searchsorted(csum, np.arange(PAIR_CHUNK, csum[-1] + PAIR_CHUNK, PAIR_CHUNK),
                                 side="right")
        lo = 0
        for hi in np.unique(np.concatenate((bounds, [len(small)]))):
            hi = max(int(hi), lo + 1)
            if lo >= len(small):
                break
            rows = small[lo:hi]
            c = cnt[rows]
            seg = np.repeat(np.arange(len(rows)), c)
            first = np.concatenate(([0], np.cumsum(c)[:-1]))
            offset = np.arange(seg.size) - first[seg]
            xi = ox[starts[pos_c[rows]][seg] + offset]
            diff = xs[xi] - ys[rows][seg]
            d2 = np.einsum("ij,ij->i", diff, diff)
            order = np.lexsort((gen.random(seg.size), d2, seg))
            best = order[first]
            guess[rows] = xi[best]
            dist[rows] = np.sqrt(d2[best])
            lo = hi
    # large blocks: a KD-tree each (few: each holds more than SMALL_BLOCK rows of X)
    if len(big):
        bk = pos_c[big]
        ob = np.argsort(bk, kind="stable")
        blocks, bstart = np.unique(bk[ob], return_index=True)
        bend = np.append(bstart[1:], len(ob))
        for b, s, e in zip(blocks, bstart, bend):
            rows_y = big[ob[s:e]]
            rows_x = ox[starts[b]:starts[b] + counts[b]]
            guess[rows_y], dist[rows_y] = _nearest_tree(rows_x, xs, ys[rows_y], gen)
    if fallback:
        rest = np.flatnonzero(~found)
        if len(rest):
            guess[rest], dist[rest] = _nearest_tree(np.arange(len(xs)), xs, ys[rest], gen)
    return guess, dist


# ---- the attacks --------------------------------------------------------------------------------

def identify_rand(original, release, *, qi, sa=(), rng=None, scale: bool = False,
                  read_labels: bool = True) -> Linking:
    """E1 identify-rand (paper 001, Section 2.3): a uniformly random row of X among those whose QI
    vector the row's covers; -1 when there is none.

    Parameters
    ----------
    original, release, qi, rng
        As in ``attack``.
    read_labels : bool
        Read generalized released values (ranges, sets, top/bottom codes, ``*``) as the original
        values they cover (``generalization.read_release``; default); ``False``: equal values
        only.
    sa, scale
        Accepted for a uniform signature and not used.

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    t0 = time.perf_counter()
    x, y = _frames(original, release)
    qi, _ = _columns(x, y, qi, sa)
    gen = as_generator(rng)
    guess = np.full(len(y), -1, dtype=np.int64)
    for rows, kx, ky in read_release(x, y, qi, read_labels=read_labels).groups:
        ox = np.argsort(kx, kind="stable")
        ukeys, starts, counts = np.unique(kx[ox], return_index=True, return_counts=True)
        pos = np.minimum(np.searchsorted(ukeys, ky), len(ukeys) - 1)
        found = ukeys[pos] == ky
        pick = starts[pos] + (gen.random(len(ky)) * counts[pos]).astype(np.int64)
        guess[rows] = np.where(found, ox[np.minimum(pick, len(ox) - 1)], -1)
    return Linking(guess, "E1", time.perf_counter() - t0)


def _euc(name, original, release, qi, cols, rng, scale, fallback, read_labels, metric) -> Linking:
    t0 = time.perf_counter()
    x, y = _frames(original, release)
    qi, cols = _columns(x, y, qi, cols)
    gen = as_generator(rng)
    match = read_release(x, y, qi, read_labels=read_labels)
    xs, ys, metric = _sa(x, y, cols, scale, metric, match)
    guess = np.full(len(y), -1, dtype=np.int64)
    dist = np.full(len(y), np.nan)
    for rows, kx, ky in match.groups:
        guess[rows], dist[rows] = _block_nearest(kx, xs, ky, ys[rows], gen, False)
    rest = np.flatnonzero(guess < 0)
    if fallback and len(rest):
        guess[rest], dist[rest] = _nearest_tree(np.arange(len(xs)), xs, ys[rest], gen)
    return Linking(guess, name, time.perf_counter() - t0, dist, metric)


def identify_sa(original, release, *, qi, sa, rng=None, scale: bool = False,
                sa_column: str | None = None, read_labels: bool = True, metric: str = "auto"
                ) -> Linking:
    """E2 identify-sa (paper 001, Section 2.3): among the rows of X with the row's QI vector, the one
    nearest on ``sa_column``; -1 when no row shares the QI vector.

    Parameters
    ----------
    original, release, qi, sa, rng, scale, read_labels, metric
        As in ``euc1``.
    sa_column : str, optional
        The SA column to compare (default: the first of ``sa``).

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    return _euc("E2", original, release, qi, _one_column(list(sa or []), sa_column), rng, scale,
                False, read_labels, metric)


def identify_sort(original, release, *, qi=(), sa, rng=None, scale: bool = False) -> Linking:
    """E3 identify-sort (paper 001, Section 2.3): sort X and Y by the sum of their SA values (ties in
    random order) and match the r-th row of Y to the r-th row of X.

    Parameters
    ----------
    original, release, sa, rng, scale
        As in ``euc1``.
    qi
        Not used.

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    t0 = time.perf_counter()
    x, y = _frames(original, release)
    _, sa = _columns(x, y, [], sa)
    gen = as_generator(rng)
    xs, ys, _ = _sa(x, y, sa, scale)
    rx = np.lexsort((gen.random(len(xs)), xs.sum(axis=1)))
    ry = np.lexsort((gen.random(len(ys)), ys.sum(axis=1)))
    guess = np.empty(len(ys), dtype=np.int64)
    guess[ry] = rx[: len(ys)]
    return Linking(guess, "E3", time.perf_counter() - t0)


def identify_sa21(original, release, *, qi=(), sa, rng=None, scale: bool = False,
                  sa_column: str | None = None, metric: str = "auto") -> Linking:
    """E4 identify-sa21 (paper 001, Section 2.3): QI ignored; the row of X nearest on ``sa_column``,
    ties at random.

    Parameters
    ----------
    original, release, sa, rng, scale, sa_column, metric
        As in ``identify_sa``.
    qi
        Not used.

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    t0 = time.perf_counter()
    x, y = _frames(original, release)
    cols = _one_column(list(sa or []), sa_column)
    _, cols = _columns(x, y, [], cols)
    gen = as_generator(rng)
    xs, ys, metric = _sa(x, y, cols, scale, metric)
    guess, dist = _nearest_tree(np.arange(len(xs)), xs, ys, gen)
    return Linking(guess, "E4", time.perf_counter() - t0, dist, metric)


def euc1(original, release, *, qi, sa, rng=None, scale: bool = False, read_labels: bool = True,
         metric: str = "auto") -> Linking:
    """EUC1 (paper 001, Section 3.2, Algorithm 1 as read in docs/design/linkage.md#attacks): among
    the rows of X whose QI vector (over ``qi``) the row's covers, the one at the smallest Euclidean
    distance over ``sa``; no such row -> -1 (gave up).

    Parameters
    ----------
    original, release, qi, sa, rng
        As in ``attack`` (``rng`` breaks ties).
    scale : bool
        Divide each SA column by its standard deviation in X before measuring distances.
    read_labels : bool
        As in ``identify_rand``.
    metric : str
        The SA distance: ``"euclidean"`` (the paper's), ``"scaled"`` (Euclidean on the columns
        divided by their sd in X, as ``scale=True``), ``"log"`` (Euclidean on asinh(v / c), c
        a small positive value of each column, so relative differences: the one multiplicative
        noise calls for) or ``"auto"`` (default: the one ``choose_metric`` picks without the
        true mapping, as an attacker would).

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    return _euc("EUC1", original, release, qi, sa, rng, scale, False, read_labels, metric)


def euc2(original, release, *, qi, sa, rng=None, scale: bool = False, read_labels: bool = True,
         metric: str = "auto") -> Linking:
    """EUC2 (paper 001, Section 3.2, Algorithm 2): as EUC1, but a row whose QI vector no row of X
    has is matched to the row of X at the smallest Euclidean distance over ``sa`` overall.

    Parameters
    ----------
    original, release, qi, sa, rng, scale, read_labels, metric
        As in ``euc1``.

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    return _euc("EUC2", original, release, qi, sa, rng, scale, True, read_labels, metric)


def assign(original, release, *, qi, sa, rng=None, scale: bool = True, qi_weight: float = 1.0,
           dense_limit: int = 1_000_000, max_rounds: int = 50, read_labels: bool = True,
           metric: str = "auto") -> Linking:
    """Global one-to-one assignment on a mixed distance over all columns (ours, not in paper 001).

    Cost of linking Y row i to X row j: ``qi_weight`` x (number of QI columns on which they differ)
    + the Euclidean distance of their SA vectors divided by sqrt(|s|) (with ``scale=True``, the
    default here, SA columns standardized by their standard deviation in X, so the SA term is a
    root-mean-square difference in standard deviations). Each Y row gets a distinct X row.

    - |Y| x |X| <= ``dense_limit``: the exact minimum-cost assignment,
      ``scipy.optimize.linear_sum_assignment`` on the full cost matrix.
    - Larger tables (decomposed so that 10^5 rows take seconds):
      1. exact-QI blocks: the Y and X rows sharing a QI vector are assigned to each other by
         ``linear_sum_assignment`` on their SA distances (the QI cost is 0 inside a block); blocks
         with one row on either side are solved for all blocks at once by nearest-neighbour search,
         larger ones one block at a time (a block over ``dense_limit`` cells is cut into chunks of
         rows of similar SA sums, each solved exactly);
      2. leftovers (Y rows whose QI vector no X row has, or for which their block ran out of X
         rows) are matched to the unused X rows in rounds: each proposes to its nearest unused X
         row by SA (KD-tree), each X row accepts the proposal of least mixed cost, the others
         propose again among the rows still unused (at most ``max_rounds`` rounds; a row still
         unmatched after them takes its nearest X row by SA, then one-to-one does not hold for it).

    With ``read_labels`` (default) a released QI value costs nothing against the original values it
    covers (ranges, sets, top/bottom codes, ``*``: ``generalization.read_release``); step 1 then
    runs once per group of released rows read alike, X rows taken by one group unavailable to the
    next. X's rows are permuted at random first, so ties are broken at random.

    Parameters
    ----------
    original, release, qi, sa, rng
        As in ``attack``.
    scale : bool
        Standardize the SA columns by their standard deviation in X (default ``True``).
    qi_weight : float
        Cost of one differing QI column.
    dense_limit : int
        Largest |Y| x |X| (or block) solved as one dense assignment.
    max_rounds : int
        Rounds of proposals for the leftovers.
    read_labels : bool
        Read generalized released values (default); ``False``: a QI column costs nothing only
        between equal values.
    metric : str
        The SA distance, as in ``euc1`` (the log coordinates are standardized too with
        ``scale``).

    Returns
    -------
    Linking
        The guessed original row of every released row (-1: no guess).
    """
    from scipy.optimize import linear_sum_assignment

    t0 = time.perf_counter()
    x, y = _frames(original, release)
    qi, sa = _columns(x, y, qi, sa)
    gen = as_generator(rng)
    w = float(qi_weight)
    n, m = len(x), len(y)
    perm = gen.permutation(n)
    x = x.iloc[perm].reset_index(drop=True)
    match = read_release(x, y, qi, read_labels=read_labels)
    if sa:
        xs, ys, metric = _sa(x, y, sa, scale, metric, match)
        xs, ys = xs / np.sqrt(len(sa)), ys / np.sqrt(len(sa))
    else:
        xs, ys = np.zeros((n, 1)), np.zeros((m, 1))
    if n * m <= dense_limit:
        from scipy.spatial.distance import cdist

        cost = cdist(ys, xs) + w * match.mismatches(np.arange(m)[:, None], np.arange(n)[None, :])
        rows, cols = linear_sum_assignment(cost)
        guess = np.full(m, -1, dtype=np.int64)
        guess[rows] = cols
    else:
        guess = np.full(m, -1, dtype=np.int64)
        used = np.zeros(n, dtype=bool)
        for rows, kx, ky in sorted(match.groups, key=lambda g: -len(g[0])):
            got = _assign_blocks(np.where(used, -1, kx), ky, xs, ys[rows], gen, dense_limit)
            guess[rows] = got
            used[got[got >= 0]] = True
        guess = _assign_leftovers(guess, match, xs, ys, w, gen, max_rounds)
    ok = np.flatnonzero(guess >= 0)
    dist = np.full(m, np.nan)
    d = xs[guess[ok]] - ys[ok]
    dist[ok] = np.sqrt(np.einsum("ij,ij->i", d, d)) + w * match.mismatches(ok, guess[ok])
    guess = np.where(guess >= 0, perm[np.maximum(guess, 0)], -1).astype(np.int64)
    return Linking(guess, "assign", time.perf_counter() - t0, dist, metric if sa else "")


def _assign_blocks(kx, ky, xs, ys, gen, dense_limit) -> np.ndarray:
    """Step 1 of ``assign``: one-to-one inside every exact-QI block; -1 for rows left over."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    m = len(ky)
    guess = np.full(m, -1, dtype=np.int64)
    ox = np.argsort(kx, kind="stable")
    ukx, sx, nx = np.unique(kx[ox], return_index=True, return_counts=True)
    oy = np.argsort(ky, kind="stable")
    uky, sy, ny = np.unique(ky[oy], return_index=True, return_counts=True)
    _, ia, ib = np.intersect1d(ukx, uky, assume_unique=True, return_indices=True)
    bx, by = nx[ia], ny[ib]
    # one Y row in its block: its nearest X row of the block (all such blocks at once)
    one_y = by == 1
    if one_y.any():
        rows = oy[sy[ib[one_y]]]
        guess[rows] = _block_nearest(kx, xs, ky[rows], ys[rows], gen, False)[0]
    # one X row, several Y rows: the X row goes to its nearest Y row of the block
    one_x = (bx == 1) & (by > 1)
    if one_x.any():
        xrows = ox[sx[ia[one_x]]]
        members = np.flatnonzero(np.isin(ky, uky[ib[one_x]]))
        yrows = _block_nearest(ky[members], ys[members], kx[xrows], xs[xrows], gen, False)[0]
        guess[members[yrows]] = xrows
    # several on both sides: exact assignment per block (few blocks: each holds >= 4 rows)
    for a, b in zip(ia[(bx > 1) & (by > 1)], ib[(bx > 1) & (by > 1)]):
        rx = ox[sx[a]:sx[a] + nx[a]]
        ry = oy[sy[b]:sy[b] + ny[b]]
        for cx_, cy_ in _chunks(rx, ry, xs, ys, dense_limit):
            r, c = linear_sum_assignment(cdist(ys[cy_], xs[cx_]))
            guess[cy_[r]] = cx_[c]
    return guess


def _chunks(rx, ry, xs, ys, limit):
    """A block as (X rows, Y rows) pairs of at most ``limit`` cells, rows of similar SA sums
    together (the whole block when it fits)."""
    if len(rx) * len(ry) <= limit:
        return [(rx, ry)]
    parts = min(int(np.ceil(np.sqrt(len(rx) * len(ry) / max(limit, 1)))), len(rx), len(ry))
    rx = rx[np.argsort(xs[rx].sum(axis=1), kind="stable")]
    ry = ry[np.argsort(ys[ry].sum(axis=1), kind="stable")]
    return list(zip(np.array_split(rx, parts), np.array_split(ry, parts)))


def _assign_leftovers(guess, match, xs, ys, w, gen, max_rounds) -> np.ndarray:
    """Step 2 of ``assign``: rounds of nearest-unused proposals, the cheapest proposer winning."""
    n = len(xs)
    used = np.zeros(n, dtype=bool)
    used[guess[guess >= 0]] = True
    for _ in range(max_rounds):
        left = np.flatnonzero(guess < 0)
        free = np.flatnonzero(~used)
        if not len(left) or not len(free):
            break
        prop, d = _nearest_tree(free, xs, ys[left], gen)
        cost = d + w * match.mismatches(left, prop)
        order = np.lexsort((gen.random(len(left)), cost, prop))
        first = np.ones(len(order), dtype=bool)
        first[1:] = prop[order][1:] != prop[order][:-1]
        win = order[first]
        guess[left[win]] = prop[win]
        used[prop[win]] = True
    left = np.flatnonzero(guess < 0)
    if len(left):
        guess[left] = _nearest_tree(np.arange(n), xs, ys[left], gen)[0]
    return guess


ATTACKS: dict[str, Callable[..., Linking]] = {
    "E1": identify_rand,
    "E2": identify_sa,
    "E3": identify_sort,
    "E4": identify_sa21,
    "EUC1": euc1,
    "EUC2": euc2,
    "assign": assign,
}


#: the attacks that take ``metric`` (an SA distance)
METRIC_ATTACKS = ("E2", "E4", "EUC1", "EUC2", "assign")


def attack(name: str, original, release, *, qi: Sequence[str], sa: Sequence[str], rng=None,
           **options) -> Linking:
    """Run the attack ``name`` on ``release`` against ``original`` (docs/design/linkage.md#attacks).

    Parameters
    ----------
    name : str
        A key of ``ATTACKS``: ``"E1"``-``"E4"``, ``"EUC1"``, ``"EUC2"`` or ``"assign"``.
    original : pandas.DataFrame
        The original table X.
    release : pandas.DataFrame
        The release Y.
    qi, sa : sequence of str
        The quasi-identifier and sensitive-attribute columns the attack uses.
    rng : numpy.random.Generator or int, optional
        Breaks ties.
    **options
        The attack's own options (e.g. ``scale``, ``sa_column``, ``metric``, ``read_labels``).

    Returns
    -------
    Linking
        For each row of Y the row position in X it claims, -1 when it gives up.
    """
    if name not in ATTACKS:
        raise LinkageError(f"attack {name!r} is unknown; use one of {list(ATTACKS)}")
    return ATTACKS[name](original, release, qi=qi, sa=sa, rng=rng, **options)


__all__ = ["ATTACKS", "METRICS", "METRIC_ATTACKS", "Linking", "assign", "choose_metric", "attack", "euc1", "euc2", "identify_rand",
           "identify_sa", "identify_sa21", "identify_sort"]
