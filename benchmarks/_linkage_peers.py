"""Peer linkage attacks and anonymizers for the linkage benchmarks, each driven through its own
documented public API (splink, recordlinkage, anonymeter, anjana).

Every attack here has the shape of ours: it sees the original (background) table ``x`` and the
release ``y`` (never the true mapping) and returns ``guess``: for each row of ``y`` a row position
in ``x`` or -1 (no link), one guess per release row (the best-scoring candidate pair).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pandas as pd


def _best_per_release_row(pairs_x: np.ndarray, pairs_y: np.ndarray, score: np.ndarray,
                          n_y: int, rng: np.random.Generator) -> np.ndarray:
    """One guess per release row: the candidate with the highest score (ties at random)."""
    guess = np.full(n_y, -1, dtype=np.int64)
    if pairs_x.size == 0:
        return guess
    jitter = rng.random(score.size)  # random tie-break among equal scores
    order = np.lexsort((jitter, -score, pairs_y))  # by release row, then best score first
    py = pairs_y[order]
    first = np.r_[True, py[1:] != py[:-1]]
    guess[py[first]] = pairs_x[order][first]
    return guess


# ---- splink ------------------------------------------------------------------------------------
def splink_link(x: pd.DataFrame, y: pd.DataFrame, qi, sa, *, rng=None, em_rounds: int = 1):
    """Fellegi-Sunter linkage with splink (DuckDB backend), trained without labels.

    Link type ``link_only`` between the background table ``x`` and the release ``y``. Candidate
    pairs: rows that agree on the whole QI vector (one blocking rule on all ``qi`` columns).
    Comparisons: one per SA column, with levels exact / within 5 % / within 15 % / within 40 % /
    else (splink's percentage-difference level: |a - b| / max(a, b)). The prior match
    probability is fixed at 1/|x| (one true row per release row); u probabilities by random
    sampling, m probabilities by EM on the pairs agreeing on one QI column (the first of the
    first ``em_rounds + 2`` QI columns that yields pairs; the starting values stay when none
    does); then ``predict`` scores every candidate pair and each release row takes its best.
    """
    import splink.comparison_level_library as cll
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    rng = np.random.default_rng(rng)
    logging.getLogger("splink").setLevel(logging.ERROR)
    t0 = time.perf_counter()
    names = {c: f"c{i}" for i, c in enumerate([*qi, *sa])}  # SQL-safe column names
    q = [names[c] for c in qi]
    s = [names[c] for c in sa]

    def prep(frame: pd.DataFrame, tag: str) -> pd.DataFrame:
        out = frame[[*qi, *sa]].rename(columns=names).copy()
        for c in q:
            out[c] = out[c].astype(str)
        for c in s:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        out.insert(0, "unique_id", np.arange(len(frame)))
        return out

    # starting m probabilities (EM refines them when it can be trained, see below)
    start_m = (0.5, 0.3, 0.1, 0.05, 0.05)
    comparisons = [
        cl.CustomComparison(
            [
                cll.NullLevel(c),
                cll.ExactMatchLevel(c).configure(m_probability=start_m[0]),
                cll.PercentageDifferenceLevel(c, 0.05).configure(m_probability=start_m[1]),
                cll.PercentageDifferenceLevel(c, 0.15).configure(m_probability=start_m[2]),
                cll.PercentageDifferenceLevel(c, 0.40).configure(m_probability=start_m[3]),
                cll.ElseLevel().configure(m_probability=start_m[4]),
            ],
            output_column_name=c,
        )
        for c in s
    ]
    settings = SettingsCreator(
        link_type="link_only",
        comparisons=comparisons,
        blocking_rules_to_generate_predictions=[block_on(*q)],
        # each release row has one true row among the |x| background rows
        probability_two_random_records_match=1.0 / max(len(x), 1),
        retain_intermediate_calculation_columns=False,
    )
    db = DuckDBAPI()
    left = db.register(prep(x, "x"), table_name="background")
    right = db.register(prep(y, "y"), table_name="release")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linker = Linker([left, right], settings, log_level=logging.ERROR)
        linker.training.estimate_u_using_random_sampling(
            max_pairs=float(min(2e5, len(x) * len(y))), seed=1)
        # EM needs blocked pairs that mix matches and non-matches (splink's docs: 1-99 %
        # matches): block on one QI column at a time, the first that yields pairs
        for col in q[:em_rounds + 2]:
            try:
                linker.training.estimate_parameters_using_expectation_maximisation(
                    block_on(col), fix_u_probabilities=True,
                    fix_probability_two_random_records_match=True)
                break
            except Exception:  # no pairs agree on this column (e.g. it was generalized)
                continue
        pred = linker.inference.predict().as_pandas_dataframe()
    if len(pred):
        # pairs come as (left dataset, right dataset); keep x on one side, y on the other
        from_x = pred["source_dataset_l"].to_numpy() == "background"
        px = np.where(from_x, pred["unique_id_l"], pred["unique_id_r"]).astype(np.int64)
        py = np.where(from_x, pred["unique_id_r"], pred["unique_id_l"]).astype(np.int64)
        score = pred["match_weight"].to_numpy(float)
    else:
        px = py = np.empty(0, np.int64)
        score = np.empty(0)
    guess = _best_per_release_row(px, py, score, len(y), rng)
    return guess, time.perf_counter() - t0


# ---- recordlinkage -----------------------------------------------------------------------------
def recordlinkage_link(x: pd.DataFrame, y: pd.DataFrame, qi, sa, *, rng=None):
    """recordlinkage: index by blocking on the QI vector, compare every SA column numerically
    (Gaussian similarity with offset 0 and scale = the column's standard deviation in ``x`` / 10,
    so a difference of 1/10 of a standard deviation halves the similarity... see
    ``Compare.numeric``), classify the binarized vectors (similarity >= 0.5) with the unsupervised
    ECM classifier and give each release row the pair with the highest match probability; ties
    (and the case where ECM cannot be fitted: fewer than two distinct vectors) are broken by the
    summed similarity.
    """
    import recordlinkage as rl

    rng = np.random.default_rng(rng)
    t0 = time.perf_counter()
    xa = x[[*qi, *sa]].copy()
    ya = y[[*qi, *sa]].copy()
    for c in qi:  # one comparable type for the blocking keys
        xa[c] = xa[c].astype(str)
        ya[c] = ya[c].astype(str)
    xa.index = pd.RangeIndex(len(xa))
    ya.index = pd.RangeIndex(len(ya))
    indexer = rl.Index()
    indexer.block(left_on=list(qi), right_on=list(qi))
    pairs = indexer.index(xa, ya)
    if len(pairs) == 0:
        return np.full(len(y), -1, np.int64), time.perf_counter() - t0
    comp = rl.Compare()
    for c in sa:
        sd = float(pd.to_numeric(xa[c]).std()) or 1.0
        comp.numeric(c, c, method="gauss", offset=0.0, scale=sd / 10.0, label=str(c))
    feats = comp.compute(pairs, xa.astype({c: float for c in sa}), ya.astype({c: float for c in sa}))
    sim = feats.to_numpy(float).sum(axis=1)
    binary = (feats >= 0.5).astype(int)
    prob = np.zeros(len(feats))
    if len(np.unique(binary.to_numpy(), axis=0)) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                ecm = rl.ECMClassifier(binarize=None)
                ecm.fit(binary)
                prob = np.asarray(ecm.prob(binary), float)
            except Exception:  # ECM can fail to converge on tiny degenerate inputs
                prob = np.zeros(len(feats))
    px = feats.index.get_level_values(0).to_numpy(np.int64)
    py = feats.index.get_level_values(1).to_numpy(np.int64)
    score = prob + 1e-6 * sim / max(len(sa), 1)  # ECM probability first, similarity breaks ties
    guess = _best_per_release_row(px, py, score, len(y), rng)
    return guess, time.perf_counter() - t0


# ---- anonymeter --------------------------------------------------------------------------------
def anonymeter_linkability(x: pd.DataFrame, y: pd.DataFrame, control: pd.DataFrame, qi, sa,
                           *, n_neighbors: int = 1):
    """anonymeter's LinkabilityEvaluator with ``ori`` = the original sample ``x``, ``syn`` = the
    release ``y`` and ``control`` = a disjoint sample of the same size from the same population
    (never released). The attacker holds the QI of a target from one source and its SA from
    another (``aux_cols = (qi, sa)``) and links the two halves when their nearest release rows
    coincide; the risk is the attack's success on ``ori`` corrected by its success on
    ``control`` (a baseline for links a release of the population would allow anyway).
    Returns (risk value, CI low, CI high, seconds)."""
    from anonymeter.evaluators import LinkabilityEvaluator

    t0 = time.perf_counter()
    cols = [*qi, *sa]
    ori, syn, ctl = (f[cols].reset_index(drop=True).copy() for f in (x, y, control))
    for c in qi:
        for f in (ori, syn, ctl):
            f[c] = f[c].astype(str)
    n_attacks = min(len(ori), len(ctl))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = LinkabilityEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=n_attacks,
                                  aux_cols=(list(qi), list(sa)), n_neighbors=n_neighbors)
        ev.evaluate(n_jobs=1)
        risk = ev.risk(confidence_level=0.95)
    return float(risk.value), float(risk.ci[0]), float(risk.ci[1]), time.perf_counter() - t0


# ---- anjana ------------------------------------------------------------------------------------
def anjana_k_anonymity(data: pd.DataFrame, qi, k: int, hierarchies: dict, supp_level: float):
    """anjana's k_anonymity (full-domain generalization along the given hierarchies, then
    suppression of up to ``supp_level`` percent of the rows). Returns (release, seconds)."""
    from anjana.anonymity import k_anonymity

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = k_anonymity(data, [], list(qi), k, supp_level, hierarchies)
    return out, time.perf_counter() - t0
