"""A fork server for the lit suite's `sparsecc-opt` runs: it imports the tool once, then forks a
child per run, so the suite's ~200 runs do not each pay the interpreter's start and xDSL's
imports (~0.6 s of CPU a run, most of the suite's time).

    python opt_server.py SOCKET PARENT_PID     # lit.cfg.py starts it; it ends with lit

A run (`opt_client.py`, which lit substitutes for `sparsecc-opt`) sends its argv, working
directory and environment as JSON with its stdin, stdout and stderr as file descriptors; the
forked child puts them in place, runs `sparsecc.tools.sparsecc_opt.main` as the console script
would, and sends the exit status back. Each run starts from the same freshly imported state (a
fork of the server), so runs cannot leak state into each other.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def _warm() -> None:
    """Import what a run imports: the tool, every pass, the compiler and the PTX back end."""
    import sparsecc.codegen.lower  # noqa: F401
    import sparsecc.codegen.ptx_printer  # noqa: F401
    import sparsecc.compiler  # noqa: F401
    import sparsecc.tools.sparsecc_opt  # noqa: F401
    from sparsecc.passes import get_all_passes

    for make in get_all_passes().values():
        make()


def _serve_one(conn: socket.socket) -> None:
    """In the forked child: take the run's descriptors and request, run the tool, reply."""
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(msg.decode())
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["sparsecc-opt", *request["argv"]]
    from sparsecc.tools.sparsecc_opt import main

    try:
        status = main(request["argv"])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(int(status).to_bytes(4, "little", signed=True))


def serve(path: str, parent: int) -> None:
    _warm()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    server.listen(64)
    os.rename(path + ".tmp", path)  # the socket appears only once it accepts runs
    server.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    while os.getppid() == parent:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            continue
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _serve_one(conn)
            finally:
                os._exit(0)
        conn.close()
    os.unlink(path)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
