"""What every console page shares: who is logged in, the CSRF check on forms, rendering and redirects.

A page handler takes :data:`Console` (the API as the session's curator sees it); a form handler also awaits
:func:`checked_form`. Refusals of the API become a message on the page, never a stack trace.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.datastructures import FormData

from curator_service.console import security
from curator_service.console.client import Api, ApiRefusal
from curator_service.console.reads import live_state
from curator_service.services import audit, console_sessions
from shared.api.governance import identifier_name
from shared.checks import ascii_decimal, too_long_number

T = TypeVar("T")
TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")

# The pages load only the console's own CSS and its one script (static/live.js, no inline script, no eval); no
# other site may frame them (clickjacking) or receive where they were (the referrer).
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _when(value: str | datetime | None) -> str:
    if value is None:
        return "—"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _unbroken(text: str) -> Markup:
    """``text`` in a span that never breaks over lines (a number, a moment, an identifier): on a narrow screen its
    table scrolls, or its card row grows, instead of "40" sitting over ".2"."""
    return Markup('<span class="nowrap">{}</span>').format(text)


TEMPLATES.env.filters["num"] = lambda value, digits=4: _unbroken(_number(value, digits))
TEMPLATES.env.filters["when"] = lambda value: _unbroken(_when(value))
TEMPLATES.env.filters["unbroken"] = _unbroken
TEMPLATES.env.filters["id_name"] = identifier_name


class LoginRequired(Exception):
    """No (valid) console cookie: the handler installed with the console redirects to the login form."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message)
        self.message = message


class CsrfRefused(Exception):
    """A form post without the CSRF token of this browser's cookie."""


def console_api(request: Request) -> Api:
    """The API as the curator of this browser's console session; the login form when it has none that is open."""
    session = security.session_id(request)
    if session is None:
        raise LoginRequired()
    principal = console_sessions.principal_of(request.app.state.db, session, request.app.state.settings)
    if principal is None:
        raise LoginRequired("Your console session has ended (logged out, idle or too old, or its key revoked or "
                            "expired); log in again.")
    request.state.console_principal = principal
    return Api(request, principal)


def audit_refusal(request: Request, status_code: int, code: str = "validation_error") -> None:
    """A 4xx the console answers a logged-in curator (a form it refused itself, a stale CSRF token, a page of
    something that does not exist) is audited as the API audits its own: ``refused.<code>`` with the method and
    path, never what was typed. One the API refused and audited already is not audited twice."""
    principal = getattr(request.state, "console_principal", None)
    if not 400 <= status_code < 500 or principal is None or getattr(request.state, "refusal_audited", False):
        return
    with request.app.state.db.write() as session:
        audit.record(session, principal, f"refused.{code}", f"{request.method} {request.url.path}")
    request.state.refusal_audited = True


Console = Annotated[Api, Depends(console_api)]


def console_key(request: Request) -> bytes:
    return request.app.state.console_key


async def checked_form(request: Request) -> FormData:
    """The posted form, after checking its CSRF token against this browser's console cookie."""
    form = await request.form()
    submitted = form.get("csrf")
    if not isinstance(submitted, str) or not security.csrf_valid(console_key(request), security.bound_cookie(request),
                                                                submitted):
        raise CsrfRefused()
    return form


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page with its CSRF token and the one-shot message left by the previous redirect."""
    audit_refusal(request, status_code)
    flash = security.read_flash(request)
    cookie, new_nonce = security.form_cookie(request)
    if context.get("page"):  # a logged-in page: its navigation counts the measurements waiting
        context["live"] = live_state(request.app.state.db)
    page = TEMPLATES.TemplateResponse(
        request, template, {"csrf": security.csrf_token(console_key(request), cookie), "flash": flash, **context},
        status_code=status_code,
    )
    if flash:
        security.forget_flash(page)
    if new_nonce:
        security.set_login_nonce(page, cookie)
    page.headers.update(PAGE_HEADERS)
    return page


def redirect(path: str, message: str | None = None, kind: str = "notice") -> RedirectResponse:
    """303 to ``path`` (a console page) with a one-shot message."""
    response = RedirectResponse(path, status_code=303)
    if message:
        security.set_flash(response, message, kind)
    return response


def refused(path: str, refusal: ApiRefusal) -> RedirectResponse:
    """Back to ``path`` with the API's sentence (401 leads to the login form instead)."""
    if refusal.status == 401:
        raise LoginRequired(refusal.detail)
    return redirect(path, refusal.detail, "error")


def field(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


class FieldRefusal(ApiRefusal):
    """A form field the console itself refuses before asking the API: the sentence goes beside ``name``."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(422, "validation_error", detail)
        self.field = name


def number(form: FormData, name: str, label: str) -> float:
    """A finite decimal written in ASCII (:func:`~shared.checks.ascii_decimal`): ``nan``, ``inf``, ``1e999`` and
    ``²`` are a form error naming the field, never a request the API cannot encode."""
    text = field(form, name)
    if (too_long := too_long_number(text)) is not None:
        raise FieldRefusal(name, f"{label} {too_long}")
    value = ascii_decimal(text)
    if value is None:
        raise FieldRefusal(name, f"{label} must be a finite decimal number such as 0.5 or 1e-5; got {text!r}")
    return value


def measured(form: FormData, name: str, label: str) -> float:
    """A value a person measured and typed: a decimal point or a decimal comma (``4,2`` is 4.2), finite."""
    text = field(form, name)
    value = ascii_decimal(text.replace(",", ".") if text.count(",") == 1 and "." not in text else text)
    if value is None:
        raise FieldRefusal(name, f"{label} must be a number such as 4.2 (a decimal comma, 4,2, is read as 4.2); got "
                                 f"{text!r}")
    return value


def whole_number(form: FormData, name: str, label: str) -> int:
    text = field(form, name)
    if (too_long := too_long_number(text)) is not None:  # int() refuses more than 4,300 digits: a 500, else
        raise FieldRefusal(name, f"{label} {too_long}")
    if not (text.isascii() and text.isdigit()):  # str.isdigit is also true of '²' and other scripts' digits
        raise FieldRefusal(name, f"{label} must be a whole number ≥ 0 in the digits 0-9; got {text!r}")
    return int(text)


def numbers(form: FormData, name: str, label: str) -> list[float]:
    """A comma-separated list of finite decimals (as :func:`number`)."""
    parts = [p.strip() for p in field(form, name).split(",") if p.strip()]
    if (too_long := next(filter(None, map(too_long_number, parts)), None)) is not None:
        raise FieldRefusal(name, f"{label}: one {too_long}")
    values = [ascii_decimal(p) for p in parts]
    if any(value is None for value in values):
        raise FieldRefusal(name, f"{label} must be finite decimal numbers separated by commas")
    return [value for value in values if value is not None]


class Problems(dict[str, str]):
    """What is wrong with a form, field name → sentence (``""``: the form as a whole), so that the page can be
    rendered again with every value kept and each sentence beside its field."""

    def check(self, parse: Callable[[], T]) -> T | None:
        """``parse()``'s value, or None with its :class:`FieldRefusal` noted."""
        try:
            return parse()
        except FieldRefusal as refusal:
            self.setdefault(refusal.field, refusal.detail)
            return None

    def place(self, refusal: ApiRefusal, locations: dict[str, str], keywords: dict[str, str] | None = None) -> None:
        """Puts the API's sentence beside the field it names: a validation location it quotes (``'spec.name'``),
        else the first of ``keywords`` it contains, else on the form as a whole. 401 leads to the login form."""
        if refusal.status == 401:
            raise LoginRequired(refusal.detail)
        if isinstance(refusal, FieldRefusal):
            self.setdefault(refusal.field, refusal.detail)
            return
        quoted = [name for where, name in locations.items() if f"'{where}" in refusal.detail]
        mentioned = [name for word, name in (keywords or {}).items() if word in refusal.detail]
        self.setdefault((quoted or mentioned or [""])[0], refusal.detail)


def kept_values(form: FormData | None, defaults: dict[str, Any], multiple: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a form shows: the values posted, else the defaults; a name in ``multiple`` (checkboxes) has a list."""
    if form is None:
        return dict(defaults)
    kept: dict[str, Any] = {name: field(form, name) for name in form.keys() if name not in ("csrf", "file")}
    return kept | {name: [v for v in form.getlist(name) if isinstance(v, str)] for name in multiple}
