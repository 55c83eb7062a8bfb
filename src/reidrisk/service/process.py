"""Run ``reidrisk serve`` as a child process on loopback (for the crash test, the load benchmark
and the end-to-end client tests)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago.

    Returns
    -------
    int
        The port number the operating system chose.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``reidrisk serve`` on 127.0.0.1 in a child process; ``start()`` returns once /health answers.

    Parameters
    ----------
    data_dir : str or Path, optional
        Directory of the SQLite database (``--data-dir``), used when ``database_url`` is not given.
    database_url : str, optional
        SQLAlchemy URL of the database (``--database-url``).
    admin_token : str
        The admin token, passed in ``REIDRISK_ADMIN_TOKEN``.
    port : int, optional
        Port on 127.0.0.1; ``None`` (default): a free one (``free_port``).
    code_rate : float
        Requests per second allowed per submission code (``--code-rate``; 0: no limit).
    extra : tuple of str
        More command-line options of ``reidrisk serve``.
    log : str or Path, optional
        File the server's output is appended to; ``None`` (default): discarded.
    """

    def __init__(self, *, data_dir: str | Path | None = None, database_url: str | None = None,
                 admin_token: str = "admin-token-for-tests", port: int | None = None, code_rate: float = 0,
                 extra: tuple[str, ...] = (), log: str | Path | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_token = admin_token
        args = [sys.executable, "-m", "reidrisk.cli", "serve", "--host", "127.0.0.1",
                "--port", str(self.port), "--code-rate", str(code_rate), *extra]
        if database_url:
            args += ["--database-url", database_url]
        else:
            args += ["--data-dir", str(data_dir)]
        self.args = args
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait until ``/health`` answers 200.

        Parameters
        ----------
        timeout : float
            Seconds to wait for the server; past them it is stopped.

        Returns
        -------
        ServerProcess
            This object, running.

        Raises
        ------
        RuntimeError
            When the server exits early or does not answer within ``timeout``.
        """
        import httpx

        env = {**os.environ, "REIDRISK_ADMIN_TOKEN": self.admin_token,
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.args, env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"reidrisk serve exited with {self.proc.returncode}: "
                                   f"{' '.join(self.args)}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"reidrisk serve did not answer on {self.url} within {timeout} s")

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush or clean up."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if the process has not exited within 10 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
