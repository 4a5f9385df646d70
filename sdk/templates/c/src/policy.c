/* {{name}}: a toolgate hook. Denies shell commands that use a forbidden
 * program (the hook's config: {"forbidden": ["sudo"]}), allows the rest.
 *
 * No JSON parser: it looks for each "quoted" word of the config's forbidden
 * list as a whole word of the input's text. Good enough for program names;
 * reach for a JSON library (cJSON compiles to wasm32-wasi as is) for more. */
#define TOOLGATE_HOOK_IMPLEMENTATION
#include "toolgate_hook.h"

#include <string.h>

static int is_word_char(char c) { return c != ' ' && c != '"' && c != '\t' && c != ';' && c != '&' && c != '|'; }

/* Is `word` in `text` with no word character on either side? */
static int has_word(tg_str text, const char *word, size_t n) {
  for (size_t i = 0; i + n <= text.len; i++) {
    if (memcmp(text.ptr + i, word, n) != 0) continue;
    int before = i > 0 && is_word_char(text.ptr[i - 1]);
    int after = i + n < text.len && is_word_char(text.ptr[i + n]);
    if (!before && !after) return 1;
  }
  return 0;
}

void tg_decide(const tg_request *req, tg_verdict *ans) {
  tg_allow(ans);
  if (req->event != TG_PRE_TOOL_USE || !req->has_config) return;
  const char key[] = "\"forbidden\"";
  const char *list = NULL;
  for (size_t i = 0; i + sizeof key - 1 <= req->config.len; i++)
    if (memcmp(req->config.ptr + i, key, sizeof key - 1) == 0) { list = req->config.ptr + i + sizeof key - 1; break; }
  if (!list) return;
  const char *end = req->config.ptr + req->config.len;
  while (list < end && *list != '[') list++;
  /* Each "quoted" string up to the closing bracket is a forbidden program. */
  for (const char *p = list; p < end && *p != ']'; p++) {
    if (*p != '"') continue;
    const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
    if (!q) break;
    size_t n = (size_t)(q - p - 1);
    if (n > 0 && has_word(req->input, p + 1, n)) {
      /* No stdio (it would import WASI): build the reason by hand. */
      static const char rest[] = "` is not allowed in this workspace; run the command without it or ask the user.";
      char *reason = tg_alloc(n + sizeof rest + 1);
      reason[0] = '`';
      memcpy(reason + 1, p + 1, n);
      memcpy(reason + 1 + n, rest, sizeof rest - 1);
      tg_deny(ans, (tg_str){reason, n + sizeof rest});
      return;
    }
    p = q;
  }
}
