"""Writing files so that a failure leaves nothing half-written, and errors that name the user's path.

``atomic_write(path, write)`` has ``write`` fill a temporary file beside ``path`` and then moves it
over ``path`` (``os.replace``: atomic on one file system), so a failed write leaves the old file, or
none, and no partial one; ``atomic_write_files`` does the same for files that belong together (all
or none changes). ``check_output_path`` refuses, before any work, a target that cannot be written;
``user_path_in_errors`` turns an error about the temporary file into one about the user's path.

The bottom of the package beside ``reidrisk.errors``: it imports nothing of reidrisk, so the schema
(``Schema.save``), the table readers and writers (``reidrisk.data.io``, which re-exports these
names) and the capabilities' model and report files all write through it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_files", "check_output_path", "file_mode",
           "user_path_in_errors"]


def file_mode() -> int:
    """Permissions of a newly created file under the current umask (mkstemp would give 0600).

    Returns
    -------
    int
        ``0o666`` without the umask's bits (e.g. ``0o644`` under umask 022).
    """
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path, write) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then move it over ``path``.

    Parameters
    ----------
    path : Path
        The target.
    write : callable
        ``write(tmp)`` writes the whole content to the temporary path ``tmp``.
    """

    atomic_write_files([(path, write)])


def atomic_write_files(files) -> None:
    """Write several files that belong together (a CSV and its sidecar): all or none changes.

    Every ``write(tmp)`` runs on a temporary file beside its target first; only when all have
    succeeded are they moved into place, so a failed write (a full disk, a file size limit)
    leaves every target as it was, and no old file is left beside a new one that describes it.

    Parameters
    ----------
    files : sequence of (Path, callable)
        The targets and their writers, moved into place in this order.
    """

    targets = [check_output_path(path) for path, _ in files]
    tmps: list[Path] = []
    try:
        for path, (_, write) in zip(targets, files):
            with user_path_in_errors(path):
                fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                os.close(fd)
                tmps.append(Path(name))
                write(tmps[-1])
                os.chmod(tmps[-1], file_mode())
        for path, done in zip(targets, tmps):
            with user_path_in_errors(path):
                os.replace(done, path)
    except BaseException:
        for left in tmps:
            left.unlink(missing_ok=True)
        raise


def check_output_path(path: str | Path, kind: str = "file") -> Path:
    """Check, before any work is done, that ``path`` can be written: its folder exists and is
    writable, and ``path`` itself is not a folder (``kind="file"``) or not a file (``kind="folder"``;
    a report folder's parent is created when missing, so only an existing parent is checked).

    Returns ``Path(path)``.

    Parameters
    ----------
    path : str or Path
        The file or folder to be written.
    kind : {"file", "folder"}
        What ``path`` will be.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError
        Naming the path and the fix.
    """
    path = Path(path)
    if kind == "folder":
        if path.exists() and not path.is_dir():
            raise NotADirectoryError(f"cannot write the report folder {str(path)!r}: a file of that "
                                     "name exists; pass another folder")
        parent = path.resolve().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise NotADirectoryError(f"cannot create {str(path)!r}: {str(parent)!r} is a file")
    else:
        if path.is_dir():
            raise IsADirectoryError(f"cannot write {str(path)!r}: it is a folder; give a file name")
        parent = path.parent
        if not parent.is_dir():
            raise FileNotFoundError(
                f"cannot write {str(path)!r}: the folder {str(parent)!r} does not exist; create it "
                "or choose another path"
            )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {str(path)!r}: no permission to write in the folder "
                              f"{str(parent)!r}; choose another path")
    return path


class user_path_in_errors:
    """Re-raise an ``OSError`` about a temporary file as the same error about the user's ``path``
    (a message about ``.out.csv.x1y2.tmp`` would name a file the user never asked for).

    Parameters
    ----------
    path : Path
        The file the user asked for.
    """

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not isinstance(exc, OSError):
            return False
        if exc.filename is not None and Path(exc.filename) == self.path:
            return False
        reason = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
        cls = type(exc) if type(exc).__init__ is OSError.__init__ else OSError
        raise cls(exc.errno, reason, str(self.path)) from exc
