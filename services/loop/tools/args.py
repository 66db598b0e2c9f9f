"""A loop tool's one definition: ``define(name, description, Args, handler)``.

The arguments dataclass gives both the schema the model is sent and the parse of what it sends
(services/kernel/tool_args.py, shared with the tools and memory services so every tool refuses a
missing or mistyped argument with the same ``invalid_arguments`` sentence). The dispatcher checks a
call against its tool (``ToolDef.check``) before guards, approval or handler run; the handler gets
the parsed ``Args``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import MISSING
from typing import Any, TypeVar

from services.kernel.tool_args import ArgumentError, arg, check_json, parse_args, schema_of
from services.loop.core.ports import ToolCall, ToolContext, ToolDef, ToolOutcome
from services.loop.policy.permissions import Level

A = TypeVar("A")

__all__ = ["ArgumentError", "arg", "check_json", "define", "doc", "parse_args", "schema_of"]


def doc(text: str, default: Any = MISSING) -> Any:
    """A field with its description for the model (and its default, if optional); ``arg`` adds bounds."""
    return arg(text, default)


def define(name: str, description: str, args: type[A],
           handler: Callable[[ToolContext, ToolCall, A], Awaitable[ToolOutcome]], *,
           permission: Level = Level.WARN, parallel_safe: bool = False, deferred: bool = False,
           refine: Callable[[A], None] | None = None) -> ToolDef:
    """A loop tool whose schema and parse are ``args``: the handler runs only on valid arguments
    (``refine``: a further check of the parsed ones, raising ``ArgumentError``)."""

    async def checked(ctx: ToolContext, call: ToolCall, arguments: dict[str, Any]) -> ToolOutcome:
        parsed = parse_args(args, arguments)
        if refine is not None:
            refine(parsed)
        return await handler(ctx, call, parsed)

    return ToolDef(name, description, schema_of(args), permission=permission, parallel_safe=parallel_safe,
                   deferred=deferred, handler=checked, args=args, refine=refine)
