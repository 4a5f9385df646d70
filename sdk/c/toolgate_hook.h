/* toolgate hook SDK for C guests, over wit-bindgen's C bindings for
 * toolgate's WIT world (wit/hook.wit, toolgate:hook@0.3.0): hook.h and hook.c
 * beside this header are wit-bindgen 0.61.1's output, committed so a C author
 * needs only clang and wasi-libc (the test suite regenerates them from the WIT
 * and fails if they differ). Compile hook.c with your hook.
 *
 * Implement one function, from a request to a verdict (the WIT's names: a
 * verdict is a decision plus optional context):
 *
 *     #include "toolgate_hook.h"
 *     void tg_decide(const tg_request *req, tg_verdict *out) {
 *         if (tg_str_eq(req->tool, "Bash")) tg_deny(out, tg_cstr("no shell here"));
 *         else tg_allow(out);
 *     }
 *
 * (tests/all/sdk.rs compiles this example.)
 *
 * and compile this header's implementation into exactly one file with
 * `#define TOOLGATE_HOOK_IMPLEMENTATION` before including it. Strings in the
 * request point into guest memory and stay valid for the call; strings in the
 * verdict need only stay valid until tg_decide returns (they are copied).
 * Every call runs in a fresh instance, so nothing needs freeing. Tool inputs, results and config are JSON text.
 */
#ifndef TOOLGATE_HOOK_H
#define TOOLGATE_HOOK_H

#include <stddef.h>
#include <stdint.h>

typedef struct { const char *ptr; size_t len; } tg_str;

/* TG_LIST_TOOLS (toolgate:hook@0.3.0): input is a tool's definition about to be offered. */
typedef enum { TG_PRE_TOOL_USE = 0, TG_POST_TOOL_USE = 1, TG_LIST_TOOLS = 2 } tg_event;

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

typedef enum { TG_ALLOW = 0, TG_DENY = 1, TG_MODIFY = 2, TG_REPLACE = 3, TG_ASK = 4 } tg_decision;

typedef struct {
  int is_error;                      /* 1: the hook cannot decide (err) */
  tg_decision decision;
  tg_str text;                       /* deny or ask reason | modify input JSON | replace output JSON | error */
  int replace_is_error;
  int has_context; tg_str context;
} tg_verdict;

/* Implemented by the hook. */
void tg_decide(const tg_request *req, tg_verdict *out);

/* Helpers. */
tg_str tg_cstr(const char *s);
int tg_str_eq(tg_str a, const char *b);
int tg_str_contains(tg_str haystack, const char *needle, size_t needle_len);
char *tg_alloc(size_t n);
void tg_allow(tg_verdict *v);
void tg_deny(tg_verdict *v, tg_str reason);
void tg_modify(tg_verdict *v, tg_str input_json);
void tg_replace(tg_verdict *v, tg_str output_json, int is_error);
/* Before the call only: a person must confirm it (toolgate:hook@0.2.0). */
void tg_ask(tg_verdict *v, tg_str reason);
void tg_cannot_decide(tg_verdict *v, tg_str message);
void tg_context(tg_verdict *v, tg_str context);
/* Give up from anywhere (deep in a parser, where no verdict is at hand):
 * tells toolgate why, then aborts. The run record shows a `guest_error` with
 * this message rather than a bare trap. A failed assert() does the same with
 * "assertion failed: EXPR (FILE:LINE, in FUNCTION)"; a bare abort() cannot
 * say why, but the build keeps function names, so its trap names where. */
_Noreturn void tg_fail(const char *message);

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
void tg_allow(tg_verdict *v) { v->decision = TG_ALLOW; }
void tg_deny(tg_verdict *v, tg_str r) { v->decision = TG_DENY; v->text = r; }
void tg_modify(tg_verdict *v, tg_str j) { v->decision = TG_MODIFY; v->text = j; }
void tg_replace(tg_verdict *v, tg_str j, int e) { v->decision = TG_REPLACE; v->text = j; v->replace_is_error = e; }
void tg_ask(tg_verdict *v, tg_str r) { v->decision = TG_ASK; v->text = r; }
void tg_cannot_decide(tg_verdict *v, tg_str m) { v->is_error = 1; v->text = m; }
void tg_context(tg_verdict *v, tg_str c) { v->has_context = 1; v->context = c; }

/* The canonical ABI's import (below) is declared after this point. */
static void tg_about_to_fail(const char *message, size_t len);

_Noreturn void tg_fail(const char *message) {
  tg_about_to_fail(message, strlen(message));
  abort();
}

/* wasi-libc's assert() calls this; defining it here replaces libc's (which
 * would write to stderr, an import this component does not have) with one
 * that tells toolgate what failed. No stdio: the message is built by hand. */
_Noreturn void __assert_fail(const char *expr, const char *file, int line, const char *func) {
  char digits[12];
  size_t nd = 0;
  unsigned n = line < 0 ? 0u : (unsigned)line;
  do { digits[nd++] = (char)('0' + n % 10); n /= 10; } while (n && nd < sizeof digits);
  const char *parts[] = {"assertion failed: ", expr, " (", file, ":", NULL, ", in ", func, ")"};
  size_t total = nd;
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) if (parts[i]) total += strlen(parts[i]);
  char *msg = malloc(total + 1), *at = msg;
  if (!msg) abort();
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
    if (parts[i]) { size_t k = strlen(parts[i]); memcpy(at, parts[i], k); at += k; }
    else while (nd) *at++ = digits[--nd];
  }
  tg_about_to_fail(msg, (size_t)(at - msg));
  abort();
}

/* The canonical ABI itself is wit-bindgen's C output for wit/hook.wit
 * (hook.h / hook.c beside this header, compiled with the hook). This adapts
 * its types to the tg_* API. Verdict strings are copied into malloc'd memory,
 * because wit-bindgen's post-return frees what the export returned: a string
 * literal handed over as is would be freed. */
#include "hook.h"

/* hook.c references the type object wit-bindgen can emit beside it; the
 * build embeds the world with `wasm-tools component embed` instead, so this
 * empty definition satisfies the reference. */
void __component_type_object_force_link_hook(void) {}

static tg_str tg_from(hook_string_t s) { tg_str r = {(const char *)s.ptr, s.len}; return r; }
static int tg_from_opt(hook_option_string_t o, tg_str *out) {
  if (!o.is_some) return 0;
  *out = tg_from(o.val);
  return 1;
}
static void tg_to(hook_string_t *out, tg_str s) { hook_string_dup_n(out, s.ptr ? s.ptr : "", s.len); }

static void tg_about_to_fail(const char *message, size_t len) {
  hook_string_t s = {(uint8_t *)message, len};
  hook_about_to_fail(&s);
}

bool exports_hook_decide(hook_request_t *r, hook_verdict_t *ret, hook_string_t *err) {
  tg_request req;
  memset(&req, 0, sizeof req);
  req.event = r->event == HOOK_EVENT_PRE_TOOL_USE    ? TG_PRE_TOOL_USE
              : r->event == HOOK_EVENT_POST_TOOL_USE ? TG_POST_TOOL_USE
                                                     : TG_LIST_TOOLS;
  req.hook = tg_from(r->hook);
  req.tool = tg_from(r->tool);
  req.input = tg_from(r->input);
  if (r->result.is_some) {
    req.has_result = 1;
    req.result_output = tg_from(r->result.val.output);
    req.result_is_error = r->result.val.is_error;
  }
  req.has_session_id = tg_from_opt(r->session_id, &req.session_id);
  req.has_turn_id = tg_from_opt(r->turn_id, &req.turn_id);
  req.has_tool_call_id = tg_from_opt(r->tool_call_id, &req.tool_call_id);
  req.has_cwd = tg_from_opt(r->cwd, &req.cwd);
  req.has_config = tg_from_opt(r->config, &req.config);

  tg_verdict ans;
  memset(&ans, 0, sizeof ans);
  tg_decide(&req, &ans);

  if (ans.is_error) {
    tg_to(err, ans.text);
    return false;
  }
  memset(ret, 0, sizeof *ret);
  switch (ans.decision) {
  case TG_DENY: ret->decision.tag = HOOK_DECISION_DENY; tg_to(&ret->decision.val.deny, ans.text); break;
  case TG_MODIFY: ret->decision.tag = HOOK_DECISION_MODIFY; tg_to(&ret->decision.val.modify, ans.text); break;
  case TG_REPLACE:
    ret->decision.tag = HOOK_DECISION_REPLACE;
    tg_to(&ret->decision.val.replace.output, ans.text);
    ret->decision.val.replace.is_error = ans.replace_is_error != 0;
    break;
  case TG_ASK: ret->decision.tag = HOOK_DECISION_ASK; tg_to(&ret->decision.val.ask, ans.text); break;
  case TG_ALLOW: ret->decision.tag = HOOK_DECISION_ALLOW; break;
  default:
    /* A decision this header does not know is never an allow: the hook
     * could not decide, and its on_failure applies (deny by default). */
    tg_to(err, tg_cstr("tg_decide set a decision toolgate_hook.h does not know"));
    return false;
  }
  if (ans.has_context) {
    ret->context.is_some = true;
    tg_to(&ret->context.val, ans.context);
  }
  return true;
}
#endif /* TOOLGATE_HOOK_IMPLEMENTATION */
#endif /* TOOLGATE_HOOK_H */
