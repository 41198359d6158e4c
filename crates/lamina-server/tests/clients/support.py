"""Shared machinery of the client tests: starting a server from a command template, waiting for
its port, a raw protocol connection (for what pymemcache cannot send), and the server's kind.

The server command is a template with `{port}` and `{dir}` placeholders (see conftest.py and
README.md); the same tests run against `lamina serve` and against Debian's memcached.
"""

import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time

# How long a server may take to accept connections after it is started.
SERVER_START_TIMEOUT_S = 20.0
# How long a server may take to exit after SIGTERM before the test calls it a failure.
SERVER_STOP_TIMEOUT_S = 20.0
# Socket timeout of raw connections: a reply that takes longer is a failure, not a hang.
RAW_TIMEOUT_S = 10.0

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
LAMINA_BIN = os.path.join(REPO_ROOT, "target", "release", "lamina")
DEFAULT_SERVER_CMD = (
    LAMINA_BIN + " serve --dir {dir} --engine trie --listen 127.0.0.1:{port} --durability sync"
)


def server_cmd_template():
    """The server command template: $SERVER_CMD, else lamina serve (release, trie, sync)."""
    return os.environ.get("SERVER_CMD") or DEFAULT_SERVER_CMD


def register_pid(pid):
    """Appends the pid to $CLIENT_TESTS_PIDFILE (if set): scripts/test-server-clients kills
    what is still running from it on exit, even if pytest itself was killed. Servers run in a
    session of their own (a Ctrl-C meant for pytest must not reach them)."""
    path = os.environ.get("CLIENT_TESTS_PIDFILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{pid}\n")


def free_port():
    """A loopback TCP port that is free now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout_s, proc=None):
    """Waits until 127.0.0.1:port accepts a connection; fails early if `proc` exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")
            time.sleep(0.05)


class Server:
    """One server process started from the command template on a port and a directory.

    `start()` may be called again after `kill()`/`stop()`: same port, same directory (what
    the restart tests need)."""

    def __init__(self, template, directory, port=None, log_dir=None):
        self.template = template
        self.dir = directory
        self.port = port or free_port()
        self.log_dir = log_dir or directory
        self.proc = None
        self.starts = 0

    @property
    def address(self):
        return ("127.0.0.1", self.port)

    def argv(self):
        return shlex.split(self.template.format(port=self.port, dir=self.dir))

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        self.starts += 1
        log_path = os.path.join(self.log_dir, f"server-{self.port}-{self.starts}.log")
        self.log_path = log_path
        log = open(log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            log.close()
        register_pid(self.proc.pid)
        try:
            wait_port(self.port, SERVER_START_TIMEOUT_S, self.proc)
        except Exception:
            self.kill()
            raise RuntimeError(f"{self.argv()} did not start; log:\n{self.log()}")
        return self

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout_s=SERVER_STOP_TIMEOUT_S):
        """Signals the server and waits for it; returns its exit code (None if not running)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(f"server on {self.port} ignored signal {sig} for {timeout_s} s")
        return self.proc.returncode

    def kill(self):
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def make_server_dir(parent=None):
    return tempfile.mkdtemp(prefix="lamina-clients-", dir=parent)


class Raw:
    """A raw memcached text-protocol connection: bytes in, lines and data blocks out."""

    def __init__(self, address, timeout_s=RAW_TIMEOUT_S):
        self.sock = socket.create_connection(address, timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError(f"connection closed; unread: {self.buf!r}")
        self.buf += chunk

    def line(self):
        """The next reply line without its \\r\\n."""
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def data(self, n):
        """A data block of n bytes and its \\r\\n."""
        while len(self.buf) < n + 2:
            self._fill()
        block, end, self.buf = self.buf[:n], self.buf[n : n + 2], self.buf[n + 2 :]
        assert end == b"\r\n", f"data block of {n} bytes not followed by \\r\\n: {end!r}"
        return block

    def cmd(self, line):
        """Sends one command line and returns the first reply line."""
        if isinstance(line, str):
            line = line.encode()
        self.send(line + b"\r\n")
        return self.line()

    def store(self, verb, key, value, flags=0, exptime=0, extra=""):
        """A classic storage command with its data block; returns the reply line."""
        if isinstance(value, str):
            value = value.encode()
        head = f"{verb} {key} {flags} {exptime} {len(value)}{(' ' + extra) if extra else ''}"
        self.send(head.encode() + b"\r\n" + value + b"\r\n")
        return self.line()

    def values(self):
        """Reads `VALUE <key> <flags> <bytes> [<cas>]` blocks up to END: a list of
        (key, flags, data, cas-or-None)."""
        out = []
        while True:
            line = self.line()
            if line == b"END":
                return out
            parts = line.split(b" ")
            assert parts[0] == b"VALUE" and len(parts) in (4, 5), f"unexpected line {line!r}"
            data = self.data(int(parts[3]))
            cas = int(parts[4]) if len(parts) == 5 else None
            out.append((parts[1], int(parts[2]), data, cas))

    def get(self, line):
        """Sends a retrieval command line (get/gets/gat/gats/lscan) and returns values()."""
        self.send(line.encode() + b"\r\n" if isinstance(line, str) else line + b"\r\n")
        return self.values()

    def meta(self, line, data=None):
        """Sends a meta command (with a data block for ms) and returns its reply line split
        into (code, tokens) plus the value block for VA replies: (code, [tokens], value)."""
        if isinstance(line, str):
            line = line.encode()
        payload = line + b"\r\n"
        if data is not None:
            payload += data + b"\r\n"
        self.send(payload)
        return self.meta_reply()

    def meta_reply(self):
        parts = self.line().split(b" ")
        code, tokens = parts[0], parts[1:]
        if code == b"VA":
            value = self.data(int(tokens[0]))
            return code.decode(), [t.decode() for t in tokens[1:]], value
        return code.decode(), [t.decode() for t in tokens], None

    def closed_by_peer(self, timeout_s=RAW_TIMEOUT_S):
        """Whether the peer closes the connection within timeout_s (remaining bytes are
        discarded into self.buf)."""
        self.sock.settimeout(timeout_s)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def server_version(address):
    with Raw(address) as r:
        return r.cmd("version").decode()


def kind_of(version_line):
    """'lamina' or 'memcached' from a `version` reply."""
    return "lamina" if "lamina" in version_line else "memcached"


def stats(address, group=None):
    with Raw(address) as r:
        r.send(("stats" + (" " + group if group else "") + "\r\n").encode())
        out = {}
        while True:
            line = r.line().decode()
            if line == "END":
                return out
            parts = line.split(" ", 2)
            assert parts[0] == "STAT", f"unexpected stats line {line!r}"
            out[parts[1]] = parts[2] if len(parts) > 2 else ""
