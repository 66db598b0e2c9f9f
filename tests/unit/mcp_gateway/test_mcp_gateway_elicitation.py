"""Elicitation forms as questions, typed answers, defaults (SEP-1034) and the broker's routing."""

from __future__ import annotations

import asyncio

from services.mcp_gateway.elicitation import (
    ElicitAsk,
    ElicitationBroker,
    ElicitReply,
    form_fields,
    parse_field,
    question_text,
    with_defaults,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number"},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
    },
    "required": ["name"],
}


def test_a_schema_becomes_one_field_per_property_with_kind_options_and_default() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert list(fields) == ["name", "age", "score", "status", "verified", "tags"]
    assert fields["name"].required and fields["name"].label == "name: User name"
    assert (fields["status"].kind, fields["status"].options, fields["status"].default) == \
        ("enum", ("active", "inactive"), "active")
    assert fields["verified"].options == ("yes", "no")
    assert (fields["tags"].kind, fields["tags"].options) == ("multi", ("a", "b", "c"))


def test_answers_are_typed_and_a_wrong_one_says_what_the_field_takes() -> None:
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert parse_field(fields["age"], "41") == (41, "")
    assert parse_field(fields["age"], "4.5") == (None, "age takes a whole number, not '4.5'")
    assert parse_field(fields["score"], "9.5") == (9.5, "")
    assert parse_field(fields["verified"], "no") == (False, "")
    assert parse_field(fields["verified"], "maybe")[1] == "verified takes yes or no, not 'maybe'"
    assert parse_field(fields["status"], "gone")[1] == "status is one of active, inactive"
    assert parse_field(fields["tags"], "a, c") == (["a", "c"], "")
    assert parse_field(fields["tags"], "a, z")[1].endswith("not z")
    # Enter: the default, nothing for an optional field, a problem for a required one.
    assert parse_field(fields["age"], "") == (30, "")
    assert parse_field(fields["score"], "") == (None, "")
    assert parse_field(fields["name"], " ") == (None, "name is required")


def test_the_question_names_the_server_the_field_and_how_to_skip_or_refuse() -> None:
    ask = ElicitAsk("e1", "crm", "Who are you?", schema=SCHEMA)
    age = form_fields(SCHEMA)[1]
    text = question_text(ask, age, 2, 6)
    assert text.startswith("MCP server 'crm' asks: Who are you?\n(2/6) age [integer; Enter for 30")
    assert "/decline to refuse" in text
    url = question_text(ElicitAsk("e2", "pay", "Pay first", mode="url", url="https://pay.example/x"), None)
    assert "Open https://pay.example/x" in url


def test_omitted_fields_get_their_defaults_and_given_ones_are_kept() -> None:
    assert with_defaults(SCHEMA, {"name": "Ada", "age": 7, "score": None}) == {
        "name": "Ada", "age": 7, "status": "active", "verified": True}


def test_the_broker_routes_to_the_running_call_and_returns_the_answer_with_defaults() -> None:
    broker = ElicitationBroker()
    seen: list[ElicitAsk] = []

    def sink(ask: ElicitAsk) -> None:
        seen.append(ask)
        asyncio.get_running_loop().call_soon(broker.answer, ask.request_id, "accept", {"name": "Ada"})

    async def scenario() -> tuple[ElicitReply, ElicitReply]:
        with broker.call("crm", sink):
            reply = await broker.elicit("crm", "Who?", "form", SCHEMA)
        return reply, await broker.elicit("crm", "Who?", "form", SCHEMA)

    reply, outside = asyncio.run(scenario())
    assert [a.server for a in seen] == ["crm"]
    assert reply == ElicitReply("accept", {"name": "Ada", "age": 30, "status": "active", "verified": True})
    # No call running on that server: declined at once; an answer for nobody is not delivered.
    assert outside == ElicitReply("decline")
    assert broker.answer(seen[0].request_id, "accept", {}) is False


def test_an_unanswered_elicitation_is_cancelled_after_its_wait() -> None:
    broker = ElicitationBroker(answer_wait_s=0.05)

    async def scenario() -> ElicitReply:
        with broker.call("crm", lambda ask: None):
            return await broker.elicit("crm", "Who?", "form", SCHEMA)

    assert asyncio.run(scenario()) == ElicitReply("cancel")
