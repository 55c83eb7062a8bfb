"""Anonymizations of paper 001 (Section 4.2, Table 9), each a function X -> Release (Y, true mapping).

Every function takes the original table (a DataFrame) or a previous ``Release`` and returns a new
``Release`` whose ``truth`` maps each row of the new table to its row in the *original* table, so
anonymizations compose (``shuffle_rows(k_anonymize(X, qi, 3))``). ``Pipeline`` applies a list of
them declared in a small TOML file. Everything is vectorized with pandas/NumPy (group transforms,
lexsorts); no loop runs over rows.

The anonymizations (paper 001, Table 9; docs/design/linkage.md#anonymizations):

- ``k_anonymize`` (D_a): global recoding of the QI columns until every QI vector occurs >= k times,
  then suppression (deletion) of the rows still in smaller classes as a last resort;
- ``add_noise`` (D_b): additive or multiplicative Gaussian noise on SA columns;
- ``shuffle_rows`` (D_c, "cheating"/Yamaoka pseudonymization): rows kept, order (the link) destroyed;
- ``unify`` (D_d/D_e): chosen QI columns set to one value;
- ``average_sa`` (D_f): SA values replaced by their mean within each QI group;
- ``swap_sa`` (D_g): each SA column permuted at random within each QI group;
- ``delete_records`` (D_h): a random fraction of the rows deleted.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reidrisk.linkage._keys import combine, group_ids
from reidrisk.linkage.release import (
    LinkageError,
    Release,
    as_release,
    check_columns,
    derive,
    numeric_matrix,
)
from reidrisk.mechanisms.base import as_generator

NOISE_KINDS = ("additive", "multiplicative")


# ---- k-anonymity ----------------------------------------------------------------------------

class _Column:
    """Recoding state of one QI column: its distinct values, their current group, and how to
    coarsen it one level (numeric-like: merge each rare range with a neighbour; nominal: merge the
    rarer half of the categories into one)."""

    def __init__(self, name: str, values: pd.Series):
        self.name = name
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        self.codes = codes.astype(np.int64)
        self.uniques = pd.Index(uniques)
        parsed = pd.to_numeric(pd.Series(np.asarray(uniques, dtype=object)), errors="coerce")
        self.numeric = (not pd.api.types.is_bool_dtype(values)) and bool(parsed.notna().all())
        if self.numeric:
            order = np.argsort(parsed.to_numpy(dtype=np.float64), kind="stable")
            self.group = np.empty(len(uniques), dtype=np.int64)
            self.group[order] = np.arange(len(uniques))     # groups follow the numeric order
            self.sort_key = parsed.to_numpy(dtype=np.float64)
        else:
            self.group = np.arange(len(uniques), dtype=np.int64)
            self.sort_key = None
        self.levels = 0

    @property
    def n_groups(self) -> int:
        return int(self.group.max()) + 1 if len(self.group) else 0

    def row_groups(self, group: np.ndarray | None = None) -> np.ndarray:
        return (self.group if group is None else group)[self.codes]

    def coarser(self, k: int) -> np.ndarray:
        """The value -> group map one level coarser."""
        g = self.n_groups
        counts = np.bincount(self.row_groups(), minlength=g)
        if self.numeric:
            return _merge_rare_ranges(counts, k)[self.group]
        order = np.argsort(counts, kind="stable")
        rare = order[: max(2, (g + 1) // 2)]
        relabel = np.arange(g)
        relabel[rare] = -1
        kept = np.flatnonzero(relabel >= 0)
        relabel[kept] = np.arange(len(kept))
        relabel[rare] = len(kept)
        return relabel[self.group]

    def labels(self) -> tuple[np.ndarray, dict[str, list]]:
        """Per distinct value its published label (itself when alone in its group, else a range
        ``lo-hi`` or a set ``a|b|c``), and the merged groups as {label: [values]}."""
        labels = np.asarray(self.uniques, dtype=object).copy()
        merged: dict[str, list] = {}
        sizes = np.bincount(self.group, minlength=self.n_groups)
        for grp in np.flatnonzero(sizes > 1):          # one iteration per merged group, not per row
            members = np.flatnonzero(self.group == grp)
            if self.numeric:
                members = members[np.argsort(self.sort_key[members])]
                label = f"{self.uniques[members[0]]}-{self.uniques[members[-1]]}"
            else:
                label = "|".join(sorted(str(self.uniques[m]) for m in members))
            labels[members] = label
            merged[label] = [_plain(self.uniques[m]) for m in members]
        return labels, merged


def _merge_rare_ranges(counts: np.ndarray, k: int) -> np.ndarray:
    """One level coarser for ordered groups (g,) with these row counts: every rare group (fewer
    than k rows; when none has, fewer than the median) merges with its adjacent group of smaller
    count, so common ranges stay as they are; when no group is rare, neighbours merge pairwise.
    Returns old group -> new group."""
    g = len(counts)
    if g <= 1:
        return np.zeros(g, dtype=np.int64)
    rare = counts < k
    if not rare.any():
        rare = counts < np.median(counts)
    if not rare.any():                            # counts all alike: merge neighbours pairwise
        return np.arange(g, dtype=np.int64) // 2
    left = np.r_[np.inf, counts[:-1]]
    right = np.r_[counts[1:], np.inf]
    go_left = left <= right                       # the smaller neighbour (left on a tie)
    cut = np.ones(g - 1, dtype=bool)              # cut[i]: boundary between groups i and i + 1
    idx = np.flatnonzero(rare)
    to_left = idx[go_left[idx]]
    to_right = idx[~go_left[idx]]
    cut[to_left - 1] = False
    cut[to_right] = False
    return np.concatenate(([0], np.cumsum(cut))).astype(np.int64)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _violating(groups: list[np.ndarray], sizes: list[int], n: int, k: int) -> tuple[int, np.ndarray]:
    key = combine(groups, sizes, n)
    cls, _ = pd.factorize(key)
    counts = np.bincount(cls)
    small = counts[cls] < k
    return int(small.sum()), small


def k_anonymize(table: pd.DataFrame | Release, qi: Sequence[str], k: int, *, suppress: bool = True,
                max_suppress: float = 0.02, rng=None) -> Release:
    """k-anonymity of the QI columns by global recoding, with suppression as the last resort
    (paper 001, Section 4.2 "K-anonymization", D_a; Sweeney's k-anonymity, ref. [3]).

    Greedy global recoding (a Datafly-like search): while more rows sit in QI classes of size < k
    than may be suppressed, coarsen by one level the QI column whose coarsening leaves the fewest
    such rows (ties: the column with more groups). One level of a numeric-like column (numbers, or
    text that parses as numbers) merges each rare range (fewer than k rows; when none is, fewer
    than the column's median range) with its adjacent range of fewer rows (``20``, ``21`` -> ``20-21``), common ranges staying as
    they are (ranges of equal counts merge pairwise); one level of a nominal column merges its
    rarer half of categories into one (``a|b|c``). When at most
    ``max(k - 1, floor(max_suppress * n))`` rows remain in small classes they are suppressed
    (deleted from the release; ``suppress=False`` keeps generalizing until none remain).

    A generalized column is published as objects: a value alone in its group keeps its original
    value, merged values get the group label. ``details[-1]`` records the merged groups of each
    column (``generalized``: {column: {label: [values]}}), the levels applied and the number of
    suppressed rows.

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    qi : sequence of str
        The quasi-identifier columns.
    k : int
        Smallest allowed QI class size.
    suppress : bool
        Suppress the last rows in small classes (default); ``False`` keeps generalizing instead.
    max_suppress : float
        Share of the rows that may be suppressed (at least ``k - 1`` rows may be).
    rng
        Accepted for a uniform signature and not used (deterministic).

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    data = rel.data
    qi = check_columns(data, qi, "QI")
    if not qi:
        raise LinkageError("k_anonymize needs at least one QI column (qi=[...])")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise LinkageError(f"k must be an integer >= 1, got {k!r}")
    if not 0.0 <= float(max_suppress) < 1.0:
        raise LinkageError(f"max_suppress is a fraction of rows in [0, 1), got {max_suppress!r}")
    n = len(data)
    if n < k:
        raise LinkageError(f"the table has {n} rows, fewer than k = {k}; no release can be "
                           f"{k}-anonymous: lower k")
    cols = [_Column(c, data[c]) for c in qi]
    budget = max(k - 1, int(np.floor(max_suppress * n))) if suppress else 0
    groups = [c.row_groups() for c in cols]
    sizes = [c.n_groups for c in cols]
    bad, small = _violating(groups, sizes, n, k)
    while bad > budget:
        best = None
        for j, col in enumerate(cols):                 # one trial per QI column and level
            if col.n_groups <= 1:
                continue
            trial_group = col.coarser(k)
            trial = groups.copy()
            trial[j] = trial_group[col.codes]
            tsizes = sizes.copy()
            tsizes[j] = int(trial_group.max()) + 1
            tbad, tsmall = _violating(trial, tsizes, n, k)
            score = (tbad, -col.n_groups)
            if best is None or score < best[0]:
                best = (score, j, trial_group, tsmall)
        if best is None:                               # every column is one group: n >= k holds
            break
        (bad, _), j, trial_group, small = best
        cols[j].group = trial_group
        cols[j].levels += 1
        groups[j] = trial_group[cols[j].codes]
        sizes[j] = cols[j].n_groups
    out = data.copy()
    generalized: dict[str, dict[str, list]] = {}
    for col in cols:
        if col.levels == 0:
            continue
        labels, merged = col.labels()
        if merged:
            out[col.name] = pd.Series(labels[col.codes], index=out.index, dtype=object)
            generalized[col.name] = merged
    keep = np.flatnonzero(~small) if bad else np.arange(n)
    detail = {"qi": list(qi), "k": int(k), "generalized": generalized,
              "levels": {c.name: c.levels for c in cols if c.levels}, "suppressed": int(n - len(keep))}
    return derive(rel, out.iloc[keep], keep, "k_anonymize", detail)


# ---- SA noise, shuffling, unification, averaging, swapping, deletion ---------------------------

def add_noise(table: pd.DataFrame | Release, sa: Sequence[str], scale: float, *,
              kind: str = "additive", relative: bool = True, rng=None) -> Release:
    """Gaussian noise on the SA columns (paper 001, Section 4.2 "Addition of random noise", D_b).

    Independent draws per cell.

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    sa : sequence of str
        The columns to perturb.
    scale : float
        Noise scale (see ``kind``).
    kind : {"additive", "multiplicative"}
        ``"additive"``: y = x + e, e ~ N(0, sigma^2) with sigma = scale * (the column's standard
        deviation in the input) when ``relative``, else sigma = scale (the column's units).
        ``"multiplicative"``: y = x * (1 + scale * z), z ~ N(0, 1).
    relative : bool
        Scale the additive noise by each column's standard deviation (default).
    rng : numpy.random.Generator or int, optional
        The noise's generator.

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    sa = check_columns(rel.data, sa, "SA")
    if kind not in NOISE_KINDS:
        raise LinkageError(f"noise kind {kind!r} is unknown; use one of {list(NOISE_KINDS)}")
    scale = float(scale)
    if not np.isfinite(scale) or scale < 0:
        raise LinkageError(f"noise scale must be a finite number >= 0, got {scale!r}")
    gen = as_generator(rng)
    x = numeric_matrix(rel.data, sa)
    z = gen.standard_normal(x.shape)
    if kind == "additive":
        sigma = scale * (x.std(axis=0, ddof=1) if (relative and len(x) > 1) else
                         (np.zeros(x.shape[1]) if relative else np.ones(x.shape[1])))
        y = x + z * sigma
    else:
        y = x * (1.0 + scale * z)
    out = rel.data.copy()
    out[sa] = y
    return derive(rel, out, None, "noise", {"sa": list(sa), "scale": scale, "kind": kind,
                                            "relative": bool(relative)})


def shuffle_rows(table: pd.DataFrame | Release, *, rng=None) -> Release:
    """Pseudonymization by a random permutation of the rows (paper 001, "cheating" / Yamaoka, D_c):
    every row kept unchanged, the order (the published link to X) destroyed.

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    perm = as_generator(rng).permutation(len(rel.data))
    return derive(rel, rel.data.iloc[perm], perm, "shuffle", {})


def unify(table: pd.DataFrame | Release, columns: Sequence[str], *, value: Any = None) -> Release:
    """Set each chosen QI column to one value (paper 001, Section 4.2 "Unified value", D_d/D_e).

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    columns : sequence of str
        The QI columns to unify.
    value : scalar or mapping, optional
        ``None``: each column's most frequent value (ties: the first in pandas' value_counts
        order); a scalar for every column; or a {column: value} mapping with one per column.

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    columns = check_columns(rel.data, columns, "unified")
    out = rel.data.copy()
    used = {}
    for c in columns:                                   # one assignment per column
        if isinstance(value, Mapping):
            if c not in value:
                raise LinkageError(f"unify: value has no entry for column {c!r}; give one per column")
            v = value[c]
        elif value is None:
            counts = out[c].value_counts(dropna=False)
            v = counts.index[0] if len(counts) else None
        else:
            v = value
        out[c] = pd.Series([v] * len(out), index=out.index, dtype=out[c].dtype
                           if _fits(out[c], v) else object)
        used[c] = _plain(v)
    return derive(rel, out, None, "unify", {"columns": list(columns), "value": used})


def _fits(col: pd.Series, v) -> bool:
    try:
        return pd.Series([v]).astype(col.dtype).iloc[0] == v
    except (ValueError, TypeError):
        return False


def average_sa(table: pd.DataFrame | Release, qi: Sequence[str], sa: Sequence[str]) -> Release:
    """Replace each SA value by its mean within the row's QI group (paper 001, Section 4.2
    "Replacement of values of SA by the Average value", Table 10, D_f). Column means are kept.

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    qi : sequence of str
        The quasi-identifier columns that define the groups.
    sa : sequence of str
        The sensitive (numeric) columns to replace.

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    qi = check_columns(rel.data, qi, "QI")
    sa = check_columns(rel.data, sa, "SA")
    x = pd.DataFrame(numeric_matrix(rel.data, sa), columns=sa)
    g = group_ids(rel.data, qi)
    out = rel.data.copy()
    out[sa] = x.groupby(g).transform("mean").to_numpy()
    return derive(rel, out, None, "average_sa", {"qi": list(qi), "sa": list(sa)})


def swap_sa(table: pd.DataFrame | Release, qi: Sequence[str], sa: Sequence[str], *, rng=None
            ) -> Release:
    """Permute each SA column at random within each QI group, independently per column (paper 001,
    Section 4.2 "Swapping", Table 11, D_g). Each group's multiset of each SA column is kept, hence
    every column mean and every mean by QI cell.

    Parameters
    ----------
    table, qi
        As in ``average_sa``.
    sa : sequence of str
        The sensitive (numeric) columns to permute.
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    qi = check_columns(rel.data, qi, "QI")
    sa = check_columns(rel.data, sa, "SA")
    gen = as_generator(rng)
    x = numeric_matrix(rel.data, sa)
    g = group_ids(rel.data, qi)
    slots = np.argsort(g, kind="stable")                # group blocks, rows in order
    y = np.empty_like(x)
    for j in range(x.shape[1]):                         # one lexsort per SA column
        donors = np.lexsort((gen.random(len(g)), g))   # same blocks, random order inside
        y[slots, j] = x[donors, j]
    out = rel.data.copy()
    out[sa] = y
    return derive(rel, out, None, "swap_sa", {"qi": list(qi), "sa": list(sa)})


def delete_records(table: pd.DataFrame | Release, fraction: float, *, rng=None) -> Release:
    """Delete round(fraction * n) rows chosen uniformly at random, keeping the order of the rest
    (paper 001, Section 4.2 "Records suppression", D_h).

    Parameters
    ----------
    table : pandas.DataFrame or Release
        The original table or a previous release.
    fraction : float
        Share of the rows to delete, in [0, 1).
    rng : numpy.random.Generator or int, optional
        Generator or seed (``None``: a fresh cryptographic generator).

    Returns
    -------
    Release
        The anonymized table, with the true row mapping composed.
    """
    rel = as_release(table)
    fraction = float(fraction)
    if not 0.0 <= fraction < 1.0:
        raise LinkageError(f"delete fraction must be in [0, 1), got {fraction!r}")
    n = len(rel.data)
    m = int(round(fraction * n))
    drop = as_generator(rng).choice(n, size=m, replace=False)
    keep = np.setdiff1d(np.arange(n), drop)
    return derive(rel, rel.data.iloc[keep], keep, "delete", {"fraction": fraction, "deleted": m})


ANONYMIZERS: dict[str, Callable[..., Release]] = {
    "k_anonymize": k_anonymize,
    "noise": add_noise,
    "shuffle": shuffle_rows,
    "unify": unify,
    "average_sa": average_sa,
    "swap_sa": swap_sa,
    "delete": delete_records,
}


# ---- pipelines --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One pipeline step.

    Parameters
    ----------
    name : str
        An ``ANONYMIZERS`` name.
    params : tuple of (str, object) pairs
        Its keyword parameters.
    """

    name: str
    params: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Pipeline:
    """A sequence of anonymizations, applied in order (truth composed).

    Declared in TOML (``Pipeline.from_toml``) as::

        qi = ["age", "sex", "education"]     # optional defaults for steps that take qi / sa
        sa = ["income"]

        [[steps]]
        step = "k_anonymize"
        k = 3

        [[steps]]
        step = "noise"
        scale = 0.1
        kind = "multiplicative"

        [[steps]]
        step = "shuffle"

    Each step names a function of ``ANONYMIZERS``; its other keys are that function's keyword
    parameters (``qi``/``sa`` default to the top-level lists). Unknown steps, unknown or missing
    parameters are ``LinkageError``s naming the step and the accepted parameters.

    Parameters
    ----------
    steps : tuple of Step
        The steps, in the order they are applied.
    source : str
        Where the pipeline came from, for error messages (default "the pipeline").
    """

    steps: tuple[Step, ...]
    source: str = "the pipeline"

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], source: str = "the pipeline") -> Pipeline:
        """A pipeline from its parsed TOML table (the class docstring shows the format).

        Parameters
        ----------
        spec : mapping
            ``steps`` (a list of tables, each with ``step`` and its parameters) and optional
            default ``qi`` and ``sa``.
        source : str
            Where the table came from, named in error messages.

        Returns
        -------
        Pipeline
            The steps, checked.

        Raises
        ------
        LinkageError
            Naming the step and the key that is wrong.
        """
        if not isinstance(spec, Mapping):
            raise LinkageError(f"{source}: expected a table with a 'steps' list")
        unknown = set(spec) - {"qi", "sa", "steps"}
        if unknown:
            raise LinkageError(f"{source}: unknown top-level key(s) {sorted(unknown)}; allowed: "
                               "qi, sa, steps")
        raw = spec.get("steps")
        if not isinstance(raw, list) or not raw:
            raise LinkageError(f"{source}: no steps; add at least one [[steps]] table with "
                               f"step = one of {list(ANONYMIZERS)}")
        defaults = {k: spec[k] for k in ("qi", "sa") if k in spec}
        steps = []
        for i, entry in enumerate(raw, 1):
            if not isinstance(entry, Mapping) or "step" not in entry:
                raise LinkageError(f"{source}: step {i} has no 'step' key; write step = one of "
                                   f"{list(ANONYMIZERS)}")
            name = entry["step"]
            if name not in ANONYMIZERS:
                raise LinkageError(f"{source}: step {i} {name!r} is unknown; use one of "
                                   f"{list(ANONYMIZERS)}")
            sig = inspect.signature(ANONYMIZERS[name])
            accepted = [p for p in sig.parameters if p not in ("table", "rng")]
            params = {k: v for k, v in entry.items() if k != "step"}
            bad = sorted(set(params) - set(accepted))
            if bad:
                raise LinkageError(f"{source}: step {i} {name!r} has unknown parameter(s) {bad}; "
                                   f"it accepts {accepted}")
            for k, v in defaults.items():
                if k in accepted and k not in params:
                    params[k] = v
            missing = [p for p, par in sig.parameters.items()
                       if p not in ("table", "rng") and par.default is inspect.Parameter.empty
                       and p not in params]
            if missing:
                raise LinkageError(f"{source}: step {i} {name!r} lacks the parameter(s) {missing}")
            steps.append(Step(name, tuple(params.items())))
        return cls(tuple(steps), source)

    @classmethod
    def from_toml(cls, path: str | Path) -> Pipeline:
        """Read a pipeline from a TOML file (see ``from_dict``).

        Parameters
        ----------
        path : str or Path
            The TOML file.

        Returns
        -------
        Pipeline
            The steps, checked.

        Raises
        ------
        FileNotFoundError
            When there is no such file.
        LinkageError
            When it is not valid TOML or not a pipeline.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"pipeline file {str(path)!r} does not exist; check the path")
        try:
            spec = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise LinkageError(f"{str(path)!r} is not valid TOML: {exc}") from None
        return cls.from_dict(spec, source=repr(str(path)))

    def apply(self, table: pd.DataFrame | Release, rng=None) -> Release:
        """Apply every step in order; steps that draw randomness share one generator.

        Parameters
        ----------
        table, rng
            As in ``shuffle_rows``.

        Returns
        -------
        Release
            The table after every step, with the true row mapping composed.
        """
        gen = as_generator(rng)
        rel = as_release(table)
        for i, step in enumerate(self.steps, 1):
            fn = ANONYMIZERS[step.name]
            kwargs = dict(step.params)
            if "rng" in inspect.signature(fn).parameters:
                kwargs["rng"] = gen
            try:
                rel = fn(rel, **kwargs)
            except LinkageError as exc:
                raise LinkageError(f"{self.source}: step {i} {step.name!r}: {exc}") from None
        return rel


__all__ = [
    "ANONYMIZERS", "NOISE_KINDS", "Pipeline", "Step", "add_noise", "average_sa", "delete_records",
    "k_anonymize", "shuffle_rows", "swap_sa", "unify",
]
