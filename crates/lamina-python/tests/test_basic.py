"""Single-key operations, argument types and the context manager."""

import pytest

import lamina


def test_put_get_item_and_default(db):
    db.put(b"apple", b"red")
    db[b"banana"] = b"yellow"
    assert db[b"apple"] == b"red"
    assert db.get(b"banana") == b"yellow"
    assert db.get(b"cherry") is None
    assert db.get(b"cherry", b"none") == b"none"
    assert b"apple" in db and b"cherry" not in db
    with pytest.raises(KeyError) as raised:
        db[b"cherry"]
    assert raised.value.args == (b"cherry",)


def test_overwrite_and_empty_value(db):
    db.put(b"k", b"one")
    db.put(b"k", b"")
    assert db[b"k"] == b""
    assert db.get(b"k", b"default") == b""


def test_delete_returns_whether_it_existed(db):
    db.put(b"k", b"v")
    assert db.delete(b"k") is True
    assert db.delete(b"k") is False
    assert db.get(b"k") is None
    db[b"k"] = b"v"
    del db[b"k"]
    with pytest.raises(KeyError):
        del db[b"k"]


def test_str_is_utf8_and_buffers_are_accepted(db):
    db.put("clé", "värde")
    assert db["clé".encode()] == "värde".encode()
    assert db.get("clé") == "värde".encode()
    db.put(bytearray(b"ba"), memoryview(b"mv"))
    assert db[b"ba"] == b"mv"
    with pytest.raises(TypeError):
        db.put(1, b"v")
    with pytest.raises(TypeError):
        db.put(b"k", None)


def test_compare_and_swap_tells_absent_from_mismatch(db):
    absent = db.compare_and_swap(b"k", b"x", b"y")
    assert not absent and absent.absent and not absent.mismatch and absent.current is None
    inserted = db.compare_and_swap(b"k", None, b"one")
    assert inserted and inserted.swapped
    mismatch = db.compare_and_swap(b"k", b"two", b"three")
    assert not mismatch and mismatch.mismatch and not mismatch.absent
    assert mismatch.current == b"one"
    exists = db.compare_and_swap(b"k", None, b"other")
    assert not exists and exists.current == b"one"
    assert db.compare_and_swap(b"k", b"one", b"two")
    assert db[b"k"] == b"two"
    assert db.compare_and_swap(b"k", b"two", None)
    assert db.get(b"k") is None


def test_context_manager_closes(db_path):
    with lamina.open(db_path, engine="mem", durability="none") as db:
        db.put(b"k", b"v")
        assert not db.closed
    assert db.closed
    with pytest.raises(lamina.Closed):
        db.get(b"k")
    db.close()  # idempotent


def test_properties_and_stats(db):
    assert db.engine == "fdtree-fc"
    db.put(b"k", b"v")
    stats = db.stats()
    assert stats["engine"] == "fdtree"
    assert stats["user_bytes_written"] >= 2
    assert isinstance(stats["io"]["bytes_written"], int)
    assert isinstance(stats["extra"], dict)


def test_every_engine_name_opens_and_keeps_data(tmp_path):
    assert "fdtree" in lamina.ENGINES and "trie" in lamina.ENGINES
    for name in lamina.ENGINES:
        path = tmp_path / name
        with lamina.open(path, engine=name, durability="sync") as db:
            db.put(b"engine", name)
            db.put(b"other", b"x")
            assert db.delete(b"other")
        with lamina.open(path, engine=name) as db:
            assert db[b"engine"] == name.encode(), name
            assert db.get(b"other") is None, name
            assert list(db.range()) == [(b"engine", name.encode())], name


@pytest.mark.parametrize("durability", ["sync", "buffered", "none"])
def test_reopen_keeps_data(db_path, durability):
    with lamina.open(db_path, engine="fdtree", durability=durability) as db:
        for i in range(3000):
            db.put(b"key%06d" % i, b"value%d" % i)
        for i in range(0, 3000, 3):
            db.delete(b"key%06d" % i)
    with lamina.open(db_path) as db:
        for i in range(3000):
            expected = None if i % 3 == 0 else b"value%d" % i
            assert db.get(b"key%06d" % i) == expected
        assert sum(1 for _ in db.range()) == 2000


def test_reopen_after_close_without_context_manager(db_path):
    db = lamina.open(db_path, engine="trie")
    db.put(b"k", b"v")
    db.close()
    # close released the directory lock: the same process may open it again at once
    db = lamina.open(db_path, engine="trie")
    assert db[b"k"] == b"v"
    db.close()
