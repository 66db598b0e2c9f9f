// Drives `ai-coding acp` with the official ACP TypeScript SDK's client side (@agentclientprotocol/sdk),
// taps every JSON-RPC line both ways and checks it against the protocol's published JSON schema
// (the SDK ships schema/v1/schema.json). Prints one JSON report on stdout.
//
//   node acp_client.mjs full <cwd> -- <agent command...>
//   node acp_client.mjs load <cwd> <sessionId> -- <agent command...>
//   node acp_client.mjs editor <cwd> <buffers JSON: {relative path: unsaved text}> <prompt> -- <agent command...>
//     (announces fs and terminal; answers fs/read_text_file from the buffers, else the disk, as an editor does;
//     a buffer of null answers with an error)
//   node acp_client.mjs mcp <cwd> <mcpServers JSON> <handshake dir> -- <agent command...>
//     (session/new with the editor's MCP servers; writes <dir>/session, waits for <dir>/release, then
//     one prompt and session/close, writes <dir>/closed, waits for <dir>/end)
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, "node_modules", "@agentclientprotocol", "sdk", "schema", "v1", "schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
ajv.addSchema(schema, "acp");
const check = (ref) => ajv.compile({ $ref: `acp${ref}` });
const agentMessage = check("#/anyOf/0");
const clientMessage = check("#/anyOf/1");
const RESPONSES = {
  initialize: "InitializeResponse", "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
  "session/prompt": "PromptResponse", "session/list": "ListSessionsResponse", "session/close": "CloseSessionResponse",
  "session/set_mode": "SetSessionModeResponse", "session/resume": "ResumeSessionResponse",
  "session/request_permission": "RequestPermissionResponse", "fs/read_text_file": "ReadTextFileResponse",
};
const PARAMS = {
  initialize: "InitializeRequest", "session/new": "NewSessionRequest", "session/load": "LoadSessionRequest",
  "session/prompt": "PromptRequest", "session/cancel": "CancelNotification", "session/update": "SessionNotification",
  "session/request_permission": "RequestPermissionRequest", "session/set_mode": "SetSessionModeRequest",
  "fs/read_text_file": "ReadTextFileRequest",
};
const compiled = {};
const def = (name) => (compiled[name] ??= check(`#/$defs/${name}`));

const [scenario, cwd, ...rest] = process.argv.slice(2);
const dash = rest.indexOf("--");
const extra = rest.slice(0, dash);
const [command, ...args] = rest.slice(dash + 1);

const wire = [];
const schemaErrors = [];
const methodsById = { agent: new Map(), client: new Map() };

function tap(direction, line) {
  let message;
  try { message = JSON.parse(line); } catch { schemaErrors.push({ direction, line, error: "not JSON" }); return; }
  wire.push({ direction, message });
  const whole = direction === "agent" ? agentMessage : clientMessage;
  if (!whole(message)) schemaErrors.push({ direction, message, errors: whole.errors.slice(0, 3) });
  const own = methodsById[direction];
  const peer = methodsById[direction === "agent" ? "client" : "agent"];
  if (message.method && PARAMS[message.method]) {
    const v = def(PARAMS[message.method]);
    if (!v(message.params)) schemaErrors.push({ direction, message, errors: v.errors.slice(0, 3) });
  }
  if (message.method && "id" in message) own.set(message.id, message.method);
  if (!message.method && "id" in message && "result" in message) {
    const method = peer.get(message.id);
    const name = RESPONSES[method];
    if (name) {
      const v = def(name);
      if (!v(message.result)) schemaErrors.push({ direction, method, message, errors: v.errors.slice(0, 3) });
    }
  }
}

function lines(direction) {
  let buffered = "";
  return new TransformStream({
    transform(chunk, controller) {
      buffered += new TextDecoder().decode(chunk);
      let at;
      while ((at = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        if (line.trim()) tap(direction, line);
      }
      controller.enqueue(chunk);
    },
  });
}

const started = performance.now();
const child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "inherit"] });
const fromAgent = Readable.toWeb(child.stdout).pipeThrough(lines("agent"));
const toAgentTap = lines("client");
toAgentTap.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
const stream = acp.ndJsonStream(toAgentTap.writable, fromAgent);

const updates = [];
const permissions = [];
let onUpdate = () => {};
const fsReads = [];
const refused = [];
const report = { scenario, updates, permissions, stopReasons: [], schemaErrors, wire, fsReads, refused };
const buffers = scenario === "editor"
  ? Object.fromEntries(Object.entries(JSON.parse(extra[0])).map(([p, t]) => [resolve(cwd, p), t])) : {};
const editorOnly = (method) => async (ctx) => {
  refused.push({ method, params: ctx.params });
  throw acp.RequestError.methodNotFound(method);
};

const app = acp.client({ name: "ai-coding-e2e" })
  .onNotification("session/update", (ctx) => { updates.push(ctx.params); onUpdate(ctx.params); })
  .onRequest("session/request_permission", async (ctx) => {
    const input = JSON.stringify(ctx.params.toolCall.rawInput ?? {});
    const optionId = input.includes("reject-me") ? "reject_once" : "allow_once";
    permissions.push({ toolCall: ctx.params.toolCall, options: ctx.params.options, chose: optionId });
    return { outcome: { outcome: "selected", optionId } };
  })
  .onRequest("fs/read_text_file", async (ctx) => {
    const path = ctx.params.path;
    fsReads.push(ctx.params);
    if (buffers[path] === null) throw acp.RequestError.resourceNotFound(path);  // an editor that cannot read it
    return { content: path in buffers ? buffers[path] : readFileSync(path, "utf8") };
  })
  .onRequest("fs/write_text_file", editorOnly("fs/write_text_file"))
  .onRequest("terminal/create", editorOnly("terminal/create"));

const text = (t) => [{ type: "text", text: t }];
const until = async (path) => { while (!existsSync(path)) await new Promise((r) => setTimeout(r, 50)); };

try {
  await app.connectWith(stream, async (agent) => {
    const editor = scenario === "editor";
    const init = await agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: editor, writeTextFile: editor }, terminal: editor },
      clientInfo: { name: "ai-coding-e2e", version: "1" },
    });
    report.initializeMs = performance.now() - started;
    report.initialize = init;
    if (scenario === "full") {
      const session = await agent.request("session/new", { cwd, mcpServers: [] });
      report.sessionId = session.sessionId;
      report.modes = session.modes;
      const first = await agent.request("session/prompt", { sessionId: session.sessionId, prompt: text("fix the greeting, then tidy up") });
      report.stopReasons.push(first.stopReason);
      report.firstTurnUpdates = updates.length;
      // The long call: cancel once it runs (the approval was granted, its tool_call is in progress).
      onUpdate = (n) => {
        const u = n.update;
        if (u.sessionUpdate === "tool_call_update" && u.status === "in_progress" && !report.cancelSent) {
          report.cancelSent = true;
          setTimeout(() => agent.notify("session/cancel", { sessionId: session.sessionId }), 500);
        }
      };
      const second = await agent.request("session/prompt", { sessionId: session.sessionId, prompt: text("run the slow job") });
      report.stopReasons.push(second.stopReason);
    } else if (editor) {
      const session = await agent.request("session/new", { cwd, mcpServers: [] });
      report.sessionId = session.sessionId;
      const done = await agent.request("session/prompt", { sessionId: session.sessionId, prompt: text(extra[1]) });
      report.stopReasons.push(done.stopReason);
    } else if (scenario === "mcp") {
      const dir = extra[1];
      const session = await agent.request("session/new", { cwd, mcpServers: JSON.parse(extra[0]) });
      report.sessionId = session.sessionId;
      writeFileSync(join(dir, "session"), session.sessionId);
      await until(join(dir, "release"));
      const done = await agent.request("session/prompt", { sessionId: session.sessionId, prompt: text("call the editor's server") });
      report.stopReasons.push(done.stopReason);
      report.closed = await agent.request("session/close", { sessionId: session.sessionId });
      writeFileSync(join(dir, "closed"), "");
      await until(join(dir, "end"));
    } else if (scenario === "load") {
      const loaded = await agent.request("session/load", { sessionId: extra[0], cwd, mcpServers: [] });
      report.loaded = loaded;
      report.replayedBeforeAnswer = updates.length;
      const listed = await agent.request("session/list", { cwd });
      report.listed = listed;
    }
  });
} catch (err) {
  report.error = String(err?.message ?? err);
}
child.stdin.end();
await new Promise((resolve) => { if (child.exitCode !== null) resolve(); else child.on("exit", resolve); });
report.exitCode = child.exitCode;
process.stdout.write(JSON.stringify(report) + "\n");
