"""Expiry: items with short TTLs become invisible to every command; touch, gat and ms/mg T
change the TTL; flush_all with a delay. Each test polls until a deadline instead of sleeping a
fixed time (memcached's clock has one-second steps), so the suite sleeps a few seconds in all.
"""

import time

import pytest

# An item with TTL 1-2 s must be gone within this (clock steps and scheduling included).
EXPIRY_DEADLINE_S = 5.0
POLL_S = 0.1


def wait_gone(client, key, deadline_s=EXPIRY_DEADLINE_S):
    """Seconds until `key` is invisible; fails past the deadline."""
    start = time.monotonic()
    while client.get(key) is not None:
        if time.monotonic() - start > deadline_s:
            pytest.fail(f"{key} still visible {deadline_s} s after it should expire")
        time.sleep(POLL_S)
    return time.monotonic() - start


def test_items_expire_and_become_invisible_to_every_command(mc, raw, keys):
    short, long_, meta = keys("short"), keys("long"), keys("meta")
    mc.set(short, b"10", expire=2)
    mc.set(long_, b"v", expire=100)
    assert raw.meta(f"ms {meta} 1 T2", b"x")[0] == "HD"
    assert mc.get(short) == b"10", "visible right after the set"
    _, tokens, value = raw.meta(f"mg {meta} t v")
    assert value == b"x" and 1 <= int(tokens[0][1:]) <= 2
    wait_gone(mc, short)
    wait_gone(mc, meta)
    assert mc.get(long_) == b"v"
    assert mc.gets(short) == (None, None)
    assert raw.get(f"gat 100 {short}") == []
    assert mc.incr(short, 1) is None
    assert mc.touch(short, 100) is False
    assert mc.replace(short, b"x") is False
    assert mc.append(short, b"x") is False
    assert mc.delete(short) is False
    assert raw.meta(f"mg {short} v")[0] == "EN"
    assert mc.add(short, b"again") is True, "an expired item is absent for add"
    assert mc.get(short) == b"again"


def test_negative_and_absolute_exptimes(mc, keys):
    mc.set(keys("neg"), b"v", expire=-1)
    assert mc.get(keys("neg")) is None, "a negative exptime is already expired"
    mc.set(keys("past"), b"v", expire=int(time.time()) - 100)
    assert mc.get(keys("past")) is None, "an absolute time in the past is expired"
    mc.set(keys("future"), b"v", expire=int(time.time()) + 100)
    assert mc.get(keys("future")) == b"v", "an absolute time in the future is live"


def test_touch_gat_and_meta_ttl_change_expiry(mc, raw, keys):
    touched, gat, gats, meta, untouched = (keys(s) for s in ("t", "g", "gs", "m", "u"))
    for k in (touched, gat, gats, meta, untouched):
        mc.set(k, b"v", expire=2)
    assert mc.touch(touched, 100) is True
    assert [v for _, _, v, _ in raw.get(f"gat 100 {gat}")] == [b"v"]
    assert [v for _, _, v, _ in raw.get(f"gats 100 {gats}")] == [b"v"]
    assert raw.meta(f"mg {meta} T100")[0] == "HD"
    wait_gone(mc, untouched)
    for k in (touched, gat, gats, meta):
        assert mc.get(k) == b"v", f"{k}: its TTL was extended"
    _, tokens, _ = raw.meta(f"mg {meta} t")
    assert 90 <= int(tokens[0][1:]) <= 100
    # And the other way: touch to a short TTL expires an item that had none.
    never = keys("never")
    mc.set(never, b"v")
    assert mc.touch(never, 1) is True
    wait_gone(mc, never)


def test_flush_all_with_delay(mc, keys):
    k = keys("k")
    mc.set(k, b"v")
    assert mc.flush_all(delay=2) is True
    assert mc.get(k) == b"v", "a delayed flush leaves items visible until it fires"
    wait_gone(mc, k)
    # Once the flush has fired, new items are stored as usual (memcached also flushes items
    # written in the second the flush fires, so write a second later).
    time.sleep(1.1)
    assert mc.set(keys("after"), b"a") is True
    assert mc.get(keys("after")) == b"a"
