"""The audit of every regular expression that sees model or tool text: its worst input, timed.

    .venv/bin/python bench/regex_audit.py [--size 1000000] [--limit 20]

Each row names a pattern (file:name), what text reaches it, the input built to hurt it most
(a run that makes a backtracking engine restart a long scan at every position), and the time
one search/sub/finditer over ``--size`` characters of that input takes. Each case runs in a
child process killed after ``--limit`` seconds; a case killed that way is then timed at 2.5k, 5k
and 10k characters and the 1 MB time is extrapolated from the growth (marked ``~``), so a
super-linear pattern shows as such without waiting an hour. Rows marked ``(old)`` are patterns
this audit replaced, kept here to show what the fix bought.

Patterns over operator config only (config keys, bash_policy and hook matchers written by the
user, MCP server names, session ids, file names we generate) are listed at the end, not timed.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]


@dataclass(frozen=True)
class Case:
    where: str
    sees: str
    build: Callable[[int], str]
    run: Callable[[str], object]
    shape: str


def _old_fork_bomb() -> re.Pattern[str]:
    return re.compile(r"(\S+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}")


def _rep(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _cases() -> list[Case]:
    from clients.cli import attachments, textsafe
    from clients.cli.render import text as render_text
    from clients.cli.repl import resume
    from services.kernel import command_limits, command_policy
    from services.loop.compaction import transcripts
    from services.loop.core import instructions
    from services.loop.model import retry, stream
    from services.loop.plans import paths
    from services.loop.policy import search as search_policy
    from services.loop.subagents import contract
    from services.loop.tools import registry
    from services.loop.tracing import writer as traces
    from services.memory import gates, harvest, similarity, tokenizer
    from services.tools import output, runtime, sandbox
    from services.tools import search as tool_search

    def finditer(p: re.Pattern[str]) -> Callable[[str], object]:
        return lambda s: sum(1 for _ in p.finditer(s))

    def sub(p: re.Pattern[str]) -> Callable[[str], object]:
        return lambda s: p.sub("", s)

    cp = command_policy
    return [
        Case("kernel/command_policy.py _FORK_BOMB (old)", "bash command (model)", _rep("a"),
             lambda s: _old_fork_bomb().search(s), "one run of non-space characters"),
        Case("kernel/command_limits.py is_fork_bomb", "bash command (model)", _rep("a"),
             command_limits.is_fork_bomb, "one run of non-space characters"),
        Case("kernel/command_limits.py is_fork_bomb", "bash command (model)", _rep("(){ a|a& }"),
             command_limits.is_fork_bomb, "function heads, names never matching"),
        Case("kernel/command_limits.py _FUNC_HEAD", "bash command (model)", _rep("() "),
             finditer(command_limits._FUNC_HEAD), "`()` then spaces, no brace"),
        Case("kernel/command_policy.py denied_reason (whole check)", "bash command (model)", _rep("a;"),
             cp.denied_reason, "1 MB is refused unparsed; see the 128 KiB row"),
        Case("kernel/command_policy.py denied_reason+writes_files at 128 KiB", "bash command (model)",
             lambda n: _rep("a;")(command_limits.MAX_COMMAND_BYTES),
             lambda s: (cp.denied_reason(s), cp.writes_files(s)), "64k one-word commands (the parser's worst)"),
        Case("kernel/command_policy.py _FD_PREFIX", "bash command (model)", _rep("1"),
             lambda s: cp._FD_PREFIX.match(s), "a run of digits"),
        Case("kernel/command_policy.py _ASSIGNMENT", "bash words (model)", _rep("a"),
             lambda s: cp._ASSIGNMENT.match(s), "a name without '='"),
        Case("kernel/command_policy.py _DISK_DEVICE", "bash words (model)", lambda n: "/dev/disk/" + "a" * n,
             lambda s: cp._DISK_DEVICE.match(s), "a long device path"),
        Case("kernel/command_policy.py re.sub('/+')", "rm targets (model)", _rep("/"),
             lambda s: re.sub("/+", "/", s), "slashes"),
        Case("loop/tracing/writer.py redact", "every event field, hook payloads", _rep("sk-"), traces.redact,
             "sk-sk-sk-..."),
        Case("loop/tracing/writer.py redact", "every event field, hook payloads", _rep("token="), traces.redact,
             "token=token=..."),
        Case("loop/tracing/writer.py redact", "every event field, hook payloads", _rep("Bearer  "), traces.redact,
             "Bearer Bearer ..."),
        Case("loop/tracing/writer.py redact", "every event field, hook payloads", lambda n: "Bearer" + " " * (n - 7) + "a",
             traces.redact, "Bearer, a space run, a short token"),
        Case("loop/model/stream.py _SURROGATE", "model text and arguments", _rep("\u00e9"),
             lambda s: stream._SURROGATE.search(s), "non-ASCII, no surrogate"),
        Case("loop/model/retry.py _CONTEXT_LENGTH", "provider error text", _rep("context "),
             lambda s: retry._CONTEXT_LENGTH.search(s), "near-miss words"),
        Case("loop/subagents/contract.py _FENCE", "a child's answer (model)", _rep("```\n"),
             finditer(contract._FENCE), "fence lines"),
        Case("loop/subagents/contract.py _FENCE", "a child's answer (model)", _rep("```x "),
             finditer(contract._FENCE), "fences without a newline"),
        Case("loop/policy/search.py _GREP_HIT", "grep output (tools)", _rep("a:a:"),
             finditer(search_policy._GREP_HIT), "colons, no line number"),
        Case("loop/core/instructions.py _FENCE", "AGENTS.md (the model can write it)", _rep("```\n~~~\n```x\n"),
             sub(instructions._FENCE), "fence lines of both kinds"),
        Case("loop/core/instructions.py _INLINE_CODE", "AGENTS.md", _rep("`a"), sub(instructions._INLINE_CODE),
             "backticks never closed on the line"),
        Case("loop/core/instructions.py _IMPORT", "AGENTS.md", _rep("@a"), finditer(instructions._IMPORT), "@a@a@a"),
        Case("loop/compaction/transcripts.py _WORD", "history (model, tools)", _rep("a "),
             finditer(transcripts._WORD), "words"),
        Case("loop/registry.py search split", "tool_search query (model)", _rep("a "),
             lambda s: registry.ToolRegistry([]).search(s), "1 MB of words"),
        Case("loop/webfetch.py whitespace subs", "fetched pages (network)", _rep(" \t\n"),
             lambda s: re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t\r\f\v]+", " ", s)), "whitespace runs"),
        Case("loop/plans/paths.py _TOKEN", "plan topic (user)", _rep("a"), finditer(paths._TOKEN),
             "one word without '/'"),
        Case("loop/plans/paths.py _TOKEN", "plan topic (user)", _rep("a/"), finditer(paths._TOKEN), "a/a/a/"),
        Case("tools/sandbox.py _SUBMODULE_PATH (old)", ".gitmodules (the model can write it)", _rep("\n"),
             finditer(re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)), "blank lines"),
        Case("tools/sandbox.py _SUBMODULE_PATH", ".gitmodules (the model can write it)", _rep("\n"),
             finditer(sandbox._SUBMODULE_PATH), "blank lines"),
        Case("tools/sandbox.py _SUBMODULE_PATH", ".gitmodules", lambda n: "path =" + " " * (n - 8) + "a",
             finditer(sandbox._SUBMODULE_PATH), "one value after a space run"),
        Case("tools/output.py _CONTROL", "command output (tools)", _rep("a\x01"), sub(output._CONTROL),
             "control characters"),
        Case("tools/runtime.py read_only_note", "command output (tools)", _rep("/usr/ No such file or directory "),
             lambda s: runtime.read_only_note(s, "bwrap", ["/home", "/root", "/mnt", "/srv"]), "hidden-dir names"),
        Case("tools/search.py glob as a regex (old)", "glob pattern (model) x file paths",
             lambda n: "a" * 200, lambda s: re.compile("[^/]*a" * 12 + r"[^/]*b\Z").match(s),
             "12 stars vs ONE 200-char name (size ignored)"),
        Case("tools/search.py glob, `*a` x12 (atomic groups)", "glob pattern (model) x file paths",
             lambda n: "a" * 4096, lambda s: [tool_search.glob_to_regex("*a" * 12 + "*b").match(s) for _ in range(245)],
             "12 stars vs 245 paths of 4096 chars (1 MB)"),
        Case("tools/globmatch.py automaton, `*[a]` x12", "glob pattern (model) x file paths",
             lambda n: "a" * 255, lambda s: [tool_search.glob_to_regex("*[a]" * 12 + "*b").match(s) for _ in range(40)],
             "12 stars vs 40 names of 255 chars (10 KB)"),
        Case("tools/search.py glob, 2 wildcards (regex kept)", "glob pattern (model) x file paths",
             lambda n: "a" * 4096, lambda s: [tool_search.glob_to_regex("**a**").match(s) for _ in range(245)],
             "`**a**` vs 245 paths of 4096 chars (1 MB)"),
        Case("memory/gates.py _VOLATILE", "memory text (model)", _rep("next "),
             lambda s: gates._VOLATILE.search(s), "near-miss words"),
        Case("memory/gates.py _BLOCK", "memory text (model)", _rep("<system-reminder "),
             sub(gates._BLOCK), "opening tags never closed"),
        Case("memory/gates.py _TAG", "memory text (model)", _rep("<a "), sub(gates._TAG), "tags never closed"),
        Case("memory/gates.py _FIELD_LINE", "memory text (model)", _rep("a"),
             lambda s: gates._FIELD_LINE.match(s), "one long name"),
        Case("memory/tokenizer.py _TOKEN", "memory text (model)", _rep("a_"), finditer(tokenizer._TOKEN), "a_a_"),
        Case("memory/tokenizer.py _STOP_WORD_RE", "memory text (model)", _rep("\u7684\u4e00"),
             finditer(tokenizer._STOP_WORD_RE), "CJK stop words"),
        Case("memory/harvest.py _FENCE", "harvest answer (model)", _rep("```json "),
             lambda s: harvest._FENCE.search(s), "fences"),
        Case("memory/similarity.py _LEAD", "memory text (model)", lambda n: "note" + " " * (n - 4),
             lambda s: similarity._LEAD.search(s), "a lead word then spaces"),
        Case("memory/similarity.py _PUNCT", "memory text (model)", _rep(". "), sub(similarity._PUNCT),
             "punctuation"),
        Case("clients/cli/textsafe.py _CONTROL", "everything shown (model, tools)", _rep("a\x1b"),
             sub(textsafe._CONTROL), "escapes"),
        Case("clients/cli/render/text.py _INLINE", "assistant text (model)", _rep("**a `"),
             finditer(render_text._INLINE), "unclosed bold and code"),
        Case("clients/cli/render/text.py _EXIT_LINE", "command output (tools)", lambda n: "(exit code " + "1" * n,
             lambda s: render_text._EXIT_LINE.match(s), "digits, never closed"),
        Case("clients/cli/attachments.py _MENTION", "user input", _rep("@a"), finditer(attachments._MENTION),
             "@a@a"),
        Case("clients/cli/repl/resume.py _FAILED_RESULT", "tool results (tools)", _rep("a_"),
             lambda s: resume._FAILED_RESULT.match(s), "a_a_a_ with no colon"),
    ]


NOT_TIMED = """Over operator config or our own names only (not timed):
  kernel/config/ _DECLARED, SAFETY_WORDS, VAR_REFERENCE, _CAMEL (config files and keys)
  loop/policy/guards.py bash_policy.deny/confirm (operator patterns; they run on commands already
    capped at 128 KiB, after the hard list, in the gate's worker thread under its deadline)
  loop/hooks/config.py matcher (operator pattern over a tool name)
  loop/sessions.py _ID_RE, loop/tracing/store.py _TURN_FILE, loop/skills/* NAME_RE, _OWNER_REPO,
  mcp_gateway/settings.py _NAME, mcp_gateway/project.py _BAD, clients/cli/slash.py _NAME (short names)
  tools/search.py grep pattern (model regex): run by ripgrep (linear-time engine); the Python
    fallback (no rg installed) is backtracking and runs in a worker thread under the file-tool
    deadline, like glob"""


def _time_case(index: int, size: int) -> float:
    case = _cases()[index]
    text = case.build(size)
    began = time.perf_counter()
    case.run(text)
    return time.perf_counter() - began


def _child(index: int, size: int, limit: float) -> float | None:
    try:
        done = subprocess.run([sys.executable, __file__, "--case", str(index), "--size", str(size)],
                              capture_output=True, text=True, timeout=limit, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--limit", type=float, default=20.0)
    parser.add_argument("--case", type=int, default=-1)
    args = parser.parse_args()
    if args.case >= 0:
        print(f"{_time_case(args.case, args.size):.6f}")
        return
    print(f"{'pattern':64} {'text it sees':38} {'worst input':44} {args.size:,} chars")
    for index, case in enumerate(_cases()):
        seconds = _child(index, args.size, args.limit)
        if seconds is None:
            small = [_child(index, n, args.limit * 3) or float("nan") for n in (2_500, 5_000, 10_000)]
            if all(math.isnan(x) for x in small):
                print(f"{case.where:64} {case.sees:38} {case.shape:44} did not finish in {args.limit * 3:g} s "
                      "even at 2.5k (the input size is not what hurts it)")
                continue
            growth = max(small[2] / small[1], 1.0) if small[1] > 0 else 4.0
            exponent = max(1.0, min(3.0, math.log2(growth)))
            estimate = small[2] * (args.size / 10_000) ** exponent
            shown = f"~{estimate:,.0f} s (killed at {args.limit:g} s; 10k: {small[2]:.2f} s, x{growth:.1f} per doubling)"
        else:
            shown = f"{seconds * 1000:,.1f} ms"
        print(f"{case.where:64} {case.sees:38} {case.shape:44} {shown}")
    print()
    print(NOT_TIMED)


if __name__ == "__main__":
    main()
