"""`sparsecc-opt` for the lit suite: hands the run to `opt_server.py` (its socket in
$SPARSECC_OPT_SERVER) and exits with the run's status; without a server it runs the tool itself.
Standard library only, so that it starts in a few milliseconds (`python -S -E`)."""

import json
import os
import socket
import sys


def main() -> int:
    path = os.environ.get("SPARSECC_OPT_SERVER", "")
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:  # no server: the tool itself, as lit would run it without one
        python = os.environ.get("SPARSECC_OPT_PYTHON", sys.executable)
        os.execv(python, [python, "-m", "sparsecc.tools.sparsecc_opt", *sys.argv[1:]])
    request = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    reply = b""
    while len(reply) < 4:
        chunk = conn.recv(4 - len(reply))
        if not chunk:
            sys.stderr.write("sparsecc-opt (lit's fork server): the run ended without a status\n")
            return 70
        reply += chunk
    return int.from_bytes(reply, "little", signed=True)


if __name__ == "__main__":
    sys.exit(main())
