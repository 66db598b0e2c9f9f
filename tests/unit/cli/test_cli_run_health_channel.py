"""``ai-coding run`` asks whether the loop serves on the channel its calls then use, and a channel
that got no SERVING is not kept: a loop started afterwards (the cold start) is reached at once.
A real gRPC server in another process; each client in a fresh process (the channels are process-wide)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.health_server import client_facts, running

_CLIENT = textwrap.dedent("""
    import subprocess, sys, time
    from clients.cli import connection, turn
    from clients.cli.connection.loop import ClientError, LoopClient
    from services.kernel.endpoints import Endpoint
    from tests.support.health_server import client_facts, command, running

    endpoint = Endpoint("loop", "unix", path=sys.argv[1])

    async def reached():
        client = LoopClient(endpoint)
        try:
            await client.list_sessions("/nowhere")  # no AgentLoop there: UNIMPLEMENTED, but it answered
        except ClientError as err:
            return err.status, client._channel
        finally:
            await client.close()
        return "answered", client._channel

    print("serving", turn.loop_serving(endpoint))
    kept = list(connection._channels.values())
    if sys.argv[2] == "start-after":  # nothing listened at the check: the loop comes up now
        server = subprocess.Popen(command(sys.argv[1], "serving"))
        deadline = time.monotonic() + 30
        while not __import__("os").path.exists(sys.argv[1]) and time.monotonic() < deadline:
            time.sleep(0.02)
    started = time.monotonic()
    status, channel = connection.run(reached())
    print("status", status)
    print("same_channel", bool(kept) and channel is kept[0])
    print("quick", time.monotonic() - started < 5)
    if sys.argv[2] == "start-after":
        server.kill()
""")


def _client(sock: Path, how: str) -> dict[str, str]:
    return client_facts(_CLIENT, str(sock), how)


def _client_beside_a_server(sock: Path, status: str) -> dict[str, str]:
    """The client's facts with a server already up, answering ``status`` for the loop."""
    with running(sock, status):
        return _client(sock, "running")


def test_the_health_check_and_the_calls_after_it_share_one_channel(tmp_path: Path) -> None:
    facts = _client_beside_a_server(tmp_path / "loop.sock", "serving")
    assert facts == {"serving": "True", "status": "unimplemented", "same_channel": "True", "quick": "True"}


def test_a_loop_not_serving_yet_is_not_taken_for_serving(tmp_path: Path) -> None:
    facts = _client_beside_a_server(tmp_path / "loop.sock", "not-serving")
    assert facts["serving"] == "False"
    assert facts["same_channel"] == "False"  # the channel that heard NOT_SERVING was dropped


def test_a_loop_started_after_a_failed_check_is_reached_on_a_fresh_channel(tmp_path: Path) -> None:
    """The cold start: nothing listens at the check; the channel that failed would sit in gRPC's
    reconnect backoff and fail the next call at once, so it is dropped and the call reaches the loop."""
    facts = _client(tmp_path / "loop.sock", "start-after")
    assert facts == {"serving": "False", "status": "unimplemented", "same_channel": "False", "quick": "True"}


_EARLY = textwrap.dedent("""
    import sys
    from clients.cli import connection, turn
    from clients.cli.connection.loop import ClientError
    from services.kernel.endpoints import Endpoint

    early = turn.EarlyOpen(Endpoint("loop", "unix", path=sys.argv[1]), "/nowhere", model="m")
    print("serving", early.serving("loop"))
    print("channels_kept", len(connection._channels))
    try:
        print("taken", early.take())
    except ClientError as err:  # no AgentLoop behind this server: the OpenSession sent with the check failed
        print("taken", "refused", err.reason)
""")


def _early(sock: Path, status: str) -> dict[str, str]:
    with running(sock, status):
        return client_facts(_EARLY, str(sock))


def test_a_session_opened_with_the_check_is_what_the_run_gets_when_the_loop_serves(tmp_path: Path) -> None:
    """The OpenSession sent with a SERVING check is the run's: its failure is raised as open_session raises it."""
    assert _early(tmp_path / "loop.sock", "serving") == {"serving": "True", "channels_kept": "1",
                                                         "taken": "refused unimplemented"}


def test_a_session_opened_with_a_check_that_did_not_say_serving_is_dropped(tmp_path: Path) -> None:
    """Not SERVING: the run waits for the services and opens its session afterwards, as without it."""
    assert _early(tmp_path / "loop.sock", "not-serving") == {"serving": "False", "channels_kept": "0",
                                                             "taken": "None"}
