#!/usr/bin/env python3
"""lamina vs plyvel (LevelDB) vs lmdb from Python: puts, batched puts and gets.

Same keys and values for every store: N 16-byte keys (hex of a multiplicative hash of i, so
inserted in pseudo-random order) with 100-byte values; gets read every key once, in another
pseudo-random order (all hits). Each round opens a fresh directory per store; the stores run
in a different order each round; the table gives the median over rounds.

Durability (none of them syncs per write):
  lamina  durability="none"   (writes survive close; a crash may lose a suffix)
  lamina  durability="buffered", max_delay_ms=100 (durable within 100 ms)
  plyvel  sync=False          (LevelDB default: written to the OS, no fsync)
  lmdb    sync=False, metasync=False (no fsync at commit)

One call per put: lamina Db.put, plyvel DB.put, lmdb a write transaction per put (LMDB has
no other way to write one key). Batched puts: BATCH keys per lamina batch / plyvel
write_batch / lmdb write transaction. Gets: lamina Db.get, plyvel DB.get, lmdb one read
transaction for all gets (its cheap snapshot, the natural way to read many keys).

Usage: python bench/compare.py [--n 1000000] [--rounds 3] [--dir /tmp] [--stores ...]
Needs: lamina (maturin develop --release), plyvel, lmdb (pip).
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

import lmdb
import plyvel

import lamina

BATCH = 1000
VALUE_BYTES = 100
MASK64 = (1 << 64) - 1


def make_keys(n):
    return [b"%016x" % ((i * 0x9E3779B97F4A7C15) & MASK64) for i in range(n)]


def make_values(n):
    pad = b"v" * (VALUE_BYTES - 8)
    return [(b"%08d" % i) + pad for i in range(n)]


class Lamina:
    def __init__(self, path, durability):
        self.db = lamina.open(path, engine="fdtree", durability=durability)

    def puts(self, keys, values):
        put = self.db.put
        for k, v in zip(keys, values):
            put(k, v)

    def batch_puts(self, keys, values):
        for i in range(0, len(keys), BATCH):
            with self.db.batch() as batch:
                for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                    batch.put(k, v)

    def gets(self, keys):
        get = self.db.get
        found = 0
        for k in keys:
            if get(k) is not None:
                found += 1
        return found

    def close(self):
        self.db.close()


class Plyvel:
    def __init__(self, path):
        self.db = plyvel.DB(str(path), create_if_missing=True)

    def puts(self, keys, values):
        put = self.db.put
        for k, v in zip(keys, values):
            put(k, v, sync=False)

    def batch_puts(self, keys, values):
        for i in range(0, len(keys), BATCH):
            with self.db.write_batch(sync=False) as batch:
                for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                    batch.put(k, v)

    def gets(self, keys):
        get = self.db.get
        found = 0
        for k in keys:
            if get(k) is not None:
                found += 1
        return found

    def close(self):
        self.db.close()


class Lmdb:
    def __init__(self, path):
        self.env = lmdb.open(str(path), map_size=8 << 30, sync=False, metasync=False)

    def puts(self, keys, values):
        begin = self.env.begin
        for k, v in zip(keys, values):
            with begin(write=True) as txn:
                txn.put(k, v)

    def batch_puts(self, keys, values):
        for i in range(0, len(keys), BATCH):
            with self.env.begin(write=True) as txn:
                for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                    txn.put(k, v)

    def gets(self, keys):
        found = 0
        with self.env.begin() as txn:
            get = txn.get
            for k in keys:
                if get(k) is not None:
                    found += 1
        return found

    def close(self):
        self.env.close()


STORES = {
    "lamina-none": lambda p: Lamina(p, "none"),
    "lamina-buffered": lambda p: Lamina(p, "buffered"),
    "plyvel": Plyvel,
    "lmdb": Lmdb,
}


def run_store(name, base, keys, values, read_order):
    results = {}
    for phase in ("puts", "batch_puts"):
        path = tempfile.mkdtemp(prefix=f"{name}-{phase}-", dir=base)
        store = STORES[name](os.path.join(path, "db"))
        start = time.perf_counter()
        getattr(store, phase)(keys, values)
        results[phase] = time.perf_counter() - start
        if phase == "puts":
            start = time.perf_counter()
            found = store.gets(read_order)
            results["gets"] = time.perf_counter() - start
            assert found == len(keys), (name, found)
        store.close()
        shutil.rmtree(path)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=list(STORES))
    args = parser.parse_args()
    keys = make_keys(args.n)
    values = make_values(args.n)
    read_order = [keys[(i * 7919) % args.n] for i in range(args.n)] if args.n % 7919 else keys
    times = {name: {"puts": [], "batch_puts": [], "gets": []} for name in args.stores}
    for r in range(args.rounds):
        order = args.stores[r % len(args.stores) :] + args.stores[: r % len(args.stores)]
        for name in order:
            for phase, seconds in run_store(name, args.dir, keys, values, read_order).items():
                times[name][phase].append(seconds)
                print(f"round {r + 1} {name:16} {phase:10} {args.n / seconds / 1e3:9.1f} kops/s",
                      flush=True)
    print(f"\nmedian of {args.rounds} rounds, N = {args.n}, 16-byte keys, {VALUE_BYTES}-byte values")
    print("| store | puts (kops/s) | batched puts, 1000/batch (kops/s) | gets (kops/s) |")
    print("|---|---:|---:|---:|")
    for name in args.stores:
        cells = [f"{args.n / statistics.median(times[name][p]) / 1e3:.0f}"
                 for p in ("puts", "batch_puts", "gets")]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
