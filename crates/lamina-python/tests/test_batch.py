"""Write batches: atomic on exit, discarded on exception."""

import threading

import pytest

import lamina


def test_batch_commits_on_exit_and_is_invisible_before(db):
    db.put(b"gone", b"x")
    with db.batch() as batch:
        batch.put(b"a", b"1")
        batch.put(b"b", b"2")
        batch.delete(b"gone")
        batch.put(b"a", b"3")  # a later operation on the same key wins
        assert len(batch) == 4
        assert db.get(b"a") is None and db.get(b"gone") == b"x"
    assert db[b"a"] == b"3" and db[b"b"] == b"2" and db.get(b"gone") is None
    assert len(batch) == 0


def test_batch_discards_on_exception(db):
    db.put(b"kept", b"old")
    with pytest.raises(RuntimeError):
        with db.batch() as batch:
            batch.put(b"kept", b"new")
            batch.put(b"new", b"x")
            raise RuntimeError("abandon")
    assert db[b"kept"] == b"old" and db.get(b"new") is None


def test_batch_refused_as_a_whole(db):
    db.put(b"a", b"old")
    with pytest.raises(lamina.InvalidArgument):
        with db.batch() as batch:
            batch.put(b"a", b"new")
            batch.put(b"b" * (lamina.KEY_BYTES_MAX + 1), b"x")
    assert db[b"a"] == b"old"
    assert [k for k, _ in db.range()] == [b"a"]


def test_spent_batch_refuses_more_operations(db):
    batch = db.batch()
    batch.put(b"k", b"v")
    batch.commit()
    assert db[b"k"] == b"v"
    with pytest.raises(lamina.InvalidArgument):
        batch.put(b"k2", b"v")
    with pytest.raises(lamina.InvalidArgument):
        batch.commit()


def test_readers_never_see_part_of_a_batch(db):
    """Each batch writes round i to `b` then to `a`. Applied atomically, a reader that sees
    b == i and then reads a finds a >= i; applied one operation at a time, it could read
    a == i - 1 (b is written first)."""
    rounds = 1500
    db.put(b"a", b"0")
    db.put(b"b", b"0")
    done = threading.Event()
    torn = []

    def reader():
        while not done.is_set():
            b = int(db[b"b"])
            a = int(db[b"a"])
            if a < b:
                torn.append((a, b))

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    for i in range(1, rounds + 1):
        with db.batch() as batch:
            batch.put(b"b", b"%d" % i)
            batch.put(b"a", b"%d" % i)
    done.set()
    for t in readers:
        t.join()
    assert torn == []
    assert db[b"a"] == db[b"b"] == b"%d" % rounds
