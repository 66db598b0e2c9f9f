"""Origin servers for the egress proxy tests, all on 127.0.0.1 (never another address).

``Origin`` records every request it gets (path and headers), so a test can prove that nothing
reached it. ``tls_files`` makes a self-signed certificate for a name, ``wheel`` builds a real
wheel and ``simple_index`` serves it PyPI-style (optionally requiring a bearer token).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.server
import io
import ssl
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECRET_PAGE = b"ORIGIN-SAYS-HELLO"


@dataclass
class Origin:
    port: int = 0
    hits: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    token: str = ""
    server: http.server.ThreadingHTTPServer | None = None

    def paths(self) -> list[str]:
        return [p for p, _ in self.hits]

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def serve(origin: Origin, context: ssl.SSLContext | None = None) -> Origin:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            origin.hits.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            if origin.token and self.headers.get("Authorization") != f"Bearer {origin.token}":
                self._answer(401, "text/plain", b"missing or wrong token")
                return
            ctype, body = origin.files.get(self.path.split("#")[0], ("text/plain", SECRET_PAGE)
                                           if self.path == "/hello" else ("", b""))
            self._answer(200 if ctype else 404, ctype or "text/plain", body)

        def _answer(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    origin.server, origin.port = server, server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return origin


def served(*pages: str) -> Iterator[Origin]:
    """A plain-HTTP origin on 127.0.0.1 for a fixture's lifetime (``yield from served()``); each of
    ``pages`` answers SECRET_PAGE, as ``/hello`` does."""
    origin = serve(Origin())
    for path in pages:
        origin.files[path] = ("text/plain", SECRET_PAGE)
    try:
        yield origin
    finally:
        origin.stop()


def tls_files(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` and its key (PEM files in ``directory``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def tls_origin(directory: Path, name: str) -> tuple[Origin, Path]:
    cert, key = tls_files(directory, name)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return serve(Origin(), context), cert


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel(project: str, version: str, module_text: str) -> tuple[str, bytes]:
    """(file name, bytes) of a pure-Python wheel with one module ``project``."""
    dist = f"{project}-{version}.dist-info"
    files = {
        f"{project}/__init__.py": module_text.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{n},{_record_hash(d)},{len(d)}\n" for n, d in files.items()) + f"{dist}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr(f"{dist}/RECORD", record)
    return f"{project}-{version}-py3-none-any.whl", buffer.getvalue()


def simple_index(origin: Origin, project: str, filename: str, data: bytes) -> None:
    """Serve ``filename`` under ``/simple/<project>/`` the way PyPI's simple API does."""
    digest = hashlib.sha256(data).hexdigest()
    page = f'<html><body><a href="/files/{filename}#sha256={digest}">{filename}</a></body></html>'
    origin.files[f"/simple/{project.replace('_', '-')}/"] = ("text/html", page.encode())
    origin.files[f"/files/{filename}"] = ("application/octet-stream", data)
