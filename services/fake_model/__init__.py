"""A scripted, OpenAI-compatible model server: the only stand-in our tests use.

It is a real HTTP server (stdlib only), so the official ``openai`` client, its
SSE parsing and its retries run for real against it. Start it in-process::

    from services.fake_model import FakeModelServer

    with FakeModelServer("script.yaml") as server:       # or a list of step dicts
        client = AsyncOpenAI(base_url=server.url, api_key="x")
        ...
        assert server.errors == []                        # no request went unanswered
        assert "calc.py" in server.chat_requests[-1].last_message

or as a process: ``ai-coding fake-model --script FILE --port N`` (prints its URL,
serves until SIGTERM or ^C).

Endpoints
---------
``POST /v1/chat/completions`` (``stream: true`` or not), ``GET /v1/models``,
``GET /v1/models/{id}``; admin: ``GET /_admin/requests`` (the request log),
``GET /_admin/state``, ``POST /_admin/script`` (JSON or YAML body: replaces the
script and rewinds), ``POST /_admin/reset`` (rewinds and clears the log).

Script format (YAML or JSON)
----------------------------
A list of steps, or a mapping ``{steps: [...], models: [ids], order: strict, context_window: 0,
window_style: openai}`` (``window_style``: the over-window error worded as openai, llamacpp or gemini).
``context_window`` (tokens; also ``FakeModelServer(context_window=N)``) makes the server
enforce a window as a provider does: a request over it (request bytes / 4) gets the
400 ``context_length_exceeded`` error, consumes no step and is listed in
``server.over_window``.
Each request to ``/v1/chat/completions`` consumes the next step, in order
(``order: first_match`` instead lets the first unused step whose ``match``
holds answer: for concurrent callers such as subagents, whose order varies)::

    - name: read-the-code              # optional; shown in error messages
      match: "fix the bug"             # substring (or list of substrings, all required)
                                       # that the request's LAST message must contain
      match_first_user: "the task"     # ... that its FIRST user message must contain (a subagent's
                                       # request opens with its task, its parent's with the prompt)
      match_anywhere: "result:"        # ... that some message (text or tool arguments) must contain
      match_absent: "subagent done"    # ... that no message may contain
      reasoning: "Let me look."        # streamed as reasoning_content deltas
      text: "I'll read calc.py."       # assistant text (streamed in chunk_chars pieces)
      tool_calls:                      # arguments arrive split across several chunks
        - name: read
          arguments: {path: calc.py}   # an object, sent as JSON ...
        - name: edit
          arguments_raw: '{"path": '   # ... or a raw string, sent verbatim (malformed JSON tests)
          id: call_custom              # optional; default call_<request#>_<k>
      finish_reason: tool_calls        # default: tool_calls if tool_calls else stop
      usage_shape: openai              # openai (default) | deepseek | bare | none
      usage: {prompt_tokens: 900, completion_tokens: 20, cached_tokens: 512}  # override any figure
      delay_ms: 0                      # wait before the first byte
      chunk_delay_ms: 0                # wait between stream chunks
      chunk_chars: 12                  # text/reasoning characters per chunk
      argument_chunk_chars: 8          # tool-call argument characters per chunk
      repeat: 1                        # answer this many requests (or "forever")
      fault: ...                       # instead of a normal reply, see below
      wire: openai                     # or a provider's quirk: index_zero | no_index | message |
                                       # split_surrogates | content_parts | magistral | json_parts |
                                       # think_tags | no_finish_reason | empty_finish_reason |
                                       # anthropic | anthropic_json (see services/fake_model/wire.py)
      require_reasoning_echo: false    # refuse (HTTP 400) as DeepSeek's thinking mode does when a
                                       # tool-calling turn's reasoning_content is not sent back
      reject_params: [stream_options]  # refuse (HTTP 400) a request carrying one of these fields,
      reject_style: openai             # worded as OpenAI ("Unknown parameter") or pydantic
                                       # (vLLM's extra_forbidden); the refusal consumes no step

Faults (``fault: KIND`` or ``fault: {kind: KIND, ...}``):

- ``rate_limit``: 429 with ``Retry-After: retry_after`` (seconds, default 1) and ``retry-after-ms``.
- ``server_error``: 500 with an OpenAI error body.
- ``context_length``: 400, ``error.code = context_length_exceeded``; ``style: llamacpp | gemini``
  words it as those servers do, stating ``window`` (tokens, default 128000).
- ``auth_error``: 401, ``error.code = invalid_api_key``.
- ``http_error``: any ``status`` (400-599) with ``message`` and ``code``; ``body: string | list |
  text | html`` shapes it as LM Studio, Gemini, a plain-text proxy or an HTML error page does.
- ``stall``: stream ``after_chunks`` chunks (default 1), then hang ``seconds`` (then finish
  normally) or, without ``seconds``, until the client gives up.
- ``drop``: stream ``after_chunks`` chunks, then close the connection mid-body.

All match keys of a step must hold. A request that fails the next step's match keys gets a 400 with
``error.code = fake_script_mismatch`` naming the key, the expected substring and what
arrived (nothing is consumed); a request after the last step gets a 400 with
``fake_script_exhausted``. Both are listed in ``server.errors``.

Usage: prompt tokens ~ request bytes / 4; cached tokens ~ the longest common
prefix of this request's serialized messages with the previous request's / 4;
in the OpenAI shape as ``prompt_tokens_details.cached_tokens``, in the DeepSeek
shape as ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``; ``bare``
has no cache figure; ``none`` sends no usage at all. Streams carry usage only
when the request sets ``stream_options.include_usage``.

Every ``/v1`` request is recorded (``server.requests``: method, path, JSON body,
time, status, step, and ``handling_ms`` / ``overhead_ms``, the server's own time
without scripted waits, for benchmarks to subtract).
"""

from services.fake_model.errors import FakeModelError, ScriptError
from services.fake_model.script import Script, Step, load_script_file, parse_script
from services.fake_model.server import FakeModelServer, RecordedRequest

__all__ = [
    "FakeModelError",
    "FakeModelServer",
    "RecordedRequest",
    "Script",
    "ScriptError",
    "Step",
    "load_script_file",
    "parse_script",
]
