"""CAS races between clients on separate connections: of two `cas` with the same token exactly
one wins, and a gets/cas retry loop in several threads loses no increment."""

import threading

ROUNDS = 30
THREADS = 4
INCREMENTS_PER_THREAD = 40


def test_two_clients_same_token_exactly_one_wins(server, keys):
    k = keys("k")
    a, b = server.client(), server.client()
    try:
        for i in range(ROUNDS):
            a.set(k, f"start{i}".encode())
            _, token_a = a.gets(k)
            _, token_b = b.gets(k)
            assert token_a == token_b
            results = {}
            barrier = threading.Barrier(2)

            def race(name, client, token):
                barrier.wait()
                results[name] = client.cas(k, f"{name}{i}".encode(), token)

            threads = [
                threading.Thread(target=race, args=("a", a, token_a)),
                threading.Thread(target=race, args=("b", b, token_b)),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            winners = [name for name, ok in results.items() if ok is True]
            losers = [name for name, ok in results.items() if ok is False]
            assert len(winners) == 1 and len(losers) == 1, results
            assert a.get(k) == f"{winners[0]}{i}".encode()
    finally:
        a.close()
        b.close()


def test_sequential_cas_second_loses(server, keys):
    k = keys("k")
    a, b = server.client(), server.client()
    a.set(k, b"0")
    _, token = a.gets(k)
    _, token_b = b.gets(k)
    assert a.cas(k, b"a", token) is True
    assert b.cas(k, b"b", token_b) is False
    assert b.get(k) == b"a"
    a.close()
    b.close()


def test_cas_increment_loop_loses_nothing(server, keys):
    k = keys("counter")
    setup = server.client()
    setup.set(k, b"0")
    errors = []
    conflicts = [0] * THREADS

    def worker(index):
        client = server.client()
        try:
            for _ in range(INCREMENTS_PER_THREAD):
                while True:
                    value, token = client.gets(k)
                    if client.cas(k, str(int(value) + 1).encode(), token):
                        break
                    conflicts[index] += 1
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert int(setup.get(k)) == THREADS * INCREMENTS_PER_THREAD
    setup.close()


def test_meta_cas_race(server, keys):
    k = keys("k")
    a, b = server.raw(), server.raw()
    try:
        for i in range(ROUNDS):
            a.meta(f"ms {k} 1", b"s")
            _, tokens, _ = a.meta(f"mg {k} c")
            cas = tokens[0][1:]
            a.send(f"ms {k} 1 C{cas}\r\na\r\n".encode())
            b.send(f"ms {k} 1 C{cas}\r\nb\r\n".encode())
            replies = sorted([a.meta_reply()[0], b.meta_reply()[0]])
            assert replies == ["EX", "HD"], replies
    finally:
        a.close()
        b.close()
