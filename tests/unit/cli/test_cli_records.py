"""``@record`` behaves as ``@dataclass(frozen=True)`` does, for every view class the client defines, and
``@mutable_record`` as ``@dataclass`` does."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from clients.cli import service_views, session_views, views
from clients.cli.attachments import Attachment
from clients.cli.driver import OwnTurn, TurnEnd
from clients.cli.headless import SessionChoice
from clients.cli.records import fields_of, record
from clients.cli.run_command import RunOptions
from clients.cli.turn import StopReason, TurnOutcome
from services.kernel.config import Config
from services.kernel.config_ranges import Range
from services.kernel.endpoints import AuthSettings, Endpoint
from services.kernel.records import mutable_record
from services.kernel.trust import Admission, Item, Pending, TrustStore


@record
class Tool:
    name: str = ""
    args: tuple[str, ...] = ()


@record
class Step:
    title: str
    tool: Tool = field(default_factory=Tool)
    notes: list[str] = field(default_factory=list)
    wire: object = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class DcTool:
    name: str = ""
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class DcStep:
    title: str
    tool: DcTool = field(default_factory=DcTool)
    notes: list[str] = field(default_factory=list)
    wire: object = field(default=None, repr=False, compare=False)


def test_construction_repr_equality_and_hash_match_a_frozen_dataclass() -> None:
    rec = Step("fix", Tool("bash", ("-c",)), wire=object())
    dc = DcStep("fix", DcTool("bash", ("-c",)), wire=object())
    assert repr(rec).replace("Tool(", "DcTool(", 1).replace("Step(", "DcStep(", 1) == repr(dc)
    assert repr(rec) == "Step(title='fix', tool=Tool(name='bash', args=('-c',)), notes=[])"
    assert rec == Step(title="fix", tool=Tool(name="bash", args=("-c",)), wire="another")  # wire: compare=False
    assert rec != Step("fix", Tool("bash"))
    other: object = DcTool("a")
    assert Tool("a") != other and Tool("a").__eq__(other) is NotImplemented
    assert hash(Tool("a", ("b",))) == hash(Tool("a", ("b",))) == hash(DcTool("a", ("b",)))
    assert Step("x").notes is not Step("x").notes  # a fresh default each time
    assert Step("x").tool == Tool() and Step("x").wire is None


def test_a_record_is_frozen_and_its_arguments_are_checked_as_a_dataclass_checks_them() -> None:
    tool = Tool("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool.name = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del tool.name
    with pytest.raises(TypeError, match="missing required argument: 'title'"):
        Step()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        Tool(nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        Tool("a", name="b")  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3"):
        Tool("a", (), "c")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))


def test_fields_and_match_args_follow_the_declaration_order() -> None:
    assert [f.name for f in fields_of(Step)] == ["title", "tool", "notes", "wire"]
    assert Step.__match_args__ == ("title", "tool", "notes", "wire")
    match Step("t", Tool("read")):
        case Step(title, Tool(name="read")):
            assert title == "t"
        case _:
            pytest.fail("the class pattern did not match")


VIEW_CLASSES = [obj for module in (views, service_views, session_views) for obj in vars(module).values()
                if inspect.isclass(obj) and hasattr(obj, "__record_fields__")]


def test_the_view_modules_define_their_classes_as_records() -> None:
    assert len(VIEW_CLASSES) >= 50 and views.Event in VIEW_CLASSES and session_views.SessionDetail in VIEW_CLASSES


@pytest.mark.parametrize("cls", VIEW_CLASSES, ids=lambda cls: cls.__name__)
def test_every_view_class_builds_compares_and_prints_as_its_fields(cls: type) -> None:
    fields = fields_of(cls)
    required = {f.name: None for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    made = cls(**required)
    assert made == cls(**required)
    assert [f.name for f in fields] == [name for name in inspect.get_annotations(cls)]
    assert repr(made) == f"{cls.__qualname__}(" + ", ".join(
        f"{f.name}={getattr(made, f.name)!r}" for f in fields if f.repr) + ")"


@mutable_record
class Counter:
    name: str
    seen: list[str] = field(default_factory=list)
    count: int = 0


@dataclass
class DcCounter:
    name: str
    seen: list[str] = field(default_factory=list)
    count: int = 0


def test_a_mutable_record_behaves_as_a_plain_dataclass() -> None:
    rec, dc = Counter("a"), DcCounter("a")
    assert repr(rec).replace("Counter(", "DcCounter(", 1) == repr(dc) == "DcCounter(name='a', seen=[], count=0)"
    rec.count += 1
    rec.seen.append("x")
    assert rec == Counter("a", ["x"], 1) and rec != Counter("a")
    assert Counter("a").seen is not Counter("a").seen
    with pytest.raises(TypeError, match="unhashable"):
        hash(rec)
    with pytest.raises(TypeError):
        hash(dc)
    del rec.count  # as on a dataclass: the attribute goes, the class default stays
    assert rec.count == 0
    with pytest.raises(TypeError, match="missing required argument: 'name'"):
        Counter()  # type: ignore[call-arg]


RUN_PATH_CLASSES = [RunOptions, SessionChoice, Attachment, TurnEnd, StopReason, Item, Pending, Range, AuthSettings,
                    Endpoint]
RUN_PATH_MUTABLE = [OwnTurn, TurnOutcome, TrustStore, Admission, Config]


@pytest.mark.parametrize("cls", RUN_PATH_CLASSES + RUN_PATH_MUTABLE, ids=lambda cls: cls.__name__)
def test_the_value_classes_a_run_imports_before_its_turn_is_sent_are_records(cls: type) -> None:
    assert hasattr(cls, "__record_fields__") and not dataclasses.is_dataclass(cls)
    assert (cls.__hash__ is None) == (cls in RUN_PATH_MUTABLE)


def test_an_endpoint_is_a_value() -> None:
    one = Endpoint("loop", "unix", "/run/x.sock")
    assert one == Endpoint("loop", "unix", path="/run/x.sock", auth=AuthSettings())
    assert {one: 1}[Endpoint("loop", "unix", "/run/x.sock")] == 1
    assert repr(one) == ("Endpoint(service='loop', scheme='unix', path='/run/x.sock', host='', port=0, "
                         "auth=AuthSettings(token='', tls_cert='', tls_key='', tls_ca='', server_name=''))")
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.path = "/elsewhere"  # type: ignore[misc]
