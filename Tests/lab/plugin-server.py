#!/usr/bin/env python3
"""The lab's peer for vpnctl-example-udp-relay (AN EXAMPLE WITHOUT ENCRYPTION,
for tests only). Creates tun TUN (no packet information) in its namespace and
relays IP packets over UDP to one client that said hello with TOKEN.

usage: plugin-server.py TUN LISTEN_ADDR PORT TOKEN_FILE LIFETIME_SECONDS
Datagrams: 0x01+token hello, 0x02 welcome, 0x03 refused, 0x00+packet, 0x04 bye,
0x05 ping, 0x06 pong.
"""
import fcntl, os, select, socket, struct, sys, time

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000

def main():
    name, addr, port, token_file, lifetime = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    token = open(token_file, "rb").read().strip()
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, port))
    print(f"plugin-server: {name} ready on {addr}:{port}", flush=True)
    client = None
    end = time.monotonic() + lifetime
    while time.monotonic() < end:
        ready, _, _ = select.select([tun, sock], [], [], 1.0)
        if sock in ready:
            data, peer = sock.recvfrom(65536)
            if not data:
                continue
            if data[0] == 0x01:
                ok = data[1:] == token
                sock.sendto(b"\x02" if ok else b"\x03", peer)
                client = peer if ok else client
                print(f"plugin-server: hello from {peer[0]}:{peer[1]}: {'welcome' if ok else 'refused'}", flush=True)
            elif data[0] == 0x00 and peer == client:
                os.write(tun, data[1:])
            elif data[0] == 0x05 and peer == client:
                sock.sendto(b"\x06", peer)
            elif data[0] == 0x04 and peer == client:
                print(f"plugin-server: bye from {peer[0]}:{peer[1]}", flush=True)
                client = None
        if tun in ready:
            packet = os.read(tun, 65536)
            if client:
                sock.sendto(b"\x00" + packet, client)

if __name__ == "__main__":
    main()
