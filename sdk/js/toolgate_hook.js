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

export class CannotDecide extends Error {}

export const allow = (context) => ({ decision: { tag: "allow" }, context });
export const deny = (reason, context) => ({ decision: { tag: "deny", val: String(reason) }, context });
export const modify = (input, context) => ({ decision: { tag: "modify", val: JSON.stringify(input) }, context });
export const replace = (output, isError = false, context) => ({
  decision: { tag: "replace", val: { output: JSON.stringify(output), isError } },
  context,
});

function lazyJson(text) {
  let parsed, done = false;
  return () => {
    if (!done) { parsed = text == null ? undefined : JSON.parse(text); done = true; }
    return parsed;
  };
}

export function hook(check) {
  return function decide(wit) {
    const input = lazyJson(wit.input);
    const config = lazyJson(wit.config);
    const output = lazyJson(wit.result ? wit.result.output : undefined);
    const request = {
      event: wit.event === "pre-tool-use" ? "pre_tool_use" : "post_tool_use",
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
      throw (e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    }
    if (!verdict || !verdict.decision) throw "check() returned no verdict";
    return verdict;
  };
}
