"""``ai-coding run`` imports asyncio without ``ssl`` (nothing in the client makes a TLS connection through
asyncio): its gRPC calls still work, ``ssl`` can still be imported, and asyncio's TLS says it is off.
A real gRPC server in another process; the client in a fresh interpreter (the import is process-wide)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.health_server import client_facts, running

_CLIENT = textwrap.dedent("""
    import sys
    from clients.cli.run_command import import_asyncio_without_tls
    import_asyncio_without_tls()
    import asyncio, asyncio.sslproto
    from clients.cli import turn
    from services.kernel.endpoints import Endpoint

    print("serving", turn.loop_serving(Endpoint("loop", "unix", path=sys.argv[1])))
    print("ssl_loaded", "ssl" in sys.modules)
    print("asyncio_tls", asyncio.sslproto.ssl is not None)

    async def tls_connection():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await asyncio.open_connection("127.0.0.1", port, ssl=True)
        except RuntimeError as err:
            return str(err)
        finally:
            server.close()
        return "connected"

    print("asked_for_tls", asyncio.run(tls_connection()))
    import ssl
    print("ssl_importable", ssl.OPENSSL_VERSION.startswith(("OpenSSL", "LibreSSL", "BoringSSL")))
""")


def test_the_run_client_works_without_importing_ssl(tmp_path: Path) -> None:
    sock = tmp_path / "loop.sock"
    with running(sock, "serving"):
        facts = client_facts(_CLIENT, str(sock))
    assert facts == {"serving": "True", "ssl_loaded": "False", "asyncio_tls": "False",
                     "asked_for_tls": "stdlib ssl module not available", "ssl_importable": "True"}


def test_ai_coding_run_does_not_load_ssl(tmp_path: Path) -> None:
    """The whole command as the console script runs it, with no local service to start (so nothing is
    started): every import made before the loop is asked is made (config, grpc, the views)."""
    cli = Path(sys.executable).with_name("ai-coding")
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": "/usr/bin:/bin",
           "AI_CODING_RUNTIME_DIR": str(tmp_path / "run")}
    (tmp_path / "ws").mkdir()
    (tmp_path / "config" / "ai-coding").mkdir(parents=True)
    (tmp_path / "config" / "ai-coding" / "config.yaml").write_text("supervisor:\n  services: []\n")
    done = subprocess.run([sys.executable, "-X", "importtime", str(cli), "run", "-w", str(tmp_path / "ws"), "hi"],
                          capture_output=True, text=True, timeout=120, check=False, env=env, cwd=tmp_path)
    assert done.returncode != 0 and "is not answering" in done.stderr, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert {"grpc", "asyncio", "ai_coding.v1.loop_pb2"} <= imported
    assert "_ssl" not in imported  # `ssl` is only named: asyncio's attempt, refused at once
