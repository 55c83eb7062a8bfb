"""reidrisk.service.process: a server in a child process (the crash tests start it)."""

import socket
import sys

from reidrisk.service.process import ServerProcess, free_port


def test_free_port_can_be_bound():
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_command_line_of_the_child():
    p = ServerProcess(data_dir="/tmp/x", port=12345, code_rate=2, extra=("--log-level", "warning"))
    assert p.url == "http://127.0.0.1:12345" and p.proc is None
    assert p.args[:4] == [sys.executable, "-m", "reidrisk.cli", "serve"]
    assert p.args[p.args.index("--port") + 1] == "12345"
    assert p.args[p.args.index("--code-rate") + 1] == "2"
    assert p.args[-2:] == ["--data-dir", "/tmp/x"]
    q = ServerProcess(database_url="postgresql://u@h/db")
    assert q.args[-2:] == ["--database-url", "postgresql://u@h/db"] and "--data-dir" not in q.args
