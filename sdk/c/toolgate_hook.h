/* toolgate hook SDK for C guests: the canonical-ABI glue for toolgate's WIT
 * world (wit/hook.wit, toolgate:hook@0.1.0), written by hand so no
 * wit-bindgen build is needed.
 *
 * Implement one function:
 *
 *     #include "toolgate_hook.h"
 *     void tg_decide(const tg_request *req, tg_answer *ans) {
 *         if (tg_str_eq(req->tool, "Bash")) tg_deny(ans, "no shell here");
 *         else tg_allow(ans);
 *     }
 *
 * and compile this header's implementation into exactly one file with
 * `#define TOOLGATE_HOOK_IMPLEMENTATION` before including it. Strings in the
 * request point into guest memory and stay valid for the call; strings in the
 * answer must stay valid after tg_decide returns (string literals, or buffers
 * from tg_alloc). Every call runs in a fresh instance, so nothing needs
 * freeing. Tool inputs, results and config are JSON text.
 */
#ifndef TOOLGATE_HOOK_H
#define TOOLGATE_HOOK_H

#include <stddef.h>
#include <stdint.h>

typedef struct { const char *ptr; size_t len; } tg_str;

typedef enum { TG_PRE_TOOL_USE = 0, TG_POST_TOOL_USE = 1 } tg_event;

typedef struct {
  tg_event event;
  tg_str hook, tool, input;          /* input: JSON text */
  int has_result; tg_str result_output; int result_is_error;  /* post only */
  int has_session_id; tg_str session_id;
  int has_turn_id; tg_str turn_id;
  int has_tool_call_id; tg_str tool_call_id;
  int has_cwd; tg_str cwd;
  int has_config; tg_str config;     /* the hook's config: JSON text */
} tg_request;

typedef struct {
  int is_error;                      /* 1: the hook cannot decide (err) */
  int decision;                      /* 0 allow, 1 deny, 2 modify, 3 replace */
  tg_str text;                       /* deny reason | modify input JSON | replace output JSON | error */
  int replace_is_error;
  int has_context; tg_str context;
} tg_answer;

/* Implemented by the hook. */
void tg_decide(const tg_request *req, tg_answer *ans);

/* Helpers. */
tg_str tg_cstr(const char *s);
int tg_str_eq(tg_str a, const char *b);
int tg_str_contains(tg_str haystack, const char *needle, size_t needle_len);
char *tg_alloc(size_t n);
void tg_allow(tg_answer *a);
void tg_deny(tg_answer *a, tg_str reason);
void tg_modify(tg_answer *a, tg_str input_json);
void tg_replace(tg_answer *a, tg_str output_json, int is_error);
void tg_cannot_decide(tg_answer *a, tg_str message);
void tg_context(tg_answer *a, tg_str context);

#ifdef TOOLGATE_HOOK_IMPLEMENTATION
#include <stdlib.h>
#include <string.h>

tg_str tg_cstr(const char *s) { tg_str r = {s, strlen(s)}; return r; }
int tg_str_eq(tg_str a, const char *b) { size_t n = strlen(b); return a.len == n && memcmp(a.ptr, b, n) == 0; }
int tg_str_contains(tg_str h, const char *needle, size_t n) {
  if (n == 0) return 1;
  for (size_t i = 0; i + n <= h.len; i++) if (memcmp(h.ptr + i, needle, n) == 0) return 1;
  return 0;
}
char *tg_alloc(size_t n) { char *p = malloc(n ? n : 1); if (!p) abort(); return p; }
void tg_allow(tg_answer *a) { a->decision = 0; }
void tg_deny(tg_answer *a, tg_str r) { a->decision = 1; a->text = r; }
void tg_modify(tg_answer *a, tg_str j) { a->decision = 2; a->text = j; }
void tg_replace(tg_answer *a, tg_str j, int e) { a->decision = 3; a->text = j; a->replace_is_error = e; }
void tg_cannot_decide(tg_answer *a, tg_str m) { a->is_error = 1; a->text = m; }
void tg_context(tg_answer *a, tg_str c) { a->has_context = 1; a->context = c; }

/* The host allocates the request's strings (and the argument area) here. */
__attribute__((__export_name__("cabi_realloc")))
void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
  (void)old_size;
  if (new_size == 0) return (void *)align;
  void *ret = realloc(ptr, new_size);
  if (!ret) abort();
  return ret;
}

/* Canonical ABI layout of `request` (26 flat values, so passed by pointer). */
static tg_str tg_load_str(const uint8_t *p) {
  tg_str s = {(const char *)(uintptr_t)*(const uint32_t *)p, *(const uint32_t *)(p + 4)};
  return s;
}
static int tg_load_opt(const uint8_t *p, tg_str *out) {
  if (!p[0]) return 0;
  *out = tg_load_str(p + 4);
  return 1;
}

/* result<verdict, string>: 32 bytes, returned by pointer. */
static _Alignas(4) uint8_t TG_RET[32];
static void tg_store_str(uint8_t *p, tg_str s) {
  *(uint32_t *)p = (uint32_t)(uintptr_t)s.ptr;
  *(uint32_t *)(p + 4) = (uint32_t)s.len;
}

__attribute__((__export_name__("decide")))
uint8_t *tg_export_decide(const uint8_t *args) {
  tg_request req;
  memset(&req, 0, sizeof req);
  req.event = (tg_event)args[0];
  req.hook = tg_load_str(args + 4);
  req.tool = tg_load_str(args + 12);
  req.input = tg_load_str(args + 20);
  if (args[28]) {
    req.has_result = 1;
    req.result_output = tg_load_str(args + 32);
    req.result_is_error = args[40];
  }
  req.has_session_id = tg_load_opt(args + 44, &req.session_id);
  req.has_turn_id = tg_load_opt(args + 56, &req.turn_id);
  req.has_tool_call_id = tg_load_opt(args + 68, &req.tool_call_id);
  req.has_cwd = tg_load_opt(args + 80, &req.cwd);
  req.has_config = tg_load_opt(args + 92, &req.config);

  tg_answer ans;
  memset(&ans, 0, sizeof ans);
  tg_decide(&req, &ans);

  memset(TG_RET, 0, sizeof TG_RET);
  if (ans.is_error) {
    TG_RET[0] = 1;
    tg_store_str(TG_RET + 4, ans.text);
    return TG_RET;
  }
  TG_RET[4] = (uint8_t)ans.decision;
  if (ans.decision != 0) tg_store_str(TG_RET + 8, ans.text);
  if (ans.decision == 3) TG_RET[16] = (uint8_t)(ans.replace_is_error != 0);
  if (ans.has_context) {
    TG_RET[20] = 1;
    tg_store_str(TG_RET + 24, ans.context);
  }
  return TG_RET;
}
#endif /* TOOLGATE_HOOK_IMPLEMENTATION */
#endif /* TOOLGATE_HOOK_H */
