/* A tool allowlist: only the tools named in the hook's config may run.
 *
 *   {"name": "allowlist", "wasm": ".../c-tool-allowlist.wasm",
 *    "config": {"allowed": ["Read", "Grep", "Glob", "Bash"], "confirm": ["Bash"]}}
 *
 * A tool in the optional `confirm` list (which must also be allowed) is one a
 * person confirms: the hook answers `ask`.
 * It looks for the tool's name, quoted, in the `allowed` list of the config's
 * JSON text (tool names are plain identifiers, so no JSON parser is needed).
 * Without an `allowed` list it cannot decide: toolgate then fails closed.
 */
#define TOOLGATE_HOOK_IMPLEMENTATION
#include "toolgate_hook.h"

#include <string.h>

static const char DENIED_PREFIX[] = "the tool `";
static const char DENIED_SUFFIX[] = "` is not on this workspace's allowlist; use one of the allowed tools or ask the user.";

/* The list that follows "<key>" in the config's JSON text, up to its
 * closing bracket; a null ptr when the key or a whole list is not there. */
static tg_str list_of(tg_str config, const char *key, size_t key_len) {
  tg_str none = {NULL, 0};
  const char *start = NULL;
  for (size_t i = 0; i + key_len <= config.len; i++) {
    if (memcmp(config.ptr + i, key, key_len) == 0) { start = config.ptr + i + key_len; break; }
  }
  if (!start) return none;
  const char *end = config.ptr + config.len;
  const char *open = start;
  while (open < end && *open != '[') open++;
  const char *close = open;
  while (close < end && *close != ']') close++;
  if (open >= end || close >= end) return none;
  tg_str list = {open, (size_t)(close - open + 1)};
  return list;
}

static char *join3(const char *a, size_t al, const char *b, size_t bl, const char *c, size_t cl, size_t *len) {
  *len = al + bl + cl;
  char *out = tg_alloc(*len);
  memcpy(out, a, al);
  memcpy(out + al, b, bl);
  memcpy(out + al + bl, c, cl);
  return out;
}

static const char ASK_SUFFIX[] = "` needs a person's confirmation in this workspace.";

void tg_decide(const tg_request *req, tg_verdict *ans) {
  if (req->event != TG_PRE_TOOL_USE) { tg_allow(ans); return; }
  const char key[] = "\"allowed\"";
  if (!req->has_config || !tg_str_contains(req->config, key, sizeof key - 1)) {
    tg_cannot_decide(ans, tg_cstr("config needs an \"allowed\" list of tool names"));
    return;
  }
  tg_str list = list_of(req->config, key, sizeof key - 1);
  if (!list.ptr) {
    tg_cannot_decide(ans, tg_cstr("config's \"allowed\" must be a list of tool names"));
    return;
  }

  /* Look for "<tool>" in the lists. */
  size_t n = req->tool.len + 2;
  char *quoted = tg_alloc(n);
  quoted[0] = '"';
  memcpy(quoted + 1, req->tool.ptr, req->tool.len);
  quoted[n - 1] = '"';
  if (!tg_str_contains(list, quoted, n)) {
    size_t len;
    char *reason = join3(DENIED_PREFIX, sizeof DENIED_PREFIX - 1, req->tool.ptr, req->tool.len,
                         DENIED_SUFFIX, sizeof DENIED_SUFFIX - 1, &len);
    tg_str r = {reason, len};
    tg_deny(ans, r);
    return;
  }
  /* An allowed tool may still be one a person confirms (optional "confirm"). */
  const char confirm_key[] = "\"confirm\"";
  tg_str confirm = list_of(req->config, confirm_key, sizeof confirm_key - 1);
  if (confirm.ptr && tg_str_contains(confirm, quoted, n)) {
    size_t len;
    char *reason = join3(DENIED_PREFIX, sizeof DENIED_PREFIX - 1, req->tool.ptr, req->tool.len,
                         ASK_SUFFIX, sizeof ASK_SUFFIX - 1, &len);
    tg_str r = {reason, len};
    tg_ask(ans, r);
    return;
  }
  tg_allow(ans);
}
