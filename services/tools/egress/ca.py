"""The per-installation certificate authority for HTTPS credential injection.

Made once, the first time a credential rule exists, in ``<data dir>/egress-ca/`` (0700; the key
0600): the data dir is hidden from sandboxed commands, so the key never enters a sandbox. The
CA's certificate is added to a bundle (the system's CAs plus ours) that only sandboxed commands
are pointed at (``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``, ``PIP_CERT``, ``CURL_CA_BUNDLE``,
``GIT_SSL_CAINFO``, ``NODE_EXTRA_CA_CERTS``, ``CARGO_HTTP_CAINFO``); nothing on the host trusts
it. The proxy signs a short-lived leaf certificate per credential host with it (kept in memory).
"""

from __future__ import annotations

import datetime
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SYSTEM_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem")
CA_IN_SANDBOX = "/run/ai-coding/ca-bundle.pem"
CA_ONLY_IN_SANDBOX = "/run/ai-coding/ca.pem"


def _crypto() -> Any:
    """The ``cryptography`` modules (imported only when a credential rule needs the CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    return x509, hashes, serialization, ec, NameOID


@dataclass
class Authority:
    """The CA on disk and the leaf contexts made from it."""

    directory: Path
    cert_path: Path = field(init=False)
    key_path: Path = field(init=False)
    bundle_path: Path = field(init=False)
    _contexts: dict[str, ssl.SSLContext] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cert_path = self.directory / "ca.pem"
        self.key_path = self.directory / "ca.key"
        self.bundle_path = self.directory / "bundle.pem"
        if not (self.cert_path.is_file() and self.key_path.is_file()):
            self._create()
        self._write_bundle()

    def _create(self) -> None:
        x509, hashes, serialization, ec, name_oid = _crypto()
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.directory, 0o700)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(name_oid.COMMON_NAME, "ai-coding sandbox egress CA"),
                          x509.NameAttribute(name_oid.ORGANIZATION_NAME, "ai-coding (this installation)")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=3650))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        _write(self.key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()), 0o600)
        _write(self.cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)

    def _write_bundle(self) -> None:
        system = next((Path(p) for p in SYSTEM_BUNDLES if os.path.isfile(p)), None)
        text = (system.read_bytes() if system else b"") + b"\n" + self.cert_path.read_bytes()
        _write(self.bundle_path, text, 0o644)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf certificate for ``host`` signed by this CA."""
        if host in self._contexts:
            return self._contexts[host]
        x509, hashes, serialization, ec, name_oid = _crypto()
        ca_key = serialization.load_pem_private_key(self.key_path.read_bytes(), None)
        ca_cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(name_oid.COMMON_NAME, host)]))
                .issuer_name(ca_cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .sign(ca_key, hashes.SHA256()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.set_alpn_protocols(["http/1.1"])
        with tempfile.TemporaryDirectory(prefix="ai-coding-leaf-") as tmp:  # load_cert_chain reads files
            chain, leaf_key = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            _write(chain, cert.public_bytes(serialization.Encoding.PEM), 0o600)
            _write(leaf_key, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()), 0o600)
            context.load_cert_chain(chain, leaf_key)
        self._contexts[host] = context
        return context

    def sandbox_binds(self) -> list[tuple[str, str]]:
        return [(str(self.bundle_path), CA_IN_SANDBOX), (str(self.cert_path), CA_ONLY_IN_SANDBOX)]


def ca_env() -> dict[str, str]:
    """The variables that make the usual tools trust the bundle inside the sandbox."""
    env = {name: CA_IN_SANDBOX for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE",
                                            "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO", "npm_config_cafile")}
    env["NODE_EXTRA_CA_CERTS"] = CA_ONLY_IN_SANDBOX
    return env


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)
