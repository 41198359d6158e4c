"""Many Python threads on one database (the GIL is released inside every call)."""

import threading

import pytest

import lamina

THREADS = 8
OPS = 1500


@pytest.mark.parametrize("engine", ["fdtree", "trie", "mem"])
def test_threads_hammer_one_db(db_path, engine):
    errors = []
    with lamina.open(db_path, engine=engine, durability="none") as db:
        db.put(b"counter", b"0")

        def work(t):
            try:
                for i in range(OPS):
                    key = b"t%02d-%06d" % (t, i)
                    db.put(key, b"%d" % i)
                    assert db[key] == b"%d" % i
                    if i % 3 == 0:
                        assert db.delete(key)
                    if i % 10 == 0:
                        while True:  # a lost update would break the final count
                            current = db[b"counter"]
                            if db.compare_and_swap(b"counter", current, b"%d" % (int(current) + 1)):
                                break
                    if i % 100 == 0:
                        keys = [k for k, _ in db.range(b"t%02d-" % t, b"t%02d-\xff" % t)]
                        assert keys == sorted(keys)
            except Exception as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert db[b"counter"] == b"%d" % (THREADS * (OPS // 10))
        for t in range(THREADS):
            keys = [k for k, _ in db.range(b"t%02d-" % t, b"t%02d-\xff" % t)]
            assert keys == [b"t%02d-%06d" % (t, i) for i in range(OPS) if i % 3 != 0]


def test_close_waits_for_calls_in_progress(db_path):
    db = lamina.open(db_path, engine="mem", durability="none")
    stop = threading.Event()
    outcomes = []

    def writer():
        i = 0
        while not stop.is_set():
            try:
                db.put(b"k%d" % i, b"v")
            except lamina.Closed:
                outcomes.append("closed")
                return
            i += 1
        outcomes.append("stopped")

    thread = threading.Thread(target=writer)
    thread.start()
    while db.stats()["user_bytes_written"] < 1000:
        pass
    db.close()
    thread.join(timeout=60)
    stop.set()
    assert outcomes == ["closed"]
