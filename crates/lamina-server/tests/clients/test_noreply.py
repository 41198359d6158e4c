"""`noreply` on every command that takes it: the command takes effect and nothing is answered
(a stray reply would shift every later reply on the connection, which the final reads catch).
"""


def test_noreply_on_every_command(raw, keys):
    k, c, n, t = keys("k"), keys("c"), keys("n"), keys("t")
    raw.send(
        (
            f"set {k} 1 0 1 noreply\r\na\r\n"
            f"add {k} 0 0 1 noreply\r\nX\r\n"  # fails (exists): NOT_STORED is not sent
            f"add {c} 2 0 1 noreply\r\nc\r\n"
            f"replace {k} 3 0 1 noreply\r\nb\r\n"
            f"replace {keys('none')} 0 0 1 noreply\r\nX\r\n"  # fails: NOT_STORED
            f"append {k} 0 0 1 noreply\r\n>\r\n"
            f"prepend {k} 0 0 1 noreply\r\n<\r\n"
            f"append {keys('none')} 0 0 1 noreply\r\nX\r\n"  # fails: NOT_STORED
            f"set {n} 0 0 2 noreply\r\n10\r\n"
            f"incr {n} 5 noreply\r\n"
            f"decr {n} 3 noreply\r\n"
            f"incr {keys('none')} 1 noreply\r\n"  # fails: NOT_FOUND
            f"set {t} 0 0 1 noreply\r\nt\r\n"
            f"touch {t} 100 noreply\r\n"
            f"touch {keys('none')} 100 noreply\r\n"  # fails: NOT_FOUND
            f"delete {c} noreply\r\n"
            f"delete {keys('none')} noreply\r\n"  # fails: NOT_FOUND
            f"verbosity 0 noreply\r\n"
            f"get {k} {c} {n} {t}\r\n"
        ).encode()
    )
    got = raw.values()
    assert [(key, flags, data.strip()) for key, flags, data, _ in got] == [
        (k.encode(), 3, b"<b>"),
        (n.encode(), 0, b"12"),
        (t.encode(), 0, b"t"),
    ]


def test_noreply_cas(raw, keys):
    k = keys("k")
    assert raw.store("set", k, b"a") == b"STORED"
    ((_, _, _, token),) = raw.get(f"gets {k}")
    raw.send(
        f"cas {k} 0 0 1 {token + 99} noreply\r\nX\r\n"  # fails: EXISTS is not sent
        f"cas {k} 0 0 1 {token} noreply\r\nb\r\n"
        f"cas {keys('none')} 0 0 1 1 noreply\r\nX\r\n"  # fails: NOT_FOUND
        f"get {k}\r\n".encode()
    )
    assert raw.values() == [(k.encode(), 0, b"b", None)]


def test_noreply_flush_all(raw, keys):
    assert raw.store("set", keys("k"), b"a") == b"STORED"
    raw.send(f"flush_all noreply\r\nget {keys('k')}\r\n".encode())
    assert raw.values() == []


def test_noreply_through_pymemcache(server, keys):
    client = server.client(default_noreply=True)
    k = keys("k")
    assert client.set(k, b"v") is True
    assert client.add(k, b"w") is True  # pymemcache cannot know: it returns True
    client.append(k, b"!")
    client.set(keys("n"), b"1")
    client.incr(keys("n"), 9)
    client.delete(keys("gone"))
    # A command with a reply on the same connection: everything before it has been run.
    assert client.get(k) == b"v!"
    checker = server.client()
    assert checker.get(k) == b"v!"
    assert checker.get(keys("n")) == b"10"
    client.close()
    checker.close()
