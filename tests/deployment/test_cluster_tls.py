"""A Dask cluster of your own is reached over mutual TLS with files the settings name: a ``tcp://`` scheduler is
refused with a sentence unless the opt-out is set, and ``pobo-curator cluster certs`` makes files a real Dask
cluster accepts while it refuses a client from another CA."""

from __future__ import annotations

import logging
import stat

import pydantic
import pytest
from distributed import Client, LocalCluster, Security
from typer.testing import CliRunner

from curator_service.cli import app
from curator_service.jobs import cluster
from curator_service.jobs.certs import FILES
from curator_service.settings import Settings


def tls_env(directory, role="client") -> dict[str, str]:
    return {"POBO_DASK_SCHEDULER": "tls://scheduler:8786", "POBO_DASK_TLS_CA_FILE": str(directory / "ca.pem"),
            "POBO_DASK_TLS_CERT_FILE": str(directory / f"{role}.pem"),
            "POBO_DASK_TLS_KEY_FILE": str(directory / f"{role}.key")}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls") / "cluster"
    result = CliRunner().invoke(app, ["cluster", "certs", str(directory)])
    assert result.exit_code == 0 and "wrote" in result.output, result.output
    return directory


def test_a_tcp_scheduler_is_refused_with_a_sentence_unless_the_plaintext_opt_out_is_set(tmp_path, caplog):
    with pytest.raises(pydantic.ValidationError, match="POBO_DASK_ALLOW_PLAINTEXT=true") as caught:
        Settings.from_env({"POBO_DASK_SCHEDULER": "tcp://scheduler:8786"}, data_dir=tmp_path)
    assert "use tls://" in str(caught.value).lower()
    settings = Settings.from_env({"POBO_DASK_SCHEDULER": "tcp://scheduler:8786", "POBO_DASK_ALLOW_PLAINTEXT": "true"},
                                 data_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger=cluster.__name__):
        assert cluster.client_security(settings) is None
    assert "plain TCP (POBO_DASK_ALLOW_PLAINTEXT)" in caplog.text  # the opt-out is logged at every connection


@pytest.mark.parametrize("missing", ["POBO_DASK_TLS_CA_FILE", "POBO_DASK_TLS_CERT_FILE", "POBO_DASK_TLS_KEY_FILE"])
def test_a_tls_scheduler_needs_every_file_named_and_readable(certs, tmp_path, missing):
    env = tls_env(certs)
    with pytest.raises(pydantic.ValidationError, match=f"set {missing}"):
        Settings.from_env({k: v for k, v in env.items() if k != missing}, data_dir=tmp_path)
    with pytest.raises(pydantic.ValidationError, match=f"{missing}: cannot read"):
        Settings.from_env({**env, missing: str(tmp_path / "absent.pem")}, data_dir=tmp_path)


def test_the_certs_command_writes_private_keys_only_its_owner_reads_and_keeps_a_complete_set(certs):
    assert stat.S_IMODE(certs.stat().st_mode) == 0o700
    for name in FILES:
        assert stat.S_IMODE((certs / name).stat().st_mode) == (0o600 if name.endswith(".key") else 0o644), name
    before = (certs / "client.key").read_bytes()
    again = CliRunner().invoke(app, ["cluster", "certs", str(certs)])
    assert again.exit_code == 0 and "kept" in again.output and (certs / "client.key").read_bytes() == before


def test_a_cluster_with_those_files_runs_the_services_work_and_refuses_a_client_of_another_ca(certs, tmp_path):
    files = {f"tls_{role}_{kind}": str(certs / f"{role}.{suffix}") for role in ("scheduler", "worker", "client")
             for kind, suffix in (("cert", "pem"), ("key", "key"))}
    server = Security(require_encryption=True, tls_ca_file=str(certs / "ca.pem"), **files)
    # (LocalCluster itself talks to its scheduler as a client)
    with LocalCluster(n_workers=1, processes=False, host="127.0.0.1", scheduler_port=0, dashboard_address=None,
                      security=server) as own:
        settings = Settings.from_env({**tls_env(certs), "POBO_DASK_SCHEDULER": own.scheduler_address},
                                     data_dir=tmp_path)
        with cluster.connect(settings) as client:  # what the service's job runner opens
            assert client.submit(sum, [20, 22]).result(timeout=30) == 42
        with pytest.raises(OSError), Client(own.scheduler_address, security=Security.temporary(), timeout="3s"):
            pass
