"""How a failed loop call reads: a transport failure is 'not answering' (and retried), a service's
own status keeps its sentence."""

from __future__ import annotations

import grpc
from grpc.aio import AioRpcError, Metadata

from clients.cli.connection.loop import _error
from services.kernel.errors import REASON_KEY


def _status(code: grpc.StatusCode, details: str, reason: str = "") -> AioRpcError:
    trailing = Metadata((REASON_KEY, reason)) if reason else Metadata()
    return AioRpcError(code, Metadata(), trailing, details)


def test_internal_error_from_core_without_a_reason_is_the_loop_going_away() -> None:
    # What a Start gets when the loop is killed as it goes out (seen in the REPL restart test under load).
    err = _error(_status(grpc.StatusCode.INTERNAL, "Internal error from Core"), "the turn stream broke")
    assert err.reason == "service_unavailable"
    assert str(err) == ("the turn stream broke: the loop service is not answering "
                        "(run `ai-coding up`, or see `ai-coding logs loop`)")


def test_a_status_the_loop_sent_keeps_its_reason_and_sentence() -> None:
    err = _error(_status(grpc.StatusCode.INTERNAL, "the session store failed", reason="loop_error"), "x")
    assert err.reason == "loop_error" and str(err) == "x: the session store failed"
