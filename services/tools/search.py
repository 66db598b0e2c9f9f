"""glob and grep over a workspace, .gitignore-aware.

grep uses ripgrep when it is installed and a Python walk otherwise; both print
``path:line: text`` (paths relative to the workspace root, sorted by path,
lines cut at 300 characters) and skip hidden, binary and ignored files.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec

from services.tools import limits
from services.tools.domain import ToolOutput
from services.tools.errors import ToolError
from services.tools.globmatch import (
    REGEX_WILDCARDS,
    GlobMatcher,
    Kind,
    Token,
    TooManyAlternatives,
    expand_braces,
)
from services.tools.paths import display_path, is_inside, resolve_path
from services.tools.schemas import GlobArgs, GrepArgs


def _is_range_dash(members: str, k: int) -> bool:
    """A "-" between two other members of a [...] class is a range; anywhere else it is literal."""
    return (members[k] == "-" and 0 < k < len(members) - 1 and members[k - 1] != "-"
            and members[k + 1] != "-")


def _class_regex(pattern: str, i: int) -> tuple[str, int] | None:
    """The regex of the ``[...]`` class at ``i`` and the index of its ``]`` (None: no closing bracket)."""
    end = pattern.find("]", i + 2)
    if end < 0:
        return None
    body = pattern[i + 1 : end]
    negate = body[:1] in ("!", "^")
    members = body[1:] if negate else body
    chars = "".join(c if _is_range_dash(members, k) else re.escape(c) for k, c in enumerate(members))
    return ("[^" if negate else "[") + chars + "]", end


def _pieces(pattern: str) -> Iterator[tuple[Token, str]]:
    """Each glob token of ``pattern`` with its regex; an unescaped ``{``, ``,`` or ``}`` comes out as a
    literal whose regex is the bare character (``glob_to_regex`` makes it a group)."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            yield Token(Kind.DIRS), "(?:.*/)?"
            i += 3
            continue
        if pattern.startswith("**", i):
            yield Token(Kind.ANY), ".*"
            i += 2
            continue
        klass = _class_regex(pattern, i) if ch == "[" else None
        if ch == "*":
            yield Token(Kind.STAR), "[^/]*"
        elif ch == "?":
            yield Token(Kind.ONE), "[^/]"
        elif ch == "\\" and i + 1 < len(pattern):
            yield Token(Kind.LITERAL, pattern[i + 1]), re.escape(pattern[i + 1])
            i += 1
        elif klass is not None:
            yield Token(Kind.CLASS, klass=_compiled(klass[0], pattern)), klass[0]
            i = klass[1]
        else:
            yield Token(Kind.LITERAL, ch), ch if ch in "{},"  else re.escape(ch)
        i += 1


def _compiled(regex: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ToolError("invalid_arguments", f"{pattern!r} is not a valid glob ({exc})",
                        "Check the [...] classes and {a,b} groups in the pattern.") from None


def _fixed(token: Token, regex: str) -> bool:
    """A token matching exactly one character that is never '/' (a literal or ``?``)."""
    return (token.kind is Kind.ONE or (token.kind is Kind.LITERAL and token.char != "/"
                                       and regex not in ("{", "}", ",")))


def _committed(items: list[tuple[Token, str]], j: int) -> tuple[str, int] | None:
    """For ``*P*`` (or ``**P**``) with a fixed piece P at ``j``: an atomic group taking P's leftmost
    place, and the index after P. Leftmost is always right, since the next star absorbs what follows;
    without it ``*a*a*a...*b`` backtracked polynomially."""
    k = j + 1
    while k < len(items) and _fixed(*items[k]):
        k += 1
    if k == j + 1 or k >= len(items) or items[k][0].kind not in (Kind.STAR, Kind.ANY):
        return None
    return "(?>" + items[j][1] + "?" + "".join(r for _, r in items[j + 1 : k]) + ")", k


def glob_to_regex(pattern: str) -> GlobMatcher:
    """Compile a glob (``**``, ``*``, ``?``, ``[...]``, ``{a,b}``) over '/'-separated paths (see globmatch)."""
    out: list[str] = []
    depth = wild = 0
    items = list(_pieces(pattern))
    j = 0
    while j < len(items):
        token, regex = items[j]
        j += 1
        if token.kind in (Kind.STAR, Kind.ANY) and (committed := _committed(items, j - 1)) is not None:
            out.append(committed[0])
            j = committed[1]
            continue
        wild += token.kind in (Kind.STAR, Kind.ANY, Kind.DIRS)
        if token.kind is Kind.LITERAL and regex in ("{", "}", ","):  # unescaped: a {a,b} group
            if regex == "{":
                out.append("(?:")
                depth += 1
            elif depth:
                out.append(")" if regex == "}" else "|")
                depth -= regex == "}"
            else:
                out.append(re.escape(regex))
            continue
        out.append(regex)
    compiled = _compiled("".join(out) + ")" * depth + r"\Z", pattern)
    if wild <= REGEX_WILDCARDS:
        return GlobMatcher(pattern, compiled)
    try:
        alternatives = tuple([t for t, _ in _pieces(p)] for p in expand_braces(pattern))
    except TooManyAlternatives as exc:
        raise ToolError("invalid_arguments", f"{pattern!r}: {exc}", "Use fewer {a,b} groups.") from None
    return GlobMatcher(pattern, compiled, alternatives)


@dataclass
class _IgnoreRules:
    """The .gitignore files seen on the way down, each with the directory it applies to."""

    specs: list[tuple[str, pathspec.PathSpec[Any]]]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in self.specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            if spec.match_file(sub + "/" if is_dir else sub):
                return True
        return False


def _load_ignore(directory: Path, rel: str) -> list[tuple[str, pathspec.PathSpec[Any]]]:
    gitignore = directory / ".gitignore"
    try:
        lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [(rel, pathspec.GitIgnoreSpec.from_lines(lines))]


def _rel(root: Path, path: Path) -> str:
    return "" if path == root else str(path.relative_to(root))


def walk_files(root: Path, start: Path, skip_hidden: bool) -> Iterator[tuple[Path, str]]:
    """Files and symlinks under ``start`` as (path, name relative to ``root``), depth first with each
    directory's entries sorted by name (ripgrep's --sort=path order); honours .gitignore files, never
    enters .git and never follows directory symlinks."""
    rules = _IgnoreRules([])
    ancestor = root
    for part in start.relative_to(root).parts:
        rules.specs.extend(_load_ignore(ancestor, _rel(root, ancestor)))
        ancestor = ancestor / part
    yield from _walk(root, start, rules, skip_hidden)


def _walk(root: Path, directory: Path, rules: _IgnoreRules, skip_hidden: bool) -> Iterator[tuple[Path, str]]:
    rel_dir = _rel(root, directory)
    rules = _IgnoreRules([*rules.specs, *_load_ignore(directory, rel_dir)])
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        if entry.name == ".git" or (skip_hidden and entry.name.startswith(".")):
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        if rules.ignored(rel, is_dir):
            continue
        if is_dir:
            yield from _walk(root, Path(entry.path), rules, skip_hidden)
        elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
            yield Path(entry.path), rel


def glob_files(args: GlobArgs, roots: Sequence[Path]) -> ToolOutput:
    """Files matching a glob under ``path``, newest first; symlinks leaving the roots are filtered."""
    base = resolve_path(args.path, roots)
    if not base.is_dir():
        raise ToolError("not_found", f"{args.path} is not a directory", "Pass a directory as path.")
    regex = glob_to_regex(args.pattern.removeprefix("./"))
    cap = args.max_results
    found: list[tuple[float, str]] = []
    filtered = 0
    for full, _rel in walk_files(base, base, skip_hidden=False):
        rel_to_base = str(full.relative_to(base))
        if not regex.match(rel_to_base):
            continue
        if full.is_symlink() and not is_inside(Path(os.path.realpath(full)), roots):
            filtered += 1
            continue
        try:
            mtime = full.stat().st_mtime
        except OSError:
            continue  # a dangling symlink
        found.append((mtime, display_path(full, roots)))
    found.sort(key=lambda item: (-item[0], item[1]))
    paths = [p for _m, p in found[:cap]]
    limit_hit = "result_cap" if len(found) > cap else ""
    output = "\n".join(paths) if paths else f"No files match {args.pattern}."
    if limit_hit:
        output += f"\n[{len(found) - cap} more matches: narrow the pattern or path]"
    return ToolOutput(output, {"paths": paths, "total": len(found), "symlinks_filtered": filtered}, limit_hit)


def format_hit(path: str, line: int, text: str) -> str:
    """One grep hit as ``path:line: text``, the text cut at 300 characters."""
    text = text.rstrip("\r\n")
    if len(text) > limits.GREP_LINE_MAX_CHARS:
        text = text[: limits.GREP_LINE_MAX_CHARS] + " [...]"
    return f"{path}:{line}: {text}"


def _grep_python(regex: re.Pattern[str], root: Path, start: Path, glob: str, cap: int) -> tuple[list[str], bool]:
    hits: list[str] = []
    name_glob = glob_to_regex(glob) if glob else None
    files = [(start, display_path(start, [root]))] if start.is_file() else walk_files(root, start, True)
    for full, rel in files:
        if name_glob is not None and not name_glob.match(rel if "/" in glob else full.name):
            continue
        if full.is_symlink():
            continue  # ripgrep does not follow symlinks either
        try:
            if full.stat().st_size > limits.READ_MAX_BYTES:
                continue  # same as ripgrep's --max-filesize below
            data = full.read_bytes()
        except OSError:
            continue
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                if len(hits) >= cap:
                    return hits, True
                hits.append(format_hit(rel, number, line))
    return hits, False


def _grep_rg(rg: str, pattern: str, root: Path, start: Path, glob: str, ignore_case: bool,
             cap: int) -> tuple[list[str], bool]:
    cmd = [rg, "--line-number", "--no-heading", "--null", "--color=never", "--no-messages", "--sort=path",
           "--no-require-git", "--no-ignore-dot", "--no-ignore-parent", "--no-config", "--with-filename",
           f"--max-filesize={limits.READ_MAX_BYTES}"]
    if ignore_case:
        cmd.append("--ignore-case")
    # ripgrep's --glob overrides .gitignore; filtering names here keeps the fallback's semantics.
    name_glob = glob_to_regex(glob) if glob else None
    cmd += ["-e", pattern]
    if start != root:
        cmd += ["--", str(start.relative_to(root))]
    hits: list[str] = []
    # Stream ripgrep's output and stop it at the cap: a pattern like "." must not buffer a whole repo.
    with subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        for raw in proc.stdout:
            name, _, rest = raw.rstrip(b"\n").partition(b"\0")
            number, _, text = rest.partition(b":")
            path = name.decode("utf-8", errors="replace")
            if not number.isdigit():
                continue
            if name_glob is not None and not name_glob.match(path if "/" in glob else path.rsplit("/", 1)[-1]):
                continue
            if len(hits) >= cap:
                proc.kill()
                return hits, True
            hits.append(format_hit(path, int(number), text.decode("utf-8", errors="replace")))
        errors = proc.stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        proc.wait()
    if proc.returncode == 2 and not hits and errors:
        detail = next((e for e in errors if e.startswith("error:")), errors[-1]).removeprefix("error:").strip()
        raise ToolError("invalid_arguments", f"field `pattern` is not a valid regex for ripgrep: {detail}",
                        "Fix the regular expression (escape special characters such as `(`).")
    return hits, False


def grep_files(args: GrepArgs, roots: Sequence[Path], rg: str | None) -> ToolOutput:
    """Regex search; ``rg`` is the ripgrep program or None for the Python fallback."""
    pattern = args.pattern
    ignore_case = args.case_insensitive
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError("invalid_arguments", f"field `pattern` is not a valid regex: {exc}",
                        "Fix the regular expression (escape special characters such as `(`).") from None
    root = roots[0]
    start = resolve_path(args.path, roots)
    if not start.exists():
        raise ToolError("not_found", f"{args.path} does not exist", "Check the path with glob.")
    if not start.is_relative_to(root):
        root = next(r for r in roots if start.is_relative_to(r))
    cap = args.max_results
    glob = args.glob
    if rg:
        hits, more = _grep_rg(rg, pattern, root, start, glob, ignore_case, cap)
    else:
        hits, more = _grep_python(regex, root, start, glob, cap)
    output = "\n".join(hits) if hits else f"No matches for {pattern!r}."
    if more:
        output += f"\n[more than {cap} matches: narrow the pattern, path or glob]"
    return ToolOutput(output, {"hits": len(hits), "engine": "ripgrep" if rg else "python"},
                      "result_cap" if more else "")
