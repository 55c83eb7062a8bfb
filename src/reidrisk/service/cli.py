"""``reidrisk serve``: run the collection service (``reidrisk.service``) with uvicorn."""

from __future__ import annotations

import gc
import shutil
import socket
from pathlib import Path

import click


class Refused(click.ClickException):
    """``reidrisk serve`` cannot start: ``Error: <message>``, exit code 2 like every refusal of the
    command line, printed before the service says it runs and leaving no file behind."""

    exit_code = 2


def _check_port_free(host: str, port: int) -> None:
    """Refuse a host:port another process listens on (port 0: any free port, always accepted)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise Refused(f"--host {host!r} cannot be resolved ({exc.strerror or exc}); pass an "
                      "address of this machine, e.g. 127.0.0.1 or 0.0.0.0") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise Refused(f"cannot listen on {host}:{port}: {exc.strerror or exc}; stop the "
                          "process that uses it or pass another --port") from None


def _created_by_us(data_dir: Path | None, database_url: str | None) -> list[Path]:
    """The SQLite folder and file ``serve`` would create (removed again if it cannot start)."""
    if database_url:
        return []
    folder = Path(data_dir if data_dir is not None else "reidrisk-data")
    return [p for p in (folder / "reidrisk.sqlite3", folder) if not p.exists()]


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            for extra in ("", "-journal", "-wal", "-shm"):
                path.with_name(path.name + extra).unlink(missing_ok=True)


@click.command("serve")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("reidrisk-data"), show_default=True,
              help="Folder of the embedded SQLite database (WAL mode), created if absent.")
@click.option("--database-url", envvar="REIDRISK_DATABASE_URL", default=None, metavar="URL",
              help="Use this database instead, e.g. postgresql://user@host:5432/db "
                   "[env: REIDRISK_DATABASE_URL].")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on (put a TLS proxy in front for anything but loopback).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--admin-token", envvar="REIDRISK_ADMIN_TOKEN", default=None, metavar="TOKEN",
              help="Bearer token of the administrator [env: REIDRISK_ADMIN_TOKEN]; without it "
                   "surveys cannot be created.")
@click.option("--code-rate", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Requests per second allowed per submission code (0 = unlimited).")
@click.option("--code-burst", type=click.FloatRange(min=1), default=None,
              help="Burst size per submission code [default: 2 x --code-rate].")
@click.option("--docs/--no-docs", default=True, show_default=True,
              help="Serve the interactive API pages /docs and /redoc, which load their scripts "
                   "from a CDN (turn them off in production; /openapi.json stays).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def serve(data_dir, database_url, host, port, admin_token, code_rate, code_burst, docs,
          log_level) -> None:
    """Run the collection service: surveys, submission codes, randomized reports, and researcher
    queries answered by the model of `reidrisk collect fit` (OpenAPI docs at /docs)."""
    try:
        import uvicorn

        # the service extra (fastapi, sqlalchemy): loaded only by `reidrisk serve`
        from reidrisk.service.app import create_app

        # the service extra (fastapi, sqlalchemy): loaded only by `reidrisk serve`
        from reidrisk.service.storage import Storage

        # the service extra (fastapi, sqlalchemy): loaded only by `reidrisk serve`
        from reidrisk.service.storage import database_url as make_url
    except ImportError as exc:  # pragma: no cover - the service extra is missing
        raise Refused(
            f"the service needs {exc.name!r}: pip install 'reidrisk[service]'") from None
    _check_port_free(host, port)  # before any file is created or "service on" is printed
    new_paths = _created_by_us(data_dir, database_url)
    url = make_url(database_url, data_dir)
    try:
        storage = Storage(url)
    except Exception as exc:
        _remove(new_paths)
        raise Refused(f"cannot open the database {_redact(url)}: "
                      f"{' '.join(str(exc).split())[:300]}") from None
    if not admin_token:
        click.echo("Warning: no --admin-token (or REIDRISK_ADMIN_TOKEN): admin endpoints are "
                   "closed", err=True)
    try:
        app = create_app(storage, admin_token=admin_token or None, code_rate=code_rate,
                         code_burst=code_burst, docs=docs)
    except ValueError as exc:  # a setting create_app refuses (ConfigError)
        storage.close()
        _remove(new_paths)
        raise Refused(str(exc)) from None
    click.echo(f"reidrisk service on http://{host}:{port} (database {_redact(url)}; "
               f"API docs at /docs)", err=True)
    # everything loaded so far (the libraries, the app) lives as long as the process: keep it out
    # of the cyclic garbage collector's full passes, which would otherwise walk it all and stall
    # every request in flight for ~0.1 s every few thousand requests
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=host, port=port, log_level=log_level, workers=1,
                timeout_graceful_shutdown=5)
    storage.close()


def _redact(url: str) -> str:
    """The URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        cred, host = rest.rsplit("@", 1)
        return f"{scheme}://{cred.split(':', 1)[0]}@{host}"
    return url


group = serve  # picked up by reidrisk.cli as `reidrisk serve`
