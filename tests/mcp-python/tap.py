"""Runs the command that follows LOG, appending each line its client sends
it to LOG: what a live test reads to see which revision a client spoke.
The command's output goes straight to the client."""

import subprocess
import sys

log_path, command = sys.argv[1], sys.argv[2:]
server = subprocess.Popen(command, stdin=subprocess.PIPE)
with open(log_path, "a") as log:
    for line in sys.stdin.buffer:
        log.write(line.decode(errors="replace"))
        log.flush()
        server.stdin.write(line)
        server.stdin.flush()
server.stdin.close()
sys.exit(server.wait())
