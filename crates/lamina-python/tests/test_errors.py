"""Every lamina error kind arrives as its own subclass of lamina.Error."""

import os

import pytest

import lamina

KINDS = [
    lamina.InvalidArgument,
    lamina.Corruption,
    lamina.Io,
    lamina.NoSpace,
    lamina.Closed,
    lamina.Incompatible,
    lamina.Unsupported,
]


def test_hierarchy():
    assert issubclass(lamina.Error, Exception)
    for kind in KINDS:
        assert issubclass(kind, lamina.Error)
    assert len(set(KINDS)) == len(KINDS)


def test_invalid_argument(db):
    with pytest.raises(lamina.InvalidArgument, match="1024-byte limit"):
        db.put(b"k" * (lamina.KEY_BYTES_MAX + 1), b"v")
    with pytest.raises(lamina.InvalidArgument, match="value is"):
        db.put(b"k", b"v" * (lamina.VALUE_BYTES_MAX + 1))
    assert list(db.range()) == [], "refused writes changed nothing"
    # The empty key is a key (ordered first), as in the contest API and LevelDB.
    db.put(b"", b"v")
    assert db[b""] == b"v"
    assert list(db.range()) == [(b"", b"v")]


def test_bad_options(tmp_path):
    with pytest.raises(lamina.InvalidArgument, match="unknown engine `nope`"):
        lamina.open(tmp_path / "a", engine="nope")
    with pytest.raises(lamina.InvalidArgument, match="durability"):
        lamina.open(tmp_path / "b", durability="often")
    with pytest.raises(lamina.InvalidArgument, match="durability"):
        lamina.open(tmp_path / "c", durability="buffered", max_delay_ms=0)
    with pytest.raises(lamina.Io):
        lamina.open(tmp_path / "missing", create_if_missing=False)


def test_closed(db_path):
    db = lamina.open(db_path, engine="mem")
    db.close()
    for call in (lambda: db.put(b"k", b"v"), lambda: db[b"k"], lambda: db.stats()):
        with pytest.raises(lamina.Closed):
            call()
    with pytest.raises(lamina.Closed):
        with db.batch() as batch:
            batch.put(b"k", b"v")


def test_io_when_locked_by_another_handle(db_path):
    with lamina.open(db_path, engine="mem"):
        with pytest.raises(lamina.Io, match="already open"):
            lamina.open(db_path, engine="mem")


def test_incompatible(tmp_path, db_path):
    with lamina.open(db_path, engine="trie"):
        pass
    with pytest.raises(lamina.Incompatible, match="holds a `trie` database"):
        lamina.open(db_path, engine="nbtree")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a database")
    with pytest.raises(lamina.Incompatible, match="not a lamina database"):
        lamina.open(foreign)


def test_unsupported(db_path):
    with pytest.raises(lamina.Unsupported, match="memory_limit_bytes"):
        lamina.open(db_path, engine="fdtree", memory_limit_bytes=1 << 20)


def test_no_space_changes_nothing(db_path):
    with lamina.open(db_path, engine="mem", durability="none", memory_limit_bytes=1 << 20) as db:
        with pytest.raises(lamina.NoSpace, match="memory_limit_bytes"):
            for i in range(100_000):
                db.put(b"key%08d" % i, b"v" * 100)
        written = i
        assert db.get(b"key%08d" % written) is None
        assert db[b"key%08d" % (written - 1)] == b"v" * 100
        assert db.delete(b"key%08d" % 0)


def test_corruption(db_path):
    with lamina.open(db_path, engine="fdtree") as db:
        for i in range(2000):
            db.put(b"k%05d" % i, b"v" * 100)
    level_files = [f for f in os.listdir(db_path) if f.endswith(".lvl")]
    assert level_files, os.listdir(db_path)
    with open(db_path / level_files[0], "r+b") as f:
        f.seek(10)
        byte = f.read(1)
        f.seek(10)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(lamina.Corruption, match="checksum"):
        with lamina.open(db_path, engine="fdtree") as db:
            list(db.range())
