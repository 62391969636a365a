#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A stand-in for the profile archive that misbehaves on purpose, for the client's tests.

The real Worker (deploy/archive, under miniflare) answers the cases it can produce; this
one produces what it cannot be made to: 5xx then success, a slow answer, a body cut short,
a redirect, any status with any error text.  It listens on 127.0.0.1 only, logs every
request as one JSON line (method, path, headers, body length) before answering, and exits
by itself after --lifetime seconds.

  archive_standin.py --mode MODE --log FILE [--status N] [--fail N] [--delay S]
                     [--profile FILE] [--lifetime S]
    status    every request gets --status and {"error": ...}
    flaky     the first --fail requests get 500, the rest succeed
    slow      each request waits --delay seconds, then succeeds
    truncate  a GET announces the whole --profile but sends half of it, then closes
    short     a GET sends the first half of --profile, with that as its Content-Length
    redirect  302 to a Cloudflare Access login page
    echo      401 whose error text repeats the Authorization header it got
    liar      a POST gets 201 and a receipt with a size one byte short
  Succeeding: POST -> 201 and a receipt with the size received; GET -> 200 and --profile.
  Prints "archive-standin: listening on http://127.0.0.1:PORT" once it accepts.
"""
import argparse
import http.server
import json
import sys
import threading
import time


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", required=True,
                    choices=["status", "flaky", "slow", "truncate", "short", "redirect", "echo",
                             "liar"])
    ap.add_argument("--log", required=True)
    ap.add_argument("--status", type=int, default=500)
    ap.add_argument("--fail", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--profile")
    ap.add_argument("--lifetime", type=float, default=60.0)
    return ap.parse_args()


ARGS = parse_args()
PROFILE = open(ARGS.profile, "rb").read() if ARGS.profile else b""
LOCK = threading.Lock()
COUNT = [0]


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def record(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with LOCK:
            COUNT[0] += 1
            seq = COUNT[0]
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"seq": seq, "method": self.command, "path": self.path,
                                    "headers": dict(self.headers.items()),
                                    "body_len": len(body)}) + "\n")
        return seq, body

    def send(self, status, body, ctype="application/json", length=None, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def error(self, status, text):
        self.send(status, (json.dumps({"error": text}) + "\n").encode())

    def succeed(self, body):
        if self.command == "POST":
            self.send(201, json.dumps({"sha": self.path.split("/")[3].split("?")[0],
                                       "size": len(body)}).encode())
        else:
            self.send(200, PROFILE, "application/octet-stream")

    def answer(self):
        seq, body = self.record()
        mode = ARGS.mode
        if mode == "status":
            self.error(ARGS.status, "stand-in answer %d" % ARGS.status)
        elif mode == "flaky":
            if seq <= ARGS.fail:
                self.error(500, "internal error")
            else:
                self.succeed(body)
        elif mode == "slow":
            time.sleep(ARGS.delay)
            self.succeed(body)
        elif mode == "truncate":
            self.send(200, PROFILE[:len(PROFILE) // 2], "application/octet-stream",
                      length=len(PROFILE))
            self.close_connection = True
        elif mode == "short":
            self.send(200, PROFILE[:len(PROFILE) // 2], "application/octet-stream")
        elif mode == "redirect":
            self.send(302, b"", "text/html", extra=[
                ("Location", "https://team.cloudflareaccess.com/cdn-cgi/access/login")])
        elif mode == "echo":
            self.error(401, "rejected: " + str(self.headers.get("Authorization")))
        elif mode == "liar":
            self.send(201, json.dumps({"sha": "x", "size": len(body) - 1}).encode())

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError):
            # the client gave up (a timeout): nothing to answer
            self.close_connection = True

    do_GET = answer
    do_POST = answer


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.timeout = 0.2
    print("archive-standin: listening on http://127.0.0.1:%d" % srv.server_address[1],
          flush=True)
    deadline = time.monotonic() + ARGS.lifetime
    # bounded: the lifetime ends it whatever the clients do
    while time.monotonic() < deadline:
        srv.handle_request()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
