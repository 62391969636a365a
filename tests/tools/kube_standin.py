#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A stand-in for the Kubernetes API server, for the agent's --kube-api test
(there is no cluster here): HTTPS with the given certificate, and only the
request the agent must make is answered with the PodList -- GET /api/v1/pods,
fieldSelector spec.nodeName=NODE, 'Authorization: Bearer TOKEN' -- anything
else gets 403 with a Status, as the API server's RBAC would.  Every request
is logged: 'PATH AUTHORIZATION ok|refused'.

  kube_standin.py PORT_FILE CERT KEY TOKEN NODE PODLIST_FILE LOG"""
import http.server
import os
import ssl
import sys
import urllib.parse

port_file, cert, key, token, node, podlist, log = sys.argv[1:8]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        auth = self.headers.get('Authorization')
        ok = (u.path == '/api/v1/pods' and q.get('fieldSelector') == ['spec.nodeName=' + node]
              and auth == 'Bearer ' + token)
        with open(log, 'a') as f:
            f.write('%s %s %s\n' % (self.path, auth, 'ok' if ok else 'refused'))
        body = open(podlist, 'rb').read() if ok else \
            b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":403}'
        self.send_response(200 if ok else 403)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(srv.server_address[1]))
# renamed: the test reads the port only once it is whole
os.rename(port_file + '.tmp', port_file)
srv.serve_forever()
