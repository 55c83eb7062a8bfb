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
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``reidrisk serve`` on 127.0.0.1 in a child process; ``start()`` returns once /health answers.

    ``data_dir`` or ``database_url`` as for the command; ``extra``: more command-line options.
    """

    def __init__(self, *, data_dir: str | Path | None = None, database_url: str | None = None,
                 admin_token: str = "admin", port: int | None = None, code_rate: float = 0,
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
