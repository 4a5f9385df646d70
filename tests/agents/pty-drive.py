#!/usr/bin/env python3
"""Drives an agent's terminal interface for the live tests: runs COMMAND on a
pseudo-terminal (160x50), and once the screen shows NEEDLE (compared with all
whitespace removed, since a TUI lays text out in cells) types KEYS (Python
escapes: \\r is Enter, \\x1b is Escape), then keeps reading for SETTLE
seconds and kills the process group. The command runs with the PATH in
PTY_DRIVE_PATH when it is set (a python3 shim such as pyenv's puts its own
directory first). Writes the screen's text, without
terminal control sequences, to SCREEN, and prints {"saw": bool}.

usage: pty-drive.py SCREEN NEEDLE KEYS DEADLINE SETTLE -- COMMAND...
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

screen, needle, keys = sys.argv[1], sys.argv[2], sys.argv[3]
deadline, settle = float(sys.argv[4]), float(sys.argv[5])
command = sys.argv[sys.argv.index("--") + 1:]
CONTROL = re.compile(
    rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]"
)

pid, fd = pty.fork()
if pid == 0:
    # The PATH the caller meant, not the one a python3 shim ran us with.
    if "PTY_DRIVE_PATH" in os.environ:
        os.environ["PATH"] = os.environ.pop("PTY_DRIVE_PATH")
    os.execvp(command[0], command)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
raw = b""
saw = False
started = time.time()
answered = None
flat_needle = re.sub(r"\s", "", needle)
while time.time() - started < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        raw += data
        # A terminal answers a cursor-position query.
        if b"\x1b[6n" in data:
            os.write(fd, b"\x1b[1;1R")
    if not saw:
        text = CONTROL.sub(b"", raw).decode("utf-8", "replace")
        if flat_needle in re.sub(r"\s", "", text):
            saw = True
            time.sleep(1.0)
            os.write(fd, keys.encode().decode("unicode_escape").encode())
            answered = time.time()
    if answered and time.time() - answered > settle:
        break
with open(screen, "w") as out:
    out.write(CONTROL.sub(b"", raw).decode("utf-8", "replace"))
try:
    os.killpg(pid, signal.SIGKILL)
except OSError:
    pass
try:
    os.kill(pid, signal.SIGKILL)
except OSError:
    pass
os.waitpid(pid, 0)
print(json.dumps({"saw": saw}))
