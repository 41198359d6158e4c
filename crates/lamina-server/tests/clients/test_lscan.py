"""lamina's ordered extension `lscan <limit> [<from> [<to>]]`: live items with
from <= key < to in key order, at most `limit`, answered like `get`. memcached has no such
command: these tests are lamina's only."""

import random

import pytest

SCAN_LIMIT_MAX = 10_000


@pytest.fixture
def loaded(raw, keys, lamina_only):
    """50 items under the test's prefix, stored in random order."""
    names = [keys(f"{i:03d}") for i in range(50)]
    shuffled = names[:]
    random.Random(5).shuffle(shuffled)
    for name in shuffled:
        assert raw.store("set", name, name.encode()[::-1], flags=len(name)) == b"STORED"
    return names


def scan(raw, *args):
    return raw.get("lscan " + " ".join(str(a) for a in args))


def test_lscan_returns_keys_in_order_with_values_and_flags(raw, keys, loaded):
    lo, hi = keys(""), keys("~")
    got = scan(raw, 100, lo, hi)
    assert [k.decode() for k, _, _, _ in got] == loaded
    for k, flags, data, _ in got:
        assert data == k[::-1] and flags == len(k)


def test_lscan_limit_and_bounds(raw, keys, loaded):
    assert [k.decode() for k, *_ in scan(raw, 7, keys(""), keys("~"))] == loaded[:7]
    # from is inclusive, to exclusive.
    got = scan(raw, 100, keys("010"), keys("020"))
    assert [k.decode() for k, *_ in got] == loaded[10:20]
    # Without `to`: from `from` to the end of the key space, limit-bounded.
    got = scan(raw, 5, keys("045"))
    assert [k.decode() for k, *_ in got] == loaded[45:50]
    # Paging: start the next page after the last key.
    first = scan(raw, 20, keys(""), keys("~"))
    second = scan(raw, 20, first[-1][0].decode(), keys("~"))
    assert second[0][0] == first[-1][0], "from is inclusive"
    assert second[1][0] == loaded[20].encode()
    assert scan(raw, 10, keys("~"), keys("~~")) == []


def test_lscan_without_bounds_starts_at_the_first_key(raw, lamina_only):
    got = scan(raw, 3)
    assert 1 <= len(got) <= 3
    assert [k for k, *_ in got] == sorted(k for k, *_ in got)


def test_lscan_skips_deleted_and_expired_items(raw, keys, loaded):
    assert raw.cmd(f"delete {loaded[3]}") == b"DELETED"
    assert raw.store("set", loaded[4], b"x", exptime=-1) == b"STORED"
    got = [k.decode() for k, *_ in scan(raw, 100, keys(""), keys("~"))]
    assert got == loaded[:3] + loaded[5:]


def test_lscan_bad_arguments(raw, lamina_only):
    for line in ("lscan 0", f"lscan {SCAN_LIMIT_MAX + 1}", "lscan abc", "lscan -1",
                 "lscan 10 " + "k" * 251):
        reply = raw.cmd(line)
        assert reply.startswith(b"CLIENT_ERROR "), f"{line!r} -> {reply!r}"
    reply = raw.cmd("lscan")
    assert reply == b"ERROR" or reply.startswith(b"CLIENT_ERROR "), f"a missing limit: {reply!r}"
    assert raw.cmd("mn") == b"MN", "the connection stays usable"
