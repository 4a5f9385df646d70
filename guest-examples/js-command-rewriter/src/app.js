// A command rewriter: makes destructive shell commands reversible or dry,
// and tells the model what it changed and why.
import { hook, allow, modify, ask } from "./toolgate_hook.js";

const RULES = [
  {
    // rm -rf <paths>  →  move them to .trash/ instead
    match: /^\s*rm\s+-(?:rf|fr|r|Rf)\s+(.+)$/,
    rewrite: (m) => `mkdir -p .trash && mv ${m[1]} .trash/`,
    why: "deleted files were moved to .trash/ instead, so they can be restored",
  },
  {
    // git clean -fdx  →  dry run
    match: /^\s*git\s+clean\s+-([a-zA-Z]*)f([a-zA-Z]*)(.*)$/,
    rewrite: (m) => `git clean -n${m[1]}${m[2]}${m[3]}`,
    why: "git clean ran as a dry run (-n); ask the user before deleting untracked files",
  },
  {
    // kubectl delete …  →  client-side dry run
    match: /^\s*(kubectl\s+delete\s+.+)$/,
    rewrite: (m) => (m[1].includes("--dry-run") ? null : `${m[1]} --dry-run=client`),
    why: "kubectl delete ran with --dry-run=client; nothing was deleted",
  },
];

// What no rewrite can make reversible: a person decides.
const ASK = [
  { match: /^\s*terraform\s+(apply|destroy)\b/, why: "changes real infrastructure" },
];

export const decide = hook((request) => {
  if (!request.isPre || !["Bash", "shell"].includes(request.tool)) return allow();
  const command = request.input && request.input.command;
  if (typeof command !== "string") return allow();
  for (const rule of ASK) {
    if (rule.match.test(command)) return ask(`\`${command.trim()}\` ${rule.why}; a person confirms it`);
  }
  for (const rule of RULES) {
    const m = command.match(rule.match);
    const rewritten = m && rule.rewrite(m);
    if (rewritten) {
      return modify({ ...request.input, command: rewritten }, `toolgate rewrote \`${command.trim()}\`: ${rule.why}.`);
    }
  }
  return allow();
});
