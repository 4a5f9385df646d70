// toolgate hook SDK for JavaScript guests (componentize-qjs / componentize-js).
//
// Write a function from a request to a verdict; this module does the WIT
// plumbing (JSON text in and out, the variant shapes, result/err). The names
// are the WIT's: a request, a verdict (a decision plus optional context).
//
//   import { hook, allow, deny, modify } from "./toolgate_hook.js";
//   export const decide = hook((request) => {
//     if (request.tool === "Bash" && request.input.command?.includes("rm -rf /")) return deny("not here");
//     return allow();
//   });
//
// `request.input`, `request.resultOutput` and `request.config` are parsed
// from JSON on first use (`request.inputText` is the raw text). Throw `new CannotDecide("why")`
// when the hook cannot decide: toolgate then applies the hook's `on_failure`
// (deny by default) and shows the message to the operator, never the model.
// Any other exception is reported the same way (a `guest_error`), with its
// name, message and the innermost frames of its stack.

export class CannotDecide extends Error {}

export const allow = (context) => ({ decision: { tag: "allow" }, context });
export const deny = (reason, context) => ({ decision: { tag: "deny", val: String(reason) }, context });
export const modify = (input, context) => ({ decision: { tag: "modify", val: JSON.stringify(input) }, context });
export const replace = (output, isError = false, context) => ({
  decision: { tag: "replace", val: { output: JSON.stringify(output), isError } },
  context,
});
// Before the call only (toolgate:hook@0.2.0): a person must confirm it.
export const ask = (reason, context) => ({ decision: { tag: "ask", val: String(reason) }, context });

function lazyJson(text) {
  let parsed, done = false;
  return () => {
    if (!done) { parsed = text == null ? undefined : JSON.parse(text); done = true; }
    return parsed;
  };
}

// What an exception becomes in the run record: `TypeError: x is undefined`,
// then (for a bug, not CannotDecide) where it was thrown, innermost frames
// first, leaving out this module's and componentize-js's own:
// `at check (app.js:7:21)`.
function describe(e) {
  if (!(e instanceof Error)) return `uncaught exception: ${String(e)}`;
  const head = `${e.name}: ${e.message}`;
  if (e instanceof CannotDecide || typeof e.stack !== "string") return head;
  const frames = e.stack.split("\n")
    .filter((line) => line && !/(^|[@/])(toolgate_hook|initializer)\.js:/.test(line))
    .slice(0, 3)
    .map((line) => {
      // SpiderMonkey: `name@url:line:col`; keep the file's base name.
      const at = line.lastIndexOf("@");
      const fn = at > 0 ? line.slice(0, at) : "<anonymous>";
      const where = line.slice(at + 1).replace(/^.*\//, "");
      return `at ${fn} (${where})`;
    });
  return frames.length ? `${head}\n${frames.join("\n")}` : head;
}

export function hook(check) {
  return function decide(wit) {
    const input = lazyJson(wit.input);
    const config = lazyJson(wit.config);
    const output = lazyJson(wit.result ? wit.result.output : undefined);
    const request = {
      // "pre_tool_use", "post_tool_use", or "list_tools" (toolgate:hook@0.3.0).
      event: wit.event.replaceAll("-", "_"),
      get isPre() { return this.event === "pre_tool_use"; },
      hook: wit.hook,
      tool: wit.tool,
      inputText: wit.input,
      get input() { return input(); },
      get config() { return config(); },
      get resultOutput() { return output(); },
      resultIsError: !!(wit.result && wit.result.isError),
      sessionId: wit.sessionId,
      turnId: wit.turnId,
      toolCallId: wit.toolCallId,
      cwd: wit.cwd,
    };
    let verdict;
    try {
      verdict = check(request);
    } catch (e) {
      // A bug in the hook, or CannotDecide: either way it could not decide.
      // Thrown as a string, componentize-js returns it as the WIT's err.
      throw describe(e);
    }
    if (!verdict || !verdict.decision) throw "check() returned no verdict";
    return verdict;
  };
}
