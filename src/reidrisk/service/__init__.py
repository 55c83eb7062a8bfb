"""The collection service of paper 004 (Fig. 1): clients randomize on their own device and send
only randomized reports; the server stores them durably, folds them into the count tables, and
answers researchers' queries with the model of ``reidrisk collect fit``.

``reidrisk serve`` runs it (``reidrisk.service.cli``); ``create_app`` (``reidrisk.service.app``)
builds the FastAPI application on a ``Storage`` (``reidrisk.service.storage``: SQLite in WAL mode
by default, PostgreSQL by URL). The Python client is ``reidrisk.client``. See docs/deployment.md.
"""

__all__ = ["create_app", "Storage"]


def __getattr__(name):  # the web stack is imported only when the service is used
    if name == "create_app":
        # the service extra (fastapi, sqlalchemy): loaded on first use
        from reidrisk.service.app import create_app

        return create_app
    if name == "Storage":
        # the service extra (sqlalchemy): loaded on first use
        from reidrisk.service.storage import Storage

        return Storage
    raise AttributeError(name)
