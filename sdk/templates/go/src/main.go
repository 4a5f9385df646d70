// {{name}}: a toolgate hook. Denies shell commands that use a forbidden
// program (the hook's config: {"forbidden": ["sudo"]}), allows the rest.
package main

import (
	"fmt"
	"strings"

	"toolgate.dev/hook"
)

func init() { hook.Register(decide) }

func main() {}

func decide(r *hook.Request) (hook.Verdict, error) {
	if r.Event != hook.PreToolUse {
		return hook.Allow(), nil
	}
	var input struct {
		Command string `json:"command"`
	}
	if err := r.InputJSON(&input); err != nil {
		return hook.Verdict{}, fmt.Errorf("tool input: %w", err)
	}
	var config struct {
		Forbidden []string `json:"forbidden"`
	}
	if _, err := r.ConfigJSON(&config); err != nil {
		return hook.Verdict{}, fmt.Errorf("config: %w", err)
	}
	for _, program := range config.Forbidden {
		for _, word := range strings.Fields(input.Command) {
			if word == program {
				return hook.Deny(fmt.Sprintf("`%s` is not allowed in this workspace; run the command without it or ask the user.", program)), nil
			}
		}
	}
	return hook.Allow(), nil
}
