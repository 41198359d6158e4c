"""The server process: SIGTERM and SIGINT stop it with exit code 0 (also with clients
connected); lamina keeps its items across a restart on the same directory, after a clean stop
and after kill -9 with Sync durability, with CAS tokens that keep growing. memcached keeps
nothing across restarts, so the persistence tests are lamina's only."""

import signal
import time

import pytest

import support


def lamina_sync_only(info, server):
    if not info.is_lamina:
        pytest.skip("memcached keeps nothing across a restart")
    if "--durability sync" not in server.template:
        pytest.skip("only Sync durability promises every acknowledged write")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_with_exit_code_zero(server_factory, sig, keys):
    server = server_factory.new()
    idle = server_factory.info(server).raw()  # an idle client connection stays open
    busy = server_factory.info(server).client()
    busy.set(keys("k"), b"v")
    assert server.stop(sig) == 0, f"exit code after {sig.name}; log:\n{server.log()}"
    assert idle.closed_by_peer(timeout_s=5), "the server closed its client connections"
    idle.close()
    busy.close()


def test_items_survive_a_clean_restart(server_factory, keys):
    server = server_factory.new()
    info = server_factory.info(server)
    if not info.is_lamina:
        pytest.skip("memcached keeps nothing across a restart")
    with info.raw() as r:
        assert r.store("set", keys("a"), b"alpha", flags=7) == b"STORED"
        assert r.store("set", keys("ttl"), b"t", exptime=100) == b"STORED"
        assert r.store("set", keys("short"), b"s", exptime=1) == b"STORED"
        assert r.store("set", keys("gone"), b"g") == b"STORED"
        assert r.cmd(f"delete {keys('gone')}") == b"DELETED"
        ((_, _, _, cas_before),) = r.get(f"gets {keys('a')}")
    assert server.stop() == 0
    time.sleep(1.1)  # the 1-second item expires while the server is down
    server.start()
    with info.raw() as r:
        assert r.get(f"gets {keys('a')}") == [(keys("a").encode(), 7, b"alpha", cas_before)]
        assert r.get(f"get {keys('gone')}") == [], "a delete survives the restart"
        # Expiry is wall-clock time, across restarts: the 1-second item goes (at once or
        # within a clock step).
        deadline = time.monotonic() + 5
        while r.get(f"get {keys('short')}") != []:
            assert time.monotonic() < deadline, "a 1-second item outlived a restart"
            time.sleep(0.1)
        _, tokens, value = r.meta(f"mg {keys('ttl')} t v")
        assert value == b"t" and 90 <= int(tokens[0][1:]) <= 100, tokens
        assert r.store("set", keys("b"), b"beta") == b"STORED"
        ((_, _, _, cas_after),) = r.get(f"gets {keys('b')}")
        assert cas_after > cas_before, "CAS tokens keep growing across a restart"


def test_kill_9_loses_no_acknowledged_write(server_factory, keys):
    server = server_factory.new()
    info = server_factory.info(server)
    lamina_sync_only(info, server)
    client = info.client()
    acknowledged = {}
    for i in range(300):
        value = f"value-{i}".encode()
        assert client.set(keys(str(i)), value) is True
        acknowledged[keys(str(i))] = value
    for i in range(0, 300, 3):
        assert client.delete(keys(str(i))) is True
        del acknowledged[keys(str(i))]
    client.close()
    server.kill()
    server.start()
    client = info.client()
    got = client.get_many(list(acknowledged) + [keys(str(i)) for i in range(0, 300, 3)])
    assert got == acknowledged
    client.close()


def test_cas_tokens_grow_across_kill_9(server_factory, keys):
    server = server_factory.new()
    info = server_factory.info(server)
    lamina_sync_only(info, server)
    client = info.client()
    client.set(keys("k"), b"v")
    _, cas_before = client.gets(keys("k"))
    client.close()
    server.kill()
    server.start()
    client = info.client()
    assert client.gets(keys("k")) == (b"v", cas_before)
    client.set(keys("other"), b"o")
    _, cas_after = client.gets(keys("other"))
    assert int(cas_after) > int(cas_before), "no CAS token is handed out twice"
    client.close()
