// go-path-guard: a toolgate hook that denies file writes outside the
// workspace, and to secrets or repository internals inside it (.env, .git/,
// ~/.ssh), resolving `..` before it judges.
//
// Why lexical resolution: the guest has no filesystem (it imports nothing),
// so it cannot follow symlinks; it judges the path the agent asked for, after
// cleaning. A symlink inside the workspace that points out of it is the
// sandbox's job, not this hook's; the README says so.
package main

import (
	"fmt"
	"path"
	"strings"

	"toolgate.dev/hook"
)

func init() { hook.Register(decide) }

func main() {}

// The path fields of the write tools this guard knows (Claude Code's Write,
// Edit, MultiEdit, NotebookEdit; generic write_file/edit_file tools).
var pathFields = []string{"file_path", "notebook_path", "path"}

type config struct {
	Workspace  string   `json:"workspace"`   // default: the request's cwd
	Home       string   `json:"home"`        // what ~ means; default: ~ stays literal
	Tools      []string `json:"tools"`       // which tools write; default below
	Protected  []string `json:"protected"`   // names never written; default below
	AllowPaths []string `json:"allow_paths"` // absolute prefixes outside the workspace that are fine
	Confirm    []string `json:"confirm"`     // names a person decides on (ask); default below
}

var defaults = config{
	Tools:     []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "edit_file"},
	Protected: []string{".env", ".git", ".ssh"},
	Confirm:   []string{".github"},
}

func decide(r *hook.Request) (hook.Verdict, error) {
	cfg := defaults
	if _, err := r.ConfigJSON(&cfg); err != nil {
		return hook.Verdict{}, fmt.Errorf("config: %w", err)
	}
	if r.Event != hook.PreToolUse || !contains(cfg.Tools, r.Tool) {
		return hook.Allow(), nil
	}
	var input map[string]any
	if err := r.InputJSON(&input); err != nil {
		return hook.Verdict{}, fmt.Errorf("tool input: %w", err)
	}
	target := ""
	for _, f := range pathFields {
		if s, ok := input[f].(string); ok && s != "" {
			target = s
			break
		}
	}
	if target == "" {
		return hook.Deny(fmt.Sprintf("%s call names no file (expected one of %v); refusing a write I cannot check", r.Tool, pathFields)), nil
	}
	root := cfg.Workspace
	if root == "" && r.Cwd != nil {
		root = *r.Cwd
	}
	if root == "" || !path.IsAbs(root) {
		return hook.Verdict{}, fmt.Errorf("no absolute workspace: set config.workspace or send cwd")
	}
	root = path.Clean(root)
	abs := resolve(target, root, cfg.Home)

	for _, part := range strings.Split(abs, "/") {
		for _, p := range cfg.Protected {
			if part == p || (p == ".env" && strings.HasPrefix(part, ".env.")) {
				return hook.Deny(fmt.Sprintf("writing %s is blocked: %q is protected (%s resolves to %s)", target, p, target, abs)).
					WithContext("Secrets and repository internals are off limits to file tools; ask the user to make this change."), nil
			}
		}
	}
	// CI workflows run with the repository's secrets: a person decides.
	for _, part := range strings.Split(abs, "/") {
		if contains(cfg.Confirm, part) {
			return hook.Ask(fmt.Sprintf("writing %s changes %q, which a person reviews (%s resolves to %s)", target, part, target, abs)), nil
		}
	}
	if abs != root && !strings.HasPrefix(abs, root+"/") {
		for _, ok := range cfg.AllowPaths {
			ok = path.Clean(ok)
			if abs == ok || strings.HasPrefix(abs, ok+"/") {
				return hook.Allow(), nil
			}
		}
		return hook.Deny(fmt.Sprintf("writing %s is blocked: it resolves to %s, outside the workspace %s", target, abs, root)), nil
	}
	return hook.Allow(), nil
}

// resolve makes target absolute (relative to root, ~ to home) and cleans it,
// so `a/../../etc/passwd` is judged as the file it names.
func resolve(target, root, home string) string {
	if target == "~" || strings.HasPrefix(target, "~/") {
		if home == "" {
			home = "/~" // unknown home: still outside any workspace, still has .ssh under it
		}
		target = home + strings.TrimPrefix(target, "~")
	}
	if !path.IsAbs(target) {
		target = root + "/" + target
	}
	return path.Clean(target)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
