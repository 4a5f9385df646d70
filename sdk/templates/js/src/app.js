// {{name}}: a toolgate hook. Denies shell commands that use a forbidden
// program (the hook's config: {"forbidden": ["sudo"]}), allows the rest.
import { hook, allow, deny } from "./toolgate_hook.js";

export const decide = hook((request) => {
  if (!request.isPre) return allow();
  const command = request.input && request.input.command;
  if (typeof command !== "string") return allow();
  const forbidden = (request.config && request.config.forbidden) || [];
  const words = command.split(/\s+/);
  for (const program of forbidden) {
    if (words.includes(program)) {
      return deny(`\`${program}\` is not allowed in this workspace; run the command without it or ask the user.`);
    }
  }
  return allow();
});
