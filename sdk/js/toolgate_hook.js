// toolgate hook SDK for JavaScript guests (componentize-qjs / componentize-js).
//
// Write a function from a call to an answer; this module does the WIT plumbing
// (JSON text in and out, the variant shapes, result/err):
//
//   import { hook, allow, deny, modify } from "./toolgate_hook.js";
//   export const decide = hook((call) => {
//     if (call.tool === "Bash" && call.input.command?.includes("rm -rf /")) return deny("not here");
//     return allow();
//   });
//
// `call.input`, `call.resultOutput` and `call.config` are parsed from JSON on
// first use (`call.inputText` is the raw text). Throw `new CannotDecide("why")`
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
  return function decide(request) {
    const input = lazyJson(request.input);
    const config = lazyJson(request.config);
    const output = lazyJson(request.result ? request.result.output : undefined);
    const call = {
      event: request.event === "pre-tool-use" ? "pre_tool_use" : "post_tool_use",
      get isPre() { return this.event === "pre_tool_use"; },
      hook: request.hook,
      tool: request.tool,
      inputText: request.input,
      get input() { return input(); },
      get config() { return config(); },
      get resultOutput() { return output(); },
      resultIsError: !!(request.result && request.result.isError),
      sessionId: request.sessionId,
      toolCallId: request.toolCallId,
      cwd: request.cwd,
    };
    let answer;
    try {
      answer = check(call);
    } catch (e) {
      // A bug in the hook, or CannotDecide: either way it could not decide.
      throw (e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    }
    if (!answer || !answer.decision) throw "check() returned no answer";
    return answer;
  };
}
