"""The FastAPI app: routes, authentication, OpenAI-shaped errors, start-up and shutdown.

``create_app(config)`` builds it; ``docsan serve`` runs it under uvicorn. Every error a client
sees is ``{"error": {"message", "type", "param", "code"}}`` with a meaningful status: the
gateway's own refusals (:class:`~docsan.serve.errors.ApiError`), framework errors (unknown
route, wrong method) and, for anything unexpected, a 500 whose traceback goes to the log only.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from docsan.config import Config
from docsan.errors import ConfigError, DocsanError, InputError
from docsan.extract import load
from docsan.extract.text import text_document
from docsan.model import Document
from docsan.serve.chat import ClientGone, chat_completions
from docsan.serve.chat_body import read_body
from docsan.serve.errors import ApiError, error_body
from docsan.serve.gateway import Gateway, Snapshot, build_snapshot, uses_embedded
from docsan.serve.jobs import job_view

log = logging.getLogger("docsan.serve")
# Suffixes an upload may keep (the extractor decides by content too); anything else is read as text or refused.
UPLOAD_SUFFIXES = {".pdf", ".txt", ".text", ".md", ".markdown", ".json", ".log"}


def create_app(
    config: Config,
    *,
    config_path: str | Path | None = None,
    options: dict[str, dict[str, Any]] | None = None,
    embedded: Any = None,
) -> FastAPI:
    """The gateway for ``config``. With no tier ``base_url``, ``embedded`` (an already started
    :class:`~docsan.serve.embedded_upstream.EmbeddedServer`) is the upstream, or one is started with the app.
    ``options`` (stage options the command line set, already in ``config``) are laid over the file again at
    each reload."""
    owns = False
    if uses_embedded(config) and embedded is None:
        from docsan.serve.embedded_upstream import EmbeddedServer

        embedded, owns = EmbeddedServer(config.runner.embedded), True
    snapshot = build_snapshot(config, embedded.url if embedded is not None else None)
    gw = Gateway(
        snapshot,
        config_path=Path(config_path) if config_path else None,
        options=options,
        embedded=embedded if uses_embedded(config) else None,
        owns_embedded=owns,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await gw.start()
        try:
            yield
        finally:
            await gw.stop()

    app = FastAPI(title="docsan", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.gateway = gw
    _errors(app)

    def authorize(request: Request) -> None:
        keys = gw.snapshot.api_keys
        if keys and not any(hmac.compare_digest(_bearer(request), k) for k in keys):
            raise ApiError(401, "missing or invalid API key (Authorization: Bearer KEY)", code="invalid_api_key")

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        authorize(request)
        return await chat_completions(gw, request)

    @app.get("/v1/models")
    async def models(request: Request) -> dict[str, Any]:
        authorize(request)
        data = [{"id": n, "object": "model", "owned_by": "docsan"} for n in gw.model_names(gw.snapshot)]
        return {"object": "list", "data": data}

    @app.post("/v1/clean")
    async def clean(request: Request) -> dict[str, Any]:
        authorize(request)
        return await _clean(gw, request)

    @app.get("/v1/jobs/{job_id}")
    async def job(job_id: str, request: Request) -> dict[str, Any]:
        authorize(request)
        found = await asyncio.to_thread(gw.queue.get, job_id)
        if found is None:
            raise ApiError(404, f"no job {job_id!r}", param="id", code="job_not_found")
        return job_view(found)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/ready")
    async def ready() -> Response:
        snap = gw.snapshot
        stale = snap.config.serve.stale_after_s
        tiers = {}
        for name, up in gw.tier_upstreams():
            tiers[name] = {"upstream": up.url, "ready": up.ready(stale), "error": up.last_error}
        ok = bool(tiers) and all(t["ready"] for t in tiers.values())
        body: dict[str, Any] = {"ready": ok, "tiers": tiers}
        if gw.ledger is not None:  # the shared ledger not answering: nothing can be admitted
            body["ledger"] = gw.ledger.state()
            body["ready"] = ok = ok and body["ledger"]["up"]
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(gw.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.post("/admin/reload")
    async def reload(request: Request) -> dict[str, Any]:
        token = gw.snapshot.config.serve.admin_token
        if not token:
            raise ApiError(403, "admin endpoints are off: set serve.admin_token (or reload with SIGHUP)")
        if not hmac.compare_digest(_bearer(request), token):
            raise ApiError(401, "missing or invalid admin token (Authorization: Bearer TOKEN)", code="invalid_api_key")
        try:
            return await gw.reload()
        except DocsanError as err:
            raise ApiError(400, f"reload refused, the previous configuration keeps serving: {err}",
                           code="invalid_config") from None  # fmt: skip

    return app


def _bearer(request: Request) -> str:
    value = request.headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def _clean(gw: Gateway, request: Request) -> dict[str, Any]:
    """A file upload (multipart ``file``) or JSON ``{"text": ...}`` → cleaned text and the report."""
    snap = gw.snapshot
    serve = snap.config.serve
    kind = request.headers.get("content-type", "")
    if kind.startswith("multipart/form-data"):
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > serve.max_upload_bytes:
            raise ApiError(413, f"upload of {declared} bytes exceeds limit {serve.max_upload_bytes} bytes "
                           "(serve.max_upload_bytes)", code="request_too_large")  # fmt: skip
        form = await request.form(max_files=1, max_fields=4, max_part_size=serve.max_upload_bytes)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise ApiError(400, "send the document as a multipart field named 'file'", param="file")
        data = await upload.read(serve.max_upload_bytes + 1)
        if len(data) > serve.max_upload_bytes:
            raise ApiError(413, f"upload exceeds limit {serve.max_upload_bytes} bytes", code="request_too_large")
        name = Path(upload.filename or "upload").name
        return await anyio.to_thread.run_sync(_clean_bytes, snap, data, name)
    try:
        payload = json.loads(await read_body(request, serve.max_body_bytes))
    except ValueError as err:
        raise ApiError(400, f"the body is not valid JSON: {err}", code="invalid_json") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        raise ApiError(400, 'send JSON {"text": "..."} or a multipart upload named \'file\'', param="text")
    return await anyio.to_thread.run_sync(_clean_text, snap, payload["text"])


def _clean_bytes(snap: Snapshot, data: bytes, name: str) -> dict[str, Any]:
    suffix = Path(name).suffix.lower()
    with tempfile.TemporaryDirectory(prefix="docsan-upload-") as tmp:
        path = Path(tmp) / ("upload" + (suffix if suffix in UPLOAD_SUFFIXES else ""))
        path.write_bytes(data)
        try:
            doc = load(path, snap.config.extract)
        except InputError as err:
            raise ApiError(400, f"{name}: {err.problem}", param="file", code="unreadable_input") from None
    return _cleaned(snap, doc, name)


def _clean_text(snap: Snapshot, text: str) -> dict[str, Any]:
    # As docsan.clean_text does: lone surrogates from JSON escapes arrive as U+FFFD, which normalize reports.
    data = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return _cleaned(snap, text_document(data, "text"), "text")


def _cleaned(snap: Snapshot, doc: Document, name: str) -> dict[str, Any]:
    """The gateway's pipeline (the configured stages and the served model's control-token guard)."""
    result = snap.path.pipeline.run(replace(doc, name=name))
    return {"text": result.text, "report": result.report.to_dict()}


def _errors(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, err: ApiError) -> Response:
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> Response:
        message = f"{request.method} {request.url.path}: {err.detail}"
        return JSONResponse(error_body(err.status_code, message), status_code=err.status_code, headers=err.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, err: RequestValidationError) -> Response:
        return JSONResponse(error_body(400, str(err.errors()[:1])), status_code=400)

    @app.exception_handler(ClientGone)
    async def client_gone(request: Request, err: ClientGone) -> Response:
        return Response(status_code=499)  # nobody reads it: the client is gone

    @app.exception_handler(ConfigError)
    async def config_error(request: Request, err: ConfigError) -> Response:
        return JSONResponse(error_body(400, str(err)), status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        message = f"internal error ({type(err).__name__}); the gateway's log has the details"
        return JSONResponse(error_body(500, message), status_code=500)
