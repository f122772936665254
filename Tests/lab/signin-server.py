#!/usr/bin/env python3
# signin-server.py DIR ADDRESS PORT: the lab's web sign-in page. The
# openvpn server's verify hook defers a login and leaves, in DIR/pending-KEY,
# the path of the control file openvpn reads; GET /signin?k=KEY (the test's
# "browser") writes the verdict 1 there, and the server lets the client in.
import http.server, os, re, sys, urllib.parse

directory, address, port = sys.argv[1], sys.argv[2], int(sys.argv[3])

class SignIn(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        key = urllib.parse.parse_qs(url.query).get("k", [""])[0]
        pending = os.path.join(directory, "pending-" + key)
        if url.path != "/signin" or not re.fullmatch(r"[0-9a-f]{16}", key) or not os.path.exists(pending):
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"no such sign-in\n")
            return
        with open(pending) as f:
            control = f.read().strip()
        with open(control, "w") as f:
            f.write("1")
        os.unlink(pending)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"signed in\n")

http.server.HTTPServer((address, port), SignIn).serve_forever()
