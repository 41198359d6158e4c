"""lamina: an embeddable, concurrent, crash-safe, ordered key-value store.

    import lamina

    with lamina.open("/tmp/db", engine="fdtree", durability="sync") as db:
        db[b"apple"] = b"red"
        assert db[b"apple"] == b"red"
        with db.batch() as batch:
            batch.put(b"banana", b"yellow")
            batch.delete(b"apple")
        for key, value in db.range(start=b"a", end=b"c", reverse=True):
            print(key, value)

Keys and values are bytes; str is accepted and encoded as UTF-8 (values read back are
always bytes). Every call that reaches the engine releases the GIL. See the crate README.
"""

from ._lamina import (
    BATCH_OPS_MAX,
    ENGINES,
    KEY_BYTES_MAX,
    VALUE_BYTES_MAX,
    Batch,
    CasResult,
    Closed,
    Corruption,
    Db,
    Error,
    Incompatible,
    InvalidArgument,
    Io,
    NoSpace,
    RangeIterator,
    Unsupported,
    __version__,
    open,
)

__all__ = [
    "BATCH_OPS_MAX",
    "ENGINES",
    "KEY_BYTES_MAX",
    "VALUE_BYTES_MAX",
    "Batch",
    "CasResult",
    "Closed",
    "Corruption",
    "Db",
    "Error",
    "Incompatible",
    "InvalidArgument",
    "Io",
    "NoSpace",
    "RangeIterator",
    "Unsupported",
    "__version__",
    "open",
]
