"""Progress lines: a bar only on a terminal, plain lines at most every interval otherwise."""

from __future__ import annotations

import io

from reidrisk.report.progress import Progress, Stage


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_plain_lines_when_the_stream_is_not_a_terminal():
    out, clock = io.StringIO(), Clock()
    with Progress(4, "work", unit="runs", stream=out, interval=5.0, clock=clock) as bar:
        clock.t += 2
        bar.update(note="a")          # 2 s after the start: too soon for a line
        clock.t += 4
        bar.update(note="b")          # 6 s: a line, 2 of 4 done in 6 s -> 6 s left
        clock.t += 1
        bar.update()                  # 1 s after the last line: none
        clock.t += 1
        bar.update()                  # the last step: no progress line, the closing one follows
    lines = out.getvalue().splitlines()
    assert lines == ["work: 2/4 runs (50%) [b], 6 s elapsed, about 6 s left",
                     "work: 4/4 runs done in 8 s"]
    assert "\r" not in out.getvalue()


def test_a_short_job_prints_nothing_and_disabled_prints_nothing():
    out, clock = io.StringIO(), Clock()
    with Progress(3, "quick", stream=out, interval=5.0, clock=clock) as bar:
        for _ in range(3):
            clock.t += 1
            bar.update()
    assert out.getvalue() == ""
    with Progress(3, "off", stream=out, enabled=False, interval=0.0, clock=clock) as bar:
        clock.t += 10
        bar.update()
    assert out.getvalue() == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_on_a_terminal():
    out = Terminal()
    with Progress(2, "bar", stream=out, interval=0.0) as bar:
        bar.update()
        bar.update()
    text = out.getvalue()
    # tqdm redraws in place (carriage returns) and clears the bar at the end; no plain lines
    assert "\r" in text and "bar:" in text and "/2" in text and "done in" not in text


def test_a_stage_prints_plain_lines_while_it_runs_and_closes():
    out, clock = io.StringIO(), Clock()
    with Stage("section 2/4, uniqueness", stream=out, interval=5.0, first=2.0, heartbeat=None,
               clock=clock) as stage:
        clock.t += 1
        stage.tick()                  # 1 s: too soon for the first line
        clock.t += 2
        stage.tick()                  # 3 s: the first line
        clock.t += 3
        stage.tick()                  # 3 s after it: none
        clock.t += 3
        stage.tick()                  # 9 s: the next line
        clock.t += 1
    assert out.getvalue().splitlines() == ["section 2/4, uniqueness: 3 s elapsed",
                                           "section 2/4, uniqueness: 9 s elapsed",
                                           "section 2/4, uniqueness: done in 10 s"]


def test_a_short_or_disabled_stage_prints_nothing():
    for enabled in (True, False):
        out, clock = io.StringIO(), Clock()
        with Stage("quick", enabled=enabled, stream=out, first=2.0, heartbeat=None,
                   clock=clock) as stage:
            clock.t += 1.5
            stage.tick()
            clock.t += 2 * (not enabled)  # disabled: nothing even after the first line's time
            stage.tick()
        assert out.getvalue() == ""


def test_a_stage_on_a_terminal_redraws_one_line_and_erases_it():
    out, clock = Terminal(), Clock()
    with Stage("report", stream=out, heartbeat=None, clock=clock) as stage:
        clock.t += 1
        stage.tick()
        clock.t += 1
        stage.tick()
    text = out.getvalue()
    assert text.startswith("\r\x1b[Kreport: 1 s elapsed\r\x1b[Kreport: 2 s elapsed")
    assert text.endswith("\r\x1b[K") and "\n" not in text and "done in" not in text


def test_a_stage_keeps_showing_while_its_code_runs():
    # the background thread, not the step's code, calls tick: wait until it has printed a line
    import threading

    printed = threading.Event()

    class Stream(io.StringIO):
        def write(self, text):
            printed.set()
            return super().write(text)

    out = Stream()
    with Stage("busy", stream=out, interval=0.0, first=0.0, heartbeat=0.01):
        assert printed.wait(timeout=30), "no line from the background thread"
    assert out.getvalue().splitlines()[0].startswith("busy: ")
    assert out.getvalue().splitlines()[-1].startswith("busy: done in")
