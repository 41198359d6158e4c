"""Iteration order, bounds, reverse and laziness."""

import pytest

import lamina

# More than several pages (64 growing to 1024) and reverse segments (512).
N = 2600


@pytest.fixture
def filled(db):
    keys = [b"k%05d" % i for i in range(N)]
    with db.batch() as batch:
        for i, key in enumerate(reversed(keys)):
            batch.put(key, b"v%d" % (N - 1 - i))
    return db, keys


def test_forward_order_and_values(filled):
    db, keys = filled
    items = list(db.range())
    assert [k for k, _ in items] == keys
    assert all(v == b"v%d" % int(k[1:]) for k, v in items)


def test_reverse_is_descending_and_complete(filled):
    db, keys = filled
    assert [k for k, _ in db.range(reverse=True)] == keys[::-1]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(
    "start,end",
    [
        (None, None),
        (b"k00100", None),
        (None, b"k01900"),
        (b"k00513", b"k02049"),
        (b"k005", b"k006"),
        (b"k00010", b"k00011"),
        (b"k00010", b"k00010"),
        (b"k9", None),
        (b"k00020", b"k00010"),
        (b"a", b"z"),
    ],
)
def test_bounds_start_inclusive_end_exclusive(filled, start, end, reverse):
    db, keys = filled
    expected = [k for k in keys if (start is None or k >= start) and (end is None or k < end)]
    if reverse:
        expected.reverse()
    assert [k for k, _ in db.range(start, end, reverse=reverse)] == expected


def test_keyword_arguments_and_str_bounds(filled):
    db, keys = filled
    got = [k for k, _ in db.range(start="k00005", end="k00008", reverse=True)]
    assert got == [b"k00007", b"k00006", b"k00005"]


def test_unsigned_byte_order(db):
    for key in [b"\xff", b"\x00", b"a", b"a\x00", b"\x7f", b"\x80"]:
        db.put(key, b"")
    expected = [b"\x00", b"a", b"a\x00", b"\x7f", b"\x80", b"\xff"]
    assert [k for k, _ in db.range()] == expected
    assert [k for k, _ in db.range(reverse=True)] == expected[::-1]


def test_iterator_is_lazy_and_sees_later_writes(db):
    for i in range(200):
        db.put(b"a%03d" % i, b"")
    it = db.range()
    assert next(it) == (b"a000", b"")
    # Written after the first page was read, past it: a lazy scan returns it, a scan that
    # read everything up front would not.
    db.put(b"b", b"late")
    rest = [k for k, _ in it]
    assert rest == [b"a%03d" % i for i in range(1, 200)] + [b"b"]


def test_reverse_scan_with_concurrent_writes_returns_every_untouched_key(filled):
    db, keys = filled
    it = db.range(reverse=True)
    first = next(it)
    assert first[0] == keys[-1]
    # Writes during the iteration, to keys that are not in the original set.
    for i in range(0, N, 7):
        db.put(b"k%05d-new" % i, b"")
    got = [first[0]] + [k for k, _ in it]
    assert got == sorted(got, reverse=True)
    assert len(got) == len(set(got))
    assert set(keys) <= set(got)


def test_iterator_after_close_raises_closed(db_path):
    db = lamina.open(db_path, engine="mem", durability="none")
    for i in range(200):
        db.put(b"%03d" % i, b"")
    it = db.range()
    next(it)
    db.close()
    with pytest.raises(lamina.Closed):
        list(it)
