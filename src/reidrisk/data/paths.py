"""Where the shared data sets live.

The real data sets are never copied into the repository. They sit in a ``shared/data`` folder next
to the checkout (``<root>/main`` beside ``<root>/shared/data``; in CI ``<tmp>/repo`` beside
``<tmp>/shared/data``), or wherever the environment variable ``REIDRISK_DATA`` points.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from reidrisk.errors import ReidriskError

ENV_VAR = "REIDRISK_DATA"


class DatasetNotFound(ReidriskError, FileNotFoundError):
    """A data set (or one of its files) is absent. The message says what was looked for, where,
    and how to point reidrisk at it (set ``REIDRISK_DATA``). Tests turn it into a skip."""


def _search_roots(starts: Iterable[str | Path] | None = None) -> list[Path]:
    if starts is None:
        starts = [Path(__file__).resolve().parent, Path.cwd().resolve()]
    roots: list[Path] = []
    for start in (Path(s).resolve() for s in starts):
        for folder in (start, *start.parents):
            if folder not in roots:
                roots.append(folder)
    return roots


def shared_data_dir(search_from: Iterable[str | Path] | None = None) -> Path:
    """The folder holding the data sets.

    ``$REIDRISK_DATA`` if set; otherwise the first ``shared/data`` found in a folder of
    ``search_from`` or any folder above it.

    Parameters
    ----------
    search_from : iterable of str or Path, optional
        Folders to search from (default: this package's location, then the current directory).

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    DatasetNotFound
        Naming the places searched.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise DatasetNotFound(
                f"{ENV_VAR}={env!r} is not a folder; point {ENV_VAR} at the folder that holds the "
                "data sets (e.g. <checkout>/../shared/data)"
            )
        return path
    roots = _search_roots(search_from)
    for folder in roots:
        candidate = folder / "shared" / "data"
        if candidate.is_dir():
            return candidate
    raise DatasetNotFound(
        "no shared data folder found: looked for 'shared/data' beside "
        f"{', '.join(str(r) for r in roots[:6])}{' ...' if len(roots) > 6 else ''}; "
        f"set {ENV_VAR} to the folder that holds the data sets"
    )


def require(name: str, files: Iterable[str] = ()) -> Path:
    """The folder of data set ``name``, checking that ``files`` exist in it.

    Parameters
    ----------
    name : str
        The data set's folder under ``shared_data_dir()``, e.g. ``"uci-adult"``.
    files : iterable of str
        File names that must exist in that folder.

    Returns
    -------
    Path
        The data set's folder.

    Raises
    ------
    DatasetNotFound
        Naming the missing folder or file and the fix.
    """
    base = shared_data_dir()
    folder = base / name
    if not folder.is_dir():
        raise DatasetNotFound(
            f"data set {name!r} not found: looked for the folder {str(folder)!r}; "
            f"set {ENV_VAR} to the folder that holds {name!r} (currently {str(base)!r})"
        )
    check_files(folder, files, name)
    return folder


def check_files(folder: Path, files: Iterable[str], name: str | None = None) -> Path:
    """Check that every file in ``files`` exists in ``folder``; return ``folder``.

    Parameters
    ----------
    folder : Path
        The folder to look in.
    files : iterable of str
        File names that must exist in it.
    name : str, optional
        The data set's name, for the error message.

    Returns
    -------
    Path
        ``folder``.
    """
    folder = Path(folder)
    for f in files:
        if not (folder / f).is_file():
            label = f"data set {name!r}" if name else "data set"
            raise DatasetNotFound(
                f"{label}: file {f!r} not found in {str(folder)!r}; pass root= the folder that "
                f"holds it, or set {ENV_VAR} to the folder that holds the data sets"
            )
    return folder


__all__ = ["DatasetNotFound", "ENV_VAR", "check_files", "require", "shared_data_dir"]
