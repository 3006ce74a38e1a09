"""The service's configuration: the documented POBO_* variables and defaults, secrets from
files, and nothing secret in a repr or a validation error."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from curator_service.settings import DEFAULT_MAX_UPLOAD_BYTES, Settings, sqlite_url

PG = "postgresql+psycopg://pobo@db.internal:5432/pobo"
TOKEN = "s3cret-token-Jq7vRw2LpZ8mK4nXbT6y"  # the shortest admin token the service accepts is 32 characters


def test_defaults_are_production_sqlite_in_the_data_dir_and_no_admin_token(tmp_path):
    settings = Settings.from_env({"POBO_DATA_DIR": str(tmp_path)})
    assert settings.mode == "production"
    assert settings.database_url == sqlite_url(tmp_path)
    assert settings.admin_token is None and settings.import_root is None
    assert not settings.allow_uncertified_mechanisms
    assert (settings.max_upload_bytes, settings.job_workers) == (DEFAULT_MAX_UPLOAD_BYTES, 2)
    assert settings.dask_scheduler is None  # the embedded cluster
    assert (settings.job_limit_per_key, settings.job_time_limit_seconds, settings.release_wait_seconds) == (2, 21600, 2)


def test_every_variable_is_read_and_parsed(tmp_path):
    settings = Settings.from_env({
        "POBO_DATA_DIR": str(tmp_path), "POBO_DATABASE_URL": PG, "POBO_ADMIN_TOKEN": TOKEN,
        "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "yes", "POBO_MODE": "research", "POBO_MAX_UPLOAD_BYTES": "1024",
        "POBO_JOB_WORKERS": "3", "POBO_IMPORT_ROOT": str(tmp_path / "imports"),
        "POBO_DASK_SCHEDULER": "tcp://scheduler:8786", "POBO_DASK_ALLOW_PLAINTEXT": "true",
        "POBO_JOB_LIMIT_PER_KEY": "5",
        "POBO_JOB_TIME_LIMIT_SECONDS": "60.5", "POBO_RELEASE_WAIT_SECONDS": "0",
    })
    assert settings.dask_scheduler == "tcp://scheduler:8786" and settings.dask_allow_plaintext
    assert (settings.job_limit_per_key, settings.job_time_limit_seconds, settings.release_wait_seconds) == (5, 60.5, 0)
    assert (settings.database_url, settings.admin_token, settings.mode) == (PG, TOKEN, "research")
    assert settings.allow_uncertified_mechanisms
    assert (settings.max_upload_bytes, settings.job_workers) == (1024, 3)
    assert settings.import_root == tmp_path / "imports"


def test_empty_variables_count_as_unset_and_overrides_win(tmp_path):
    env = {"POBO_DATABASE_URL": "", "POBO_ADMIN_TOKEN": "", "POBO_ALLOW_UNCERTIFIED_MECHANISMS": "",
           "POBO_MODE": "research"}
    settings = Settings.from_env(env, data_dir=tmp_path, mode="production", database_url=None)
    assert settings.database_url == sqlite_url(tmp_path) and settings.admin_token is None
    assert settings.mode == "production" and not settings.allow_uncertified_mechanisms


def test_constructing_settings_directly_ignores_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("POBO_MODE", "research")
    monkeypatch.setenv("POBO_ADMIN_TOKEN", TOKEN)
    settings = Settings(data_dir=tmp_path)
    assert settings.mode == "production" and settings.admin_token is None
    assert Settings.from_env().mode == "research"  # from_env reads os.environ by default


@pytest.mark.parametrize("variable, value", [
    ("POBO_MODE", "dev"), ("POBO_JOB_WORKERS", "1.5"), ("POBO_JOB_WORKERS", "0"),
    ("POBO_MAX_UPLOAD_BYTES", "-1"), ("POBO_ALLOW_UNCERTIFIED_MECHANISMS", "maybe"),
    ("POBO_DATABASE_URL", "not a url"), ("POBO_DASK_SCHEDULER", "scheduler:8786"), ("POBO_JOB_LIMIT_PER_KEY", "0"),
    ("POBO_JOB_TIME_LIMIT_SECONDS", "0"), ("POBO_JOB_TIME_LIMIT_SECONDS", "inf"), ("POBO_RELEASE_WAIT_SECONDS", "-1"),
    ("POBO_FORWARDED_ALLOW_IPS", "10.0.0.1,proxy.internal"),
])
def test_bad_values_stop_the_start_with_the_setting_named(variable, value, tmp_path):
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings.from_env({variable: value}, data_dir=tmp_path)
    field = variable.removeprefix("POBO_").lower()
    assert field in str(caught.value) or variable in str(caught.value)


def test_forwarded_headers_are_believed_from_no_peer_unless_named(tmp_path):
    assert Settings.from_env({}, data_dir=tmp_path).forwarded_allow_ips == ""
    named = Settings.from_env({"POBO_FORWARDED_ALLOW_IPS": " 172.30.53.10, 10.0.0.0/24"}, data_dir=tmp_path)
    assert named.forwarded_allow_ips == "172.30.53.10,10.0.0.0/24"


def test_admin_token_from_a_file_without_its_trailing_newline(tmp_path):
    secret = tmp_path / "admin_token"
    secret.write_text(f"{TOKEN}\n")
    settings = Settings.from_env({"POBO_ADMIN_TOKEN_FILE": str(secret)}, data_dir=tmp_path)
    assert settings.admin_token == TOKEN
    # An explicit override (the CLI's generated token) wins over the file.
    generated = "0123456789abcdef" * 2
    overridden = Settings.from_env({"POBO_ADMIN_TOKEN_FILE": str(secret)}, data_dir=tmp_path, admin_token=generated)
    assert overridden.admin_token == generated


@pytest.mark.parametrize("content, message", [(None, "cannot read"), ("\n", "is empty")])
def test_a_missing_or_empty_secret_file_stops_the_start(tmp_path, content, message):
    secret = tmp_path / "token"
    if content is not None:
        secret.write_text(content)
    with pytest.raises(pydantic.ValidationError, match=message):
        Settings.from_env({"POBO_ADMIN_TOKEN_FILE": str(secret)}, data_dir=tmp_path)


@pytest.mark.parametrize("token", ["Q", "Q" * 31])
def test_a_short_admin_token_stops_the_start_with_a_sentence_that_does_not_echo_it(tmp_path, token):
    with pytest.raises(pydantic.ValidationError, match="at least 32 random characters") as caught:
        Settings.from_env({"POBO_ADMIN_TOKEN": token}, data_dir=tmp_path)
    assert token not in str(caught.value)


@pytest.mark.parametrize("token, why", [
    (" " * 40, "whitespace"), ("a" * 38, "only 1 distinct characters"), ("abcd" * 9, "only 4"),
    ("abcdefghijklmnopqrstuvwxyzabcdefgh", "one kind of character"),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaa0123456789", "more than half"),
    ("correct horse battery staple 12345", "whitespace"),
])
def test_an_admin_token_without_entropy_stops_the_start_with_a_sentence(tmp_path, token, why):
    with pytest.raises(pydantic.ValidationError, match="at least 32 random characters") as caught:
        Settings.from_env({"POBO_ADMIN_TOKEN": token}, data_dir=tmp_path)
    assert why in str(caught.value) and token not in str(caught.value)


def test_random_admin_tokens_are_accepted(tmp_path):
    # Seeded draws from the alphabets of `openssl rand -hex`, `secrets.token_hex` and `secrets.token_urlsafe`, so a
    # run cannot fail by chance; the next test bounds how often a truly random token is refused.
    import random
    import string

    draw = random.Random(0)
    urlsafe = string.ascii_letters + string.digits + "-_"
    for _ in range(1000):
        for alphabet, length in ((string.hexdigits[:16], 64), (string.hexdigits[:16], 32), (urlsafe, 43)):
            token = "".join(draw.choices(alphabet, k=length))
            assert Settings.from_env({"POBO_ADMIN_TOKEN": token}, data_dir=tmp_path).admin_token == token


def test_a_random_32_character_hex_token_is_refused_with_probability_below_one_in_a_million():
    """The union bound over the three rules a random token can break, each computed exactly for 32 draws from 16
    characters: fewer than MIN_ADMIN_TOKEN_DISTINCT distinct (the occupancy distribution, Stirling numbers), one kind
    only (digits, or letters a-f), and one character repeated as often as the rule refuses (the binomial tail, times
    16), that count read from the rule itself."""
    from math import comb, factorial, perm

    from curator_service.settings import MIN_ADMIN_TOKEN_DISTINCT, admin_token_weakness

    n, m = 32, 16

    def exactly_k_distinct(k: int) -> float:
        stirling = sum((-1) ** j * comb(k, j) * (k - j) ** n for j in range(k + 1)) // factorial(k)
        return perm(m, k) * stirling / m**n

    too_few = sum(exactly_k_distinct(k) for k in range(1, MIN_ADMIN_TOKEN_DISTINCT))
    one_kind = (10 / 16) ** n + (6 / 16) ** n
    varied = "123456789abcdef" * 3
    refused_from = min(c for c in range(1, n + 1) if admin_token_weakness("0" * c + varied[:n - c]) is not None)
    one_repeated = m * sum(comb(n, c) * (1 / m) ** c * (1 - 1 / m) ** (n - c) for c in range(refused_from, n + 1))
    assert too_few + one_kind + one_repeated < 1e-6


def test_the_serve_command_refuses_a_short_admin_token_and_starts_nothing(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from curator_service.cli import app

    monkeypatch.setattr("uvicorn.Server.run", lambda *args, **kwargs: pytest.fail("the service started"))
    result = CliRunner().invoke(app, ["serve", "--data-dir", str(tmp_path)], env={"POBO_ADMIN_TOKEN": "short"})
    assert result.exit_code == 2 and "at least 32 random characters" in result.output, result.output


def test_token_and_token_file_together_are_refused_without_echoing_either(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("file-secret")
    with pytest.raises(pydantic.ValidationError, match="not both") as caught:
        Settings.from_env({"POBO_ADMIN_TOKEN_FILE": str(secret), "POBO_ADMIN_TOKEN": "env-secret"}, data_dir=tmp_path)
    assert "env-secret" not in str(caught.value)


def test_database_password_from_a_file_goes_into_the_url_and_never_into_a_repr(tmp_path):
    secret = tmp_path / "db_password"
    secret.write_text("p@ss:w/rd\n")  # characters a URL must escape
    settings = Settings.from_env({"POBO_DATABASE_URL": PG, "POBO_DATABASE_PASSWORD_FILE": str(secret),
                                  "POBO_ADMIN_TOKEN": "admin-secret" * 3}, data_dir=tmp_path)
    from sqlalchemy.engine import make_url

    assert make_url(settings.database_url).password == "p@ss:w/rd"
    assert make_url(settings.database_url).host == "db.internal"
    for text in (repr(settings), str(settings)):
        assert "p@ss" not in text and "p%40ss" not in text and "admin-secret" not in text


def test_a_password_file_without_a_postgresql_url_is_refused(tmp_path):
    secret = tmp_path / "db_password"
    secret.write_text("pw")
    with pytest.raises(pydantic.ValidationError, match="PostgreSQL"):
        Settings.from_env({"POBO_DATABASE_PASSWORD_FILE": str(secret)}, data_dir=tmp_path)


def test_a_validation_error_does_not_print_the_database_password(tmp_path):
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings.from_env({"POBO_DATABASE_URL": "postgresql+psycopg://u:hunter2@h/db", "POBO_JOB_WORKERS": "x"},
                          data_dir=tmp_path)
    assert "hunter2" not in str(caught.value)


def test_data_dir_expands_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Settings.from_env({"POBO_DATA_DIR": "~/curator"}).data_dir == Path(tmp_path) / "curator"
