"""Fixtures of the client tests.

The server under test is started from a command template (`{port}` and `{dir}` placeholders):
`--server-cmd` or $SERVER_CMD, by default `target/release/lamina serve ... --engine trie
--durability sync`. The `server` fixture knows which kind of server answered (`version`
says `lamina` or not), so tests of lamina's deliberate differences from memcached (the item
size limit, `lscan`, persistence across restarts) adapt or skip.
"""

import itertools
import os
import re
import shutil
import signal
import tempfile

import pytest
from pymemcache.client.base import Client

import support

# The largest value each kind of server must store, and a value size each must refuse with
# `SERVER_ERROR object too large for cache`. lamina: the engine's 4096-byte value limit minus
# the item's metadata (assumed at most ITEM_METADATA_BYTES_MAX); memcached: its default 1 MiB
# item size (`-I 1m`) minus its item header and key.
LAMINA_VALUE_BYTES_LIMIT = 4096
ITEM_METADATA_BYTES_MAX = 64
MEMCACHED_ITEM_BYTES_MAX = 1 << 20
MEMCACHED_ITEM_OVERHEAD_MAX = 1024
# Distinguishes tests whose names sanitize to the same prefix.
KEY_SALT = itertools.count()


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    # scripts/test-server-clients runs pytest in the background, where SIGINT is ignored;
    # SIGTERM and SIGINT both stop the run like Ctrl-C, so fixtures stop their servers.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)


def pytest_addoption(parser):
    parser.addoption(
        "--server-cmd",
        default=None,
        help="server command template with {port} and {dir} (default: $SERVER_CMD, else "
        "target/release/lamina serve --engine trie --durability sync)",
    )


class ServerInfo:
    """What a test needs to know about the server it talks to."""

    def __init__(self, server, version):
        self.server = server
        self.address = server.address
        self.port = server.port
        self.version = version
        self.kind = support.kind_of(version)
        if self.kind == "lamina":
            self.value_ok_max = LAMINA_VALUE_BYTES_LIMIT - ITEM_METADATA_BYTES_MAX
            self.value_refused_min = LAMINA_VALUE_BYTES_LIMIT + 1
        else:
            self.value_ok_max = MEMCACHED_ITEM_BYTES_MAX - MEMCACHED_ITEM_OVERHEAD_MAX
            self.value_refused_min = MEMCACHED_ITEM_BYTES_MAX + 1

    @property
    def is_lamina(self):
        return self.kind == "lamina"

    def client(self, **kwargs):
        kwargs.setdefault("connect_timeout", 5)
        kwargs.setdefault("timeout", 10)
        kwargs.setdefault("default_noreply", False)
        return Client(self.address, **kwargs)

    def raw(self):
        return support.Raw(self.address)


@pytest.fixture(scope="session")
def server_cmd(request):
    return request.config.getoption("--server-cmd") or support.server_cmd_template()


@pytest.fixture(scope="session")
def work_dir():
    """A temporary directory for the session's server directories and logs; removed at the
    end unless $KEEP_TEST_DIRS is set."""
    d = tempfile.mkdtemp(prefix="lamina-clients-")
    yield d
    if not os.environ.get("KEEP_TEST_DIRS"):
        shutil.rmtree(d, ignore_errors=True)


class ServerFactory:
    """Starts servers of the session's command template; stops every one at teardown."""

    def __init__(self, template, work_dir):
        self.template = template
        self.work_dir = work_dir
        self.servers = []

    def new(self, start=True):
        # The server's directory (empty) and its logs beside it, not in it.
        base = tempfile.mkdtemp(prefix="server-", dir=self.work_dir)
        directory = os.path.join(base, "db")
        os.makedirs(directory)
        server = support.Server(self.template, directory, log_dir=base)
        self.servers.append(server)
        if start:
            server.start()
        return server

    def info(self, server):
        return ServerInfo(server, support.server_version(server.address))

    def stop_all(self):
        for server in self.servers:
            try:
                server.stop()
            except RuntimeError:
                server.kill()


@pytest.fixture(scope="session")
def session_factory(server_cmd, work_dir):
    factory = ServerFactory(server_cmd, work_dir)
    yield factory
    factory.stop_all()


@pytest.fixture(scope="session")
def server(session_factory):
    """The session's shared server (tests use distinct keys; see `keys`)."""
    return session_factory.info(session_factory.new())


@pytest.fixture
def server_factory(server_cmd, work_dir):
    """For tests that start, kill and restart their own servers."""
    factory = ServerFactory(server_cmd, work_dir)
    yield factory
    factory.stop_all()


@pytest.fixture
def keys(request):
    """Key maker unique to the test: keys("a") -> "test_name:a"."""
    # Parameters may hold spaces and control characters: keep a key-safe, unique prefix.
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:100] + f"-{next(KEY_SALT)}"

    def make(suffix=""):
        return f"{prefix}:{suffix}"

    return make


@pytest.fixture
def mc(server):
    client = server.client()
    yield client
    client.close()


@pytest.fixture
def raw(server):
    r = server.raw()
    yield r
    r.close()


@pytest.fixture
def lamina_only(server):
    if not server.is_lamina:
        pytest.skip("lamina's extension; memcached has none")
