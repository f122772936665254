#!/usr/bin/env python3
"""The lab's "which path did you take" server: on each address given, TCP
port 8000 answers an HTTP GET with the client's source address, and UDP port
9000 answers each datagram with it. A packet that came through the tunnel
carries the tunnel's address; one that came over the underlay, the
underlay's. Usage: addr-echo.py [--label=DIR] ADDRESS... (runs until killed)."""
import socket, sys, threading

# The addresses come and go with each test (on the server's lo): bind before they exist.
FREEBIND = 15  # IP_FREEBIND


def tcp(addr):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_IP, FREEBIND, 1)
    s.bind((addr, 8000))
    s.listen(16)
    while True:
        c, peer = s.accept()
        try:
            c.settimeout(3)
            c.recv(4096)
            body = (peer[0] + "\n").encode()
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        except OSError:
            pass
        finally:
            c.close()


def udp(addr):
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_IP, FREEBIND, 1)
    s.bind((addr, 9000))
    while True:
        _, peer = s.recvfrom(2048)
        s.sendto((peer[0] + "\n").encode(), peer)


# --label=DIR: ignored; it puts the lab's directory in argv, where the lab's
# teardown check looks for processes left behind.
for a in (a for a in sys.argv[1:] if not a.startswith("--label=")):
    threading.Thread(target=tcp, args=(a,), daemon=True).start()
    threading.Thread(target=udp, args=(a,), daemon=True).start()
print("listening", flush=True)
threading.Event().wait()
