"""Type stubs of the lamina package (the extension module lamina._lamina)."""

import os
from pathlib import Path
from types import TracebackType
from typing import Iterator, Literal, Optional, Tuple, Type, TypeVar, Union

# Keys and values accepted: bytes and str (encoded as UTF-8) without a copy, bytearray and
# memoryview copied. Values read back are always bytes.
BytesLike = Union[bytes, bytearray, memoryview, str]
_T = TypeVar("_T")

__version__: str
ENGINES: list[str]
"""Every engine name `open` accepts (`fdtree` is `fdtree-fc`)."""
KEY_BYTES_MAX: int
VALUE_BYTES_MAX: int
BATCH_OPS_MAX: int

class Error(Exception):
    """Base class of every error lamina raises."""

class InvalidArgument(Error):
    """The call was refused (key or value too long, bad option); nothing changed."""

class Corruption(Error):
    """Stored data failed a check; the message names the file and offset."""

class Io(Error):
    """An I/O operation failed (including a database locked by another handle)."""

class NoSpace(Error):
    """The device is full, or the disk budget or memory limit is reached; nothing written."""

class Closed(Error):
    """The database was closed."""

class Incompatible(Error):
    """The directory holds another engine's database, or something that is not lamina's."""

class Unsupported(Error):
    """The engine or build does not support this (e.g. memory_limit_bytes with fdtree)."""

def open(
    path: Union[str, os.PathLike[str]],
    engine: str = "fdtree",
    durability: Literal["sync", "buffered", "none"] = "sync",
    *,
    max_delay_ms: int = 100,
    create_if_missing: bool = True,
    memory_limit_bytes: int = 0,
    disk_budget_bytes: int = 0,
) -> Db:
    """Opens (or creates) the database in `path`. Use as a context manager to close it."""

class CasResult:
    """Outcome of `Db.compare_and_swap`; truthy when swapped."""

    @property
    def swapped(self) -> bool: ...
    @property
    def current(self) -> Optional[bytes]:
        """When not swapped: the value found (None: the key was absent)."""
    @property
    def absent(self) -> bool:
        """Not swapped because the key was absent."""
    @property
    def mismatch(self) -> bool:
        """Not swapped because the key held another value."""
    def __bool__(self) -> bool: ...

class RangeIterator(Iterator[Tuple[bytes, bytes]]):
    """Lazy iterator of (key, value) pairs, read from the engine in pages."""

    def __iter__(self) -> RangeIterator: ...
    def __next__(self) -> Tuple[bytes, bytes]: ...

class Batch:
    """Operations applied atomically by `commit` or on leaving a `with` block normally."""

    def put(self, key: BytesLike, value: BytesLike) -> None: ...
    def delete(self, key: BytesLike) -> None: ...
    def commit(self) -> None: ...
    def discard(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

class Db:
    """An open database; share it between threads freely."""

    @property
    def closed(self) -> bool: ...
    @property
    def engine(self) -> str: ...
    @property
    def path(self) -> Path: ...
    def __getitem__(self, key: BytesLike) -> bytes:
        """The value of `key`; KeyError when absent."""
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None: ...
    def __delitem__(self, key: BytesLike) -> None:
        """Deletes `key`; KeyError when absent."""
    def __contains__(self, key: BytesLike) -> bool: ...
    def get(self, key: BytesLike, default: Optional[_T] = None) -> Union[bytes, _T, None]: ...
    def put(self, key: BytesLike, value: BytesLike) -> None: ...
    def delete(self, key: BytesLike) -> bool:
        """Deletes `key`; returns whether it existed."""
    def compare_and_swap(
        self, key: BytesLike, expected: Optional[BytesLike], new: Optional[BytesLike]
    ) -> CasResult:
        """Sets `key` to `new` (None: delete) if its value is `expected` (None: absent)."""
    def range(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
    ) -> RangeIterator:
        """Pairs with start <= key < end, ascending (descending with reverse=True)."""
    def batch(self) -> Batch: ...
    def stats(self) -> dict[str, object]: ...
    def sync(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Db: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...
