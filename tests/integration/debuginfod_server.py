"""A local debuginfod server for the tests: serves debug files by build id over HTTP, as
`debuginfod` does (`/buildid/<id>/debuginfo`), and remembers which it sent."""

import http.server
import os
import threading


class DebuginfodServer:
    def __init__(self):
        self.served = {}   # build id -> path of its debug file
        self.fetched = []  # build ids sent, in order
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                parts = self.path.strip("/").split("/")
                if len(parts) == 3 and parts[0] == "buildid" and parts[2] == "debuginfo" and \
                        parts[1] in server.served:
                    with open(server.served[parts[1]], "rb") as f:
                        data = f.read()
                    server.fetched.append(parts[1])
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def export(self, cache_dir):
        """Points libdebuginfod (in the daemon started after this) at this server."""
        os.environ["DEBUGINFOD_URLS"] = self.url
        os.environ["DEBUGINFOD_CACHE_PATH"] = cache_dir
        os.environ["DEBUGINFOD_TIMEOUT"] = "10"
