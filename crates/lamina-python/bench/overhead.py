"""Per-call cost of the binding: a getter without engine work, gets on the in-memory engine."""
import tempfile, time, lamina
N = 100_000
def ns(fn):
    r = []
    for _ in range(5):
        t = time.perf_counter(); fn(); r.append(time.perf_counter() - t)
    return min(r) / N * 1e9
d = tempfile.mkdtemp(dir=".")
db = lamina.open(d + "/mem", engine="mem", durability="none")
db.put(b"k", b"v")
def closed():
    for _ in range(N): db.closed
def stats_engine():
    for _ in range(N): db.engine
def get_missing():
    g = db.get
    for _ in range(N): g(b"zz")
def get_hit():
    g = db.get
    for _ in range(N): g(b"k")
def too_long():
    g = db.get
    kk = b"x" * 2000
    for _ in range(N):
        try: g(kk)
        except lamina.InvalidArgument: pass
print(f"db.closed {ns(closed):.0f} ns, db.engine {ns(stats_engine):.0f} ns, get miss {ns(get_missing):.0f} ns, get hit {ns(get_hit):.0f} ns, get too-long key (error path) {ns(too_long):.0f} ns")
