#!/usr/bin/env python3
"""A client of the vpnctl agent written against its protocol alone
(vpnctl-agent(8), PROTOCOL): no vpnctl code. It sends one call and prints
each reply line as it comes, then exits 0 after a result, the error's code
after an error, 100 when the reply breaks the protocol.

Usage: agent-client.py SOCKET CALL [KEY=JSON ...] [--until-events N]
  --until-events N: hang up after N events of kind transition or logLine
  (a watch, a followed log), as a user would end one.
"""
import json
import socket
import sys


def main(argv):
    path, call, rest = argv[1], argv[2], argv[3:]
    until = None
    request = {"protocol": 2, "call": call}
    while rest:
        arg = rest.pop(0)
        if arg == "--until-events":
            until = int(rest.pop(0))
        else:
            key, _, value = arg.partition("=")
            request[key] = json.loads(value)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    s.sendall(json.dumps(request).encode() + b"\n")
    buffer = b""
    seen = 0
    while True:
        chunk = s.recv(65536)
        if not chunk:
            print("PROTOCOL: the agent closed the connection without a result or an error")
            return 100
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                reply = json.loads(line)
            except ValueError:
                print("PROTOCOL: not a JSON line: %r" % line[:200])
                return 100
            event = reply.get("event")
            print(json.dumps(reply, sort_keys=True), flush=True)
            if event == "result":
                return 0
            if event == "error":
                error = reply["error"]
                if not isinstance(error.get("code"), int) or not error.get("name") or not error.get("message"):
                    print("PROTOCOL: an error without code, name and message")
                    return 100
                return error["code"]
            if event not in ("progress", "change", "onDemand", "onDemandPauseFailed", "watching", "transition", "logLine"):
                print("PROTOCOL: unknown event %r" % event)
                return 100
            if event in ("transition", "logLine"):
                seen += 1
                if until is not None and seen >= until:
                    s.close()
                    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
