"""Large values up to the item size limit and just over it, and binary values (every byte
value, protocol delimiters inside data).

The limit differs on purpose: lamina's items are bounded by the engine's 4096-byte value limit
minus the item's metadata, memcached's by its 1 MiB item size (see conftest.ServerInfo)."""

import os

TOO_LARGE = b"SERVER_ERROR object too large for cache"


def stores(raw, key, size):
    """Whether a classic set of `size` bytes is stored; anything but STORED or the too-large
    error fails the test. The connection must stay usable after either."""
    reply = raw.store("set", key, os.urandom(size))
    assert reply in (b"STORED", TOO_LARGE), f"set of {size} bytes: {reply!r}"
    assert raw.cmd("mn") == b"MN", "the connection stays in sync after the reply"
    return reply == b"STORED"


def test_large_values_up_to_the_limit(mc, server, keys):
    for size in (1000, 4000, server.value_ok_max):
        value = os.urandom(size)
        assert mc.set(keys(str(size)), value) is True, f"{size} bytes"
        assert mc.get(keys(str(size))) == value
    got = mc.get_many([keys(str(s)) for s in (1000, 4000, server.value_ok_max)])
    assert sorted(len(v) for v in got.values()) == [1000, 4000, server.value_ok_max]


def test_just_over_the_limit_is_refused_and_the_connection_still_works(raw, server, keys):
    k = keys("k")
    assert raw.store("set", k, b"small") == b"STORED"
    big = os.urandom(server.value_refused_min)
    assert raw.store("set", k, big) == TOO_LARGE
    # The refused data block was consumed, not run as commands; the old item is unchanged or
    # gone (memcached unlinks it), never replaced by the refused value.
    assert raw.get(f"get {k}") in ([], [(k.encode(), 0, b"small", None)])
    for verb in ("add", "replace", "append", "prepend"):
        reply = raw.store(verb, keys(verb), big)
        assert reply in (TOO_LARGE, b"NOT_STORED"), f"{verb}: {reply!r}"
    ((_, _, _, cas),) = raw.get(f"gets {k}") or [(None, None, None, 1)]
    assert raw.store("cas", k, big, extra=str(cas)) == TOO_LARGE
    code, tokens, _ = raw.meta(f"ms {k} {len(big)} T0", big)
    assert (code, tokens) == ("SERVER_ERROR", "object too large for cache".split())
    assert raw.store("set", k, b"after") == b"STORED"
    assert raw.get(f"get {k}") == [(k.encode(), 0, b"after", None)]


def test_boundary_between_stored_and_refused(raw, server, keys):
    k = keys("k")
    lo, hi = server.value_ok_max, server.value_refused_min
    assert stores(raw, k, lo), f"{lo} bytes must be stored"
    assert not stores(raw, k, hi), f"{hi} bytes must be refused"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if stores(raw, k, mid):
            lo = mid
        else:
            hi = mid
    print(f"{server.kind}: largest value stored with a {len(k)}-byte key: {lo} bytes")
    # Growing an item past the limit with append is refused too (memcached says NOT_STORED),
    # and leaves it unchanged.
    value = os.urandom(lo)
    assert raw.store("set", k, value) == b"STORED"
    assert raw.store("append", k, b"x") in (TOO_LARGE, b"NOT_STORED")
    assert raw.get(f"get {k}") == [(k.encode(), 0, value, None)]


def test_all_byte_values(mc, raw, keys):
    every = bytes(range(256))
    assert mc.set(keys("every"), every * 4) is True
    assert mc.get(keys("every")) == every * 4
    for b in range(256):
        mc.set(keys(f"b{b}"), bytes([b]) * 3)
    got = mc.get_many([keys(f"b{b}") for b in range(256)])
    assert all(got[keys(f"b{b}")] == bytes([b]) * 3 for b in range(256))
    assert raw.meta(f"ms {keys('meta')} 256", every)[0] == "HD"
    assert raw.meta(f"mg {keys('meta')} v") == ("VA", [], every)
    ((_, _, data, _),) = raw.get(f"gets {keys('meta')}")
    assert data == every


def test_protocol_delimiters_inside_values(mc, raw, keys):
    tricky = b"\r\nEND\r\nVALUE x 0 1\r\n\r\n\x00STORED\r\n"
    assert mc.set(keys("t"), tricky) is True
    assert mc.get(keys("t")) == tricky
    assert raw.store("set", keys("crlf"), b"\r\n") == b"STORED"
    assert raw.get(f"get {keys('crlf')}") == [(keys("crlf").encode(), 0, b"\r\n", None)]
    assert mc.append(keys("t"), b"\r\n") is True
    assert mc.get(keys("t")) == tricky + b"\r\n"
