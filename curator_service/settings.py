"""The service's configuration: ``POBO_*`` environment variables read and validated by pydantic-settings.

Secrets can come from files instead of the environment (Docker/Kubernetes secrets, a file only the service's
user can read): ``POBO_ADMIN_TOKEN_FILE`` holds the admin token, ``POBO_DATABASE_PASSWORD_FILE`` the database
password, which is put into ``POBO_DATABASE_URL``. A trailing newline in a secret file is not part of it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from shared.api.errors import ApiError

Mode = Literal["research", "production"]

DEFAULT_MAX_UPLOAD_BYTES = 200 * 1024 * 1024
MIN_ADMIN_TOKEN_LENGTH = 32
# The longest POBO_RELEASE_WAIT_SECONDS: the admin client's release POST waits this long and a margin for its answer
# (curator_service.admin_client), so a client never times out on, and re-sends, a release it could have seen.
MAX_RELEASE_WAIT_SECONDS = 120.0
PLAINTEXT_REFUSED = ("POBO_DASK_SCHEDULER is tcp://, which neither encrypts nor authenticates: whoever reaches the "
                     "scheduler can run code on the workers that hold raw rows. Use tls:// with POBO_DASK_TLS_CA_FILE, "
                     "POBO_DASK_TLS_CERT_FILE and POBO_DASK_TLS_KEY_FILE (`pobo-curator cluster certs` makes them), or "
                     "set POBO_DASK_ALLOW_PLAINTEXT=true to accept that risk (logged at every start)")


ADMIN_TOKEN_FILE = "admin_token"
"""Where in the data directory ``pobo-curator serve`` keeps the admin token it made when POBO_ADMIN_TOKEN is unset."""


# 32 characters drawn uniformly from 16 show fewer than 8 distinct ones with probability 3.5e-8 (the occupancy
# distribution; tests/deployment/test_settings.py computes it), so a random hex token is all but never refused, while
# a pattern such as "abcd" repeated is.
MIN_ADMIN_TOKEN_DISTINCT = 8


def admin_token_weakness(token: str) -> str | None:
    """Why ``token`` cannot be the admin token (a clause, never quoting it), or None. A random token of 32 or more
    characters passes: ``openssl rand -hex 32`` (64 of 16 characters), ``secrets.token_urlsafe(32)``."""
    if len(token) < MIN_ADMIN_TOKEN_LENGTH:
        return f"has {len(token)} characters"
    if any(character.isspace() or not character.isprintable() for character in token):
        return "contains whitespace or control characters"
    if len(set(token)) < MIN_ADMIN_TOKEN_DISTINCT:
        return f"has only {len(set(token))} distinct characters (at least {MIN_ADMIN_TOKEN_DISTINCT} needed)"
    classes = sum(any(test(c) for c in token) for test in
                  (str.islower, str.isupper, str.isdigit, lambda c: not c.isalnum()))
    if classes < 2:
        return "uses only one kind of character (letters of one case, digits or symbols); mix at least two"
    if max(token.count(c) for c in set(token)) * 2 > len(token):
        return "repeats one character in more than half of its places"
    return None


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/pobo-curator`` (``~/.local/share/pobo-curator`` when unset)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "pobo-curator"


def sqlite_url(data_dir: Path) -> str:
    """The embedded database: ``curator.db`` in the data directory."""
    return f"sqlite:///{Path(data_dir).expanduser().resolve() / 'curator.db'}"


def read_secret(path: str | Path, variable: str) -> str:
    """A secret file's content without its trailing newline; an empty or unreadable file is a start error."""
    try:
        secret = Path(path).expanduser().read_text().rstrip("\r\n")
    except OSError as error:
        raise ValueError(f"{variable}: cannot read {path} ({error.strerror})") from None
    if not secret:
        raise ValueError(f"{variable}: {path} is empty")
    return secret


class Settings(BaseSettings):
    """Everything the service needs to start.

    ``admin_token``: the curator's bearer token, at least 32 random characters (:func:`admin_token_weakness`;
    ``None`` disables the admin token; curator keys still work).
    ``mode``: ``production`` (the default) refuses seeds, so every release uses the floating-point-safe
    noise source; ``research`` accepts a seed from the curator (never from a modeler key) for reproducible,
    uncertified releases. Demos, tests and benchmarks opt into research mode explicitly.
    ``import_root``: the only directory whose files may be registered by server-side path (``None``: uploads only).
    ``database_url``: SQLAlchemy URL; empty means SQLite in ``data_dir``.

    ``Settings(...)`` takes exactly the values given (and defaults); ``Settings.from_env()`` reads the environment.
    """

    # Strings from the environment are parsed (``"true"``, ``"8"``), but an unknown field or a float where an
    # int belongs is refused; empty variables count as unset, as the hand-written parser did.
    model_config = SettingsConfigDict(env_prefix="POBO_", frozen=True, extra="forbid", env_ignore_empty=True,
                                      hide_input_in_errors=True)  # a validation error never prints a secret

    data_dir: Path  # default_data_dir() when unset
    database_url: str = ""
    database_password_file: Path | None = None
    admin_token: str | None = Field(default=None, repr=False)
    admin_token_file: Path | None = None
    allow_uncertified_mechanisms: bool = False
    mode: Mode = "production"
    max_upload_bytes: PositiveInt = DEFAULT_MAX_UPLOAD_BYTES  # a multipart body to an upload route
    max_json_bytes: PositiveInt = 1024 * 1024  # every other request body (curator_service.admission)
    # Failed authentications a client address may make (within 15 minutes) before it must wait (doubling, ≤ 5 min).
    auth_failures_allowed: PositiveInt = 10
    # The peers whose X-Forwarded-For / X-Forwarded-Proto the server believes (comma-separated addresses or networks,
    # "*" for any): the reverse proxy in front of it, and nothing else. Empty (the default): none, so the client
    # address the back-off and the audit trail use is always the TCP peer's.
    forwarded_allow_ips: str = ""
    console_idle_seconds: PositiveInt = 30 * 60  # a console session unused this long has ended
    console_session_seconds: PositiveInt = 8 * 3600  # and every console session ends this long after its login
    # The job engine (curator_service.jobs): None starts a local Dask cluster of job_workers worker processes
    # (one thread each, mutual TLS) beside the service; "tls://host:8786" sends jobs to that Dask scheduler instead,
    # presenting the dask_tls_* files (`pobo-curator cluster certs` makes them); "tcp://" only with the opt-out.
    dask_scheduler: str | None = Field(default=None, pattern=r"^(tcp|tls)://\S+$")
    dask_tls_ca_file: Path | None = None
    dask_tls_cert_file: Path | None = None
    dask_tls_key_file: Path | None = None
    dask_allow_plaintext: bool = False
    job_workers: PositiveInt = 2
    # Queued + running jobs of one API key at a time (the admin token: no limit). However many, a key runs at most
    # all the cluster's worker threads but one at once (curator_service.jobs.worker.running_share).
    job_limit_per_key: PositiveInt = 2
    # each kind may bound its jobs lower
    job_time_limit_seconds: float = Field(default=6 * 3600.0, gt=0, allow_inf_nan=False)
    # How long a release POST waits for its job before answering 202 (at most MAX_RELEASE_WAIT_SECONDS).
    release_wait_seconds: float = Field(default=2.0, ge=0, le=MAX_RELEASE_WAIT_SECONDS, allow_inf_nan=False)
    import_root: Path | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # the environment is read by from_env only, so a test's Settings(...) is hermetic

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Reads ``POBO_<FIELD>`` for every field from ``environ`` (default ``os.environ``); keyword
        ``overrides`` that are not None win over the environment (an ``admin_token`` override also over
        ``POBO_ADMIN_TOKEN_FILE``)."""
        values = MappingEnvSource(cls, os.environ if environ is None else environ)()
        given = {name: value for name, value in overrides.items() if value is not None}
        if "admin_token" in given:
            values.pop("admin_token_file", None)
        return cls(**{**values, **given})

    @model_validator(mode="before")
    @classmethod
    def _resolve_secrets_and_defaults(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        if values.get("admin_token_file"):
            if values.get("admin_token"):
                raise ValueError("set POBO_ADMIN_TOKEN or POBO_ADMIN_TOKEN_FILE, not both")
            values["admin_token"] = read_secret(values["admin_token_file"], "POBO_ADMIN_TOKEN_FILE")
        if values.get("database_password_file"):
            if not str(values.get("database_url") or "").startswith("postgresql"):
                raise ValueError("POBO_DATABASE_PASSWORD_FILE needs a PostgreSQL POBO_DATABASE_URL to put it in")
            password = read_secret(values["database_password_file"], "POBO_DATABASE_PASSWORD_FILE")
            url = make_url(values["database_url"]).set(password=password)
            values["database_url"] = url.render_as_string(hide_password=False)
        token = values.get("admin_token")
        if isinstance(token, str) and (weakness := admin_token_weakness(token)) is not None:
            raise ValueError(f"the admin token (POBO_ADMIN_TOKEN or POBO_ADMIN_TOKEN_FILE) {weakness}; give one of at "
                             f"least {MIN_ADMIN_TOKEN_LENGTH} random characters, e.g. from `openssl rand -hex 32`")
        values["data_dir"] = Path(values.get("data_dir") or default_data_dir()).expanduser()
        if not values.get("database_url"):
            values["database_url"] = sqlite_url(values["data_dir"])
        try:
            make_url(values["database_url"])
        except ArgumentError:
            raise ValueError("POBO_DATABASE_URL is not a database URL "
                             "(e.g. postgresql+psycopg://user@host/db)") from None
        return values

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        for entry in entries:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"POBO_FORWARDED_ALLOW_IPS names {entry!r}, which is not an IP address or network; "
                                 "give the reverse proxy's address (e.g. 172.30.53.10 or 10.0.0.0/24), "
                                 "comma-separated, or leave it empty to trust no proxy") from None
        return ",".join(entries)

    @model_validator(mode="after")
    def _authenticated_cluster(self) -> Settings:
        if self.dask_scheduler is None:
            return self
        if self.dask_scheduler.startswith("tcp://"):
            if not self.dask_allow_plaintext:
                raise ValueError(PLAINTEXT_REFUSED)
            return self
        for name in ("dask_tls_ca_file", "dask_tls_cert_file", "dask_tls_key_file"):
            path, variable = getattr(self, name), f"POBO_{name.upper()}"
            if path is None:
                raise ValueError(f"POBO_DASK_SCHEDULER is tls://: set {variable} (`pobo-curator cluster certs` makes "
                                 "the files)")
            if not os.access(path, os.R_OK) or not Path(path).is_file():
                raise ValueError(f"{variable}: cannot read {path}")
        return self

    def __repr_args__(self):  # the database URL may carry the password: never in a log line or traceback
        for name, value in super().__repr_args__():
            yield name, make_url(value).render_as_string(hide_password=True) if name == "database_url" else value


def refuse_seed_in_production(settings: Settings, seed: object) -> None:
    """403 for a seed in production mode: seeded noise is reproducible and not floating-point-safe."""
    if seed is not None and settings.mode == "production":
        raise ApiError(403, "seed_refused", "seeds are refused in production mode (seeded noise is reproducible and "
                       "not floating-point-safe); remove 'seed' from the request")


class MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of ``os.environ`` (tests pass ``{}``)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)
