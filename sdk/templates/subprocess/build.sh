#!/usr/bin/env bash
# A subprocess hook has nothing to compile: this only checks that the script
# parses and is executable, so a typo fails here and not at the agent's next
# tool call (where toolgate would block the call as `exited_non_zero`).
set -euo pipefail
cd "$(dirname "$0")"
script=hooks/{{name}}.py
[ -x "$script" ] || { echo "$script is not executable (chmod +x $script)" >&2; exit 1; }
python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$script"
echo "{{name}}: $script parses" >&2
