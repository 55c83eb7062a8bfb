"""The fitted collection model (``CollectModel``, ``FitReport``) and its file: versioned JSON, no
pickle. ``reidrisk.collect.pipeline`` builds models (and fits their copula) and imports this
module; this module imports nothing of the pipeline (no import circle).

Design: docs/design/collect.md#pipeline.

Format ``reidrisk-collect-model``, version 1: one JSON object with

* ``format``, ``version``, ``reidrisk`` (the writing package's version);
* ``schema`` (``Schema.to_dict``), ``protocol`` (``Protocol.to_dict`` or null), ``mechanisms`` (each
  attribute's mechanism parameters);
* ``marginals``: g lists of probabilities; ``pairs``: list of ``{"j", "k", "n", "n_eff", "table"}``
  (j < k, table as nested lists);
* ``model``: which model the file holds, ``"copula"`` or ``"latent"`` (files written before it
  existed hold a copula);
* ``copula``: ``GaussianCopula.to_dict()`` (null in a latent class model); ``latent``:
  ``LatentClassModel.to_dict()`` (latent class models only, ``reidrisk.collect.latent_fit``);
  ``report``: ``FitReport.to_dict()``;
* ``privacy_loss``: the guarantee of the reports the model was fitted on
  (``CollectModel.privacy_loss``), re-checked on reading: a file declaring less than its
  mechanisms and protocol imply is refused; files written before it existed get the recomputed
  value.

Floats are written with Python's shortest round-trip representation, so a save -> load round trip
reproduces every number exactly (and therefore every table). Files are written atomically (a
temporary file in the same folder replaces the target only once complete). A reader refuses other
formats and versions with a message that says which it found. A copula model is written as
version 1 (readable by every reidrisk that reads this format); a latent class model as version 2,
which a reader of version 1 only refuses by its version instead of misreading it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reidrisk import __version__
from reidrisk.collect.protocol import Protocol
from reidrisk.collect.reports_io import (
    ReportsFileError,
    check_declared_loss,
    rebuild_mechanism,
)
from reidrisk.copula import GaussianCopula
from reidrisk.data.io import atomic_write
from reidrisk.data.tables import contingency
from reidrisk.errors import ReidriskError
from reidrisk.latent import LatentClassModel, LatentError
from reidrisk.mechanisms.base import as_generator
from reidrisk.schema import Schema, SchemaError

MODEL_FORMAT = "reidrisk-collect-model"
MODEL_VERSION = 1
LATENT_MODEL_VERSION = 2
"""Version of the files that hold a latent class model (module doc)."""
MODEL_KINDS = ("copula", "latent")

EXACT_TABLE_MAX_CELLS = 20_000
"""Largest table of c >= 3 attributes that ``reidrisk collect table`` and the service compute
exactly by default. Each cell of a copula's table is a multivariate normal rectangle probability
(randomized quasi-Monte Carlo), about ``EXACT_SECONDS_PER_CELL`` x c seconds per cell by the
shape's estimate; the measured cost, below it for weakly dependent tables and above it for
strongly dependent ones: docs/results/exact_table_cost.md. Larger tables are counted from
synthetic records unless an exact one is asked for. The service also keeps each
request's exact table within ``reidrisk.service.app.EXACT_REQUEST_SECONDS``: of estimated work
(``exact_table_seconds``) for its default, and of work measured on the model
(``exact_copula_table``) for every exact copula table."""

EXACT_HARD_LIMIT = 2**20
"""Tables of c >= 3 attributes with more cells are never computed exactly (the copula's own
limit, ``GaussianCopula.contingency_table``); they are counted from synthetic records."""

EXACT_SECONDS_PER_CELL = 1e-4
"""Seconds per cell and attribute of a copula's exact table of c >= 3 attributes: the estimate
``exact_table_seconds`` that ``reidrisk collect table`` and the service both use. The cost grows
with c and with the dependence, because rectangles of small probability need up to ``max_points``
QMC points, so strongly dependent tables cost more than the estimate (measured:
docs/results/exact_table_cost.md, ``benchmarks/exact_table_cost.py``). It only decides before any work; the work itself is timed on the model
(``exact_copula_table``)."""


def exact_table_seconds(dims: Sequence[int]) -> float:
    """Estimated seconds of the exact table of a copula model over the given attributes.

    Parameters
    ----------
    dims : sequence of int
        The domain sizes of the table's c attributes.

    Returns
    -------
    float
        ``cells x c x EXACT_SECONDS_PER_CELL``; 0 for c <= 2, which has a closed form. (A latent
        class model's exact table is a sum of K outer products, which this does not estimate.)
    """
    c = len(dims)
    return 0.0 if c <= 2 else float(np.prod(dims, dtype=np.float64)) * c * EXACT_SECONDS_PER_CELL


def duration_text(seconds: float) -> str:
    """A duration for a message: ``"72 s"``, ``"35 min"``, ``"2.5 h"``.

    Parameters
    ----------
    seconds : float
        The duration (>= 0).

    Returns
    -------
    str
        Two significant digits below a second (so a short limit is not read as 0 s), whole
        seconds below 2 minutes, whole minutes below 2 hours, hours to one decimal above; the unit
        is chosen after rounding (119.6 s is "2 min", not "120 s").
    """
    s = float(seconds)
    if s < 1:
        return f"{s:.2g} s"
    if round(s) < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if round(s / 60) < 120 else f"{s / 3600:.1f} h"


class ModelFileError(ReidriskError, ValueError):
    """A model file that cannot be read. The message names the file and what is wrong."""


class CollectError(ReidriskError, ValueError):
    """Bad input to the collection pipeline. The message names the parameter/attribute and the fix."""


EXACT_CHUNK = 2_000
"""Most cells of an exact copula table computed in one call of ``GaussianCopula.cell_probability``
(``exact_copula_table``; it also bounds the memory of a call: c x c floats per cell)."""

EXACT_FIRST_CHUNK = 64
"""Cells of an exact copula table computed first, to time the model's own cost per cell
(``exact_copula_table``): 1-2 s at worst (9 dependent attributes, about 18 ms per cell)."""

EXACT_CHUNK_SECONDS = 0.5
"""Seconds of work ``exact_copula_table`` aims at per chunk after the first ones, from the
measured rate: the most a time limit can be overrun by, beyond one chunk's spread."""

EXACT_TIMING_SECONDS = 0.1
"""Least duration of a chunk whose rate ``exact_copula_table`` extrapolates to refuse a table (or
a chunk of ``EXACT_CHUNK`` cells): each call has a fixed cost of about 10 ms (its QMC point
sets), which would make the rate of a short chunk of a cheap table several times too high."""

_clock = time.perf_counter


class ExactTableTooLong(CollectError):
    """An exact table that would take longer than its time limit (``exact_copula_table``).

    Its message names the measured estimate, the limit and the fix; its attributes let a caller
    word its own fix.

    Parameters
    ----------
    message : str
        The message.
    seconds : float
        The whole table's estimated seconds, from the measured rate.
    limit : float
        The limit it exceeds.
    done : int
        Cells computed when it stopped.
    cells : int
        Cells of the table.
    """

    def __init__(self, message: str, seconds: float, limit: float, done: int, cells: int):
        super().__init__(message)
        self.seconds = float(seconds)
        self.limit = float(limit)
        self.done = int(done)
        self.cells = int(cells)


def _check_limit_progress(limit: object, progress: object) -> None:
    """Refuse (CollectError) a time limit that is not a positive number of seconds or None, and a
    progress that is not callable or None (``exact_copula_table``, ``CollectModel.table``)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                              or not limit > 0 or not math.isfinite(limit)):
        raise CollectError(f"limit must be a positive number of seconds or None, got {limit!r}")
    if progress is not None and not callable(progress):
        raise CollectError(f"progress must be callable (cells done, cells, seconds left) or None, "
                           f"got {type(progress).__name__}")


def exact_copula_table(copula: GaussianCopula, cols: Sequence[int], limit: float | None = None,
                       progress: Callable[[int, int, float], object] | None = None) -> np.ndarray:
    """The exact table of attributes ``cols`` of a copula, in timed chunks, within a time limit.

    The cells' probabilities (``GaussianCopula.cell_probability``, randomized QMC for c >= 3) are
    computed in chunks, in a fixed pseudo-random order of the cells so that every chunk is a fair
    sample of the table's cost: a first chunk of ``EXACT_FIRST_CHUNK`` cells, then chunks of
    about ``EXACT_CHUNK_SECONDS`` at the rate measured on the latest one (at most twice the
    previous chunk and ``EXACT_CHUNK`` cells). After each chunk the whole table's time is
    extrapolated from that rate: elapsed + rate x cells left. That is the model's own cost,
    dependence and all, which ``exact_table_seconds`` (cells x c x ``EXACT_SECONDS_PER_CELL``)
    does not see: it is too low for strongly dependent attributes
    (docs/results/exact_table_cost.md). Each cell's value does not
    depend on the chunks (the QMC point sets are drawn per round, the same for every cell), so the
    table is the one ``GaussianCopula.contingency_table(cols)`` computes in one call, bit for bit.

    Parameters
    ----------
    copula : GaussianCopula
        The fitted copula.
    cols : sequence of int
        The table's attributes (indices, no repeats).
    limit : float, optional
        Most seconds the table may take. The computation stops with ``ExactTableTooLong`` as soon
        as the elapsed time, or the extrapolation from a chunk of at least
        ``EXACT_TIMING_SECONDS`` (or of ``EXACT_CHUNK`` cells), exceeds it; so it holds the
        caller at most about the limit plus one chunk. None (default): no limit.
    progress : callable, optional
        Called after each chunk with (cells done, cells, estimated seconds left at the measured
        rate).

    Returns
    -------
    numpy.ndarray (f_cols[0], ..., f_cols[c-1])
        The table, summing to 1 (``GaussianCopula.contingency_table``'s, also for c <= 2, which
        has a closed form and is neither chunked nor timed).

    Raises
    ------
    CollectError
        For a limit that is not a positive number, a progress that is not callable, ``cols`` that
        are not distinct attribute indices of the copula, or a table of more than
        ``EXACT_HARD_LIMIT`` cells.
    ExactTableTooLong
        When the table would take longer than ``limit``; nothing is returned.
    """
    _check_limit_progress(limit, progress)
    sizes = copula.sizes_
    given = list(cols)
    if (not given or any(isinstance(j, bool) or not isinstance(j, (int, np.integer)) for j in given)
            or not all(0 <= j < sizes.size for j in given) or len(set(given)) != len(given)):
        raise CollectError(f"cols must be distinct attribute indices in 0..{sizes.size - 1}, got "
                           f"{given!r}; name each attribute of the table once, by its index")
    cols = [int(j) for j in given]
    dims = tuple(int(sizes[j]) for j in cols)
    cells = int(np.prod(dims, dtype=np.int64))
    if len(cols) <= 2:
        return np.asarray(copula.contingency_table(cols), dtype=np.float64)
    shape = "x".join(map(str, dims))
    if cells > EXACT_HARD_LIMIT:
        raise CollectError(f"the {shape} table has {cells:,} cells, more than the "
                           f"{EXACT_HARD_LIMIT:,} computed exactly; count it from synthetic "
                           "records (exact=False), or choose fewer or smaller attributes")
    order = np.random.default_rng(0).permutation(cells)
    prob = np.empty(cells)
    start = _clock()
    done, size = 0, min(EXACT_FIRST_CHUNK, cells)
    while done < cells:
        take = order[done:done + size]
        t0 = _clock()
        grid = np.stack(np.unravel_index(take, dims), axis=1)
        prob[take] = copula.cell_probability(grid, cols, rng=0)
        now = _clock()
        done += take.size
        rate = (now - t0) / take.size
        left = rate * (cells - done)
        elapsed = now - start
        timed = now - t0 >= EXACT_TIMING_SECONDS or take.size >= EXACT_CHUNK
        if limit is not None and done < cells and (elapsed > limit
                                                   or (timed and elapsed + left > limit)):
            est = elapsed + left
            raise ExactTableTooLong(
                f"the exact {shape} table ({cells:,} cells) would take about "
                f"{duration_text(est)} to compute (measured on {done:,} of its cells in "
                f"{elapsed:.1f} s), more than the limit of {duration_text(limit)}; count it from "
                "synthetic records instead (exact=False), or choose fewer or smaller attributes",
                est, float(limit), done, cells)
        if progress is not None:
            progress(done, cells, left)
        size = int(min(EXACT_CHUNK, 2 * size, max(EXACT_FIRST_CHUNK, EXACT_CHUNK_SECONDS / rate)
                       if rate > 0 else 2 * size))
    return (prob / prob.sum()).reshape(dims)


# ---------------------------------------------------------------------------------------------
# fit report
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitReport:
    """How a model was fitted, and what the data supported.

    Parameters
    ----------
    settings : dict
        The pipeline's parameters.
    n : int
        Records.
    n_present : tuple of int (g,)
        Reports per attribute.
    marginal_iterations : tuple of int (g,)
        EM steps of each marginal.
    pair_iterations : dict
        {(j, j'): EM steps}.
    marginal_signal : tuple of float (g,)
        Uniformity test statistic / critical value (> 1: the marginal differs detectably from
        uniform).
    pair_signal : dict
        {(j, j'): the same for dependence}.
    pair_shrink : dict
        {(j, j'): James-Stein factor} (``shrink="js"`` only).
    fallback : {"none", "independence", "uniform"}
        What the data supported.
    notes : tuple of str
        Human-readable remarks.
    seconds : float
        Wall time of the fit.
    marginal_shrink : tuple of float (g,)
        The factor each marginal's departure from uniform was kept at (1 = not shrunk;
        ``marginal_shrink=True`` only; empty in models saved before it existed).
    """

    settings: dict
    n: int
    n_present: tuple[int, ...]
    marginal_iterations: tuple[int, ...]
    pair_iterations: dict
    marginal_signal: tuple[float, ...]
    pair_signal: dict
    pair_shrink: dict
    fallback: str
    notes: tuple[str, ...]
    seconds: float
    marginal_shrink: tuple[float, ...] = ()

    def to_dict(self) -> dict:
        """The fit report as plain JSON-ready data (``from_dict`` reads it).

        Returns
        -------
        dict
            Lists, numbers and strings only.
        """
        pairs = sorted(self.pair_iterations)
        return {
            "settings": dict(self.settings), "n": self.n, "n_present": list(self.n_present),
            "marginal_iterations": list(self.marginal_iterations),
            "pairs": [[int(j), int(k)] for j, k in pairs],
            "pair_iterations": [int(self.pair_iterations[p]) for p in pairs],
            "marginal_signal": [_num(x) for x in self.marginal_signal],
            "pair_signal": [_num(self.pair_signal.get(p, float("nan"))) for p in pairs],
            "pair_shrink": [_num(self.pair_shrink.get(p, 1.0)) for p in pairs],
            "fallback": self.fallback, "notes": list(self.notes), "seconds": self.seconds,
            "marginal_shrink": [_num(x) for x in self.marginal_shrink],
        }

    @classmethod
    def from_dict(cls, d: dict) -> FitReport:
        """Inverse of ``to_dict``.

        Parameters
        ----------
        d : dict
            What ``to_dict`` wrote.

        Returns
        -------
        FitReport
            The report.
        """
        pairs = [tuple(p) for p in d["pairs"]]
        return cls(dict(d["settings"]), int(d["n"]), tuple(d["n_present"]),
                   tuple(d["marginal_iterations"]), dict(zip(pairs, d["pair_iterations"])),
                   tuple(_from_num(x) for x in d["marginal_signal"]),
                   dict(zip(pairs, (_from_num(x) for x in d["pair_signal"]))),
                   dict(zip(pairs, (_from_num(x) for x in d["pair_shrink"]))),
                   d["fallback"], tuple(d["notes"]), float(d["seconds"]),
                   tuple(_from_num(x) for x in d.get("marginal_shrink", ())))


def _num(x):
    x = float(x)
    return x if math.isfinite(x) else str(x)


def _from_num(x):
    return float(x)


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CollectModel:
    """A fitted generative model of the population (paper 004 Algorithm 2).

    Holds exactly one of a copula and a latent class model; ``kind`` says which. Save with
    ``save`` / ``to_dict`` (versioned JSON, below).

    Parameters
    ----------
    schema : Schema
        The attributes.
    protocol : Protocol or None
        How the reports were collected (None if unknown).
    mechanisms : tuple of dict
        Parameters of each attribute's mechanism.
    marginals : tuple of numpy.ndarray
        g probability vectors.
    pair_tables : dict
        {(j, j') with j < j': (f_j, f_j') probability table}.
    pair_n : dict
        {(j, j'): reports having both}.
    pair_n_eff : dict
        {(j, j'): information in raw records, module doc}.
    copula : GaussianCopula or None
        The fitted copula (None in a latent class model).
    report : FitReport
        How the model was fitted.
    latent : LatentClassModel, optional
        The fitted latent class model when the model is one (``CollectPipeline(model="latent")``;
        its marginals and pair tables are then the mixture's 1- and 2-way tables), else None.
    """

    schema: Schema
    protocol: Protocol | None
    mechanisms: tuple[dict, ...]
    marginals: tuple[np.ndarray, ...]
    pair_tables: dict
    pair_n: dict
    pair_n_eff: dict
    copula: GaussianCopula | None
    report: FitReport
    latent: LatentClassModel | None = None

    def __post_init__(self) -> None:
        if (self.copula is None) == (self.latent is None):
            raise CollectError("a CollectModel holds exactly one of a copula and a latent class "
                               "model")

    @property
    def kind(self) -> str:
        """``"copula"`` or ``"latent"``: which model answers the queries."""
        return "copula" if self.latent is None else "latent"

    @property
    def g(self) -> int:
        return len(self.schema)

    @property
    def fallback(self) -> str:
        return self.report.fallback

    @property
    def privacy_loss(self) -> float:
        """The guarantee of the reports behind the model: the largest privacy loss of one person's
        report that its mechanisms and protocol allow, i.e. the sum of the k largest
        ``Mechanism.privacy_loss`` values of the attributes (k = the protocol's attributes per
        person, all g when the protocol is unknown; paper 004 Algorithm 1, sequential
        composition). The model does not keep which attributes each person reported, so this
        bounds ``RecordReports.privacy_loss`` of the reports it was fitted on from above."""
        losses = sorted((rebuild_mechanism(a.name, a.size, dict(m)).privacy_loss
                         for a, m in zip(self.schema, self.mechanisms)), reverse=True)
        k = self.g if self.protocol is None else self.protocol.attributes_for(self.g)
        return float(sum(losses[:k]))

    @property
    def correlation(self) -> np.ndarray:
        """The copula's correlation matrix Sigma (g, g) (copula models only)."""
        if self.copula is None:
            raise CollectError("a latent class model has no copula correlation; read its pair "
                               "tables (pair_tables) or table(cols) instead")
        return np.asarray(self.copula.correlation_, dtype=np.float64)

    def columns(self, cols: Sequence[int | str]) -> list[int]:
        """Attribute indices from names or indices (no repeats).

        Parameters
        ----------
        cols : sequence of int or str, or one of them
            Attribute names or indices.

        Returns
        -------
        list of int
            The indices.

        Raises
        ------
        SchemaError
            For an unknown name, an index out of range, none or a repeat.
        """
        if isinstance(cols, (str, int, np.integer)):
            cols = [cols]
        out = []
        for c in cols:
            if isinstance(c, str):
                out.append(self.schema.index(c))
            else:
                if isinstance(c, bool) or int(c) != c or not 0 <= int(c) < self.g:
                    raise SchemaError(f"column index {c!r} is outside 0..{self.g - 1}")
                out.append(int(c))
        if not out:
            raise SchemaError("name at least one attribute for the table")
        if len(set(out)) != len(out):
            raise SchemaError(f"columns {list(cols)} repeat an attribute")
        return out

    def synthesize(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` complete synthetic records as codes (n, g) int32 (Algorithm 2 lines 24-32).

        Parameters
        ----------
        n : int
            Records (>= 1).
        rng : numpy.random.Generator or int, optional
            Source of the draws (``reidrisk.mechanisms.as_generator``).

        Returns
        -------
        numpy.ndarray (n, g) int32
            The records' codes.
        """
        if isinstance(n, bool) or int(n) != n or int(n) < 1:
            raise CollectError(f"n must be a positive integer number of records, got {n!r}")
        if self.latent is not None:
            return np.asarray(self.latent.sample(int(n), as_generator(rng)), dtype=np.int32)
        assert self.copula is not None  # exactly one of the two (__post_init__)
        return np.asarray(self.copula.sample(int(n), as_generator(rng)), dtype=np.int32)

    def synthesize_frame(self, n: int, rng: np.random.Generator | int | None = None):
        """``n`` synthetic records as a DataFrame of category labels.

        Parameters
        ----------
        n, rng
            As in ``synthesize``.

        Returns
        -------
        pandas.DataFrame
            One column of labels per attribute.
        """
        return self.schema.decode(self.synthesize(n, rng))

    def exact_seconds(self, cols: Sequence[int | str]) -> float:
        """Estimated seconds of the exact table of ``cols``, from its shape alone, before any
        work: the estimate by which ``reidrisk collect table`` and the service choose its default.

        Parameters
        ----------
        cols : sequence of int or str
            Attribute names or indices.

        Returns
        -------
        float
            ``exact_table_seconds`` of the table's domain sizes for a copula model; 0 for a latent
            class model, whose exact table is a sum of K outer products (and for c <= 2).
        """
        idx = self.columns(cols)
        if self.latent is not None:
            return 0.0
        return exact_table_seconds([int(self.schema.sizes[j]) for j in idx])

    def table(self, cols: Sequence[int | str], exact: bool = True, n: int | None = None,
              rng: np.random.Generator | int | None = None, *, limit: float | None = None,
              progress: Callable[[int, int, float], object] | None = None) -> np.ndarray:
        """The c-way contingency table of ``cols`` (names or indices) as probabilities.

        ``exact=True``: cell probabilities of the copula (multivariate normal rectangles), or of
        the latent class model (``sum_h w_h outer(theta_{h,a}, ...)``), shape
        ``(f_cols[0], ..., f_cols[c-1])``, summing to 1. ``exact=False``: the paper's Algorithm 2
        line 33: the normalized counts of ``n`` synthetic records (default: the number of records
        the model was fitted on). A copula's exact table of c >= 3 attributes is computed in timed
        chunks (``exact_copula_table``), within ``limit`` seconds if one is given.

        Parameters
        ----------
        cols : sequence of int or str
            The attributes (names or indices).
        exact : bool
            Compute the cell probabilities rather than count synthetic records.
        n : int, optional
            Synthetic records counted (``exact=False``).
        rng : numpy.random.Generator or int, optional
            Source of the draws (``exact=False``).
        limit : float, optional
            Most seconds of a copula's exact table (``exact_copula_table``; default: none).
        progress : callable, optional
            Called with (cells done, cells, seconds left) during a copula's exact table
            (``exact_copula_table``).

        Returns
        -------
        numpy.ndarray (f_cols[0], ..., f_cols[c-1])
            The table.

        Raises
        ------
        CollectError
            For a ``limit`` that is not a positive number of seconds or a ``progress`` that is not
            callable (whatever the model and ``exact``).
        ExactTableTooLong
            When a copula's exact table would take longer than ``limit``.
        """
        idx = self.columns(cols)
        _check_limit_progress(limit, progress)  # on every path, not only the copula's exact one
        if exact:
            if self.latent is not None:
                t = np.asarray(self.latent.table(idx), dtype=np.float64)
            else:
                assert self.copula is not None  # exactly one of the two (__post_init__)
                t = exact_copula_table(self.copula, idx, limit=limit, progress=progress)
            t = np.clip(t, 0.0, None)
            return t / t.sum()
        m = self.report.n if n is None else int(n)
        codes = self.synthesize(m, rng)
        return contingency(codes, self.schema.sizes, idx)

    # ---- files -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The model as plain JSON-ready data (``from_dict`` reads it).

        Returns
        -------
        dict
            Lists, numbers and strings only.
        """
        return model_to_dict(self)

    @classmethod
    def from_dict(cls, d: dict) -> CollectModel:
        """``model_from_dict``.

        Parameters
        ----------
        d : dict
            What ``to_dict`` wrote.

        Returns
        -------
        CollectModel
            The model.
        """
        return model_from_dict(d)

    def save(self, path: str | Path) -> Path:
        """``save_model``.

        Parameters
        ----------
        path : str or Path
            The JSON file.

        Returns
        -------
        Path
            ``path``.
        """
        return save_model(self, path)

    @classmethod
    def load(cls, path: str | Path) -> CollectModel:
        """``load_model``.

        Parameters
        ----------
        path : str or Path
            A file written by ``save``.

        Returns
        -------
        CollectModel
            The model.
        """
        return load_model(path)


# ---------------------------------------------------------------------------------------------
# model <-> dict
# ---------------------------------------------------------------------------------------------
def model_to_dict(model: CollectModel) -> dict:
    """The model as plain JSON-ready data (format ``MODEL_FORMAT``, versioned).

    Parameters
    ----------
    model : CollectModel
        The model.

    Returns
    -------
    dict
        Lists, numbers and strings only.
    """
    pairs = []
    for (j, k), T in sorted(model.pair_tables.items()):
        pairs.append({"j": int(j), "k": int(k), "n": int(model.pair_n.get((j, k), 0)),
                      "n_eff": float(model.pair_n_eff.get((j, k), 0.0)),
                      "table": np.asarray(T, dtype=np.float64).tolist()})
    return {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION if model.latent is None else LATENT_MODEL_VERSION,
        "model": model.kind,
        "reidrisk": __version__,
        "schema": model.schema.to_dict(),
        "protocol": model.protocol.to_dict() if model.protocol is not None else None,
        "mechanisms": [_plain(m) for m in model.mechanisms],
        "marginals": [np.asarray(p, dtype=np.float64).tolist() for p in model.marginals],
        "pair_n": [[int(j), int(k), int(v)] for (j, k), v in sorted(model.pair_n.items())],
        "pairs": pairs,
        "copula": model.copula.to_dict() if model.copula is not None else None,
        **({"latent": model.latent.to_dict()} if model.latent is not None else {}),
        "report": model.report.to_dict(),
        "privacy_loss": model.privacy_loss,
    }


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def model_from_dict(d: dict, source: str = "model") -> CollectModel:
    """Inverse of ``model_to_dict`` (format, version and kind checked).

    Parameters
    ----------
    d : dict
        What ``model_to_dict`` wrote.
    source : str
        Where it came from, named in error messages.

    Returns
    -------
    CollectModel
        The model.

    Raises
    ------
    ModelFileError
        For another format, an unknown version or kind, or inconsistent content.
    """
    if not isinstance(d, dict) or d.get("format") != MODEL_FORMAT:
        found = d.get("format") if isinstance(d, dict) else type(d).__name__
        raise ModelFileError(
            f"{source} is not a reidrisk collection model ('format' is {found!r}, expected "
            f"{MODEL_FORMAT!r}); create one with `reidrisk collect fit`"
        )
    if d.get("version") not in (MODEL_VERSION, LATENT_MODEL_VERSION):
        raise ModelFileError(
            f"{source} has model format version {d.get('version')!r}; this reidrisk reads versions "
            f"{MODEL_VERSION} and {LATENT_MODEL_VERSION}. Refit the model from its reports"
        )
    kind = d.get("model", "copula")
    if kind not in MODEL_KINDS:
        raise ModelFileError(f"{source} holds a model of kind {kind!r}; this reidrisk reads "
                             f"{' and '.join(map(repr, MODEL_KINDS))}")
    if (kind == "latent") != (d["version"] == LATENT_MODEL_VERSION):
        raise ModelFileError(f"{source}: a {kind} model in a version {d['version']} file; copula "
                             f"models are version {MODEL_VERSION}, latent class models version "
                             f"{LATENT_MODEL_VERSION}")
    try:
        schema = Schema.from_dict(d["schema"])
        protocol = Protocol.from_dict(d["protocol"]) if d.get("protocol") else None
        marginals = tuple(np.asarray(p, dtype=np.float64) for p in d["marginals"])
        tables, n_eff = {}, {}
        for e in d["pairs"]:
            key = (int(e["j"]), int(e["k"]))
            tables[key] = np.asarray(e["table"], dtype=np.float64)
            n_eff[key] = float(e["n_eff"])
        pair_n = {(int(j), int(k)): int(v) for j, k, v in d["pair_n"]}
        latent = None
        if kind == "latent":
            copula = None
            latent = LatentClassModel.from_dict(d["latent"], source)
        else:
            copula = GaussianCopula.from_dict(d["copula"])
        report = FitReport.from_dict(d["report"])
        mechanisms = tuple(dict(m) for m in d["mechanisms"])
    except KeyError as exc:
        raise ModelFileError(
            f"{source} lacks the entry {exc.args[0]!r}; the file is incomplete") from None
    except LatentError as exc:
        raise ModelFileError(f"{source}: {exc}") from None
    if len(marginals) != len(schema) or any(p.size != a.size for p, a in zip(marginals, schema)):
        raise ModelFileError(f"{source}: the marginals do not match the schema's domains")
    if len(mechanisms) != len(schema):
        raise ModelFileError(f"{source}: {len(mechanisms)} mechanisms for {len(schema)} attributes")
    if latent is not None and list(latent.schema_.sizes) != list(schema.sizes):
        raise ModelFileError(f"{source}: the latent class model does not match the schema's domains")
    model = CollectModel(schema, protocol, mechanisms, marginals, tables, pair_n, n_eff, copula,
                         report, latent)
    try:
        implied = model.privacy_loss
    except ReportsFileError as exc:
        raise ModelFileError(f"{source}: {exc}") from None
    check_declared_loss(source, d, implied, ModelFileError)
    return model


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------
def save_model(model: CollectModel, path: str | Path) -> Path:
    """Write the model as JSON to ``path`` atomically.

    Parameters
    ----------
    model : CollectModel
        The model.
    path : str or Path
        The JSON file.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    text = json.dumps(model_to_dict(model), allow_nan=False, separators=(",", ":"))
    atomic_write(path, lambda tmp: tmp.write_text(text))
    return path


def load_model(path: str | Path) -> CollectModel:
    """Read a model written by ``save_model`` (format and version checked).

    Parameters
    ----------
    path : str or Path
        The JSON file.

    Returns
    -------
    CollectModel
        The model.

    Raises
    ------
    FileNotFoundError
        When there is no such file.
    ModelFileError
        When it is not valid JSON or not a model this reidrisk reads.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist; check the path")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"model file {str(path)!r} is not valid JSON: {exc}") from None
    return model_from_dict(d, source=f"model file {str(path)!r}")


__all__ = ["EXACT_CHUNK", "EXACT_HARD_LIMIT", "EXACT_SECONDS_PER_CELL", "EXACT_TABLE_MAX_CELLS",
           "LATENT_MODEL_VERSION", "MODEL_FORMAT", "MODEL_KINDS", "MODEL_VERSION", "CollectError",
           "CollectModel", "ExactTableTooLong", "FitReport", "ModelFileError", "duration_text",
           "exact_copula_table", "exact_table_seconds", "load_model", "save_model"]
