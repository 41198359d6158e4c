"""Bad input: unknown commands get ERROR, malformed lines CLIENT_ERROR, and the connection stays
usable where memcached keeps it; a line without an end is not buffered without limit (the
server closes the connection); garbage never takes the server down or stalls other clients."""

import random
import socket

import pytest

# A line with no end is sent up to this many bytes; the server must close before.
ENDLESS_LINE_BYTES_MAX = 16 << 20
ENDLESS_LINE_CHUNK_BYTES = 64 << 10


def resync(raw):
    """Sends `mn` and reads up to its MN, allowing only error lines before it (memcached runs
    the data block of a refused storage command as a command line: ERROR)."""
    raw.send(b"mn\r\n")
    while (line := raw.line()) != b"MN":
        assert line == b"ERROR" or line.startswith(b"CLIENT_ERROR "), line


@pytest.mark.parametrize("line", ["foo", "", "   ", "GET k", "gett k", "sett k 0 0 1"])
def test_unknown_command_is_error(raw, keys, line):
    assert raw.cmd(line) == b"ERROR", line
    assert raw.store("set", keys("k"), b"ok") == b"STORED", "the connection stays usable"


@pytest.mark.parametrize(
    "line",
    ["get", "gets", "incr k", "incr", "delete", "verbosity", "set k 0 0", "touch k",
     "cas k 0 0 1\r\nx", "mg", "ms k"],
)
def test_incomplete_command_is_an_error(raw, keys, line):
    # memcached answers ERROR (too few tokens for any command); CLIENT_ERROR is as clear.
    # `cas` without its unique still carries the data block a client sends after it.
    reply = raw.cmd(line)
    assert reply == b"ERROR" or reply.startswith(b"CLIENT_ERROR "), f"{line!r} -> {reply!r}"
    resync(raw)
    assert raw.store("set", keys("k"), b"ok") == b"STORED", "the connection stays usable"


@pytest.mark.parametrize(
    "line",
    [
        "get " + "k" * 251,
        "set " + "k" * 251 + " 0 0 1\r\nx",
        "set k 0 0 abc",
        "set k 0 0 -1",
        "set k abc 0 1\r\nx",
        "set k -1 0 1\r\nx",
        "set k 0 abc 1\r\nx",
        "delete k 5",
        "flush_all abc",
        "touch k abc",
        "gat abc k",
        "incr k abc",
    ],
)
def test_malformed_line_is_client_error(raw, keys, line):
    # A storage command whose length parses carries its data block, as real clients send it:
    # memcached then runs the block as a command line (ERROR), lamina skips it; resync allows
    # both.
    reply = raw.cmd(line)
    assert reply.startswith(b"CLIENT_ERROR "), f"{line!r} -> {reply!r}"
    resync(raw)
    assert raw.store("set", keys("k"), b"ok") == b"STORED", "the connection stays usable"
    assert raw.get(f"get {keys('k')}")[0][2] == b"ok"


def test_exptime_errors_are_named(raw, keys):
    assert raw.cmd("touch k abc") == b"CLIENT_ERROR invalid exptime argument"
    assert raw.cmd("gat abc k") == b"CLIENT_ERROR invalid exptime argument"
    assert raw.cmd("flush_all abc") == b"CLIENT_ERROR invalid exptime argument"


def test_bad_data_chunk(raw, keys):
    k = keys("k")
    raw.send(f"set {k} 0 0 1\r\nxyz\r\n".encode())
    assert raw.line() == b"CLIENT_ERROR bad data chunk"
    resync(raw)
    assert raw.get(f"get {k}") == [], "nothing was stored"
    assert raw.store("set", k, b"ok") == b"STORED"


def test_longest_key_and_long_multi_get_line(raw, keys):
    long_key = (keys("") + "k" * 250)[:250]
    assert raw.store("set", long_key, b"v") == b"STORED"
    line = "get " + " ".join([long_key] * 200)  # a 50 KB line: legitimate
    got = raw.get(line)
    assert len(got) == 200 and all(v == b"v" for _, _, v, _ in got)


def test_endless_line_closes_the_connection(server):
    r = server.raw()
    sent = 0
    closed = False
    chunk = b"x" * ENDLESS_LINE_CHUNK_BYTES
    try:
        while sent < ENDLESS_LINE_BYTES_MAX:
            r.sock.sendall(chunk)
            sent += len(chunk)
            r.sock.setblocking(False)
            try:
                data = r.sock.recv(65536)
                if data == b"":
                    closed = True
                    break
                r.buf += data
            except BlockingIOError:
                pass
            finally:
                r.sock.setblocking(True)
                r.sock.settimeout(5)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    if not closed:
        closed = r.closed_by_peer(timeout_s=5)
    r.close()
    assert closed, f"the server still buffers a line of {sent} bytes"
    assert r.buf in (b"",) or r.buf.startswith((b"CLIENT_ERROR", b"SERVER_ERROR", b"ERROR")), r.buf
    with server.raw() as other:
        assert other.cmd("version").startswith(b"VERSION "), "the server is still up"


def test_garbage_does_not_take_the_server_down(server, keys):
    rng = random.Random(17)
    printable = bytes(range(0x21, 0x7F))
    witness = server.client()
    witness.set(keys("w"), b"alive")
    for round_ in range(20):
        r = server.raw()
        lines = []
        for _ in range(50):
            n = rng.randrange(0, 80)
            lines.append(bytes(rng.choice(printable) for _ in range(n)))
            if rng.random() < 0.3:
                lines[-1] = rng.choice([b"get ", b"set ", b"mg ", b"ms ", b"incr "]) + lines[-1]
        try:
            r.send(b"\r\n".join(lines) + b"\r\nmn\r\n")
            r.sock.settimeout(5)
            try:
                while b"MN\r\n" not in r.buf:
                    r._fill()
            except (EOFError, ConnectionResetError, socket.timeout):
                pass  # closing or waiting for a data block is allowed; stalling others is not
        finally:
            r.close()
        assert witness.get(keys("w")) == b"alive", f"round {round_}"
    witness.close()


def test_errors_on_one_connection_do_not_disturb_another(server, keys):
    bad, good = server.raw(), server.raw()
    try:
        good_key = keys("g")
        for i in range(50):
            bad.send(b"nonsense command here\r\nset k 0 0 zz\r\n")
            assert good.store("set", good_key, str(i).encode()) == b"STORED"
            assert good.get(f"get {good_key}")[0][2] == str(i).encode()
        resync(bad)
    finally:
        bad.close()
        good.close()
