"""Certificates for a Dask job cluster of your own (``pobo-curator cluster certs``): a private CA and, signed by it, a
certificate and key for each role (scheduler, worker, client: the curator service).

Dask's TLS is mutual: every side presents a certificate its peer checks against ``ca.pem`` (Dask does not check
host names: the CA is the cluster's own). The CA's key is not kept, so nothing can sign another member later;
running the command again with ``--force`` replaces every file (restart the cluster and the service then).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

ROLES = ("scheduler", "worker", "client")
FILES = ("ca.pem", *(f"{role}.{suffix}" for role in ROLES for suffix in ("pem", "key")))


def _write(path: Path, data: bytes, mode: int) -> None:
    """``data`` into ``path`` created with ``mode`` (never readable by others while it is written)."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.fchmod(descriptor, mode)  # exactly ``mode`` whatever the umask (``serve`` runs under 077)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


def write_cluster_certificates(directory: Path, days: int, force: bool = False) -> bool:
    """Writes ``ca.pem`` and ``<role>.pem``/``<role>.key`` for each of :data:`ROLES` into ``directory`` (made 0700;
    keys 0600, certificates 0644), valid for ``days``. Returns False, writing nothing, when every file is already
    there and not ``force``: the compose file's one-shot service runs at every ``up``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    if not force and all((directory / name).is_file() for name in FILES):
        return False
    now = datetime.datetime.now(datetime.UTC)

    def certificate(name: str, key, issuer: x509.Name | None, signer, ca: bool) -> x509.Certificate:
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer or subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
                critical=True)
        else:  # every member both listens and connects (workers to the scheduler and to each other)
            builder = builder.add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("pobo job cluster CA", ca_key, None, ca_key, ca=True)
    _write(directory / "ca.pem", ca.public_bytes(serialization.Encoding.PEM), 0o644)
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(f"pobo-dask-{role}", key, ca.subject, ca_key, ca=False)
        _write(directory / f"{role}.key", key.private_bytes(serialization.Encoding.PEM,
                                                            serialization.PrivateFormat.PKCS8,
                                                            serialization.NoEncryption()), 0o600)
        _write(directory / f"{role}.pem", cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return True
