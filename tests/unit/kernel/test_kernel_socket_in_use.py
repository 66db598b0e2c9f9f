"""A stale Unix socket is cleaned up; a live one, even a busy one, never is."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from services.kernel.endpoints import prepare_unix_socket, socket_in_use
from services.kernel.errors import EndpointError


def test_a_socket_nobody_listens_on_is_stale_and_removed(short_dir: Path) -> None:
    path = str(short_dir / "stale.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens: connect is refused
    assert not socket_in_use(path)
    prepare_unix_socket(path)
    assert not Path(path).exists()


def test_a_listening_socket_is_in_use_and_refused(short_dir: Path) -> None:
    path = str(short_dir / "live.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    try:
        assert socket_in_use(path)
        with pytest.raises(EndpointError, match="already in use"):
            prepare_unix_socket(path)
        assert Path(path).exists()
    finally:
        s.close()


def test_a_listener_whose_backlog_is_full_still_counts_as_in_use(short_dir: Path) -> None:
    path = str(short_dir / "busy.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(0)
    clients = []
    try:
        # Fill the backlog without accepting, until a further connect would block.
        for _ in range(64):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                c.close()
                break
            clients.append(c)
        assert socket_in_use(path)
    finally:
        for c in clients:
            c.close()
        server.close()
