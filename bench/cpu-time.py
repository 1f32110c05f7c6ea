#!/usr/bin/env python3
"""cpu-time.py FILE COMMAND [ARG...]: runs COMMAND and writes its user and
system CPU seconds, to the microsecond, to FILE; exits with its status.

real.sh times each run with it: /usr/bin/time prints CPU time in steps of
10 ms, as long as the whole native run of the shortest Go tests, and bash's
`time` sent its report past a redirection when the command failed under
`set -e`. getrusage of the child (os.wait4) has neither problem.
"""
import os
import sys

if len(sys.argv) < 3:
    sys.exit("usage: cpu-time.py FILE COMMAND [ARG...]")
out, cmd = sys.argv[1], sys.argv[2:]
try:
    pid = os.posix_spawnp(cmd[0], cmd, os.environ)
except OSError as e:
    sys.exit(f"cpu-time.py: {cmd[0]}: {e.strerror}")
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{usage.ru_utime:.6f} {usage.ru_stime:.6f}\n")
code = os.waitstatus_to_exitcode(status)  # -N: killed by signal N
sys.exit(code if code >= 0 else 128 - code)
