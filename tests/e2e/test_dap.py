"""GDB 18's DAP server returns the Python frames (elided frames) with includeAll."""

import json
import select
import subprocess
import time

from tests.python_expect import RECURSE, expected_recursion
from tests.support import GDB_BINARIES, GDB_INIT, pyenv_python

TIMEOUT = 60


class DapClient:
    def __init__(self, argv):
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.sequence = 0
        self.buffer = b""
        self.backlog = []

    def send(self, command, arguments=None):
        self.sequence += 1
        body = json.dumps({"seq": self.sequence, "type": "request", "command": command,
                           "arguments": arguments or {}}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        return self.sequence

    def _message(self, deadline):
        while True:
            header, _, rest = self.buffer.partition(b"\r\n\r\n")
            if _:
                length = int(header.split(b":")[1])
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return json.loads(rest[:length])
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no answer from GDB's DAP server"
            ready, _, _ = select.select([self.process.stdout], [], [], remaining)
            if ready:
                chunk = self.process.stdout.read1(65536)
                assert chunk, "GDB's DAP server exited"
                self.buffer += chunk

    def wait_for(self, predicate):
        """The first message, seen or new, that ``predicate`` accepts; the others are
        kept (an event may come before the response being waited for)."""
        for index, message in enumerate(self.backlog):
            if predicate(message):
                return self.backlog.pop(index)
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._message(deadline)
            if predicate(message):
                return message
            self.backlog.append(message)

    def request(self, command, arguments=None):
        return self.response(self.send(command, arguments))

    def response(self, seq):
        response = self.wait_for(lambda m: m.get("type") == "response"
                                 and m.get("request_seq") == seq)
        assert response["success"], response
        return response.get("body", {})

    def close(self):
        self.process.kill()
        self.process.wait()


def test_stack_trace_includes_python_frames():
    client = DapClient([str(GDB_BINARIES["gdb18"]), "-q", "-nx", "-i=dap",
                        "-iex", "set debuginfod enabled off",
                        "-iex", "unset environment PYTHONHOME",
                        "-iex", "unset environment PYTHONPATH", "-x", str(GDB_INIT)])
    try:
        client.request("initialize", {"adapterID": "jit-unwind-test"})
        # GDB answers "launch" only once the configuration is done.
        launch = client.send("launch", {"program": str(pyenv_python("3.12.1")),
                                        "args": [str(RECURSE)]})
        client.request("configurationDone")
        client.response(launch)
        stopped = client.wait_for(lambda m: m.get("event") == "stopped")
        thread = stopped["body"].get("threadId", 1)
        body = client.request("stackTrace", {"threadId": thread,
                                             "format": {"includeAll": True}})
        names = [frame["name"] for frame in body["stackFrames"]]
        python = [(frame["name"], frame.get("line")) for frame in body["stackFrames"]
                  if frame["name"].startswith("[py] ")]
        assert python == [(f"[py] {f}", line) for f, _, line in expected_recursion(3)], names
        eval_loop = names.index("_PyEval_EvalFrameDefault")
        assert names[eval_loop + 1].startswith("[py] "), names
    finally:
        client.close()
