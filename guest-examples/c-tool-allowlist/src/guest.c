/* A tool allowlist: only the tools named in the hook's config may run.
 *
 *   {"name": "allowlist", "wasm": ".../c-tool-allowlist.wasm",
 *    "config": {"allowed": ["Read", "Grep", "Glob", "Bash"]}}
 *
 * It looks for the tool's name, quoted, in the `allowed` list of the config's
 * JSON text (tool names are plain identifiers, so no JSON parser is needed).
 * Without an `allowed` list it cannot decide: toolgate then fails closed.
 */
#define TOOLGATE_HOOK_IMPLEMENTATION
#include "toolgate_hook.h"

#include <string.h>

static const char DENIED_PREFIX[] = "the tool `";
static const char DENIED_SUFFIX[] = "` is not on this workspace's allowlist; use one of the allowed tools or ask the user.";

void tg_decide(const tg_request *req, tg_verdict *ans) {
  if (req->event != TG_PRE_TOOL_USE) { tg_allow(ans); return; }
  const char key[] = "\"allowed\"";
  if (!req->has_config || !tg_str_contains(req->config, key, sizeof key - 1)) {
    tg_cannot_decide(ans, tg_cstr("config needs an \"allowed\" list of tool names"));
    return;
  }
  /* The list is what follows "allowed": up to the closing bracket. */
  const char *start = NULL;
  for (size_t i = 0; i + sizeof key - 1 <= req->config.len; i++) {
    if (memcmp(req->config.ptr + i, key, sizeof key - 1) == 0) { start = req->config.ptr + i + sizeof key - 1; break; }
  }
  const char *end = req->config.ptr + req->config.len;
  const char *open = start;
  while (open < end && *open != '[') open++;
  const char *close = open;
  while (close < end && *close != ']') close++;
  if (open >= end || close >= end) {
    tg_cannot_decide(ans, tg_cstr("config's \"allowed\" must be a list of tool names"));
    return;
  }
  tg_str list = {open, (size_t)(close - open + 1)};

  /* Look for "<tool>" in the list. */
  size_t n = req->tool.len + 2;
  char *quoted = tg_alloc(n);
  quoted[0] = '"';
  memcpy(quoted + 1, req->tool.ptr, req->tool.len);
  quoted[n - 1] = '"';
  if (tg_str_contains(list, quoted, n)) { tg_allow(ans); return; }

  size_t len = sizeof DENIED_PREFIX - 1 + req->tool.len + sizeof DENIED_SUFFIX - 1;
  char *reason = tg_alloc(len);
  memcpy(reason, DENIED_PREFIX, sizeof DENIED_PREFIX - 1);
  memcpy(reason + sizeof DENIED_PREFIX - 1, req->tool.ptr, req->tool.len);
  memcpy(reason + sizeof DENIED_PREFIX - 1 + req->tool.len, DENIED_SUFFIX, sizeof DENIED_SUFFIX - 1);
  tg_str r = {reason, len};
  tg_deny(ans, r);
}
