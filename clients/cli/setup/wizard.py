"""The first-run questions: provider, endpoint, key (never echoed), model; then one test request,
and only when the model answered, the config is written.

The terminal is a small Protocol so the flow reads top to bottom; the real one is
:class:`ConsoleTerminal` (``input`` and ``getpass``). Ctrl-C or end of input stops with nothing written.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from clients.cli.setup import probe
from clients.cli.setup.choices import (
    CHOICES,
    Choice,
    KeyRef,
    ModelEntry,
    choice_for,
    default_base_url,
    key_env,
    ollama_base_url,
    pick_model,
    var_reference,
    write_user_config,
)

MAX_TRIES = 3
MAX_LISTED = 30


class SetupAborted(Exception):
    """The user stopped the questions (Ctrl-C, end of input) or ran out of tries; nothing was written."""


class Terminal(Protocol):
    def ask(self, question: str) -> str: ...
    def secret(self, question: str) -> str: ...
    def say(self, line: str) -> None: ...


class ConsoleTerminal:
    """Questions on the real terminal; the key is read with getpass (no echo)."""

    def ask(self, question: str) -> str:
        try:
            return input(question).strip()
        except (EOFError, KeyboardInterrupt):
            print()
            raise SetupAborted("stopped; nothing was written") from None

    def secret(self, question: str) -> str:
        try:
            return getpass.getpass(question).strip()
        except (EOFError, KeyboardInterrupt):
            print()
            raise SetupAborted("stopped; nothing was written") from None

    def say(self, line: str) -> None:
        print(line, flush=True)


@dataclass(frozen=True)
class Draft:
    """What has been answered so far."""

    choice: Choice
    base_url: str
    key: KeyRef = field(default_factory=KeyRef)
    model: str = ""


def yes(answer: str, default: bool = True) -> bool:
    """``y``/``yes``/Enter (when ``default``) -> True."""
    return default if not answer else answer.strip().lower() in ("y", "yes", "o", "ok")


def menu_pick(answer: str, options: list[str]) -> int | None:
    """The 0-based index a typed number or exact name selects, or None."""
    text = answer.strip()
    if text.isdigit() and 1 <= int(text) <= len(options):
        return int(text) - 1
    return options.index(text) if text in options else None


def ask_provider(term: Terminal) -> Choice:
    term.say("Which provider serves your model?")
    for n, choice in enumerate(CHOICES, 1):
        term.say(f"  {n}) {choice.label}")
    for _ in range(MAX_TRIES):
        answer = term.ask(f"Provider [1-{len(CHOICES)}]: ")
        index = menu_pick(answer, [c.provider for c in CHOICES])
        found = CHOICES[index] if index is not None else choice_for(answer)
        if found is not None:
            return found
        term.say(f"  type a number from 1 to {len(CHOICES)}")
    raise SetupAborted("no provider chosen; nothing was written")


def ask_base_url(term: Terminal, choice: Choice, env: Mapping[str, str]) -> str:
    default = default_base_url(choice.provider, env)
    if choice.provider != "generic":
        return default
    for _ in range(MAX_TRIES):
        url = term.ask("Base URL of the endpoint (usually ends in /v1, e.g. http://localhost:8000/v1): ")
        if url.startswith(("http://", "https://")):
            return url.rstrip("/")
        term.say("  a URL starts with http:// or https://")
    raise SetupAborted("no endpoint given; nothing was written")


def ask_key(term: Terminal, draft: Draft, env: Mapping[str, str], retry: bool = False) -> KeyRef:
    variable = key_env(draft.choice.provider)
    offer = f"{variable} is set in this shell; use it (the config will say ${{{variable}}})? [Y/n] "
    if not retry and variable and env.get(variable) and yes(term.ask(offer)):
        return KeyRef(variable=variable)
    where = "stored in your user config, readable only by you"
    hint = f"hidden; {where}; or type $VAR to name an environment variable"
    for _ in range(MAX_TRIES):
        if draft.choice.needs_key:
            typed = term.secret(f"API key for {draft.choice.label} ({hint}): ")
        else:
            typed = term.secret(f"API key ({hint}; Enter if the endpoint needs none): ")
        name = var_reference(typed)
        if name and not env.get(name):
            term.say(f"  {name} is not set in this shell; export it first, or type the key itself")
            continue
        if name:
            return KeyRef(variable=name)
        if typed or not draft.choice.needs_key:
            return KeyRef(literal=typed)
        term.say(f"  {draft.choice.label} needs a key")
    raise SetupAborted("no key given; nothing was written")


def ask_model(term: Terminal, listed: list[str], suggested: str) -> str:
    default = pick_model(listed, suggested)
    if listed:
        term.say(f"The endpoint lists {len(listed)} model(s):")
        for n, name in enumerate(listed[:MAX_LISTED], 1):
            term.say(f"  {n}) {name}")
    for _ in range(MAX_TRIES):
        answer = term.ask(f"Model [{default}]: " if default else "Model name: ") or default
        index = menu_pick(answer, listed)
        if index is not None:
            return listed[index]
        if answer:
            return answer
    raise SetupAborted("no model chosen; nothing was written")


def offer_ollama(term: Terminal, env: Mapping[str, str]) -> Draft | None:
    """When a local Ollama answers, offer it first."""
    url = ollama_base_url(env)
    listed = probe.answers(url)
    if not listed:
        return None
    if not yes(term.ask(f"A local Ollama answers at {url} ({len(listed)} model(s)). Use it? [Y/n] ")):
        return None
    choice = choice_for("ollama")
    assert choice is not None
    return Draft(choice, url)


def _models_of(term: Terminal, draft: Draft, env: Mapping[str, str]) -> tuple[Draft, list[str]]:
    """The endpoint's model list, asking again for the key (401) or the URL (unreachable, generic)."""
    for attempt in range(1, MAX_TRIES + 1):
        term.say(f"Asking {draft.base_url}/models ...")
        try:
            return draft, probe.list_models(draft.base_url, draft.key.value(env))
        except probe.EndpointProblem as err:
            term.say(f"  error: {err}")
            if attempt == MAX_TRIES:
                break
            if err.kind is probe.Problem.KEY_REFUSED:
                draft = replace(draft, key=ask_key(term, draft, env, retry=True))
            elif err.kind is probe.Problem.UNREACHABLE and draft.choice.provider == "generic":
                draft = replace(draft, base_url=ask_base_url(term, draft.choice, env))
            elif err.kind is probe.Problem.UNREACHABLE:
                raise SetupAborted(f"{err}; check your network (or proxy settings) and run `ai-coding setup` "
                                   "again; nothing was written") from None
            else:
                return draft, []  # some servers list nothing: ask for the name
    raise SetupAborted("the endpoint kept refusing; nothing was written")


def _tested(term: Terminal, draft: Draft, env: Mapping[str, str], listed: list[str]) -> Draft:
    """Ask the model once; on a refused key or unknown model, ask that again and retry."""
    for attempt in range(1, MAX_TRIES + 1):
        term.say(f"Testing one request to {draft.model} ...")
        try:
            check = probe.check_chat(draft.base_url, draft.key.value(env), draft.model)
        except probe.EndpointProblem as err:
            left = MAX_TRIES - attempt
            term.say(f"  error: {err}")
            if not left:
                break
            if err.kind is probe.Problem.KEY_REFUSED:
                term.say(f"  type the key again ({left} tr{'y' if left == 1 else 'ies'} left; Ctrl-C stops)")
                draft = replace(draft, key=ask_key(term, draft, env, retry=True))
            elif err.kind is probe.Problem.MODEL_UNKNOWN:
                draft = replace(draft, model=ask_model(term, listed, ""))
            else:
                raise SetupAborted(f"{err}; nothing was written") from None
            continue
        term.say(f"  ok: the model answered in {check.seconds:.1f} s ({check.reply[:40]!r})")
        return draft
    raise SetupAborted("the test request failed; nothing was written")


def run_setup(term: Terminal, env: Mapping[str, str] | None = None, path: Path | None = None) -> Path:
    """The whole flow; the path of the config written. Raises :class:`SetupAborted`."""
    environ = dict(os.environ if env is None else env)
    term.say("No model is configured yet: a few questions set one up (Ctrl-C stops; nothing is written "
             "until a test request succeeds).")
    draft = offer_ollama(term, environ)
    if draft is None:
        choice = ask_provider(term)
        draft = Draft(choice, ask_base_url(term, choice, environ))
        draft = replace(draft, key=ask_key(term, draft, environ))
    draft, listed = _models_of(term, draft, environ)
    draft = replace(draft, model=ask_model(term, listed, draft.choice.suggested_model))
    draft = _tested(term, draft, environ, listed)
    entry = ModelEntry(draft.choice.provider, draft.model, draft.base_url, draft.key)
    written = write_user_config(entry, environ, path)
    kept = f"as ${{{draft.key.variable}}}" if draft.key.variable else "in the file" if draft.key.literal else "none"
    term.say(f"wrote {written} (readable only by you): model {draft.model} via {draft.choice.provider}; key: {kept}")
    return written


def main_setup(env: Mapping[str, str] | None = None) -> int:
    """Run the questions on the console; the exit code (0 written, 1 failed or stopped)."""
    try:
        run_setup(ConsoleTerminal(), env)
    except SetupAborted as err:
        print(f"ai-coding setup: {err}", file=sys.stderr)
        return 1
    return 0
