// toolgate's mod for Claude Code: every tool call, and every process or
// request another mod makes, judged by toolgate's one chain before it runs,
// and every tool result judged before the model reads it.
//
// Why a mod, and why outermost: since 2.1.287 Claude Code runs settings
// hooks (toolgate's classic integration) *inside* a chain of in-process
// mods. A mod nearer the outside can answer `classic.PreToolUse` itself,
// allow at `tool.check`, drop `hooks` from `settings.read`, answer
// `tool.call` and run the command through `$.process.run`, or answer
// `classic.PostToolUse` — each one runs a call toolgate refused, or shows
// the model an output toolgate would have withheld. A mod listed in the
// user's (or managed) `prependPlugins` is seated in the `prepend` tier and
// hears every event first, before any mod a repository or a marketplace
// brought. `toolgate install claude-code --mod` writes this folder and
// that list.
//
// Why it is this small: it only relays. Each question is POSTed, in Claude
// Code's own hook-input shape, to `toolgate serve --http` (the same
// endpoint the classic http hook uses, so the decision, every text the
// model reads and the decision log are made by toolgate, tested in Rust),
// and the answer is mapped onto the mod's events. Anything it cannot read
// refuses: a server that does not answer, a status but 2xx, a body that is
// not one JSON answer, a hook that throws or overruns its budget (each
// gating hook's `.catch` answers a refusal; without one Claude Code would
// skip the hook and run the call).
//
// What it hooks (Claude Code 2.1.332, each pinned by a live test in
// tests/all/live/claude_mods.rs):
// - `tool.call`: judges the call as the model made it (toolgate's
//   `pre_tool_use`); a deny answers `{ deny }` and nothing beneath runs; a
//   rewrite is passed on; after `next(e)` the result is judged
//   (`post_tool_use`) before anything above — the model — sees it.
// - `tool.check`: a call toolgate answered `ask` for is an ask here, where
//   no mod beneath can answer it away (Claude Code's own confirmation; a
//   run nobody can answer refuses it).
// - `tool.run`: the call as it will run; if a mod beneath changed it after
//   toolgate judged it, it is judged again, and refused if it is refused.
// - `process.run`, `process.spawn`, `http.fetch`, `fs.write`: another mod's
//   own process, request or file write, judged as a call of its own: tools
//   `mod:process.run`, `mod:process.spawn` (input `{command: argv, cwd,
//   plugin}`: the standard guards read it as a shell command),
//   `mod:http.fetch` (`{url, method, plugin}`), `mod:fs.write` (`{path,
//   text, plugin}`: the paths guard reads it as a write). The engine's own
//   calls (the model's requests) and this mod's pass.
// - `session.id`, `session.cwd`, `env.get`, `fs.read`, `http.fetch` when
//   this mod asks: straight to the engine (`next.to(e, "core")`), so no mod
//   beneath can forge the server's answer or the session it judges.
//
// `config.js` beside this file (written by install) names the server.

import { SERVER_URL, TOKEN_FILE, SELF } from "./config.js";

// What toolgate decided per call id: the input it judged (canonical JSON)
// and whether it asked. Bounded: the oldest entry goes first.
const judged = new Map();
const MAX_JUDGED = 4096;

// The keys of `tool.call`'s `e` that are the engine's, not the tool's input.
const RESERVED = new Set(["tool", "tool_use_id", "agentId", "requestMeta", "consent"]);

const refusal = (why) => `toolgate could not evaluate this call, so it is blocked: ${why}`;

function inputOf(e) {
  const input = {};
  for (const [k, v] of Object.entries(e)) if (!RESERVED.has(k)) input[k] = v;
  return input;
}

// JSON with every object's keys sorted: two inputs are the same call
// exactly when their canonical texts are equal.
function canon(value) {
  if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canon(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function remember(id, entry) {
  if (typeof id !== "string") return;
  judged.delete(id);
  judged.set(id, entry);
  while (judged.size > MAX_JUDGED) judged.delete(judged.keys().next().value);
}

// The server's secret, read once (each `$` call is a hop through the
// engine): from Claude Code's environment, else the file install named.
// Forgotten when the server refuses it (a server started afresh).
let secret;

async function token($) {
  if (secret !== undefined) return secret;
  const fromEnv = await $.env.get("TOOLGATE_HTTP_TOKEN");
  secret =
    typeof fromEnv === "string" && fromEnv.trim() !== ""
      ? fromEnv.trim()
      : String(await $.fs.read(TOKEN_FILE)).trim();
  return secret;
}

// Where a question is asked from: the session and its folder (the server
// finds the workspace's `.toolgate/` from it), read once per tool call.
async function where($) {
  return { session_id: await $.session.id(), cwd: await $.session.cwd() };
}

// One question to toolgate: the hook input Claude Code's settings hooks
// get, answered as toolgate answers them. Throws on anything but an answer.
async function ask($, at, fields) {
  const body = JSON.stringify({ ...at, ...fields });
  const post = async () =>
    $.http.fetch(SERVER_URL, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${await token($)}` },
      body,
    });
  let r = await post();
  if (r.status === 401 || r.status === 403) {
    secret = undefined;
    r = await post();
  }
  if (!r.ok) throw new Error(`toolgate serve answered HTTP ${r.status}: ${String(r.text).slice(0, 300)}`);
  const text = String(r.text).trim();
  if (text === "") return {};
  const answer = JSON.parse(text);
  if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
    throw new Error("toolgate serve's answer is not a JSON object");
  }
  return answer;
}

// toolgate's `pre_tool_use` answer, in the mod's terms.
async function judgePre($, at, tool, id, input) {
  const a = await ask($, at, { hook_event_name: "PreToolUse", tool_name: tool, tool_input: input, tool_use_id: id });
  const s = a.hookSpecificOutput ?? {};
  const context = typeof s.additionalContext === "string" ? [s.additionalContext] : [];
  if (a.continue === false) return { deny: String(a.stopReason ?? "toolgate stopped the agent") };
  switch (s.permissionDecision) {
    case "deny":
      return { deny: String(s.permissionDecisionReason ?? "denied by toolgate") };
    case "ask":
      return { ask: String(s.permissionDecisionReason ?? "toolgate asks"), input: s.updatedInput, context };
    case "allow":
    case undefined:
      return { allow: true, input: s.updatedInput, context };
    default:
      throw new Error(`toolgate answered an unknown permissionDecision ${JSON.stringify(s.permissionDecision)}`);
  }
}

// toolgate's `post_tool_use` answer for `result` (what `next(e)` resolved
// to), in the mod's terms.
async function judgePost($, at, tool, id, input, result) {
  const failed = result.isError === true;
  const a = await ask($, at, {
    hook_event_name: failed ? "PostToolUseFailure" : "PostToolUse",
    tool_name: tool,
    tool_input: input,
    tool_use_id: id,
    ...(failed ? { error: result.text ?? result.result } : { tool_response: result.result }),
  });
  const s = a.hookSpecificOutput ?? {};
  const context = [...(result.context ?? [])];
  if (typeof s.additionalContext === "string") context.push(s.additionalContext);
  if (a.continue === false) return { deny: String(a.stopReason ?? "toolgate withheld this output") };
  if (a.decision === "block") return { deny: String(a.reason ?? "toolgate withheld this output") };
  if (s.updatedToolOutput !== undefined) return { result: s.updatedToolOutput, context };
  if (failed) return result;
  return context.length > 0 ? { ...result, context } : result;
}

// The call `e` with its tool input replaced by `input`.
function withInput(e, input) {
  const out = {};
  for (const k of RESERVED) if (e[k] !== undefined) out[k] = e[k];
  return { ...out, ...input };
}

// Whether a `$` call was made by another mod (not the engine, not this one).
const foreign = (next) => next.origin.plugin !== SELF && next.origin.plugin !== "engine" && next.origin.tier !== "core";

async function judgeForeign($, next, tool, input) {
  const verdict = await judgePre($, await where($), tool, undefined, { ...input, plugin: next.origin.plugin });
  if ("deny" in verdict) return verdict.deny;
  if ("ask" in verdict) return `${verdict.ask} (a mod's own call cannot be confirmed)`;
  return undefined;
}

// This mod's own `$` calls go to the engine, past every mod beneath.
function own($, e, next) {
  return next.origin.plugin === SELF ? next.to(e, "core") : next(e);
}

// A failure there refuses this mod's own call (its question then fails,
// and the call it was asking about is refused); another mod's goes on.
function ownFailed($, e, next) {
  return next.origin.plugin === SELF ? { deny: "toolgate's mod could not reach the engine" } : next(e);
}

export function register(on) {
  // This mod's own questions go straight to the engine: no mod beneath may
  // answer them.
  // (One `on` per event, each named literally, so `claude plugin validate`
  // and `toolgate doctor` read exactly what this module hooks.)
  on("session.id", own).catch(ownFailed);
  on("session.cwd", own).catch(ownFailed);
  on("env.get", own).catch(ownFailed);
  on("fs.read", own).catch(ownFailed);

  on("tool.call", async ($, e, next) => {
    const input = inputOf(e);
    const at = await where($);
    const verdict = await judgePre($, at, e.tool, e.tool_use_id, input);
    if ("deny" in verdict) {
      remember(e.tool_use_id, { input: null });
      return { deny: verdict.deny };
    }
    const runs = verdict.input !== undefined ? verdict.input : input;
    remember(e.tool_use_id, { input: canon(runs), ask: verdict.ask });
    const result = await next(verdict.input !== undefined ? withInput(e, runs) : e);
    if ("deny" in result) return result;
    const shown = await judgePost($, at, e.tool, e.tool_use_id, runs, result);
    if (verdict.context.length > 0 && !("deny" in shown)) {
      return { ...shown, context: [...verdict.context, ...(shown.context ?? [])] };
    }
    return shown;
  }).catch(($, e, next) => ({ deny: refusal(next.error.message ?? next.error.kind) }));

  on("tool.check", async ($, e, next) => {
    const seen = judged.get(e.tool_use_id);
    if (seen !== undefined && seen.ask !== undefined) return { decision: "ask", reason: seen.ask };
    return next(e);
  }).catch(() => ({ decision: "deny", reason: refusal("its tool.check hook failed") }));

  on("tool.run", async ($, e, next) => {
    const input = inputOf(e);
    const seen = judged.get(e.tool_use_id);
    if (seen !== undefined && seen.input === canon(input)) return next(e);
    // Changed beneath toolgate (or never judged): judge what will run.
    const verdict = await judgePre($, await where($), e.tool, e.tool_use_id, input);
    if ("deny" in verdict) return { deny: verdict.deny };
    if ("ask" in verdict) return { deny: `${verdict.ask} (the call was changed after it was judged, so it cannot be confirmed)` };
    if (verdict.input !== undefined && canon(verdict.input) !== canon(input)) {
      return { deny: "toolgate would rewrite this call, and a call about to run cannot be rewritten" };
    }
    return next(e);
  }).catch(($, e, next) => (next.called ? next(e) : { deny: refusal(next.error.message ?? next.error.kind) }));

  on("process.run", async ($, e, next) => {
    if (!foreign(next)) return next(e);
    const no = await judgeForeign($, next, "mod:process.run", { command: e.argv, cwd: e.init?.cwd ?? null });
    return no === undefined ? next(e) : { deny: no };
  }).catch(($, e, next) => (next.called ? next(e) : { deny: refusal(next.error.message ?? next.error.kind) }));

  on("process.spawn", async function* ($, e, next) {
    if (foreign(next)) {
      const no = await judgeForeign($, next, "mod:process.spawn", { command: e.argv, cwd: e.cwd ?? null });
      if (no !== undefined) return { deny: no };
    }
    return yield* next(e);
  }).catch(async function* ($, e, next) {
    if (next.called) return yield* next(e);
    return { deny: refusal(next.error.message ?? next.error.kind) };
  });

  on("fs.write", async ($, e, next) => {
    if (!foreign(next)) return next(e);
    const no = await judgeForeign($, next, "mod:fs.write", { path: e.path, text: e.text });
    return no === undefined ? next(e) : { deny: no };
  }).catch(($, e, next) => (next.called ? next(e) : { deny: refusal(next.error.message ?? next.error.kind) }));

  on("http.fetch", async ($, e, next) => {
    if (next.origin.plugin === SELF) return next.to(e, "core");
    if (!foreign(next)) return next(e);
    const no = await judgeForeign($, next, "mod:http.fetch", { url: e.url, method: e.init?.method ?? "GET" });
    return no === undefined ? next(e) : { deny: no };
  }).catch(($, e, next) => (next.called ? next(e) : { deny: refusal(next.error.message ?? next.error.kind) }));
}
