"""Progress of long commands on standard error: a bar on a terminal, plain lines otherwise.

A bar redraws one line with carriage returns, which is noise in a log file and vanishes when the
output is piped or captured. ``Progress`` therefore draws a tqdm bar only when its stream is a
terminal; otherwise it prints a plain line such as

    collect + estimate: 12/30 runs (40%), 21 s elapsed, about 31 s left

at most every ``interval`` seconds, and a closing line once the job has run longer than that. Every
command that can take more than a few seconds reports through it (``reidrisk demo``,
``reidrisk collect table`` and ``synth``, ``reidrisk uniqueness score``).

A step that cannot count its work (one call into a capability) is shown by ``Stage`` instead: the
time it has been running, redrawn every second on a terminal, or as a plain line such as

    report section 2/4, uniqueness: 10 s elapsed

after 2 s and then every ``interval`` seconds otherwise, so that no step longer than that is
silent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

PLAIN_INTERVAL = 5.0
"""Seconds between two plain progress lines (and the least run time that gets a closing line)."""

STAGE_FIRST_LINE = 2.0
"""Seconds a ``Stage`` runs before its first plain line (a shorter step prints none)."""


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


class Progress:
    """Progress of ``total`` steps named ``desc``, shown on ``stream`` (default: standard error).

    A bar on a terminal, a plain line every ``interval`` seconds otherwise. ``update(n, note)``
    advances by n steps. Use as a context manager, or call ``close()``.

    Parameters
    ----------
    total : int
        Steps in all.
    desc : str
        What is progressing.
    unit : str
        Name of a step.
    enabled : bool
        ``False`` shows nothing.
    stream : text stream, optional
        Where progress is shown (default: standard error).
    interval : float, optional
        Seconds between plain lines (default ``PLAIN_INTERVAL``).
    clock : callable
        Seconds now (injectable for tests).
    """

    def __init__(self, total: int, desc: str, unit: str = "steps", enabled: bool = True,
                 stream: TextIO | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total = max(int(total), 0)
        self.desc = desc
        self.unit = unit
        self.done = 0
        self.note = ""
        self.stream = sys.stderr if stream is None else stream
        self.interval = float(PLAIN_INTERVAL if interval is None else interval)
        self.clock = clock
        self.start = clock()
        self.last_line = self.start
        self.lines = 0
        self.closed = False
        self.enabled = bool(enabled)
        try:
            tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            tty = False
        self._bar = None
        if self.enabled and tty:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=desc, unit=unit.rstrip("s") or unit,
                             leave=False, file=self.stream)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1, note: str = "") -> None:
        """Advance by ``n`` steps.

        Parameters
        ----------
        n : int
            Steps done since the last update.
        note : str
            Shown beside the count (e.g. the current item).
        """
        self.done += int(n)
        self.note = note
        if not self.enabled:
            return
        if self._bar is not None:
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)
            return
        now = self.clock()
        if now - self.last_line >= self.interval and self.done < self.total:
            self._line(now)

    def _line(self, now: float, final: bool = False) -> None:
        elapsed = now - self.start
        if final:
            text = f"{self.desc}: {self.done}/{self.total} {self.unit} done in {_seconds(elapsed)}"
        else:
            pct = 100.0 * self.done / self.total if self.total else 100.0
            text = f"{self.desc}: {self.done}/{self.total} {self.unit} ({pct:.0f}%)"
            if self.note:
                text += f" [{self.note}]"
            text += f", {_seconds(elapsed)} elapsed"
            if 0 < self.done < self.total:
                text += f", about {_seconds(elapsed * (self.total - self.done) / self.done)} left"
        print(text, file=self.stream, flush=True)
        self.last_line = now
        self.lines += 1

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.close()
            return
        now = self.clock()
        if self.enabled and (self.lines or now - self.start >= self.interval):
            self._line(now, final=True)


class Stage:
    """A step of unknown length named ``desc``, shown while it runs on ``stream`` (default: standard
    error).

    On a terminal, one line with the elapsed time, redrawn every ``heartbeat`` seconds and erased at
    the end; otherwise a plain line ``desc: N s elapsed`` after ``first`` seconds and then every
    ``interval`` seconds, and a closing line ``desc: done in N s`` after any of them. A step
    shorter than ``first`` prints no plain line. Use as a context manager: a background thread
    keeps the display going while the step's own code runs.

    Parameters
    ----------
    desc : str
        What is running.
    enabled : bool
        ``False`` shows nothing.
    stream : text stream, optional
        Where it is shown (default: standard error).
    interval : float, optional
        Seconds between plain lines (default ``PLAIN_INTERVAL``).
    first : float, optional
        Seconds before the first plain line (default ``STAGE_FIRST_LINE``).
    heartbeat : float or None
        Seconds between two looks at the clock by the background thread (default 1); ``None``
        starts no thread (``tick()`` is then called by hand, as the tests do).
    clock : callable
        Seconds now (injectable for tests).
    """

    def __init__(self, desc: str, enabled: bool = True, stream: TextIO | None = None,
                 interval: float | None = None, first: float | None = None,
                 heartbeat: float | None = 1.0, clock: Callable[[], float] = time.monotonic):
        self.desc = desc
        self.enabled = bool(enabled)
        self.stream = sys.stderr if stream is None else stream
        self.interval = float(PLAIN_INTERVAL if interval is None else interval)
        self.first = float(STAGE_FIRST_LINE if first is None else first)
        self.heartbeat = heartbeat
        self.clock = clock
        self.start = clock()
        self.last_line = self.start
        self.lines = 0
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Stage:
        self.start = self.last_line = self.clock()
        if self.enabled and self.heartbeat is not None:
            self._thread = threading.Thread(target=self._run, name=f"stage {self.desc}",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _run(self) -> None:
        assert self.heartbeat is not None
        while not self._stop.wait(self.heartbeat):
            self.tick()

    def tick(self) -> None:
        """Show the elapsed time now (terminal), or a plain line when ``first`` (before the first
        line) or ``interval`` seconds have passed."""
        if not self.enabled:
            return
        now = self.clock()
        elapsed = _seconds(now - self.start)
        if self.tty:
            self.stream.write(f"\r\x1b[K{self.desc}: {elapsed} elapsed")
            self.stream.flush()
        elif now - self.last_line >= (self.interval if self.lines else self.first):
            print(f"{self.desc}: {elapsed} elapsed", file=self.stream, flush=True)
            self.last_line = now
            self.lines += 1

    def close(self) -> None:
        """Stop the display: erase the terminal line, or close with ``desc: done in N s`` when
        plain lines were shown."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if not self.enabled:
            return
        self.enabled = False
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        elif self.lines:
            print(f"{self.desc}: done in {_seconds(self.clock() - self.start)}", file=self.stream,
                  flush=True)


__all__ = ["PLAIN_INTERVAL", "STAGE_FIRST_LINE", "Progress", "Stage"]
