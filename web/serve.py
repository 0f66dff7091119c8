#!/usr/bin/env python3
"""Serves a folder (default build-web/site) on 127.0.0.1 with the MIME types the browser build
needs (application/wasm for streaming compilation). Usage: serve.py [DIR] [--port N]"""
import argparse
import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".data": "application/octet-stream",
    }

    def end_headers(self):
        # A rebuilt site is seen on reload: no stale convlab.js beside a new convlab.wasm.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, fmt, *args):
        pass  # quiet: the page is the output


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dir", nargs="?", default="build-web/site")
    ap.add_argument("--port", type=int, default=8642)
    a = ap.parse_args()
    handler = functools.partial(Handler, directory=a.dir)
    with http.server.ThreadingHTTPServer(("127.0.0.1", a.port), handler) as httpd:
        print(f"ConvLab: http://127.0.0.1:{httpd.server_address[1]}/  (Ctrl-C stops)", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
