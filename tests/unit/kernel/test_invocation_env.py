"""A client's own model/key variables decide its session; a service's own selectors never do."""

from __future__ import annotations

from services.kernel.config import Config, restart_notes
from services.kernel.invocation import client_environment, effective_environment
from services.mcp_gateway.settings import ServerSettings
from services.mcp_gateway.sidecar_watch import sidecar_delta


def test_a_client_sends_its_selectors_key_variables_and_the_configs_references_only() -> None:
    env = {"AI_CODING_MODEL": "m", "DEEPSEEK_API_KEY": "k", "MY_KEY": "v", "HOME": "/h", "AI_CODING_BASE_URL": ""}
    assert client_environment(env, ["MY_KEY", "UNSET"]) == {"AI_CODING_MODEL": "m", "DEEPSEEK_API_KEY": "k",
                                                            "MY_KEY": "v"}


def test_the_services_own_selectors_are_dropped_and_the_clients_win() -> None:
    service = {"AI_CODING_MODEL": "from-start", "DEEPSEEK_API_KEY": "old", "PATH": "/bin"}
    assert effective_environment(service, {}) == {"DEEPSEEK_API_KEY": "old", "PATH": "/bin"}
    assert effective_environment(service, {"DEEPSEEK_API_KEY": "new"})["DEEPSEEK_API_KEY"] == "new"
    assert effective_environment(service, None) == service  # a caller that sent nothing


def test_a_restart_only_section_of_the_user_layer_is_named_once() -> None:
    started = Config(data={"tracing": {}, "ai": {"x": 1}})
    now = Config(data={"tracing": {"otlp": {"endpoint": "http://h"}}, "ai": {"x": 2}},
                 sources={"tracing": "user:/c.yaml"})
    notes = restart_notes(started, now)
    assert len(notes) == 1 and "`tracing`" in notes[0] and "`ai`" not in notes[0]
    assert "the loop service" in notes[0] and "`ai-coding down`" in notes[0]


def test_each_process_whose_start_only_sections_changed_is_named_with_its_sections() -> None:
    started = Config(data={"tools": {"sandbox": {"network": "off"}}, "memory": {"default_k": 5}})
    now = Config(data={"tools": {"sandbox": {"network": "host"}}, "memory": {"default_k": 9},
                       "net": {"pinned_hosts": {"r.corp": "10.0.0.5"}}})
    notes = restart_notes(started, now)
    assert [n.split(" changed since ")[1].split(" started")[0] for n in notes] == [
        "the tools service", "the mcp_gateway service"]
    assert notes[0].startswith("config `tools`, `net` changed") and notes[1].startswith("config `net` changed")
    assert not any("memory" in n for n in notes)  # the memory service follows its section live
    project = Config(data={"mcp": {"servers": [1]}}, sources={"mcp": "project:/w/ai-coding.yaml"})
    assert restart_notes(Config(), project) == []


def test_a_sidecar_edit_adds_new_names_and_flags_changed_or_removed_ones() -> None:
    a, b = ServerSettings(name="a", command=("x",)), ServerSettings(name="b", command=("y",))
    changed_a = ServerSettings(name="a", command=("x", "--flag"))
    delta = sidecar_delta({"a": a, "b": b}, [changed_a, ServerSettings(name="c", command=("z",))], {"a", "b"})
    assert [s.name for s in delta.added] == ["c"]
    assert set(delta.stale) == {"a", "b"}
    assert sidecar_delta({"a": a}, [a], {"a"}).stale == ()

