"""The classic memcached text commands through pymemcache (and a raw connection where
pymemcache has no method or hides the reply): storage, retrieval with CAS tokens, arithmetic,
touch, flush_all, stats, version, verbosity, quit."""

import re

import pytest

NON_NUMERIC = b"CLIENT_ERROR cannot increment or decrement non-numeric value"
U64_MAX = 2**64 - 1


def test_set_get_and_multi_get(mc, keys):
    assert mc.set(keys("a"), b"alpha") is True
    assert mc.set(keys("b"), b"") is True
    assert mc.get(keys("a")) == b"alpha"
    assert mc.get(keys("b")) == b""
    assert mc.get(keys("missing")) is None
    got = mc.get_many([keys("a"), keys("b"), keys("missing")])
    assert got == {keys("a"): b"alpha", keys("b"): b""}
    assert mc.set(keys("a"), b"overwritten") is True
    assert mc.get(keys("a")) == b"overwritten"


def test_client_flags_round_trip(raw, keys):
    for flags in (0, 1, 42, 2**31, 2**32 - 1):
        assert raw.store("set", keys("f"), b"v", flags=flags) == b"STORED"
        assert raw.get(f"get {keys('f')}") == [(keys("f").encode(), flags, b"v", None)]


def test_get_returns_values_in_request_order_with_duplicates(raw, keys):
    assert raw.store("set", keys("x"), b"1") == b"STORED"
    assert raw.store("set", keys("y"), b"2") == b"STORED"
    got = raw.get(f"get {keys('y')} {keys('nope')} {keys('x')} {keys('y')}")
    assert [(k, v) for k, _, v, _ in got] == [
        (keys("y").encode(), b"2"),
        (keys("x").encode(), b"1"),
        (keys("y").encode(), b"2"),
    ]


def test_gets_cas_tokens_change_and_grow_with_every_write(mc, keys):
    k = keys("c")
    mc.set(k, b"1")
    value, cas1 = mc.gets(k)
    assert value == b"1" and cas1 is not None
    value, cas1_again = mc.gets(k)
    assert cas1_again == cas1, "a read must not change the CAS token"
    mc.set(k, b"2")
    _, cas2 = mc.gets(k)
    mc.append(k, b"x")
    _, cas3 = mc.gets(k)
    assert int(cas1) < int(cas2) < int(cas3)
    other = keys("other")
    mc.set(other, b"o")
    _, cas_other = mc.gets(other)
    assert int(cas_other) > int(cas3), "tokens are unique across keys"
    assert mc.gets(keys("missing")) == (None, None)


def test_gets_many(mc, keys):
    mc.set(keys("a"), b"A")
    mc.set(keys("b"), b"B")
    got = mc.gets_many([keys("a"), keys("b"), keys("none")])
    assert set(got) == {keys("a"), keys("b")}
    assert got[keys("a")][0] == b"A" and got[keys("b")][0] == b"B"
    assert got[keys("a")][1] != got[keys("b")][1]


def test_cas(mc, keys):
    k = keys("k")
    assert mc.cas(k, b"v", b"1") is None, "cas on a missing key is NOT_FOUND"
    mc.set(k, b"v1")
    _, token = mc.gets(k)
    assert mc.cas(k, b"v2", token) is True
    assert mc.get(k) == b"v2"
    assert mc.cas(k, b"v3", token) is False, "a stale token is EXISTS"
    assert mc.get(k) == b"v2"
    _, token2 = mc.gets(k)
    assert token2 != token


def test_cas_raw_replies_and_flags(raw, keys):
    k = keys("k")
    assert raw.store("set", k, b"a", flags=3) == b"STORED"
    ((_, _, _, token),) = raw.get(f"gets {k}")
    assert raw.store("cas", k, b"b", flags=9, extra=str(token + 1000)) == b"EXISTS"
    assert raw.store("cas", k, b"b", flags=9, extra=str(token)) == b"STORED"
    ((_, flags, data, _),) = raw.get(f"gets {k}")
    assert (flags, data) == (9, b"b")
    assert raw.store("cas", keys("none"), b"b", extra="1") == b"NOT_FOUND"


def test_add(mc, keys):
    k = keys("k")
    assert mc.add(k, b"first") is True
    assert mc.add(k, b"second") is False
    assert mc.get(k) == b"first"


def test_replace(mc, keys):
    k = keys("k")
    assert mc.replace(k, b"x") is False
    assert mc.get(k) is None
    mc.set(k, b"old")
    assert mc.replace(k, b"new") is True
    assert mc.get(k) == b"new"


def test_append_prepend(mc, raw, keys):
    k = keys("k")
    assert mc.append(k, b"x") is False, "append to a missing item is NOT_STORED"
    assert mc.prepend(k, b"x") is False
    assert mc.get(k) is None
    assert raw.store("set", k, b"middle", flags=7) == b"STORED"
    assert mc.append(k, b">end") is True
    assert mc.prepend(k, b"start<") is True
    # append/prepend ignore the flags and exptime they carry: the item keeps its own.
    assert raw.store("append", k, b"!", flags=99) == b"STORED"
    assert raw.get(f"get {k}") == [(k.encode(), 7, b"start<middle>end!", None)]


def test_delete(mc, raw, keys):
    k = keys("k")
    mc.set(k, b"v")
    assert mc.delete(k) is True
    assert mc.get(k) is None
    assert mc.delete(k) is False
    assert raw.cmd(f"delete {k}") == b"NOT_FOUND"
    mc.set(k, b"v")
    assert raw.cmd(f"delete {k} 0") == b"DELETED", "the legacy time 0 is accepted"


def test_incr_decr(mc, keys):
    k = keys("n")
    assert mc.incr(k, 1) is None, "incr on a missing item is NOT_FOUND"
    assert mc.decr(k, 1) is None
    mc.set(k, b"10")
    assert mc.incr(k, 5) == 15
    assert mc.decr(k, 3) == 12
    assert mc.incr(k, 0) == 12
    assert mc.incr(k, 88) == 100
    assert mc.get(k) == b"100"
    assert mc.decr(k, 1000) == 0, "decr stops at 0"
    assert int(mc.get(k).strip()) == 0
    assert mc.decr(k, 1) == 0


def test_incr_wraps_at_64_bits(mc, keys):
    k = keys("n")
    mc.set(k, str(U64_MAX).encode())
    assert mc.incr(k, 1) == 0
    mc.set(k, str(U64_MAX - 1).encode())
    assert mc.incr(k, 3) == 1
    mc.set(k, b"5")
    assert mc.incr(k, U64_MAX) == 4
    assert mc.incr(k, U64_MAX - 4) == U64_MAX
    assert mc.get(k) == str(U64_MAX).encode()


def test_decr_result_reads_back_as_a_number(mc, keys):
    k = keys("n")
    mc.set(k, b"1000")
    assert mc.decr(k, 991) == 9
    # memcached pads a shrunk number with spaces ("9   "); both forms parse as 9.
    assert int(mc.get(k).strip()) == 9
    assert mc.incr(k, 1) == 10


def test_incr_non_numeric_and_bad_delta(raw, keys):
    k = keys("n")
    assert raw.store("set", k, b"abc") == b"STORED"
    assert raw.cmd(f"incr {k} 1") == NON_NUMERIC
    assert raw.cmd(f"decr {k} 1") == NON_NUMERIC
    assert raw.get(f"get {k}") == [(k.encode(), 0, b"abc", None)], "unchanged"
    assert raw.store("set", k, b"5") == b"STORED"
    assert raw.cmd(f"incr {k} abc").startswith(b"CLIENT_ERROR ")
    assert raw.cmd(f"incr {k} -1").startswith(b"CLIENT_ERROR ")
    assert raw.cmd(f"incr {k} {2**64}").startswith(b"CLIENT_ERROR "), "delta over 64 bits"
    assert raw.cmd(f"incr {k} 1") == b"6", "connection still usable"


def test_incr_keeps_flags(raw, keys):
    k = keys("n")
    assert raw.store("set", k, b"1", flags=77) == b"STORED"
    assert raw.cmd(f"incr {k} 41") == b"42"
    assert raw.get(f"get {k}") == [(k.encode(), 77, b"42", None)]


def test_touch(mc, raw, keys):
    k = keys("k")
    assert mc.touch(k, 100) is False
    assert raw.cmd(f"touch {k} 10") == b"NOT_FOUND"
    mc.set(k, b"v")
    assert mc.touch(k, 100) is True
    assert raw.cmd(f"touch {k} 0") == b"TOUCHED"
    assert mc.get(k) == b"v"


def test_gat_gats(raw, keys):
    k = keys("k")
    assert raw.get(f"gat 100 {k}") == []
    assert raw.store("set", k, b"value", flags=5) == b"STORED"
    assert raw.get(f"gat 100 {k}") == [(k.encode(), 5, b"value", None)]
    got = raw.get(f"gats 0 {k} {keys('missing')}")
    assert len(got) == 1 and got[0][:3] == (k.encode(), 5, b"value")
    ((_, _, _, token),) = raw.get(f"gets {k}")
    assert got[0][3] == token, "gats returns the item's CAS token"


def test_flush_all(mc, keys):
    mc.set(keys("a"), b"1")
    mc.set(keys("b"), b"2")
    assert mc.flush_all() is True
    assert mc.get_many([keys("a"), keys("b")]) == {}
    assert mc.add(keys("a"), b"new") is True, "a flushed item is absent for add"
    assert mc.get(keys("a")) == b"new"


def test_flush_all_noreply(raw, keys):
    assert raw.store("set", keys("a"), b"1") == b"STORED"
    raw.send(b"flush_all noreply\r\n")
    assert raw.get(f"get {keys('a')}") == []
    raw.send(b"flush_all 0 noreply\r\n")
    assert raw.cmd("mn") == b"MN"


def test_stats(mc, raw, keys):
    before = {k.decode(): v for k, v in mc.stats().items()}
    wanted = ("pid", "uptime", "time", "version", "curr_connections", "total_connections",
              "curr_items", "total_items", "bytes", "cmd_get", "cmd_set", "get_hits",
              "get_misses")
    missing = [name for name in wanted if name not in before]
    assert not missing, f"stats lacks {missing}"
    mc.set(keys("k"), b"v")
    mc.get(keys("k"))
    mc.get(keys("missing"))
    after = {k.decode(): v for k, v in mc.stats().items()}
    assert int(after["cmd_set"]) >= int(before["cmd_set"]) + 1
    assert int(after["get_hits"]) >= int(before["get_hits"]) + 1
    assert int(after["get_misses"]) >= int(before["get_misses"]) + 1
    assert int(after["cmd_get"]) >= int(before["cmd_get"]) + 2
    # The raw reply is STAT lines then END.
    raw.send(b"stats\r\n")
    while (line := raw.line()) != b"END":
        assert re.fullmatch(rb"STAT \S+ [^\r\n]*", line), line


def test_stats_unknown_group_is_an_error_and_the_connection_stays(raw):
    reply = raw.cmd("stats no_such_group_here")
    assert reply in (b"ERROR",) or reply.startswith((b"CLIENT_ERROR", b"SERVER_ERROR")), reply
    assert raw.cmd("version").startswith(b"VERSION ")


def test_lamina_engine_stats(server, lamina_only):
    import support

    engine = support.stats(server.address, "lamina")
    assert engine, "stats lamina: lamina's engine stats are empty"


def test_version(mc, server):
    version = mc.version().decode()
    if server.is_lamina:
        assert re.fullmatch(r"1\.6\.0-lamina-\d+\.\d+\.\d+\S*", version), version
    else:
        assert re.fullmatch(r"1\.6\.\d+\S*", version), version


def test_verbosity(raw):
    assert raw.cmd("verbosity 1") == b"OK"
    assert raw.cmd("verbosity 0") == b"OK"
    raw.send(b"verbosity 1 noreply\r\nverbosity 0 noreply\r\n")
    assert raw.cmd("version").startswith(b"VERSION ")


def test_quit_closes_the_connection(server, keys):
    r = server.raw()
    r.send(f"set {keys('k')} 0 0 1\r\nx\r\nquit\r\nget {keys('k')}\r\n".encode())
    assert r.line() == b"STORED", "replies before quit are sent"
    assert r.closed_by_peer(), "quit closes the connection"
    assert r.buf == b"", f"nothing after quit is answered: {r.buf!r}"
    r.close()


def test_quit_through_pymemcache(server, keys):
    client = server.client()
    client.set(keys("k"), b"v")
    client.quit()
    # pymemcache reconnects on the next command.
    assert client.get(keys("k")) == b"v"
    client.close()


def test_pipelined_mixed_commands(raw, keys):
    k = keys("k")
    raw.send(
        f"set {k} 0 0 1\r\n1\r\nincr {k} 2\r\nget {k}\r\nappend {k} 0 0 1\r\n0\r\n"
        f"gets {k}\r\ndelete {k}\r\nget {k}\r\nversion\r\n".encode()
    )
    assert raw.line() == b"STORED"
    assert raw.line() == b"3"
    assert raw.values() == [(k.encode(), 0, b"3", None)]
    assert raw.line() == b"STORED"
    assert raw.values()[0][2] == b"30"
    assert raw.line() == b"DELETED"
    assert raw.values() == []
    assert raw.line().startswith(b"VERSION ")


@pytest.mark.parametrize("length", [1, 100, 250])
def test_key_lengths_up_to_250(mc, keys, length):
    k = (keys("") + "k" * 300)[:length] if length > len(keys("")) else "k" * length
    assert mc.set(k, b"v") is True
    assert mc.get(k) == b"v"
    mc.delete(k)
