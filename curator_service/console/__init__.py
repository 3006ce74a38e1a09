"""The curator's web console (``/console``) and the API reference page (``/docs``), served from this package.

``install_console(app)`` adds both to the service. Everything a page needs is in the package: templates,
CSS, and Swagger UI's files (``static/swagger``: swagger-ui-dist 5.35.0 from npm, Apache-2.0, its LICENSE and
NOTICE beside it), so both work on a network with no way out. The app must be created with
``docs_url=None`` so that this ``/docs`` replaces FastAPI's, which loads Swagger UI from a CDN.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from curator_service.console import security
from curator_service.console.client import ApiRefusal
from curator_service.console.pages import CsrfRefused, LoginRequired, audit_refusal, redirect, render
from curator_service.console.routes import router
from curator_service.console.uploads import KeptUploads

STATIC = Path(__file__).parent / "static"
STATIC_URL = "/console/static"


def _login_required(request: Request, exc: LoginRequired) -> RedirectResponse:
    """To the login form: with no session yet it opens plainly (its own words say what to paste); a session that
    ended or a refused credential says why."""
    response = redirect("/console/login", exc.message, "notice")
    security.log_out(response)
    return response


def _csrf_refused(request: Request, exc: CsrfRefused) -> HTMLResponse:
    audit_refusal(request, 403, "csrf")
    return render(request, "error.html", status_code=403, status=403,
                  message="This form is stale or did not come from the console (its CSRF token does not match). "
                          "Reload the page and submit it again.")


def _api_refusal(request: Request, exc: ApiRefusal) -> HTMLResponse | RedirectResponse:
    """A page whose data the API refused (a form's refusal is shown on its own page instead)."""
    if exc.status == 401:
        return _login_required(request, LoginRequired(exc.detail))
    audit_refusal(request, exc.status, exc.code)
    return render(request, "error.html", status_code=exc.status, status=exc.status, message=exc.detail)


def install_console(app: FastAPI) -> None:
    openapi_url = app.openapi_url
    if openapi_url is None:
        raise ValueError("the console's /docs page shows the OpenAPI document: create the app with an openapi_url")
    app.state.console_key = security.new_console_key()
    app.state.console_uploads = KeptUploads()
    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="console-static")
    app.include_router(router)
    app.exception_handler(LoginRequired)(_login_required)
    app.exception_handler(CsrfRefused)(_csrf_refused)
    app.exception_handler(ApiRefusal)(_api_refusal)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        """A person who types the server's address lands on the console (machines use /v1 and /docs)."""
        return RedirectResponse("/console", status_code=307)

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{app.title} — API reference",
            swagger_js_url=f"{STATIC_URL}/swagger/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC_URL}/swagger/swagger-ui.css",
            swagger_favicon_url=f"{STATIC_URL}/swagger/favicon-32x32.png",
        )
