"""``reidrisk serve``: run the collection service (``reidrisk.service``) with uvicorn."""

from __future__ import annotations

import gc
from pathlib import Path

import click


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
        raise click.ClickException(
            f"the service needs {exc.name!r}: pip install 'reidrisk[service]'") from None
    url = make_url(database_url, data_dir)
    try:
        storage = Storage(url)
    except Exception as exc:
        raise click.ClickException(f"cannot open the database {_redact(url)}: "
                                   f"{' '.join(str(exc).split())[:300]}") from None
    if not admin_token:
        click.echo("Warning: no --admin-token (or REIDRISK_ADMIN_TOKEN): admin endpoints are "
                   "closed", err=True)
    try:
        app = create_app(storage, admin_token=admin_token or None, code_rate=code_rate,
                         code_burst=code_burst, docs=docs)
    except ValueError as exc:  # a setting create_app refuses (ConfigError)
        storage.close()
        raise click.ClickException(str(exc)) from None
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
