"""libmemcached-tools against the server: `memcapable -a` (every ASCII test passes), `memcp`,
`memcat` and `memrm` (files in, read back byte for byte, removed), and `memaslap` (a short load
run with data verification, no errors, then a consistency check under concurrent load).

Debian 12 names the tools with a `memc` prefix (memccapable, memccp, ...); both names work."""

import os
import re
import shutil
import subprocess
import threading
import time

import pytest

# memaslap's load run: short, a few threads and connections, values well under lamina's limit.
LOAD_SECONDS = 4
LOAD_THREADS = 2
LOAD_CONCURRENCY = 16
LOAD_VALUE_BYTES = 1000
TOOL_TIMEOUT_S = 120


def tool(name):
    for candidate in (name, "memc" + name[3:]):
        path = shutil.which(candidate)
        if path:
            return path
    pytest.fail(f"{name} not found (scripts/install-deps installs libmemcached-tools)")


def run(argv, **kwargs):
    result = subprocess.run(
        argv, capture_output=True, timeout=TOOL_TIMEOUT_S, **kwargs
    )
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr.decode(
        "utf-8", "replace"
    )


@pytest.fixture
def own_server(server_factory):
    """A server of its own: memcapable flushes everything."""
    server = server_factory.new()
    return server_factory.info(server)


def test_memcapable_ascii(own_server):
    rc, out, err = run(
        [tool("memcapable"), "-h", "127.0.0.1", "-p", str(own_server.port), "-a", "-t", "10"]
    )
    print(out)
    results = re.findall(r"^(ascii [\w ]+?)\s+\[(\w+)\]", out, re.M)
    failed = [(name, verdict) for name, verdict in results if verdict != "pass"]
    assert results, f"no test results; stdout:\n{out}\nstderr:\n{err}"
    assert not failed, f"failed: {failed}\nstdout:\n{out}\nstderr:\n{err}"
    assert rc == 0 and "All tests passed" in out, f"rc {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert len(results) >= 27, f"memcapable ran only {len(results)} ASCII tests"


def test_memcp_memcat_memrm(own_server, tmp_path):
    servers = f"--servers=127.0.0.1:{own_server.port}"
    files = {
        "empty.bin": b"",
        "text.txt": b"hello from memcp\n",
        "binary.bin": bytes(range(256)) * 8,
        "random.bin": os.urandom(3000),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in files]
    rc, out, err = run([tool("memcp"), servers, "--flags=7", *paths])
    assert rc == 0, f"memcp: rc {rc}\n{out}\n{err}"
    for name, data in files.items():
        copy = tmp_path / (name + ".back")
        rc, out, err = run([tool("memcat"), servers, f"--file={copy}", name])
        assert rc == 0, f"memcat {name}: rc {rc}\n{out}\n{err}"
        assert copy.read_bytes() == data, f"{name} read back differs"
        rc, out, _ = run([tool("memcat"), servers, "--flags", name])
        assert rc == 0 and out.startswith("7\n"), f"memcat --flags {name}: {out[:40]!r}"
    # The keys are the files' base names: a plain client sees them too.
    client = own_server.client()
    assert client.get("text.txt") == files["text.txt"]
    rc, out, err = run([tool("memrm"), servers, *files])
    assert rc == 0, f"memrm: rc {rc}\n{out}\n{err}"
    for name in files:
        rc, _, _ = run([tool("memcat"), servers, name])
        assert rc != 0, f"memcat {name} after memrm succeeded"
        assert client.get(name) is None
    rc, _, _ = run([tool("memrm"), servers, "text.txt"])
    assert rc != 0, "memrm of a missing key reports the failure"
    client.close()


def memaslap_stats(out):
    stats = {}
    for name in ("cmd_get", "cmd_set", "get_misses", "verify_misses", "verify_failed",
                 "expired_get", "unexpired_unget"):
        m = re.search(rf"^{name}: (\d+)", out, re.M)
        if m:
            stats[name] = int(m.group(1))
    return stats


def test_memaslap_load_then_consistency(own_server, keys):
    """memaslap sets and gets with verification for a few seconds while a checker thread
    writes its own items and counts increments; afterwards every item the checker was told
    was stored reads back, and the counter equals the increments acknowledged."""
    stop = threading.Event()
    written = {}
    increments = [0]
    errors = []

    def checker():
        client = own_server.client()
        client.set(keys("counter"), b"0")
        i = 0
        try:
            while not stop.is_set():
                value = f"v{i}-".encode() * 10
                assert client.set(keys(f"c{i % 500}"), value) is True
                written[keys(f"c{i % 500}")] = value
                assert client.incr(keys("counter"), 1) is not None
                increments[0] += 1
                i += 1
        except Exception as e:
            errors.append(e)
        finally:
            client.close()

    thread = threading.Thread(target=checker)
    thread.start()
    try:
        rc, out, err = run(
            [
                tool("memaslap"),
                "-s", f"127.0.0.1:{own_server.port}",
                "-t", f"{LOAD_SECONDS}s",
                "-T", str(LOAD_THREADS),
                "-c", str(LOAD_CONCURRENCY),
                "-X", str(LOAD_VALUE_BYTES),
                "-v", "0.2",
            ]
        )
    finally:
        stop.set()
        thread.join()
    print(out)
    stats = memaslap_stats(out)
    # memaslap prints a line per error reply ("<fd> CLIENT_ERROR ..."): show a few.
    error_lines = [l for l in (out + err).splitlines() if "ERROR" in l]
    report = (f"rc {rc}; {len(error_lines)} error lines, first: {error_lines[:5]}\n"
              f"stats: {stats}\nstderr: {err[-2000:]}")
    assert rc == 0, report
    assert not error_lines, report
    assert stats.get("cmd_get", 0) > 0 and stats.get("cmd_set", 0) > 0, report
    for name in ("get_misses", "verify_misses", "verify_failed"):
        assert stats.get(name) == 0, f"memaslap {name}: {report}"
    assert not errors, errors
    client = own_server.client()
    assert client.get_many(list(written)) == written
    assert int(client.get(keys("counter"))) == increments[0]
    client.close()


def test_memslap_set_get_mget(own_server):
    """The classic memslap (set, get, multi-get runs); it reports errors on stderr."""
    if own_server.is_lamina:
        pytest.skip(
            "memslap's random values reach ~5 KB, past lamina's 4 KiB item limit, and it "
            "stops at the first SERVER_ERROR (memaslap -X sets the size instead)"
        )
    for test in ("set", "get", "mget"):
        rc, out, err = run(
            [tool("memslap"), f"--servers=127.0.0.1:{own_server.port}", f"--test={test}",
             "--concurrency=4", "--execute-number=2000"]
        )
        assert rc == 0 and err.strip() == "", f"memslap --test={test}: rc {rc}\n{out}\n{err}"
        assert re.search(rf"Time to {test}\s+\d+ keys", out), out
