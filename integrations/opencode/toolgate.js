// toolgate for OpenCode: hands every tool call to `toolgate opencode` and
// applies its answer; blocks the call whenever toolgate cannot answer.
//
// Why a plugin, and why it is this small: OpenCode's hooks are in-process JS
// plugins, not commands, and it forgives them everything. A plugin that does
// not load (a syntax error: skipped without a word) lets every call through;
// a hook that never settles hangs OpenCode forever (it has no hook timeout).
// So this file only relays: the decision, every message the model reads and
// the mapping to OpenCode's objects are made by `toolgate opencode`, tested in
// Rust; the plugin throws on anything else — a missing or crashing binary, an
// exit code but 0, output that is not one JSON answer, no answer within the
// deadline. `toolgate opencode` itself asks a running `toolgate serve` when
// one answers, and evaluates the call itself otherwise.
//
// What OpenCode (1.18.33) honours, observed live:
// - a throw in `tool.execute.before`: the tool does not run, the model reads
//   the message as the tool's result;
// - `output.args` mutated in place: the tool runs the rewrite, and OpenCode's
//   own `permission` rules judge the rewrite (replacing `output.args` with a
//   new object is silently ignored);
// - `output.output` set in `tool.execute.after` (MCP tools: `output.content`):
//   the model reads it instead; a throw there: the model reads the message
//   instead of the output. `after` is not called for a tool that failed.
//
// Only functions may be exported: OpenCode refuses a plugin file with any
// other export.
//
// `toolgate install opencode` writes this file with the absolute path of the
// binary below; options given in opencode.json (`"plugin": [["file:///…/toolgate.js",
// {"toolgate": "/abs/toolgate", "deadline_ms": 60000}]]`) override it.

const TOOLGATE = "toolgate"; // toolgate-binary
// OpenCode waits for a hook forever: past this the call is blocked. toolgate
// is told it (`timeout_ms`) and answers "blocked" well before it.
const DEADLINE_MS = 60000;
// The rule `toolgate install opencode` may add to OpenCode's `permission`
// (`"*": {"*": "deny", <this>: "deny"}`): while this plugin is not loaded,
// OpenCode refuses every call; once it loaded and toolgate answers, the
// plugin lifts it.
const SENTINEL = "toolgate plugin not loaded";

export const Toolgate = async (ctx, options = {}) => {
  const binary = typeof options.toolgate === "string" ? options.toolgate : TOOLGATE;
  const deadline = Number.isInteger(options.deadline_ms) && options.deadline_ms > 0 ? options.deadline_ms : DEADLINE_MS;
  const directory = ctx.directory;
  // Context for the model asked before the call, given with its result.
  const pending = new Map();
  const key = (input) => `${input.sessionID}\u0000${input.callID}`;

  const blocked = (why) => new Error(`toolgate could not evaluate this call, so it is blocked: ${why}`);

  async function ask(envelope) {
    let child;
    try {
      child = Bun.spawn([binary, "opencode"], { cwd: directory, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    } catch (e) {
      throw blocked(`${binary} cannot be started: ${e && e.message}`);
    }
    // Raced, not awaited after a kill: a killed toolgate's children may keep
    // its pipes open.
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => {
        try { child.kill("SIGKILL"); } catch {}
        reject(blocked(`${binary} did not answer within ${deadline} ms`));
      }, deadline);
    });
    let stdout, stderr, code;
    try {
      try {
        child.stdin.write(JSON.stringify({ ...envelope, directory, timeout_ms: deadline }));
        child.stdin.end();
      } catch {}
      [stdout, stderr, code] = await Promise.race([
        Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]),
        late,
      ]);
    } finally {
      clearTimeout(timer);
    }
    let answer;
    try { answer = JSON.parse(stdout); } catch {}
    const known = answer && typeof answer === "object" && ["allow", "deny", "modify", "replace"].includes(answer.action);
    if (code !== 0) {
      // Blocked by toolgate itself (exit 2, its reason in `message`), or crashed.
      if (known && answer.action === "deny" && typeof answer.message === "string") throw new Error(answer.message);
      const said = stderr.trim().split("\n").pop() || "";
      throw blocked(`${binary} exited ${code === null || code === undefined ? `on ${child.signalCode}` : code}${said ? `: ${said.slice(0, 500)}` : ""}`);
    }
    if (!known) throw blocked(`${binary} did not answer with one JSON answer: ${stdout.slice(0, 200)}`);
    return answer;
  }

  return {
    config: async (cfg) => {
      const rule = cfg && cfg.permission && cfg.permission["*"];
      if (!rule || typeof rule !== "object" || !(SENTINEL in rule)) return;
      // Lifted only when toolgate answers: a missing binary keeps it.
      const probe = Bun.spawnSync([binary, "--version"], { timeout: 10000 });
      if (probe.exitCode !== 0) return;
      delete rule[SENTINEL];
      if (rule["*"] === "deny" && Object.keys(rule).length === 1) delete cfg.permission["*"];
    },
    "tool.execute.before": async (input, output) => {
      const answer = await ask({ event: "tool.execute.before", tool: input.tool, sessionID: input.sessionID, callID: input.callID, args: output.args });
      if (answer.action === "deny") throw new Error(answer.message || "toolgate denied this call");
      if (answer.action === "modify") {
        if (!answer.args || typeof answer.args !== "object" || Array.isArray(answer.args)) throw blocked("toolgate's rewrite is not an object");
        // In place: OpenCode keeps its own reference to the arguments.
        for (const k of Object.keys(output.args)) delete output.args[k];
        Object.assign(output.args, answer.args);
      }
      if (typeof answer.context === "string") pending.set(key(input), answer.context);
    },
    "tool.execute.after": async (input, output) => {
      const early = pending.get(key(input));
      pending.delete(key(input));
      const answer = await ask({ event: "tool.execute.after", tool: input.tool, sessionID: input.sessionID, callID: input.callID, args: input.args, output });
      if (answer.action === "deny") throw new Error(answer.message || "toolgate withheld the output of this call");
      const mcp = Array.isArray(output.content) && typeof output.output !== "string";
      if (answer.action === "replace") {
        if (typeof answer.output !== "string") throw blocked("toolgate's replacement is not text");
        if (mcp) output.content = [{ type: "text", text: answer.output }];
        else {
          output.output = answer.output;
          // Bash keeps a copy for the session and the terminal.
          if (output.metadata && typeof output.metadata.output === "string") output.metadata.output = answer.output;
        }
      }
      for (const context of [early, answer.context]) {
        if (typeof context !== "string") continue;
        if (mcp) output.content.push({ type: "text", text: context });
        else output.output = `${output.output}\n\n${context}`;
      }
    },
  };
};
