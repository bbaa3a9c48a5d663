"""The "kernel process" jupyter_client starts when the grader wants a kernel (see sandbox.py).

    python kernel_proxy.py ZYGOTE_SOCKET CONNECTION_FILE CWD REQUEST_JSON

It asks the worker's zygote (inside the sandbox) to fork a fresh kernel on CONNECTION_FILE,
then waits: it exits when the kernel exits, with the kernel's exit code (128 + signal when a
signal ended it), and writes that status next to the connection file. When jupyter_client
shuts it down or kills it, the zygote notices the closed socket and kills the kernel.
Deliberately light (no heavy imports): it starts in a few milliseconds.
"""

import json
import signal
import socket
import sys


def main() -> int:
    zygote, connection_file, cwd, request = sys.argv[1:5]
    request = {**json.loads(request), "connection_file": connection_file, "cwd": cwd}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts travel as messages, not signals
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(zygote)
    stream = conn.makefile("rwb", buffering=0)
    stream.write((json.dumps(request) + "\n").encode())
    started = stream.readline()
    ended = stream.readline()
    status = json.loads(ended) if ended else {"exit": 125, "signal": None, "lost": "the sandbox ended"}
    with open(connection_file + ".exit", "w") as f:
        json.dump({**json.loads(started or "{}"), **status}, f)
    return int(status["exit"])


if __name__ == "__main__":
    sys.exit(main())
