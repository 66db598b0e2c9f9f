"""Shell command policy: parse a command line into its simple commands, match the
hard DENY list on those parts, and classify commands that write files.

Pure functions, shared by the loop's permission gate (which treats file-writing
commands as edits) and the tool service (which enforces DENY whatever the loop
decided). The parser is a small POSIX-shell lexer, not a shell: it splits on
``;``, ``&&``, ``||``, ``|``, ``&``, newlines and subshell parentheses, removes
quotes and backslashes the way the shell would, follows ``$(...)``, backticks,
``<(...)``, ``sh -c '...'``, ``eval``, ``find -exec`` and wrappers such as
``env``, ``nohup``, ``timeout`` or ``xargs``, and skips here-document bodies.
Whatever it cannot see (``$CMD`` expanded at run time) is the sandbox's job.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache

from services.kernel.command_limits import (
    PARSE_BUDGET_FLOOR,
    ParseBudget,
    TooComplex,
    is_fork_bomb,
    oversize_reason,
)

_SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_REDIRECT_OPS = ("&>>", "<<<", "<<-", "&>", ">>", ">|", "<<", "<>", ">&", "<&", ">", "<")
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
_KEYWORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac"})
_NOT_COMMANDS = frozenset({"for", "case", "select", "function", "in"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
_FD_PREFIX = re.compile(r"\d+(?=[<>])")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DISK_DEVICE = re.compile(
    r"^/dev/(?:[shv]d[a-z]+\d*|xvd[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|md\d+|dm-\d+|loop\d+"
    r"|disk/.+|mapper/.+)$")


@dataclass(frozen=True)
class Redirect:
    """One redirection: its operator (``>``, ``>>``, ``<``, ``&>``...) and target word."""

    op: str
    target: str


@dataclass(frozen=True)
class SimpleCommand:
    """One command of a pipeline or list, quotes removed."""

    argv: tuple[str, ...]
    redirects: tuple[Redirect, ...] = ()


@dataclass
class _Lexer:
    text: str
    pos: int = 0
    commands: list[SimpleCommand] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    pending_op: str = ""
    heredocs: list[tuple[str, bool]] = field(default_factory=list)
    budget: ParseBudget = field(default_factory=lambda: ParseBudget(PARSE_BUDGET_FLOOR))

    def run(self) -> list[SimpleCommand]:
        self.budget.charge(len(self.text))
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in " \t":
                self.pos += 1
            elif ch == "\\" and self.text.startswith("\\\n", self.pos):
                self.pos += 2
            elif ch == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif self._separator():
                continue
            elif (fd := _FD_PREFIX.match(self.text, self.pos)) and self.pos + len(fd.group(0)) < len(self.text):
                self.pos += len(fd.group(0))
                self._redirect()
            elif self._redirect():
                continue
            else:
                self._add_word(self._word())
        self._end_command()
        return self.commands

    def _separator(self) -> bool:
        for sep in _SEPARATORS:
            if self.text.startswith(sep, self.pos):
                self.pos += len(sep)
                self._end_command()
                if sep == "\n":
                    self._skip_heredocs()
                return True
        return False

    def _redirect(self) -> bool:
        for op in _REDIRECT_OPS:
            if self.text.startswith(op, self.pos):
                if op in ("<", ">") and self.text.startswith("(", self.pos + 1):
                    return False  # process substitution, read as a word
                self.pos += len(op)
                self.pending_op = op
                return True
        return False

    def _add_word(self, word: str) -> None:
        if self.pending_op:
            op, self.pending_op = self.pending_op, ""
            if op in ("<<", "<<-"):
                self.heredocs.append((word, op == "<<-"))
            if op in (">&", "<&") and (word.isdigit() or word == "-"):
                return  # fd duplication, not a file
            self.redirects.append(Redirect(op, word))
            return
        self.argv.append(word)

    def _end_command(self) -> None:
        if self.pending_op:
            self.redirects.append(Redirect(self.pending_op, ""))
            self.pending_op = ""
        first = 0
        while first < len(self.argv) and self.argv[first] in _KEYWORDS:
            first += 1
        argv = self.argv[first:]
        if (argv or self.redirects) and not (argv and argv[0] in _NOT_COMMANDS):
            self.commands.append(SimpleCommand(tuple(argv), tuple(self.redirects)))
        self.argv, self.redirects = [], []

    def _skip_heredocs(self) -> None:
        for delimiter, strip_tabs in self.heredocs:
            while self.pos < len(self.text):
                end = self.text.find("\n", self.pos)
                line = self.text[self.pos : len(self.text) if end < 0 else end]
                self.pos = len(self.text) if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
        self.heredocs = []

    def _word(self) -> str:
        out: list[str] = []
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\n;&|()":
                break
            if ch in "<>" and not text.startswith("(", self.pos + 1):
                break
            if ch == "\\":
                out.append(text[self.pos + 1 : self.pos + 2])
                self.pos += 2
            elif ch == "'":
                end = text.find("'", self.pos + 1)
                end = len(text) if end < 0 else end
                out.append(text[self.pos + 1 : end])
                self.pos = end + 1
            elif ch == '"':
                out.append(self._double_quoted())
            elif ch == "`":
                end = _find_backtick(text, self.pos + 1)
                self._nested(text[self.pos + 1 : end])
                out.append(text[self.pos : end + 1])
                self.pos = end + 1
            elif ch == "$" and text.startswith("$((", self.pos):
                end = text.find("))", self.pos)
                end = len(text) if end < 0 else end + 2
                out.append(text[self.pos : end])
                self.pos = end
            elif text.startswith("$(", self.pos) or (ch in "<>" and text.startswith("(", self.pos + 1)):
                end = self._matching_paren(self.pos + 2)
                self._nested(text[self.pos + 2 : end])
                out.append(text[self.pos : end + 1])
                self.pos = end + 1
            else:
                out.append(ch)
                self.pos += 1
        return "".join(out)

    def _double_quoted(self) -> str:
        text = self.text
        self.pos += 1
        out: list[str] = []
        while self.pos < len(text) and text[self.pos] != '"':
            ch = text[self.pos]
            if ch == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in '$`"\\\n':
                out.append(text[self.pos + 1])
                self.pos += 2
            elif text.startswith("$(", self.pos) and not text.startswith("$((", self.pos):
                end = self._matching_paren(self.pos + 2)
                self._nested(text[self.pos + 2 : end])
                out.append(text[self.pos : end + 1])
                self.pos = end + 1
            elif ch == "`":
                end = _find_backtick(text, self.pos + 1)
                self._nested(text[self.pos + 1 : end])
                out.append(text[self.pos : end + 1])
                self.pos = end + 1
            else:
                out.append(ch)
                self.pos += 1
        self.pos += 1
        return "".join(out)

    def _nested(self, inner: str) -> None:
        self.commands.extend(parse_command(inner, self.budget))

    def _matching_paren(self, start: int) -> int:
        end = _matching_paren(self.text, start)
        self.budget.charge(end - start)  # nested `$(` scan the rest again: count it
        return end


def _find_backtick(text: str, start: int) -> int:
    pos = start
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        if text[pos] == "`":
            return pos
        pos += 1
    return len(text)


def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing a ``$(`` whose body starts at ``start``."""
    depth, pos = 1, start
    while pos < len(text):
        ch = text[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch == "'":
            end = text.find("'", pos + 1)
            pos = len(text) if end < 0 else end + 1
            continue
        if ch == '"':
            pos += 1
            while pos < len(text) and text[pos] != '"':
                pos += 2 if text[pos] == "\\" else 1
            pos += 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    return len(text)


def _strip_wrappers(argv: tuple[str, ...]) -> tuple[str, ...]:
    """Drop leading assignments and wrappers (env, nohup, timeout, xargs...) to reach the real command."""
    i = 0  # an index, not list.pop(0): `nohup nohup ...` x 60k would be quadratic
    while i < len(argv):
        name = posixpath.basename(argv[i])
        if _ASSIGNMENT.match(argv[i]):
            i += 1
        elif name in ("command", "type", "hash") and any(a in ("-v", "-V") for a in argv[i + 1 : i + 2]):
            return ()  # `command -v x` looks x up; it does not run it
        elif name in ("nohup", "command", "builtin", "exec", "time", "setsid", "stdbuf", "ionice", "nice", "env",
                      "chrt", "taskset", "unbuffer", "caffeinate"):
            i += 1
            while i < len(argv) and (argv[i].startswith("-") or (name == "env" and _ASSIGNMENT.match(argv[i]))):
                flag = argv[i]
                i += 1
                if flag in ("-u", "-n", "-c", "-p", "-C", "-S") and i < len(argv) and name in ("env", "nice", "ionice"):
                    i += 1
            if name == "taskset" and i < len(argv):
                i += 1
        elif name in ("timeout", "xargs", "watch"):
            i += 1
            with_value = {"timeout": ("-s", "-k", "--signal", "--kill-after"),
                          "xargs": ("-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"),
                          "watch": ("-n", "-d")}[name]
            while i < len(argv) and argv[i].startswith("-"):
                i += 1
                if argv[i - 1] in with_value and i < len(argv):
                    i += 1
            if name == "timeout" and i < len(argv):
                i += 1  # the duration
        else:
            break
    return argv[i:]


def _expand(cmd: SimpleCommand, budget: ParseBudget) -> list[SimpleCommand]:
    """The command itself (wrappers stripped) plus what it runs: sh -c, eval, find -exec."""
    argv = _strip_wrappers(cmd.argv)
    out = [SimpleCommand(argv, cmd.redirects)]
    if not argv:
        return out
    name = posixpath.basename(argv[0])
    if name in _SHELLS:
        for i, arg in enumerate(argv[1:-1], start=1):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                out.extend(_expand_all(parse_command(argv[i + 1], budget), budget))
                break
    elif name == "eval":
        out.extend(_expand_all(parse_command(" ".join(argv[1:]), budget), budget))
    elif name == "find":
        i = 1
        while i < len(argv):
            if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                end = i + 1
                while end < len(argv) and argv[end] not in (";", "+"):
                    end += 1
                budget.charge(end - i)  # `find -exec find -exec ...` re-reads the rest per level
                out.extend(_expand(SimpleCommand(argv[i + 1 : end]), budget))
                i = end
            i += 1
    return out


def _expand_all(commands: list[SimpleCommand], budget: ParseBudget) -> list[SimpleCommand]:
    return [part for cmd in commands for part in _expand(cmd, budget)]


def parse_command(command: str, budget: ParseBudget | None = None) -> list[SimpleCommand]:
    """Every simple command in ``command``, including those inside substitutions (wrappers kept).

    Raises ``TooComplex`` when nested re-parsing (``eval eval ...``, ``$($(...))``) exceeds ``budget``."""
    return _Lexer(command, budget=budget or ParseBudget.for_text(command)).run()


def command_parts(command: str) -> list[SimpleCommand]:
    """Every command that would run: parsed, wrappers stripped, ``sh -c``/``eval``/``-exec`` followed.

    Raises ``TooComplex`` past the parse budget (see ``command_limits``)."""
    return list(_cached_parts(command))


@lru_cache(maxsize=16)
def _cached_parts(command: str) -> tuple[SimpleCommand, ...]:
    # The gate asks four questions of one command (deny, writes, programs, paths): parse it once.
    budget = ParseBudget.for_text(command)
    return tuple(_expand_all(parse_command(command, budget), budget))


# ------------------------------------------------------------------ DENY list


def _is_dangerous_rm_target(target: str) -> bool:
    if target in ("~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/", "$HOME/*", "/*", "/.", "/.."):
        return True
    if not target.startswith("/"):
        return False
    normal = posixpath.normpath(re.sub("/+", "/", target))
    return normal == "/" or normal.count("/") == 1  # "/" or a top-level directory such as /usr


def _deny_rm(argv: tuple[str, ...]) -> str | None:
    flags = [a for a in argv[1:] if a.startswith("-")]
    if "--no-preserve-root" in flags:
        return "`rm --no-preserve-root` deletes the whole system"
    recursive = any(f in ("--recursive",) or (not f.startswith("--") and ("r" in f or "R" in f)) for f in flags)
    targets = [a for a in argv[1:] if not a.startswith("-")]
    if recursive and any(_is_dangerous_rm_target(t) for t in targets):
        return "`rm -r` of the root, a system directory or the home directory"
    return None


def _git_subcommand(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return (argv[i], argv[i + 1 :]) if i < len(argv) else ("", ())


def _deny_git(argv: tuple[str, ...]) -> str | None:
    sub, rest = _git_subcommand(argv)
    if sub != "push":
        return None
    for arg in rest:
        if arg in ("--force", "--mirror") or arg.startswith("--force-with-lease") or arg == "--force-if-includes":
            return "forced `git push` rewrites the remote history"
        if arg.startswith("-") and not arg.startswith("--") and "f" in arg:
            return "forced `git push` rewrites the remote history"
        if arg.startswith("+") and len(arg) > 1:
            return "forced `git push` (a `+refspec`) rewrites the remote history"
    return None


_CHMOD_WORLD = frozenset({"777", "0777", "a+rwx", "ugo+rwx", "a=rwx", "ugo=rwx", "o+rwx", "+rwx"})


def _deny_one(cmd: SimpleCommand) -> str | None:
    for redirect in cmd.redirects:
        if redirect.op in _WRITE_REDIRECTS and _DISK_DEVICE.match(redirect.target):
            return f"writes to the disk device {redirect.target}"
    if not cmd.argv:
        return None
    argv = cmd.argv
    name = posixpath.basename(argv[0])
    args = argv[1:]
    if name in ("sudo", "su", "doas", "pkexec", "run0"):
        return f"`{name}` runs commands as another user"
    if name in ("shutdown", "reboot", "halt", "poweroff") or (name == "init" and args[:1] in (("0",), ("6",))):
        return f"`{name}` stops or restarts the machine"
    if name in ("systemctl", "loginctl") and any(a in ("poweroff", "reboot", "halt", "kexec") for a in args):
        return f"`{name}` stops or restarts the machine"
    if name.startswith("mkfs") or name in ("mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "parted", "sgdisk"):
        return f"`{name}` formats or repartitions a disk"
    if name == "dd" and any(a.startswith("if=") for a in args):
        return "`dd if=` copies raw data onto files or disks"
    if name in ("dd", "tee", "cp", "mv") and any(_DISK_DEVICE.match(a.removeprefix("of=")) for a in args):
        return "writes to a disk device"
    if name == "rm":
        return _deny_rm(argv)
    if name == "git":
        return _deny_git(argv)
    if name == "chmod" and any(a in _CHMOD_WORLD for a in args):
        return "`chmod 777` makes files writable by everyone"
    return None


def denied_reason(command: str) -> str | None:
    """Why ``command`` is on the hard DENY list, or None when it is not."""
    too_long = oversize_reason(command)
    if too_long:
        return too_long
    if is_fork_bomb(command):
        return "a fork bomb"
    try:
        parts = command_parts(command)
    except RecursionError:
        return "nested too deeply to check"
    except TooComplex as exc:
        return str(exc)
    for cmd in parts:
        reason = _deny_one(cmd)
        if reason:
            return reason
    return None


# ------------------------------------------------------------------ writes


_WRITERS = frozenset({
    "cp", "mv", "rm", "rmdir", "touch", "mkdir", "ln", "install", "truncate", "shred", "unlink", "patch",
    "rsync", "chmod", "chown", "chgrp", "mkfifo", "mknod", "unzip", "gunzip", "gzip", "bzip2", "bunzip2",
    "xz", "unxz", "zstd", "split", "csplit", "dd",
})
_GIT_WRITERS = frozenset({
    "add", "am", "apply", "checkout", "cherry-pick", "clean", "clone", "commit", "init", "merge", "mv", "pull",
    "rebase", "reset", "restore", "revert", "rm", "stash", "switch", "tag", "branch", "worktree", "fetch",
})
_PACKAGE_WRITERS = frozenset({"install", "uninstall", "add", "remove", "ci", "update", "upgrade", "sync"})


def _writes_one(cmd: SimpleCommand) -> bool:
    for redirect in cmd.redirects:
        if redirect.op in _WRITE_REDIRECTS and redirect.target not in _HARMLESS_TARGETS:
            return True
    if not cmd.argv:
        return False
    name = posixpath.basename(cmd.argv[0])
    args = cmd.argv[1:]
    if name in _WRITERS:
        return True
    if name == "tee":
        return any(not a.startswith("-") and a not in _HARMLESS_TARGETS for a in args)
    if name in ("sed", "perl", "ruby"):
        return any(a.startswith("--in-place") or (a.startswith("-") and not a.startswith("--") and "i" in a)
                   for a in args)
    if name == "tar":
        return (bool(args) and any(c in args[0] for c in "xcruA")) or any(
            a in ("--extract", "--create", "--append", "--update") for a in args)
    if name == "curl":
        return any(a in ("-o", "-O", "--output", "--remote-name") or a.startswith("--output=") for a in args)
    if name == "wget":
        return not any(a in ("-O-", "--output-document=-") for a in args) and not (
            "-O" in args and args[args.index("-O") + 1 : args.index("-O") + 2] == ("-",))
    if name == "find":
        return "-delete" in args
    if name == "git":
        return _git_subcommand(cmd.argv)[0] in _GIT_WRITERS
    if name in ("pip", "pip3", "npm", "yarn", "pnpm", "uv", "poetry", "cargo", "go", "apt", "apt-get"):
        return bool(args) and args[0] in _PACKAGE_WRITERS
    return False


def writes_files(command: str) -> bool:
    """True when ``command`` (any part of it) writes, moves or deletes files."""
    try:
        return any(_writes_one(cmd) for cmd in command_parts(command))
    except (RecursionError, TooComplex):
        return True  # cannot tell: count it as an edit


__all__ = ["Redirect", "SimpleCommand", "TooComplex", "command_parts", "denied_reason", "parse_command", "writes_files"]
