"""Sharding with Debian's nutcracker (twemproxy): three servers behind one proxy with ketama
hashing. 100,000 keys set through the proxy read back through it; each server holds a share
between 20% and 47%; one server is killed with kill -9 and restarted on its directory and port,
and every key it held reads back through the proxy (lamina with Sync durability loses nothing
acknowledged; memcached loses everything by design, so against it the test checks that the
proxy reaches the restarted server again and that its keys can be written and read anew)."""

import os
import shutil
import subprocess
import threading
import time

import pytest
from pymemcache.client.base import Client

import support

KEY_COUNT = 100_000
SERVER_COUNT = 3
SHARE_MIN = 0.20
SHARE_MAX = 0.47
BATCH_KEYS = 500
WRITER_THREADS = 4
# The proxy's connections per server: parallel connections let a Sync server commit the
# writes of several in one sync.
PROXY_SERVER_CONNECTIONS = 4
# After the restart, reads through the proxy are retried until this deadline (the proxy
# reconnects to the restarted server on demand, after its retry timeout).
RECONNECT_DEADLINE_S = 30.0
PROXY_TIMEOUT_MS = 10_000


def key_of(i):
    return f"shard:{i:06d}"


def value_of(i):
    return f"value-{i}-{'x' * (i % 40)}".encode()


NUTCRACKER_CONF = """\
lamina:
  listen: 127.0.0.1:{port}
  hash: fnv1a_64
  distribution: ketama
  timeout: {timeout_ms}
  backlog: 1024
  preconnect: true
  auto_eject_hosts: false
  server_retry_timeout: 200
  server_failure_limit: 1
  server_connections: {connections}
  servers:
{servers}
"""


class Nutcracker:
    def __init__(self, directory, backends):
        self.port = support.free_port()
        self.stats_port = support.free_port()
        self.dir = directory
        servers = "\n".join(
            f"   - 127.0.0.1:{b.port}:1 server{i}" for i, b in enumerate(backends)
        )
        self.conf = os.path.join(directory, "nutcracker.yml")
        with open(self.conf, "w") as f:
            f.write(
                NUTCRACKER_CONF.format(
                    port=self.port,
                    timeout_ms=PROXY_TIMEOUT_MS,
                    connections=PROXY_SERVER_CONNECTIONS,
                    servers=servers,
                )
            )
        self.log = os.path.join(directory, "nutcracker.log")
        self.proc = None

    def start(self):
        binary = shutil.which("nutcracker")
        if binary is None:
            pytest.fail("nutcracker not found (scripts/install-deps installs it)")
        check = subprocess.run([binary, "-t", "-c", self.conf], capture_output=True)
        assert check.returncode == 0, check.stderr.decode() + check.stdout.decode()
        # Foreground (no -d), stats on a port of its own, pid file and log in the test dir.
        self.proc = subprocess.Popen(
            [binary, "-c", self.conf, "-s", str(self.stats_port), "-a", "127.0.0.1",
             "-o", self.log, "-p", os.path.join(self.dir, "nutcracker.pid"), "-v", "4"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        support.register_pid(self.proc.pid)
        support.wait_port(self.port, support.SERVER_START_TIMEOUT_S, self.proc)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def proxy_client(proxy):
    return Client(("127.0.0.1", proxy.port), connect_timeout=5, timeout=30)


def batches(indices, size=BATCH_KEYS):
    for start in range(0, len(indices), size):
        yield indices[start : start + size]


def set_through(proxy, indices):
    """Sets the keys with `indices` through the proxy; returns the keys not stored."""
    client = proxy_client(proxy)
    failed = []
    try:
        for batch in batches(indices):
            failed += client.set_many({key_of(i): value_of(i) for i in batch})
    finally:
        client.close()
    return failed


def set_all_parallel(proxy, indices):
    failed = []
    errors = []
    parts = [indices[t::WRITER_THREADS] for t in range(WRITER_THREADS)]

    def work(part):
        try:
            failed.extend(set_through(proxy, part))
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return failed


def get_through(client, indices):
    """{index: value} of the keys found."""
    found = {}
    for batch in batches(indices):
        got = client.get_many([key_of(i) for i in batch])
        for i in batch:
            if key_of(i) in got:
                found[i] = got[key_of(i)]
    return found


def held_by(info, indices):
    """The indices whose keys the server holds, asked directly (not through the proxy)."""
    client = info.client()
    try:
        return set(get_through(client, indices))
    finally:
        client.close()


def lscan_count(info, prefix="shard:", end="shard;"):
    """Live keys from `prefix` up to `end`, counted by paging lamina's lscan."""
    count = 0
    with info.raw() as r:
        start = prefix
        first_page = True
        while True:
            got = r.get(f"lscan 10000 {start} {end}")
            keys = [k for k, *_ in got]
            if not first_page:
                assert keys and keys[0].decode() == start
                keys = keys[1:]
            count += len(keys)
            if len(got) < 10000:
                return count
            start = got[-1][0].decode()
            first_page = False


def read_back_until_deadline(proxy, indices, want_values):
    """Reads the keys through the proxy, retrying until the deadline while the proxy reports
    errors (it reconnects to a restarted server on demand); returns {index: value}."""
    deadline = time.monotonic() + RECONNECT_DEADLINE_S
    last_error = None
    while time.monotonic() < deadline:
        client = proxy_client(proxy)
        try:
            found = get_through(client, indices)
            if not want_values or len(found) == len(indices):
                return found
            last_error = f"{len(indices) - len(found)} of {len(indices)} keys missing"
        except Exception as e:  # the proxy's SERVER_ERROR while the server is unreachable
            last_error = repr(e)
        finally:
            client.close()
        time.sleep(0.2)
    pytest.fail(f"reads through the proxy failed until the deadline: {last_error}")


def test_sharding_through_nutcracker(server_factory, work_dir):
    servers = [server_factory.new() for _ in range(SERVER_COUNT)]
    infos = [server_factory.info(s) for s in servers]
    proxy_dir = os.path.join(work_dir, f"nutcracker-{os.getpid()}-{time.monotonic_ns()}")
    os.makedirs(proxy_dir)
    proxy = Nutcracker(proxy_dir, servers)
    proxy.start()
    try:
        run_sharding(proxy, servers, infos)
    finally:
        proxy.stop()


def run_sharding(proxy, servers, infos):
    indices = list(range(KEY_COUNT))
    started = time.monotonic()
    failed = set_all_parallel(proxy, indices)
    assert not failed, f"{len(failed)} keys not stored, e.g. {failed[:5]}"
    set_s = time.monotonic() - started

    started = time.monotonic()
    client = proxy_client(proxy)
    found = get_through(client, indices)
    client.close()
    get_s = time.monotonic() - started
    missing = [i for i in indices if found.get(i) != value_of(i)]
    assert not missing, f"{len(missing)} keys not read back through the proxy: {missing[:5]}"

    held = [held_by(info, indices) for info in infos]
    shares = [len(h) / KEY_COUNT for h in held]
    print(f"set {KEY_COUNT} keys in {set_s:.1f} s, read back in {get_s:.1f} s; "
          f"shares {[f'{s:.1%}' for s in shares]}")
    assert sum(len(h) for h in held) == KEY_COUNT, "every key on exactly one server"
    assert set().union(*held) == set(indices)
    for i, share in enumerate(shares):
        assert SHARE_MIN <= share <= SHARE_MAX, f"server {i} holds {share:.1%}"
    for info, h in zip(infos, held):
        if info.is_lamina:
            assert lscan_count(info) == len(h), "lscan counts what the server holds"
        else:
            assert int(support.stats(info.address)["curr_items"]) == len(h)

    # kill -9 one server and restart it on its directory and port.
    victim = 1
    victim_keys = sorted(held[victim])
    servers[victim].kill()
    servers[victim].start()
    durable = infos[victim].is_lamina and "--durability sync" in servers[victim].template
    if durable:
        found = read_back_until_deadline(proxy, victim_keys, want_values=True)
        lost = [i for i in victim_keys if found.get(i) != value_of(i)]
        assert not lost, f"{len(lost)} acknowledged keys lost by kill -9, e.g. {lost[:5]}"
        client = proxy_client(proxy)
        found = get_through(client, indices)
        client.close()
        assert len(found) == KEY_COUNT and all(found[i] == value_of(i) for i in indices)
    else:
        # memcached restarts empty (lamina without Sync durability may lose recent writes):
        # the proxy must reach the server again, and new writes stick.
        found = read_back_until_deadline(proxy, victim_keys, want_values=False)
        if not infos[victim].is_lamina:
            assert found == {}, "memcached kept nothing"
        deadline = time.monotonic() + RECONNECT_DEADLINE_S
        while set_through(proxy, victim_keys):
            assert time.monotonic() < deadline, "writes through the proxy keep failing"
        found = read_back_until_deadline(proxy, victim_keys, want_values=True)
        assert all(found[i] == value_of(i) for i in victim_keys)
