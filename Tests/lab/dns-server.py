# The lab's DNS server: python3 dns-server.py ADDRESS ANSWER. Names under
# corp.example have the A record ANSWER (and no other record: NOERROR with no
# answer for other types), every other name does not exist (NXDOMAIN). Each
# query is printed ("query NAME type N from ADDRESS"), after "ready".
import socket
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
answer = bytes(int(x) for x in sys.argv[2].split("."))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(512)
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace")); i += 1 + q[i]
    if i + 5 > len(q):
        continue
    question = q[12:i + 5]
    qtype = q[i + 1] << 8 | q[i + 2]
    name = ".".join(labels).lower()
    print("query", name, "type", qtype, "from", peer[0], flush=True)
    if name == "corp.example" or name.endswith(".corp.example"):
        if qtype == 1:
            a = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04" + answer
            s.sendto(q[:2] + b"\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00" + question + a, peer)
        else:
            s.sendto(q[:2] + b"\x81\x80\x00\x01\x00\x00\x00\x00\x00\x00" + question, peer)
    else:
        s.sendto(q[:2] + b"\x81\x83\x00\x01\x00\x00\x00\x00\x00\x00" + question, peer)
