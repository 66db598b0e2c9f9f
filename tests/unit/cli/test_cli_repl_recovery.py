"""Which ends of a turn the REPL treats as lost to its service (and offers the prompt again)."""

from __future__ import annotations

from clients.cli import views
from clients.cli.connection.loop import ClientError
from clients.cli.driver import TurnEnd
from clients.cli.repl.recovery import SERVICE_STOPPING, lost_turn


def test_a_broken_stream_or_a_loop_shutting_down_loses_the_turn() -> None:
    assert lost_turn(TurnEnd(error=ClientError("broke", reason="service_unavailable")))
    assert lost_turn(TurnEnd(finished=views.TurnFinished(status=views.TurnStatus.FAILED, reason=SERVICE_STOPPING)))


def test_a_turn_that_ended_by_itself_or_a_refusal_is_not_lost() -> None:
    assert not lost_turn(TurnEnd(finished=views.TurnFinished(status=views.TurnStatus.COMPLETED)))
    assert not lost_turn(TurnEnd(finished=views.TurnFinished(status=views.TurnStatus.FAILED, reason="model auth")))
    assert not lost_turn(TurnEnd(error=ClientError("no", reason="session_busy")))
    assert not lost_turn(TurnEnd())
