// Package hook lets a Go program be a toolgate hook compiled to a WebAssembly
// component: register one function from a typed *Request to a Verdict, and
// build with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared (sdk/guest-build.sh
// does the rest).
//
//	package main
//
//	import "toolgate.dev/hook"
//
//	func init() { hook.Register(decide) }
//	func main() {}
//
//	func decide(r *hook.Request) (hook.Verdict, error) {
//		if r.Tool == "shell" { return hook.Deny("no shell here"), nil }
//		return hook.Allow(), nil
//	}
//
// Why a hand-written shim: there is no wit-bindgen for Go on the registries
// this project may use (TinyGo is not reachable either), and the world has one
// function, so its canonical-ABI lifting and lowering fit in abi.go. Layout
// offsets there are pinned by the host's tests (tests/all/guests.rs).
//
// Returning an error means "this hook cannot decide": the host records a
// guest_error failure and applies the hook's on_failure policy (deny by
// default). A panic is caught and reported the same way, with its message,
// rather than reaching the host as a bare trap.
package hook

import "encoding/json"

// Event says when the hook runs.
type Event uint8

const (
	// PreToolUse: before the tool runs; the hook may allow, deny, modify or replace.
	PreToolUse Event = 0
	// PostToolUse: after it ran; the hook may allow, deny or replace what the model sees.
	PostToolUse Event = 1
	// ListTools: a tool is about to be offered (an MCP server's list, in
	// `toolgate mcp`); Input is its definition (toolgate:hook@0.3.0).
	ListTools Event = 2
)

// ToolResult is a tool's output (JSON text) and whether it is an error.
type ToolResult struct {
	Output  string
	IsError bool
}

// Request is one tool call as the hook sees it. Input, Result.Output and
// Config are JSON text; InputJSON, OutputJSON and ConfigJSON decode them.
type Request struct {
	Event      Event
	Hook       string // this hook's name in hooks.json
	Tool       string
	Input      string
	Result     *ToolResult // PostToolUse only
	SessionID  *string
	TurnID     *string
	ToolCallID *string
	Cwd        *string
	Config     *string // the hook's "config" from hooks.json
}

// InputJSON decodes the tool's input into v.
func (r *Request) InputJSON(v any) error { return json.Unmarshal([]byte(r.Input), v) }

// ConfigJSON decodes the hook's config into v; false if the hook has none.
func (r *Request) ConfigJSON(v any) (bool, error) {
	if r.Config == nil {
		return false, nil
	}
	return true, json.Unmarshal([]byte(*r.Config), v)
}

// OutputJSON decodes the tool's output into v; false before the tool ran.
func (r *Request) OutputJSON(v any) (bool, error) {
	if r.Result == nil {
		return false, nil
	}
	return true, json.Unmarshal([]byte(r.Result.Output), v)
}

type kind uint8

const (
	allow kind = iota
	deny
	modify
	replace
	ask
)

// Verdict is the hook's answer. Build one with Allow, Deny, Modify, Replace or Ask.
type Verdict struct {
	kind           kind
	text           string
	replaceIsError bool
	context        *string
}

// Allow lets the call (or its result) through unchanged.
func Allow() Verdict { return Verdict{kind: allow} }

// Deny refuses the call (pre) or hides its output behind an error (post);
// the reason is shown to the model.
func Deny(reason string) Verdict { return Verdict{kind: deny, text: reason} }

// Modify runs the tool with this input instead (pre only).
func Modify(input any) (Verdict, error) {
	b, err := json.Marshal(input)
	return Verdict{kind: modify, text: string(b)}, err
}

// Replace does not run the tool (pre) or does not show its output (post):
// the model sees this output instead.
func Replace(output any, isError bool) (Verdict, error) {
	b, err := json.Marshal(output)
	return Verdict{kind: replace, text: string(b), replaceIsError: isError}, err
}

// Ask wants a person to confirm the call before it runs (pre only; since
// toolgate:hook@0.2.0). Later hooks are still consulted; where the agent
// cannot ask a person, the call is refused with this reason.
func Ask(reason string) Verdict { return Verdict{kind: ask, text: reason} }

// WithContext adds context for the model, shown beside the outcome.
func (v Verdict) WithContext(context string) Verdict {
	v.context = &context
	return v
}

// Func is a hook's decision function.
type Func func(*Request) (Verdict, error)

var registered Func

// Register sets the hook's function; call it from an init function.
func Register(f Func) { registered = f }
