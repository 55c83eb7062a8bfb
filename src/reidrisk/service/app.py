"""The collection service of paper 004 (Fig. 1) as a FastAPI application.

``create_app(storage, admin_token=...)`` serves:

* ``POST /surveys`` (admin): create a survey (schema, budget, mechanism, split); ``PATCH
  /surveys/{id}`` changes its definition only while it has never stored a report (then 409: a new
  version is a new survey), its name always; ``GET /surveys[/{id}]``.
* ``GET /surveys/{id}/config`` (public): everything a client needs to randomize.
* ``POST /surveys/{id}/codes`` / ``/tokens`` (admin): issue submission codes / researcher tokens
  (shown once, stored hashed); ``DELETE .../{credential}`` revokes one. A code stores at most its
  quota of reports (1 by default: one person, one report; an institution's code declares its
  number). ``POST /surveys/{id}/codes/{code}/withdraw`` (admin) takes a code's reports out of the
  counts and revokes it; ``GET /surveys/{id}/audit`` lists such actions.
* ``POST /surveys/{id}/reports`` and ``/reports/batch`` (submission code): randomized reports only
  (``reidrisk.service.wire``; an empty report is refused); a batch is all-or-nothing; the answer
  comes after the commit; retried ids are acknowledged as duplicates and not stored twice; a
  request past its code's quota is refused (409).
* researcher queries (researcher token or admin): ``/counts`` (the count tables), ``/marginals``,
  ``/pairs/{a}/{b}``, ``/table?attributes=a,b,c``, ``/synthetic?n=``, ``/model`` -- answered by the
  model of ``reidrisk collect fit`` (``reidrisk.service.models``), refitted lazily.
* ``/docs`` and ``/openapi.json``.

Every refusal is a 4xx JSON body ``{"detail": "...", "report": index-or-null}`` naming the problem.
No endpoint accepts or returns a raw answer.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response

from reidrisk import __version__
from reidrisk.collect.model_io import (
    EXACT_HARD_LIMIT,
    EXACT_TABLE_MAX_CELLS,
    CollectError,
    ExactTableTooLong,
    duration_text,
)
from reidrisk.errors import ReidriskError
from reidrisk.schema import SchemaError
from reidrisk.service import schemas as S
from reidrisk.service.auth import RateLimiter, bearer, is_admin
from reidrisk.service.ingest import GroupWriter
from reidrisk.service.models import ModelCache, NoReports
from reidrisk.service.storage import (
    CODE,
    RESEARCHER,
    CodeRevoked,
    Credential,
    NotFound,
    Storage,
    StorageError,
    Survey,
)
from reidrisk.service.wire import MAX_BATCH, ReportError, SpecError, SurveySpec, parse_report_id

MAX_BODY_BYTES = 4 << 20
"""Largest request body accepted by the report endpoints (a full batch is far smaller)."""
MAX_SYNTHETIC = 100_000
EXACT_REQUEST_SECONDS = 5.0
"""Most seconds of work of the exact table of a copula model that ``GET /surveys/{id}/table``
computes in one request. Before any work, the shape's estimate
(``reidrisk.collect.model_io.exact_table_seconds``) decides the default: exact within this time
and 20,000 cells, counted from synthetic records above. Then every exact copula table of c >= 3
attributes is computed in timed chunks (``reidrisk.collect.model_io.exact_copula_table``) that stop
as soon as the measured rate or the elapsed time exceeds this limit: ``exact=true`` is then refused
(422) with the measured estimate and the fix, and the default counts synthetic records instead.
The shape's estimate alone lets through strongly dependent tables that take far longer than it
says (docs/results/exact_table_cost.md). The endpoint is a plain function, run in the server's thread
pool, so it does not stop the event loop (``/health`` and report batches keep their latency
during a long table); a request now holds its worker thread at most
about this limit plus one chunk (``reidrisk.collect.model_io.EXACT_CHUNK_SECONDS``)."""


STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC_FILES = ("randomizer.js", "form.js")
FORM_MECHANISMS = {"grr", "subset"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "frame-ancestors 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "SAMEORIGIN",
}
"""Headers of every response (``SecurityHeaders``); the API documentation pages (``DOCS_PATHS``)
get ``DOCS_CSP`` instead of the strict policy, as they load their scripts from a CDN."""
DOCS_PATHS = ("/docs", "/redoc", "/docs/oauth2-redirect")
DOCS_CSP = "frame-ancestors 'self'"
MAX_EPSILON = 10.0
"""Largest whole-record budget a survey may have unless its owner overrides
(``allow_large_epsilon``): at 10 and a yes/no question asked alone, a sent answer gives the true
one away 99.995 % of the time (``SurveySpec.guess_bounds``)."""
EPSILON_HARD_LIMIT = 100.0
"""Largest budget even with the override (past it the channel's probabilities are 0 and 1 in
floating point: the answers are sent in the clear)."""
ADMIN_FAILURES_RATE = 1.0
ADMIN_FAILURES_BURST = 20
"""Failed admin attempts allowed per client address: one a second on average, 20 at once; past
them 429 (``_Access.check_admin``)."""
MAX_ADMIN_BODY = 1 << 20
"""Largest body of an admin request (``AdminGate``); a survey's definition is far smaller."""
MIN_ADMIN_TOKEN = 16
"""Fewest characters of an admin token (``reidrisk serve`` suggests 43 random ones)."""
_ID = re.compile(r"^[0-9a-f]{1,64}$")  # survey and credential ids: hexadecimal
FORM_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{name}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:40em;margin:2em auto}
.error{color:#a00}.ok{color:#070}</style>
</head><body>
<div id="survey" data-survey="{sid}">
<h1 id="title">{name}</h1>
<p>Your answers are randomized on this device before they are sent: only the randomized answers
leave it. Randomized does not mean hidden: someone who sees a sent answer can guess your true
answer correctly up to {guess} of the time (for a question whose answers are all equally
likely). You may skip any question; a skipped question is sent as skipped, so the server sees
which questions you skipped.</p>
<form id="form">
<div id="questions"></div>
<p><label>Submission code <input id="code" autocomplete="off" required></label></p>
<p><button id="send" type="submit" disabled>Send randomized answers</button></p>
</form>
<p id="status" role="status"></p>
</div>
<script src="/static/randomizer.js"></script>
<script src="/static/form.js"></script>
</body></html>
"""


def percent_at_most(p: float) -> str:
    """A probability as the form states it: a percentage rounded up to one decimal.

    Parameters
    ----------
    p : float
        A probability in [0, 1].

    Returns
    -------
    str
        E.g. ``"79.2 %"`` (never below ``p``).
    """
    return f"{math.ceil(p * 1000 - 1e-9) / 10:.1f} %"


def too_large() -> ApiError:
    """The refusal of a request body larger than ``MAX_BODY_BYTES``.

    Returns
    -------
    ApiError
        A 413 naming the limit and the largest batch.
    """
    return ApiError(413, f"the request body exceeds {MAX_BODY_BYTES} bytes; send at most "
                         f"{MAX_BATCH} reports per batch")


class ConfigError(ReidriskError, ValueError):
    """A server setting that cannot be used (e.g. an admin token too short to be secret)."""


class ApiError(ReidriskError):
    """A refusal: an HTTP status and a JSON body ``{"detail": ..., "report": ...}`` (``ErrorOut``).

    Parameters
    ----------
    status : int
        The HTTP status (4xx).
    detail : str
        What is wrong and how to fix it.
    report : int, optional
        Index in the batch of the report at fault, when one is.
    headers : dict, optional
        Extra response headers (e.g. ``Retry-After``).
    """

    def __init__(self, status: int, detail: str, report: int | None = None,
                 headers: dict | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.report, self.headers = status, detail, report, headers

    def body(self) -> dict:
        """The error's JSON body (``ErrorOut``), the same from the routes and the fast path.

        Returns
        -------
        dict
            ``{"detail": str, "report": int or None}``.
        """
        return {"detail": self.detail, "report": self.report}


def create_app(storage: Storage, *, admin_token: str | None = None, code_rate: float = 5.0,
               code_burst: float | None = None, docs: bool = True) -> FastAPI:
    """The collection service on ``storage`` (module doc).

    The steps: the application and its shared state (the model cache and the single writer),
    the error bodies, then the routes group by group in the order of the module doc.

    Parameters
    ----------
    storage : Storage
        The service's database.
    admin_token : str, optional
        The admin's bearer token, at least ``MIN_ADMIN_TOKEN`` characters; ``None`` (default):
        no admin endpoint works.
    code_rate : float
        Requests per second allowed per submission code on average (token bucket,
        ``reidrisk.service.auth.RateLimiter``; 0 = unlimited).
    code_burst : float, optional
        Bucket size per code; ``None`` (default): ``max(1, 2 * code_rate)``.
    docs : bool
        Serve the interactive API pages ``/docs`` and ``/redoc`` (default true); they load their
        scripts from a CDN, so a production server may turn them off (``/openapi.json`` stays).

    Returns
    -------
    FastAPI
        The application; ``app.state`` holds ``storage``, ``models`` (``ModelCache``) and
        ``writer`` (``GroupWriter``).

    Raises
    ------
    ConfigError
        For an admin token shorter than ``MIN_ADMIN_TOKEN``.
    """
    if admin_token is not None and len(admin_token) < MIN_ADMIN_TOKEN:
        raise ConfigError(f"the admin token has {len(admin_token)} characters; use at least "
                          f"{MIN_ADMIN_TOKEN} characters of randomness, e.g. python -c 'import "
                          "secrets; print(secrets.token_urlsafe(32))'")
    app = FastAPI(title="reidrisk collection service", version=__version__,
                  description=__doc__.split("\n\n")[0], docs_url="/docs" if docs else None,
                  redoc_url="/redoc" if docs else None)
    app.state.storage = storage
    app.state.models = ModelCache(storage)
    app.state.writer = GroupWriter(storage)
    access = _Access(storage, admin_token)
    app.exception_handler(ApiError)(_api_error)
    app.exception_handler(RequestValidationError)(_validation_error)
    _add_survey_routes(app, access)
    _add_form_routes(app, access)
    _add_credential_routes(app, access)
    _add_report_routes(app, access, RateLimiter(code_rate, code_burst))
    _add_query_routes(app, access)
    _document_report_bodies(app)
    app.add_middleware(AdminGate, access=access)  # before any admin body is read
    app.add_middleware(SecurityHeaders)  # the outermost layer: the fast path's answers too
    return app


def _document_report_bodies(app: FastAPI) -> None:
    """Put the report bodies' schemas (``ReportIn``, ``BatchIn``) in the OpenAPI document.

    The two report routes read their bodies on the fast path, so FastAPI does not derive the
    schemas their request bodies refer to; without them those references dangle.
    """
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            doc = build()
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            for model in (S.ReportIn, S.BatchIn):
                js = model.model_json_schema(ref_template="#/components/schemas/{model}")
                for name, sub in js.pop("$defs", {}).items():
                    schemas.setdefault(name, sub)
                schemas.setdefault(model.__name__, js)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


async def _api_error(_request, exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _validation_error(_request, exc: RequestValidationError) -> JSONResponse:
    """A request the body models refuse: the first three problems, in the ``ErrorOut`` body."""
    errs = exc.errors()
    parts = []
    for e in errs[:3]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg')}")
    return JSONResponse({"detail": "; ".join(parts), "report": None}, status_code=422)


class _Access:
    """Who may do what (``reidrisk.service.auth``), and what the ingestion path keeps in memory.

    The surveys and codes the ingestion path reads from memory: both change only through this process (one worker per database), which
    forgets the entry when they do."""

    def __init__(self, storage: Storage, admin_token: str | None) -> None:
        self.storage, self.admin_token = storage, admin_token
        self.surveys_seen: dict[str, Survey] = {}
        self.codes_seen: dict[str, Credential] = {}
        self.failures = RateLimiter(ADMIN_FAILURES_RATE, ADMIN_FAILURES_BURST)

    def token_of(self, request: Request) -> str | None:
        return bearer(request.headers.get("authorization"))

    def require_admin(self, request: Request) -> None:
        self.check_admin(self.token_of(request), request.client.host if request.client else "")

    def check_admin(self, token: str | None, host: str) -> None:
        """Refuse anything but the admin token; failed attempts are throttled per address
        (``ADMIN_FAILURES_RATE`` a second, bursts of ``ADMIN_FAILURES_BURST``)."""
        if is_admin(token, self.admin_token):
            return
        ok, wait = self.failures.allow(host)
        if not ok:
            raise ApiError(429, f"too many failed admin attempts from this address; retry in "
                                f"{wait:.0f} s", headers={"Retry-After": str(math.ceil(wait))})
        raise ApiError(401 if token is None else 403,
                       "this endpoint needs the admin token (Authorization: Bearer <token>)")

    def survey_or_404(self, sid: str) -> Survey:
        if not _ID.match(sid):  # never sent to the database (a NUL byte would be a 500)
            raise ApiError(404, f"no survey {sid[:80]!r}")
        try:
            return self.storage.survey(sid)
        except NotFound:
            raise ApiError(404, f"no survey {sid!r}") from None

    def survey_cached(self, sid: str) -> Survey:
        s = self.surveys_seen.get(sid)
        if s is None:
            s = self.surveys_seen[sid] = self.survey_or_404(sid)
        return s

    def credential_for(self, token: str | None, sid: str, kind: str) -> Credential | None:
        what = "a submission code" if kind == CODE else "a researcher token"
        if token is None:
            raise ApiError(401, f"this endpoint needs {what} (Authorization: Bearer <token>)")
        if kind == RESEARCHER and is_admin(token, self.admin_token):
            return None
        cred = self.codes_seen.get(token) if kind == CODE else None
        if cred is None:
            cred = self.storage.credential(token)
            if cred is not None and cred.kind == CODE and not cred.revoked:
                if len(self.codes_seen) > 100_000:
                    self.codes_seen.clear()
                self.codes_seen[token] = cred
        if cred is None or cred.kind != kind or cred.survey_id != sid:
            raise ApiError(403, f"not {what} of survey {sid!r}")
        if cred.revoked:
            raise ApiError(403, f"this {'submission code' if kind == CODE else 'token'} was "
                                "revoked; ask the survey's administrator for a new one")
        return cred

    def reader(self, request: Request, sid: str) -> Survey:
        survey = self.survey_or_404(sid)
        self.credential_for(self.token_of(request), sid, RESEARCHER)
        return survey


def _add_survey_routes(app: FastAPI, access: _Access) -> None:
    """``/health``, ``/surveys`` (create, list, read, change) and ``/surveys/{sid}/config``."""
    storage = access.storage

    def survey_out(s: Survey) -> dict:
        return {"id": s.id, "name": s.name, "revision": s.revision, "n_reports": s.n_reports,
                "config": s.spec.to_dict()}

    def build_spec(schema: dict, protocol: S.ProtocolIn, allow_large: bool) -> SurveySpec:
        eps = protocol.epsilon
        limit = EPSILON_HARD_LIMIT if allow_large else MAX_EPSILON
        if not eps <= limit:  # NaN and infinity too
            why = ("the largest budget the service accepts" if allow_large else
                   "the largest budget without the owner's override; a larger one lets a sent "
                   "answer give the true answer away almost always. To use it anyway, add "
                   "\"allow_large_epsilon\": true")
            raise ApiError(422, f"protocol: epsilon {eps:g} exceeds {limit:g}, {why}")
        try:
            return SurveySpec.build(schema, protocol.model_dump())
        except SpecError as exc:
            raise ApiError(422, str(exc)) from None

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__, "schema_version": storage.version}

    @app.post("/surveys", status_code=201, response_model=S.SurveyOut,
              dependencies=[Depends(access.require_admin)])
    def create_survey(body: S.SurveyIn) -> dict:
        spec = build_spec(body.schema_, body.protocol, body.allow_large_epsilon)
        return survey_out(storage.create_survey(body.name, spec))

    @app.get("/surveys", response_model=list[S.SurveyOut],
             dependencies=[Depends(access.require_admin)])
    def list_surveys() -> list:
        return [survey_out(s) for s in storage.list_surveys()]

    @app.get("/surveys/{sid}", response_model=S.SurveyOut)
    def get_survey(request: Request, sid: str) -> dict:
        return survey_out(access.reader(request, sid))

    @app.patch("/surveys/{sid}", response_model=S.SurveyOut,
               dependencies=[Depends(access.require_admin)])
    def patch_survey(sid: str, body: S.SurveyPatch) -> dict:
        cur = access.survey_or_404(sid)
        spec = None
        if body.schema_ is not None or body.protocol is not None:
            schema = body.schema_ if body.schema_ is not None else cur.spec.schema.to_dict()
            proto = body.protocol or S.ProtocolIn(**{
                k: v for k, v in cur.spec.protocol.to_dict().items()
                if k not in ("format", "version")})
            spec = build_spec(schema, proto, body.allow_large_epsilon)
        access.surveys_seen.pop(sid, None)
        try:
            return survey_out(storage.update_survey(sid, body.name, spec))
        except StorageError as exc:
            raise ApiError(409, str(exc)) from None
        finally:
            access.surveys_seen.pop(sid, None)

    @app.get("/surveys/{sid}/config")
    def config(sid: str) -> dict:
        """The client configuration: schema, protocol, each attribute's mechanism and cell codec,
        and the largest batch."""
        s = access.survey_or_404(sid)
        return {"survey": s.id, "name": s.name, "revision": s.revision, "max_batch": MAX_BATCH,
                **s.spec.to_dict()}


def _add_form_routes(app: FastAPI, access: _Access) -> None:
    """The browser form of a survey and its two scripts."""

    @app.get("/surveys/{sid}/form", response_class=HTMLResponse)
    def form(sid: str) -> HTMLResponse:
        """A form that randomizes the answers in the browser (Web Crypto) and sends only the
        randomized report; skipped questions stay missing."""
        s = access.survey_or_404(sid)
        unsupported = sorted({m.name for m in s.spec.mechanisms} - FORM_MECHANISMS)
        if unsupported:
            raise ApiError(409, f"the browser form randomizes with {sorted(FORM_MECHANISMS)}; "
                                f"this survey uses {unsupported}: use reidrisk.client")
        page = (FORM_PAGE.replace("{sid}", html.escape(s.id))
                .replace("{name}", html.escape(s.name))
                .replace("{guess}", percent_at_most(max(s.spec.guess_bounds()))))
        return HTMLResponse(page, headers=SECURITY_HEADERS)

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in STATIC_FILES:
            raise ApiError(404, f"no static file {name!r}")
        text = (STATIC_DIR / name).read_text(encoding="utf-8")
        return Response(text, media_type="text/javascript", headers=SECURITY_HEADERS)


def _add_credential_routes(app: FastAPI, access: _Access) -> None:
    """Issue, list and revoke submission codes (``/codes``) and researcher tokens (``/tokens``)."""
    storage = access.storage

    def out(c: Credential) -> dict:
        return {"id": c.id, "label": c.label, "kind": c.kind, "revoked": c.revoked,
                "quota": c.quota, "used": c.used}

    def issue(sid: str, body: S.CredentialIn, kind: str) -> list[dict]:
        access.survey_or_404(sid)
        out_ = []
        for _ in range(body.count):
            cred, token = storage.issue(sid, kind, body.label, body.quota)
            out_.append({**out(cred), "token": token})
        return out_

    def listing(sid: str, kind: str) -> list[dict]:
        access.survey_or_404(sid)
        return [out(c) for c in storage.credentials(sid, kind)]

    def revoke(sid: str, cid: str, kind: str) -> dict:
        access.survey_or_404(sid)
        if not any(c.id == cid for c in storage.credentials(sid, kind)):
            raise ApiError(404, f"survey {sid!r} has no {kind} credential {cid!r}")
        c = storage.revoke(sid, cid)
        access.codes_seen.clear()
        return out(c)

    admin = [Depends(access.require_admin)]
    for path, kind in (("codes", CODE), ("tokens", RESEARCHER)):
        what = "submission code" if kind == CODE else "researcher token"
        app.add_api_route(f"/surveys/{{sid}}/{path}", _bind(issue, kind), methods=["POST"],
                          status_code=201, response_model=list[S.CredentialOut],
                          dependencies=admin, summary=f"Issue {what}s")
        app.add_api_route(f"/surveys/{{sid}}/{path}", _bind(listing, kind), methods=["GET"],
                          response_model=list[S.CredentialOut], dependencies=admin,
                          summary=f"List {what}s")
        app.add_api_route(f"/surveys/{{sid}}/{path}/{{cid}}", _bind(revoke, kind),
                          methods=["DELETE"], response_model=S.CredentialOut, dependencies=admin,
                          summary=f"Revoke a {what}")

    @app.post("/surveys/{sid}/codes/{cid}/withdraw", response_model=S.WithdrawOut,
              dependencies=admin)
    def withdraw(sid: str, cid: str, body: S.WithdrawIn | None = None) -> dict:
        """Withdraw every report a submission code stored: they leave the count tables (the
        model is refitted without them), the code is revoked, and the audit log records it."""
        access.survey_or_404(sid)
        if not _ID.match(cid):
            raise ApiError(404, f"survey {sid!r} has no submission code {cid[:80]!r}")
        try:
            w = storage.withdraw(sid, cid, body.reason if body is not None else "")
        except NotFound as exc:
            raise ApiError(404, str(exc)) from None
        access.codes_seen.clear()
        return {"credential_id": w.credential_id, "withdrawn": w.withdrawn,
                "n_reports": w.n_reports}

    @app.get("/surveys/{sid}/audit", response_model=list[S.AuditOut], dependencies=admin)
    def audit(sid: str) -> list:
        """The survey's audit log: withdrawals, in order."""
        access.survey_or_404(sid)
        return storage.audit(sid)


def _parse_body(body: bytes):
    if len(body) > MAX_BODY_BYTES:
        raise too_large()
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the request body is not JSON: {exc}") from None
    except RecursionError:
        raise ApiError(400, "the request body is JSON nested too deep; a report is an object "
                            "of strings") from None


def _batch_items(body, batch: bool) -> list:
    """The reports of a request body: the body itself, or a batch's checked list."""
    if not batch:
        return [body]
    if not isinstance(body, dict) or set(body) != {"reports"} or \
            not isinstance(body["reports"], list):
        raise ApiError(422, "a batch body is {\"reports\": [report, ...]}")
    items = body["reports"]
    if not items:
        raise ApiError(422, "the batch holds no reports")
    if len(items) > MAX_BATCH:
        raise ApiError(413, f"the batch holds {len(items)} reports; at most {MAX_BATCH}")
    return items


def _shape(survey: Survey, items: list) -> tuple[list, list]:
    """Ids and cell rows of the reports, each checked on its own (``wire``); the reports
    decoder then runs on the whole group (``reidrisk.service.ingest``)."""
    spec = survey.spec
    ids, rows, seen = [], [], set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ReportError(f"report {i} must be an object with 'id' and 'values'", i)
        extra = sorted(set(item) - {"id", "values"})
        if extra:
            raise ReportError(f"report {i} has unexpected field(s) {extra}; a report holds "
                              "only 'id' and 'values'", i)
        if "id" not in item or "values" not in item:
            raise ReportError(f"report {i} needs 'id' (a client-generated UUID) and "
                              "'values'", i)
        rid = parse_report_id(item["id"], i)
        if rid in seen:
            raise ReportError(f"report {i}: id {rid} appears twice in the batch", i)
        seen.add(rid)
        ids.append(rid)
        rows.append(spec.cells_of(item["values"], i))
    return ids, rows


def _add_report_routes(app: FastAPI, access: _Access, limiter: RateLimiter) -> None:
    """The two report endpoints: the fast path that serves them and their documented routes.

    The fast path (``IngestFastPath``) answers every report request; the FastAPI routes run the
    same ``submit`` and make the endpoints' OpenAPI entries.
    """
    writer = app.state.writer

    async def submit(token: str | None, read_body, sid: str, batch: bool) -> dict:
        """Check the code and the reports, queue them for the next group commit, and answer after
        it (``GroupWriter``). ``read_body``: an awaitable giving the body's bytes."""
        survey = access.survey_cached(sid)
        cred = access.credential_for(token, sid, CODE)
        assert cred is not None  # only an administrator's researcher token has none
        ok, wait = limiter.allow(cred.id)
        if not ok:
            raise ApiError(429, f"too many requests for this submission code; retry in "
                                f"{wait:.1f} s", headers={"Retry-After": str(math.ceil(wait))})
        items = _batch_items(_parse_body(await read_body()), batch)
        try:
            ids, rows = _shape(survey, items)
            return await writer.submit(survey, cred.id, ids, rows)
        except ReportError as exc:
            raise ApiError(422, str(exc), exc.index) from None
        except CodeRevoked as exc:  # by another server process sharing the database
            access.codes_seen.pop(token or "", None)
            raise ApiError(403, str(exc)) from None
        except StorageError as exc:  # the survey changed, a quota, or a reused id
            access.surveys_seen.pop(sid, None)  # read the survey again next time
            raise ApiError(409, str(exc), getattr(exc, "index", None)) from None

    async def ingest_asgi(scope, receive, send, sid: str, batch: bool) -> None:
        """The two report endpoints as a bare ASGI handler (``IngestFastPath``)."""
        token = None
        for key, value in scope["headers"]:
            if key == b"authorization":
                token = bearer(value.decode("latin-1"))
                break

        async def read_body() -> bytes:
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ApiError(400, "the client closed the connection before the body ended")
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise too_large()  # without reading the rest
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)

        try:
            status, body, headers = 201, await submit(token, read_body, sid, batch), None
        except ApiError as exc:
            status, body, headers = exc.status, exc.body(), exc.headers
        await send_json(send, status, body, headers)

    app.add_middleware(IngestFastPath, handler=ingest_asgi)

    def route(path: str, body_model: str):
        """The POST route of ``path``, its body documented as ``body_model``.

        The fast path reads the body; the refusals are documented as ``ErrorOut``.
        """
        return app.post(path, response_model=S.IngestOut, status_code=201,
                        openapi_extra={"requestBody": {"required": True, "content": {
                            "application/json": {"schema": {
                                "$ref": f"#/components/schemas/{body_model}"}}}}},
                        responses={422: {"model": S.ErrorOut}, 429: {"model": S.ErrorOut}})

    @route("/surveys/{sid}/reports", "ReportIn")
    async def submit_one(request: Request, sid: str) -> dict:
        """Store one randomized report (acknowledged after the commit; a retry with the same id
        is a duplicate, not a second report)."""
        return await submit(access.token_of(request), request.body, sid, batch=False)

    @route("/surveys/{sid}/reports/batch", "BatchIn")
    async def submit_batch(request: Request, sid: str) -> dict:
        """Store a batch of reports in one transaction: all or nothing."""
        return await submit(access.token_of(request), request.body, sid, batch=True)


def _add_query_routes(app: FastAPI, access: _Access) -> None:
    """The researcher queries, answered by the survey's lazily refitted model (``models``)."""
    storage, models = access.storage, app.state.models

    def fitted(survey: Survey):
        """The survey's model; 409 naming what is empty while a survey or one of its
        attributes has no reports, 422 for a fit the estimators refuse (never a 500)."""
        try:
            return models.get(survey)
        except NoReports as exc:
            raise ApiError(409, str(exc)) from None
        except CollectError as exc:
            raise ApiError(422, f"the model cannot be fitted on the stored reports: {exc}") \
                from None

    @app.get("/surveys/{sid}/counts")
    def counts(request: Request, sid: str) -> dict:
        """The count tables: the Gram matrix of report memberships (blocks = pair counts) and the
        number of reports having each pair of attributes."""
        survey = access.reader(request, sid)
        pc = storage.counts(survey)
        return {"n": pc.n, "names": survey.spec.schema.names, "offsets": pc.offsets.tolist(),
                "gram": pc.gram.tolist(), "n_pair": pc.n_pair.tolist()}

    @app.get("/surveys/{sid}/marginals")
    def marginals(request: Request, sid: str) -> dict:
        survey = access.reader(request, sid)
        f = fitted(survey)
        return {"n_reports": f.n_reports, "notes": list(f.model.report.notes), "attributes": [
            {"name": a.name, "categories": list(a.categories), "probabilities": p.tolist()}
            for a, p in zip(f.model.schema, f.model.marginals)]}

    @app.get("/surveys/{sid}/pairs/{a}/{b}")
    def pair(request: Request, sid: str, a: str, b: str) -> dict:
        survey = access.reader(request, sid)
        f = fitted(survey)
        schema = f.model.schema
        try:
            j, k = schema.index(a), schema.index(b)
        except SchemaError as exc:
            raise ApiError(404, str(exc)) from None
        if j == k:
            raise ApiError(422, "a pair table needs two different attributes")
        T = f.model.pair_tables.get((min(j, k), max(j, k)))
        if T is None:
            raise ApiError(409, f"no report holds both {a!r} and {b!r}; the model treats them as "
                                "independent (see /table)")
        T = np.asarray(T) if j < k else np.asarray(T).T
        return {"n_reports": f.n_reports, "attributes": [a, b],
                "categories": [list(schema[a].categories), list(schema[b].categories)],
                "n_pair": int(f.model.pair_n[(min(j, k), max(j, k))]), "table": T.tolist()}

    @app.get("/surveys/{sid}/table")
    def table(request: Request, sid: str,
              attributes: str = Query(description="comma-separated attribute names"),
              exact: bool | None = None, n: int | None = Query(None, ge=1, le=10_000_000),
              seed: int | None = None) -> dict:
        """The contingency table of the model (``reidrisk collect table``): exact cell
        probabilities, or counted from ``n`` synthetic records when ``exact=false``. For c >= 3
        attributes the default is exact up to 20,000 cells and, for a copula model, 5 s of work
        estimated from the table's shape before any work (``EXACT_REQUEST_SECONDS``,
        ``exact_table_seconds``); it is counted above. Every exact copula table of c >= 3
        attributes is then computed in timed chunks within those 5 s (``exact_copula_table``):
        when the rate measured on the model says it would take longer, ``exact=true`` is refused
        (422 naming the measured estimate, the limit and the fix) and the default counts
        synthetic records instead (``exact`` is false in the answer). Beyond 2^20 cells
        ``exact=true`` is refused before any work."""
        survey = access.reader(request, sid)
        f = fitted(survey)
        cols = [c.strip() for c in attributes.split(",") if c.strip()]
        schema = f.model.schema
        try:
            idx = f.model.columns(cols)
        except SchemaError as exc:
            raise ApiError(422, str(exc)) from None
        dims = [int(schema[i].size) for i in idx]
        cells = int(np.prod(dims, dtype=np.int64))
        seconds = f.model.exact_seconds(idx)  # 0 for a latent class model (K outer products)
        asked = exact is True
        if exact is None:
            exact = len(idx) <= 2 or (cells <= EXACT_TABLE_MAX_CELLS
                                      and seconds <= EXACT_REQUEST_SECONDS)
        if exact and len(idx) >= 3 and cells > EXACT_HARD_LIMIT:
            raise ApiError(422, f"the table of {', '.join(cols)} has {cells:,} cells, more than the "
                                f"{EXACT_HARD_LIMIT:,} that are computed exactly; ask for "
                                "exact=false (counts of n synthetic records), or fewer or smaller "
                                "attributes")
        try:
            try:
                T = f.model.table(cols, exact=exact, n=n, rng=seed, limit=EXACT_REQUEST_SECONDS)
            except ExactTableTooLong as exc:
                if asked:
                    shape = "x".join(map(str, dims))
                    raise ApiError(
                        422, f"the exact {shape} table of {', '.join(cols)} ({cells:,} cells) "
                             f"would take about {duration_text(exc.seconds)} to compute (measured "
                             f"on {exc.done:,} of its cells), more than the "
                             f"{duration_text(EXACT_REQUEST_SECONDS)} a request may take; ask for "
                             "exact=false with n (counts of n synthetic records; default "
                             f"{f.model.report.n:,}), or fewer or smaller attributes") from None
                exact = False
                T = f.model.table(cols, exact=False, n=n, rng=seed)
        except (CollectError, SchemaError) as exc:
            raise ApiError(422, str(exc)) from None
        return {"n_reports": f.n_reports, "attributes": cols, "exact": exact,
                "categories": [list(schema[i].categories) for i in idx], "table": T.tolist()}

    @app.get("/surveys/{sid}/synthetic")
    def synthetic(request: Request, sid: str, n: int = Query(100, ge=1, le=MAX_SYNTHETIC),
                  seed: int | None = None) -> dict:
        """``n`` synthetic records drawn from the model (category labels)."""
        survey = access.reader(request, sid)
        f = fitted(survey)
        frame = f.model.synthesize_frame(n, seed)
        return {"n_reports": f.n_reports, "columns": list(frame.columns),
                "records": frame.astype(object).values.tolist()}

    @app.get("/surveys/{sid}/model")
    def model(request: Request, sid: str) -> dict:
        """The fitted model in the versioned JSON of ``reidrisk collect fit``."""
        survey = access.reader(request, sid)
        return fitted(survey).model.to_dict()


class AdminGate:
    """ASGI middleware that checks the admin token of every admin write before its body is read.

    Every POST, PATCH, PUT or DELETE other than the two report endpoints is an admin request:
    without the admin token it is answered 401/403 (429 past the failures allowed,
    ``_Access.check_admin``) and a declared body over ``MAX_ADMIN_BODY`` is answered 413, both
    without reading the body (before, a 100 MB body was parsed before the token was checked).

    Parameters
    ----------
    app : ASGI application
        The application.
    access : _Access
        Who may do what.
    """

    def __init__(self, app, access: _Access) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PATCH", "PUT", "DELETE") \
                and not _REPORTS_PATH.match(scope["path"]):
            headers = dict(scope["headers"])
            token = bearer(headers.get(b"authorization", b"").decode("latin-1"))
            host = (scope.get("client") or ("",))[0]
            try:
                self.access.check_admin(token, host)
                length = headers.get(b"content-length", b"0").decode("latin-1")
                if b"transfer-encoding" in headers or not length.isdigit() \
                        or int(length) > MAX_ADMIN_BODY:
                    raise ApiError(413, f"an admin request's body is at most {MAX_ADMIN_BODY} "
                                        "bytes, with its Content-Length")
            except ApiError as exc:
                await send_json(send, exc.status, exc.body(), exc.headers)
                return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """ASGI middleware that adds ``SECURITY_HEADERS`` to every HTTP response (the API
    documentation pages get ``DOCS_CSP`` as their content security policy).

    Parameters
    ----------
    app : ASGI application
        The application whose responses get the headers.
    """

    def __init__(self, app) -> None:
        self.app = app
        self.raw = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in SECURITY_HEADERS.items()]
        self.docs = [(k, DOCS_CSP.encode("latin-1") if k == b"content-security-policy" else v)
                     for k, v in self.raw]

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self.docs if scope["path"] in DOCS_PATHS else self.raw

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in extra}
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": headers + extra}
            await send(message)

        await self.app(scope, receive, send_with_headers)


_REPORTS_PATH = re.compile(r"^/surveys/([^/]+)/reports(/batch)?$")


class IngestFastPath:
    """ASGI middleware that sends the two report endpoints straight to ``handler``.

    ``POST /surveys/{id}/reports`` and ``.../reports/batch`` go to ``handler`` (the service's own
    checks, group commit and error bodies), without the framework's routing, dependency and
    response-model work per request, which cost more than the rest of a single report's path.
    The FastAPI routes of the two endpoints stay for the OpenAPI document and run the same
    ``submit``; every other request goes to the app.

    Parameters
    ----------
    app : ASGI application
        The application every other request goes to.
    handler : async callable
        ``handler(scope, receive, send, survey_id, batch)``, which answers a report request.
    """

    def __init__(self, app, handler) -> None:
        self.app, self.handler = app, handler

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            m = _REPORTS_PATH.match(scope["path"])
            if m:
                await self.handler(scope, receive, send, m.group(1), m.group(2) is not None)
                return
        await self.app(scope, receive, send)


async def send_json(send, status: int, body, headers: dict | None = None) -> None:
    """Send an HTTP response with a JSON body, as ``JSONResponse`` renders it.

    Parameters
    ----------
    send : async callable
        The ASGI ``send`` of the request.
    status : int
        The HTTP status.
    body
        The JSON-serializable body (NaN and infinities are refused).
    headers : dict, optional
        Extra response headers.
    """
    data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode("latin-1"), str(v).encode("latin-1"))
            for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def _bind(fn, kind: str):
    """An endpoint with ``kind`` fixed (FastAPI reads the remaining parameters)."""
    import inspect

    sig = inspect.signature(fn)
    params = [p for name, p in sig.parameters.items() if name != "kind"]

    def endpoint(**kwargs):
        return fn(kind=kind, **kwargs)

    endpoint.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    endpoint.__name__ = f"{fn.__name__}_{kind}"
    return endpoint
