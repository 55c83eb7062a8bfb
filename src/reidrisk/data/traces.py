"""Event sequences per user: location traces and rating histories (paper 002, Section 5.1).

A ``Sequences`` holds one sequence of integer codes per user in one flat array with offsets (CSR
layout), so traces of different lengths need no padding. Codes are 0..k-1; ``labels[c]`` is the
original identifier of code ``c`` (a region id, a movie id).

Loaders:

* ``read_traces``: a CSV ``user_id,time_id,reg_id`` (the PWS Cup 2019 format), ordered by time
  within each user; every region id is checked against the region domain and every user against an
  expected user list, and a bad value is a ``TraceError`` naming the file, the row and the value.
* ``load_pwscup2019_osaka``: the Osaka set of ``pwscup2019-location-traces`` (see its
  PROVENANCE.md): the reference period (time slots 1-40, days 1-2) is the adversary's background
  knowledge and the original period (slots 41-80, days 3-4) the personal data; 2,000 users over a
  32 x 32 grid of 1,024 regions.
* ``load_peopleflow_tokyo``: the PeopleFlow Tokyo train/test pair of the same data set (1,000 users,
  35 slots each, 1,024 regions).
* ``load_movielens_histories``: the PWS Cup 2024 MovieLens subset (``A.csv``) as rating histories:
  a user's "likes" (rating >= 4, as in the paper's RH data) in the file's column order (movie-id
  order: the subset carries no time stamps, so this order stands in for time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reidrisk.data.io import TableError, read_table
from reidrisk.data.paths import check_files, require

PWSCUP2019 = "pwscup2019-location-traces"
MOVIELENS = "pwscup2024-movielens-subset"
OSAKA_SETS = {"IDP": "team001_data01_IDP", "TRP": "team001_data02_TRP"}
TRACE_COLUMNS = ("user_id", "time_id", "reg_id")


class TraceError(TableError):
    """A trace or history file holds a value that cannot be used (an unknown region or user, a
    non-integer field, no rows). The message names the file, the value and the fix."""


@dataclass(frozen=True, eq=False)
class Sequences:
    """One sequence of codes per user (CSR layout).

    Parameters
    ----------
    users : numpy.ndarray (n,)
        User identifiers.
    codes : numpy.ndarray (total,) int64
        Codes in 0..k-1; user i's events are ``codes[offsets[i]:offsets[i + 1]]``, in time order.
    offsets : numpy.ndarray (n + 1,)
        Where each user's events start, then the total.
    k : int
        The domain size.
    labels : numpy.ndarray (k,)
        The original identifier of each code.
    """

    users: np.ndarray
    codes: np.ndarray
    offsets: np.ndarray
    k: int
    labels: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.shape != (self.users.size + 1,) or self.offsets[0] != 0 \
                or self.offsets[-1] != self.codes.size or np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must be non-decreasing, start at 0 and end at len(codes)")
        if self.codes.size and (self.codes.min() < 0 or self.codes.max() >= self.k):
            raise ValueError(f"codes must lie in 0..k-1 = 0..{self.k - 1}")

    @classmethod
    def from_lists(cls, seqs, k: int, users=None, labels=None) -> Sequences:
        """Build from a list of code sequences (tests and small examples).

        Parameters
        ----------
        seqs : sequence of sequence of int
            One code sequence per user.
        k : int
            Number of symbols.
        users : array_like, optional
            The user ids (default 0..n-1).
        labels : array_like, optional
            The symbols' labels (default 0..k-1).

        Returns
        -------
        Sequences
            The sequences.
        """
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        codes = (np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs])
                 if lengths.sum() else np.zeros(0, dtype=np.int64))
        users = np.arange(len(seqs)) if users is None else np.asarray(users)
        labels = np.arange(k) if labels is None else np.asarray(labels)
        return cls(users, codes, offsets, int(k), labels)

    @property
    def n(self) -> int:
        return int(self.users.size)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n

    def sequence(self, i: int) -> np.ndarray:
        """User i's codes in time order.

        Parameters
        ----------
        i : int
            The user's row.

        Returns
        -------
        numpy.ndarray
            A view of ``codes``.
        """
        return self.codes[self.offsets[i]:self.offsets[i + 1]]

    def owner(self) -> np.ndarray:
        """(total,) the row index of the user each event belongs to.

        Returns
        -------
        numpy.ndarray (total,)
            The user row of each event.
        """
        return np.repeat(np.arange(self.n), self.lengths)

    def position(self) -> np.ndarray:
        """(total,) the position of each event within its user's sequence (0-based).

        Returns
        -------
        numpy.ndarray (total,)
            The position of each event.
        """
        return np.arange(self.codes.size) - np.repeat(self.offsets[:-1], self.lengths)

    def head(self, t: int | None) -> Sequences:
        """The first ``t`` events of every user.

        Parameters
        ----------
        t : int, optional
            How many events (>= 1); all of them when ``None`` or larger.

        Returns
        -------
        Sequences
            The shortened sequences.
        """
        if t is None:
            return self
        if t < 1:
            raise ValueError(f"number of events must be >= 1, got {t}")
        keep = self.position() < t
        lengths = np.minimum(self.lengths, t)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return Sequences(self.users, self.codes[keep], offsets, self.k, self.labels)

    def take(self, rows) -> Sequences:
        """The users at positions ``rows`` (in that order).

        Parameters
        ----------
        rows : array_like of int
            Row positions.

        Returns
        -------
        Sequences
            Those users' sequences.
        """
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        idx = np.repeat(self.offsets[rows], lengths) + (
            np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths))
        return Sequences(self.users[rows], self.codes[idx], offsets, self.k, self.labels)

    def with_codes(self, codes: np.ndarray, k: int, labels=None) -> Sequences:
        """The same users and lengths over new codes (e.g. after obfuscation or hashing).

        Parameters
        ----------
        codes : numpy.ndarray
            The new codes, one per event.
        k : int
            Number of symbols of the new codes.
        labels : array_like, optional
            Their labels (default 0..k-1).

        Returns
        -------
        Sequences
            The recoded sequences.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if codes.shape != self.codes.shape:
            raise ValueError(f"expected {self.codes.size} codes, got shape {codes.shape}")
        return Sequences(self.users, codes, self.offsets, int(k),
                         np.arange(k) if labels is None else np.asarray(labels))


def _integers(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    text = frame[column].str.strip()
    values = pd.to_numeric(text, errors="coerce")
    bad = values.isna() | (values != np.floor(values))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TraceError(
            f"{str(path)!r}, row {row + 2}: {column} {frame[column].iloc[row]!r} is not an "
            f"integer; every {column} must be a whole number"
        )
    return values.to_numpy(dtype=np.int64)


def read_traces(path: str | Path, regions, users=None) -> Sequences:
    """Read a ``user_id,time_id,reg_id`` CSV into ``Sequences`` ordered by time within each user.

    Parameters
    ----------
    path : str or Path
        The CSV file.
    regions : int or array_like
        The region domain: an int ``K`` (ids 1..K) or the array of valid region ids (code =
        position in the sorted array).
    users : array_like, optional
        The expected user ids (rows follow this order); a user in the file outside it, or one of
        them absent from the file, is a ``TraceError``. ``None``: the file's users in increasing
        id order.

    Returns
    -------
    Sequences
        The traces.
    """
    path = Path(path)
    frame = read_table(path, columns=list(TRACE_COLUMNS))
    if len(frame) == 0:
        raise TraceError(f"{str(path)!r} has a header but no rows; a trace file needs at least one "
                         "event (user_id,time_id,reg_id)")
    uid = _integers(frame, "user_id", path)
    tid = _integers(frame, "time_id", path)
    rid = _integers(frame, "reg_id", path)
    labels = (np.arange(1, int(regions) + 1) if np.ndim(regions) == 0
              else np.unique(np.asarray(regions, dtype=np.int64)))
    code = np.searchsorted(labels, rid)
    unknown = (code >= labels.size) | (labels[np.minimum(code, labels.size - 1)] != rid)
    if unknown.any():
        bad = int(np.flatnonzero(unknown)[0])
        domain = (f"1..{labels[-1]}" if np.array_equal(labels, np.arange(1, labels.size + 1))
                  else f"the {labels.size} ids of the region table")
        raise TraceError(
            f"{str(path)!r}, row {bad + 2}: unknown region reg_id={rid[bad]} "
            f"({int(unknown.sum())} such rows); region ids must be in {domain}. Pass the region "
            "table or domain size that covers it"
        )
    if users is None:
        ulist = np.unique(uid)
    else:
        ulist = np.asarray(users, dtype=np.int64)
    sorted_users = np.sort(ulist)
    row_of = np.searchsorted(sorted_users, uid)
    outside = (row_of >= ulist.size) | (sorted_users[np.minimum(row_of, ulist.size - 1)] != uid)
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise TraceError(
            f"{str(path)!r}, row {bad + 2}: unknown user user_id={uid[bad]} "
            f"({int(outside.sum())} such rows); it is not among the {ulist.size} users of the "
            "background knowledge, so the match cannot be scored. Remove it or add its "
            "background trace"
        )
    # rows in the order of ``ulist``: map sorted position -> position in ulist
    pos_in_list = np.empty(ulist.size, dtype=np.int64)
    pos_in_list[np.argsort(ulist, kind="stable")] = np.arange(ulist.size)
    row = pos_in_list[row_of]
    counts = np.bincount(row, minlength=ulist.size)
    if users is not None and np.any(counts == 0):
        missing = ulist[np.flatnonzero(counts == 0)[0]]
        raise TraceError(
            f"{str(path)!r}: user user_id={missing} has no event ({int((counts == 0).sum())} such "
            "users); every user of the background knowledge needs a trace in this file"
        )
    order = np.lexsort((tid, row))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Sequences(ulist, code[order].astype(np.int64), offsets, int(labels.size), labels)


def read_region_ids(path: str | Path) -> np.ndarray:
    """The sorted distinct ``reg_id`` values of a region table or a trace file.

    Parameters
    ----------
    path : str or Path
        A CSV file with a ``reg_id`` column.

    Returns
    -------
    numpy.ndarray
        The region identifiers, ascending.
    """
    path = Path(path)
    frame = read_table(path, columns=["reg_id"])
    if len(frame) == 0:
        raise TraceError(f"{str(path)!r} has a header but no rows; no region ids to read")
    return np.unique(_integers(frame, "reg_id", path))


def load_pwscup2019_osaka(dataset: str = "IDP", root: str | Path | None = None
                          ) -> tuple[Sequences, Sequences]:
    """(background, personal) of the PWS Cup 2019 Osaka set ``dataset`` ("IDP" or "TRP").

    background = the reference traces (slots 1-40), personal = the original traces (slots 41-80);
    both over the 1,024 regions of ``info_region.csv``, rows in the same user order.

    Parameters
    ----------
    dataset : {"IDP", "TRP"}
        Which set.
    root : str or Path, optional
        The folder holding the files (default: the data set's folder under
        ``shared_data_dir()``).

    Returns
    -------
    background, personal : Sequences
        The two periods' traces.

    Raises
    ------
    DatasetNotFound
        When the files are absent (tests skip on it).
    """
    try:
        tag = OSAKA_SETS[dataset.upper()]
    except KeyError:
        raise ValueError(f"unknown Osaka set {dataset!r}; choose one of "
                         f"{sorted(OSAKA_SETS)}") from None
    files = [f"Osaka/reftraces_{tag}.csv", f"Osaka/orgtraces_{tag}.csv", "Osaka/info_region.csv"]
    folder = check_files(Path(root), files, PWSCUP2019) if root else require(PWSCUP2019, files)
    regions = read_region_ids(folder / files[2])
    background = read_traces(folder / files[0], regions)
    personal = read_traces(folder / files[1], regions, users=background.users)
    return background, personal


def load_peopleflow_tokyo(root: str | Path | None = None) -> tuple[Sequences, Sequences]:
    """(train, test) of the PeopleFlow Tokyo sample traces (1,000 users, 1,024 regions).

    Parameters
    ----------
    root
        As in ``load_pwscup2019_osaka``.

    Returns
    -------
    train, test : Sequences
        The two halves of the traces.
    """
    files = ["PeopleFlow_Tokyo/traintraces_TK.csv", "PeopleFlow_Tokyo/testtraces_TK.csv",
             "PeopleFlow_Tokyo/regions_TK.csv"]
    folder = check_files(Path(root), files, PWSCUP2019) if root else require(PWSCUP2019, files)
    regions = read_region_ids(folder / files[2])
    train = read_traces(folder / files[0], regions)
    test = read_traces(folder / files[1], regions, users=train.users)
    return train, test


def load_movielens_histories(root: str | Path | None = None, min_rating: int = 4,
                             min_events: int = 5) -> Sequences:
    """The MovieLens subset ``A.csv`` as rating histories over its 46 movies.

    A user's history is the movies rated ``>= min_rating`` (default 4: the paper's "likes") in the
    file's column order; users with fewer than ``min_events`` such ratings are dropped (the paper
    keeps users with >= 10 likes over all of MovieLens; this subset has only 46 movies, and 1,105 of
    its 1,920 users have >= 5 likes).

    Parameters
    ----------
    root : str or Path, optional
        The folder holding ``A.csv`` (default: the data set's folder under ``shared_data_dir()``).
    min_rating : int
        Smallest rating that counts as a like.
    min_events : int
        Fewest likes a user needs to be kept.

    Returns
    -------
    Sequences
        One history per user.
    """
    files = ["A.csv"]
    folder = check_files(Path(root), files, MOVIELENS) if root else require(MOVIELENS, files)
    path = folder / "A.csv"
    frame = read_table(path)
    movie_cols = [c for c in frame.columns if c.strip().isdigit()]
    if "User ID" not in frame.columns or not movie_cols:
        raise TraceError(f"{str(path)!r} lacks the 'User ID' column or the movie-id columns; "
                         "expected the PWS Cup 2024 raw data layout")
    ratings = np.column_stack([_integers(frame, c, path) for c in movie_cols])
    uid = _integers(frame, "User ID", path)
    liked = ratings >= min_rating
    keep = liked.sum(axis=1) >= min_events
    liked = liked[keep]
    rows, cols = np.nonzero(liked)  # row-major: column (movie) order within each user
    counts = liked.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    labels = np.array([int(c) for c in movie_cols], dtype=np.int64)
    return Sequences(uid[keep], cols.astype(np.int64), offsets, len(movie_cols), labels)


__all__ = [
    "MOVIELENS", "PWSCUP2019", "Sequences", "TraceError", "load_movielens_histories",
    "load_peopleflow_tokyo", "load_pwscup2019_osaka", "read_region_ids", "read_traces",
]
