/*
 * lamina.h — the C API of lamina, an embeddable, concurrent, crash-safe, ordered key-value
 * store. C99. Link with -llamina (liblamina.so) or with liblamina.a plus the system
 * libraries it needs (-lpthread -ldl -lm on Linux).
 *
 * Conventions
 * - Every function that can fail returns an int status: LAMINA_OK (0) or one of the
 *   LAMINA_* codes below. lamina_strerror(status) names a status;
 *   lamina_last_error_message(db) gives the detailed message of the calling thread's last
 *   failure on db.
 * - Keys are 0 to LAMINA_KEY_BYTES_MAX bytes, values 0 to LAMINA_VALUE_BYTES_MAX bytes,
 *   both arbitrary bytes (not NUL-terminated), ordered as unsigned byte strings. The empty
 *   key (length 0) is a key like any other, in every engine, and sorts before every other
 *   key (as in the SIGMOD 2011 contest API, RocksDB, LevelDB and Berkeley DB). Longer
 *   input is refused with LAMINA_INVALID_ARGUMENT and nothing changes. Lengths are checked
 *   before any byte is read.
 * - A pointer argument may be NULL only where its description says so; otherwise the call
 *   returns LAMINA_INVALID_ARGUMENT. An input buffer may be NULL when its length is 0.
 * - Output buffers: the caller passes the buffer and, through *len, its capacity in bytes.
 *   If the data fits it is copied and *len is set to its length. If it does not fit,
 *   nothing is copied, *len is set to the data's full length, and the call returns
 *   LAMINA_VALUE_BUFFER_TOO_SMALL (or LAMINA_KEY_BUFFER_TOO_SMALL); retry with a buffer of
 *   that size. A buffer may be NULL when *len is 0 (a size query). A buffer of
 *   LAMINA_KEY_BYTES_MAX (keys) or LAMINA_VALUE_BYTES_MAX (values) bytes always suffices.
 * - Thread safety: a lamina_db may be used by any number of threads at once. It must not be
 *   used during or after lamina_close. A lamina_iter is safe to share but is meant for one
 *   thread at a time.
 * - No function unwinds or aborts on bad input: an internal error (a bug) is reported as
 *   LAMINA_ERROR with a message.
 * - Strings returned (lamina_strerror, lamina_version, lamina_last_error_message) are owned
 *   by the library; never free them.
 */
#ifndef LAMINA_H
#define LAMINA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Limits ------------------------------------------------------------------------- */

/** Largest key, in bytes (the empty key, 0 bytes, is valid). */
#define LAMINA_KEY_BYTES_MAX 1024
/** Largest value, in bytes (the empty value is allowed). */
#define LAMINA_VALUE_BYTES_MAX 4096
/** The smallest disk_budget_bytes "trie" accepts: its log ring needs a 4 KiB header and one
 *  segment of 12 chunks, each twice its 1 MiB log write buffer plus 4 KiB (about 24 MiB),
 *  with the default lamina_options.log_buffer_bytes; a larger buffer raises it. */
#define LAMINA_TRIE_LOG_RING_BYTES_MIN 25219072
/** The same for "mem", whose log write buffer is 256 KiB (about 6 MiB). */
#define LAMINA_MEM_LOG_RING_BYTES_MIN 6344704
/** lamina_iter_open_hinted: the most entries an iterator fetches at once (and its page size
 *  without a hint). */
#define LAMINA_ITER_PAGE_ENTRIES_MAX 128

/* ---- Status codes ------------------------------------------------------------------- */

/** The return type of the fallible functions: one of the LAMINA_* codes below. */
typedef int lamina_status;

enum {
    /** Success. */
    LAMINA_OK = 0,
    /** The key does not exist (get, delete, and a compare-and-swap that expected a value:
     *  nothing changed), or the iterator is at the end of its range. */
    LAMINA_NOT_FOUND = 1,
    /** lamina_iter_next: the key buffer is too small; nothing copied, not advanced. */
    LAMINA_KEY_BUFFER_TOO_SMALL = 2,
    /** The value buffer is too small; nothing copied (iterator not advanced). */
    LAMINA_VALUE_BUFFER_TOO_SMALL = 3,
    /** lamina_compare_and_swap: the key holds a value other than the expected one (or holds
     *  one where absence was expected); nothing changed. */
    LAMINA_COMPARE_FAILED = 4,
    /** An oversized key or value, NULL where not allowed, an option out of range or an
     *  unknown engine. Nothing changed. */
    LAMINA_INVALID_ARGUMENT = 5,
    /** The device (or a disk budget) is full; the operation was not applied. */
    LAMINA_NO_SPACE = 6,
    /** Stored data failed a check; the message names the file and offset. */
    LAMINA_CORRUPTION = 7,
    /** An I/O operation failed, including: the directory is locked by another handle,
     *  or it does not exist and create_if_missing is 0. */
    LAMINA_IO_ERROR = 8,
    /** Any other failure: the directory holds another engine's database or is not a lamina
     *  database, the handle was closed under an iterator, an internal error. */
    LAMINA_ERROR = 9,
    /** The engine or this build does not support what was asked (a durability mode, a
     *  disk budget). Nothing changed. */
    LAMINA_UNSUPPORTED = 10
};

/* ---- Options ------------------------------------------------------------------------ */

/** When an acknowledged write survives a crash (lamina_options.durability). */
enum {
    /** A write returns only once it survives power loss. */
    LAMINA_DURABILITY_SYNC = 0,
    /** A write returns at once and survives power loss at most durability_max_delay_us
     *  microseconds later (1 to 60 000 000). */
    LAMINA_DURABILITY_BUFFERED = 1,
    /** Writes survive a clean lamina_close; a crash may lose any suffix of them. */
    LAMINA_DURABILITY_NONE = 2
};

/**
 * How to open a database. Initialize with lamina_options_init, then set fields: later
 * versions may append fields, which lamina_options_init then defaults, so programs that
 * follow this rule keep compiling unchanged. (Source compatibility: the library has no
 * SONAME or ABI version yet, so rebuild against the header of the library you run with.)
 */
typedef struct lamina_options {
    /** Engine name, NUL-terminated; NULL = the default engine, "fdtree". Every engine is
     *  durable (a log or its own files) and takes every durability mode:
     *  - "fdtree" (= "fdtree-fc"): FD+tree with FD+FC merges; "fdtree-xm", "fdtree-ds":
     *    the same tree with the paper's other merge schemes;
     *  - "nbtree": NB-tree; "latree": LA-tree; "latree-btree": its unbuffered B+-tree
     *    baseline; "fptree": FPTree over a mapped region file (8 GiB sparse);
     *  - "trie": a concurrent trie in memory, with a log; "mem": an ordered map in memory,
     *    with a log.
     *  (`lamina engines` lists them.) An existing database must be reopened with the engine
     *  that created it. Default NULL. */
    const char *engine;
    /** One of LAMINA_DURABILITY_*. Default LAMINA_DURABILITY_SYNC. */
    int durability;
    /** With LAMINA_DURABILITY_BUFFERED, the delay bound in microseconds; else ignored. */
    uint64_t durability_max_delay_us;
    /** Memory for the engine's in-memory level or buffers: 64 KiB to 64 GiB. Default 4 MiB. */
    uint64_t memory_budget_bytes;
    /** Block cache size, at most 1 TiB; 0 disables the cache. Default 15 MiB. */
    uint64_t cache_bytes;
    /** Most bytes the database may occupy on disk; 0 = no cap (the default). Enforced by
     *  every engine but "fptree" (whose region file is fixed at creation; a nonzero value
     *  returns LAMINA_UNSUPPORTED), and it may change between opens: at the budget, writes
     *  that add data fail with LAMINA_NO_SPACE, deletes and overwrites that do not grow the
     *  data still succeed. "mem" and "trie" keep their data in a log ring, which needs at
     *  least LAMINA_MEM_LOG_RING_BYTES_MIN or LAMINA_TRIE_LOG_RING_BYTES_MIN bytes (a smaller
     *  budget returns LAMINA_INVALID_ARGUMENT). */
    uint64_t disk_budget_bytes;
    /** Nonzero: create the directory if it does not exist. Default 1. */
    int create_if_missing;
    /** Most memory the engine's data may take; 0 = no limit (the default), else at least
     *  1 MiB. Enforced by the in-memory engines "mem" and "trie": writes that would pass it
     *  fail with LAMINA_NO_SPACE instead of exhausting memory. Other engines return
     *  LAMINA_UNSUPPORTED for a nonzero value. */
    uint64_t memory_limit_bytes;
    /** "trie" and "mem": the log's write buffer in bytes (writes are coalesced into chunks of
     *  this size before they reach the log ring); 0 = the engine's default (1 MiB for trie,
     *  256 KiB for mem). Out of range: LAMINA_INVALID_ARGUMENT naming buffer_bytes; nonzero
     *  with another engine: LAMINA_UNSUPPORTED. Default 0. */
    uint64_t log_buffer_bytes;
} lamina_options;

/** Fills *opts with the defaults listed above. NULL is ignored. */
void lamina_options_init(lamina_options *opts);

/* ---- Database ----------------------------------------------------------------------- */

/** An open database. Opaque; thread-safe. */
typedef struct lamina_db lamina_db;

/**
 * Opens (or creates) the database in directory dir (NUL-terminated path) with opts (NULL =
 * defaults) and stores the handle in *out. On failure *out is set to NULL (when out is not
 * NULL). One handle per directory: a second open of the same directory, from this or another
 * process, fails with LAMINA_IO_ERROR until the first is closed.
 * Failures are described by lamina_last_error_message(NULL).
 */
lamina_status lamina_open(const char *dir, const lamina_options *opts, lamina_db **out);

/**
 * Flushes what the durability mode requires, releases the directory and frees db. NULL is
 * a no-op returning LAMINA_OK. db is freed even if the flush fails; the failure's message is
 * then under lamina_last_error_message(NULL). No other thread may be using db. Iterators
 * still open keep the directory locked until they are closed, and fail (LAMINA_ERROR) once
 * their fetched entries are used up: close them first.
 */
lamina_status lamina_close(lamina_db *db);

/**
 * Copies the value of key into value_buf, whose capacity is *value_len.
 * LAMINA_OK: copied, *value_len = its length. LAMINA_NOT_FOUND: no such key, *value_len = 0.
 * LAMINA_VALUE_BUFFER_TOO_SMALL: nothing copied, *value_len = the value's full length.
 * value_len must not be NULL; value_buf may be NULL if *value_len is 0.
 */
lamina_status lamina_get(lamina_db *db, const void *key, size_t key_len, void *value_buf,
                         size_t *value_len);

/** Inserts or overwrites key with value (value may be NULL when value_len is 0). */
lamina_status lamina_put(lamina_db *db, const void *key, size_t key_len, const void *value,
                         size_t value_len);

/** Removes key. LAMINA_OK if it existed, LAMINA_NOT_FOUND if it did not. */
lamina_status lamina_delete(lamina_db *db, const void *key, size_t key_len);

/**
 * Atomically: if the current value of key equals expected, replaces it with new_value and
 * returns LAMINA_OK; otherwise changes nothing and says why: LAMINA_NOT_FOUND if the key
 * is absent (and a value was expected), LAMINA_COMPARE_FAILED if it holds another value
 * (or any value, when absence was expected). No second, non-atomic get is needed to tell.
 * expected == NULL with expected_len == 0 means "the key is absent" (insert if absent);
 * a non-NULL expected with expected_len == 0 means the empty value.
 * new_value == NULL with new_len == 0 means "delete the key"; a non-NULL new_value with
 * new_len == 0 stores the empty value. Linearizable with every other single-key call.
 */
lamina_status lamina_compare_and_swap(lamina_db *db, const void *key, size_t key_len,
                                      const void *expected, size_t expected_len,
                                      const void *new_value, size_t new_len);

/** Makes every write acknowledged so far durable. */
lamina_status lamina_sync(lamina_db *db);

/* ---- Atomic write batches ----------------------------------------------------------- */

/** A list of puts and deletes applied atomically by lamina_write_batch. Opaque; not tied to
 *  a database. At most 65 536 operations and 64 MiB of keys and values. */
typedef struct lamina_batch lamina_batch;

/** Creates an empty batch in *out. Failures are described by lamina_last_error_message(NULL),
 *  as are those of the other lamina_batch_* functions. */
lamina_status lamina_batch_create(lamina_batch **out);

/** Appends a put. Checked at once: an oversized key or value, or an operation that would
 *  take the batch over its limits, returns LAMINA_INVALID_ARGUMENT and leaves the batch as
 *  it was. */
lamina_status lamina_batch_put(lamina_batch *batch, const void *key, size_t key_len,
                               const void *value, size_t value_len);

/** Appends a delete (of a key that may or may not exist). Checked like lamina_batch_put. */
lamina_status lamina_batch_delete(lamina_batch *batch, const void *key, size_t key_len);

/** The number of operations in the batch (0 for NULL). */
size_t lamina_batch_count(const lamina_batch *batch);

/** Removes every operation. NULL is a no-op. */
void lamina_batch_clear(lamina_batch *batch);

/** Frees the batch. NULL is a no-op. */
void lamina_batch_destroy(lamina_batch *batch);

/**
 * Applies every operation of batch to db, in order (a later operation on the same key
 * wins), atomically: readers see all of it or none of it, and after a crash recovery holds
 * all of it or none of it. The batch is left unchanged, ready to be cleared or reused.
 */
lamina_status lamina_write_batch(lamina_db *db, const lamina_batch *batch);

/* ---- Iteration ---------------------------------------------------------------------- */

/** A forward iterator over a key range. Opaque. */
typedef struct lamina_iter lamina_iter;

/**
 * Opens an iterator over the keys k with start <= k < end, in ascending order. start ==
 * NULL (with start_len 0): from the first key; a non-NULL start with start_len 0 is the
 * empty key, which is the first key too. end == NULL (with end_len 0): to the last key; a
 * non-NULL end with end_len 0 is the empty key (an empty range). Bounds are at most
 * LAMINA_KEY_BYTES_MAX bytes. Stores the iterator in *iter (NULL on failure).
 * The iterator fetches pairs in pages of LAMINA_ITER_PAGE_ENTRIES_MAX; to read only a few,
 * use lamina_iter_open_hinted.
 * An iterator is not a snapshot: every pair it returns was current at some instant during
 * the iteration, and a key present and unmodified throughout is always returned.
 */
lamina_status lamina_iter_open(lamina_db *db, const void *start, size_t start_len,
                               const void *end, size_t end_len, lamina_iter **iter);

/**
 * lamina_iter_open with a hint of how many pairs the caller will read: the first page
 * fetches entries_hint pairs (so a 1-row scan reads one entry, not a page of
 * LAMINA_ITER_PAGE_ENTRIES_MAX), and each later page twice as many as the one before, up
 * to LAMINA_ITER_PAGE_ENTRIES_MAX: reading past the hint still returns every pair, at the
 * cost of a few more fetches. entries_hint 0 means no hint (lamina_iter_open); larger
 * values than LAMINA_ITER_PAGE_ENTRIES_MAX are taken as it. The range and the guarantee
 * are those of lamina_iter_open.
 */
lamina_status lamina_iter_open_hinted(lamina_db *db, const void *start, size_t start_len,
                                      const void *end, size_t end_len, size_t entries_hint,
                                      lamina_iter **iter);

/**
 * Copies the next pair into key_buf (capacity *key_len) and value_buf (capacity
 * *value_len) and advances. LAMINA_OK: both copied, lengths set. LAMINA_NOT_FOUND: the end
 * of the range (both lengths set to 0); later calls keep returning it.
 * LAMINA_KEY_BUFFER_TOO_SMALL / LAMINA_VALUE_BUFFER_TOO_SMALL (the key is checked first):
 * nothing copied, the iterator NOT advanced, and both *key_len and *value_len set to the
 * pair's full lengths, so one retry with both buffers grown succeeds.
 * key_len and value_len must not be NULL; a buffer may be NULL if its capacity is 0.
 * Failures are described by lamina_last_error_message(the db the iterator came from).
 */
lamina_status lamina_iter_next(lamina_iter *iter, void *key_buf, size_t *key_len,
                               void *value_buf, size_t *value_len);

/** Frees the iterator. NULL is a no-op. */
void lamina_iter_close(lamina_iter *iter);

/* ---- Verification ------------------------------------------------------------------- */

/**
 * Checks the closed database in directory dir without changing any of its files: every file
 * the engine reads when opening (recovery is done in memory), the engine's structural
 * invariants, and a full scan checked against point reads. LAMINA_OK when clean, with the
 * number of entries in *entries (when entries is not NULL); LAMINA_CORRUPTION with the first
 * problem (file, offset, what), LAMINA_IO_ERROR if the database is open elsewhere. opts: the
 * options the database is used with (NULL = defaults; its engine is taken from the
 * database). Failures are described by lamina_last_error_message(NULL).
 */
lamina_status lamina_verify(const char *dir, const lamina_options *opts, uint64_t *entries);

/* ---- Errors and version ------------------------------------------------------------- */

/** A static, NUL-terminated description of status ("unknown lamina status" for unknown
 *  codes). Never NULL. */
const char *lamina_strerror(lamina_status status);

/**
 * The detailed message of the calling thread's last failed call on db: what was wrong and
 * the limit, file or option involved. db == NULL: the last failure of lamina_open,
 * lamina_close, or a call whose handle argument was NULL. Returns "" if there is none;
 * never NULL. Meaningful right after a call returned a failure status (LAMINA_NOT_FOUND,
 * LAMINA_COMPARE_FAILED and the *_BUFFER_TOO_SMALL codes are outcomes, not failures, and
 * record nothing). db is not dereferenced. The string stays valid until this thread's next
 * failure on the same handle, or its failures on 16 other handles, or the thread's exit.
 */
const char *lamina_last_error_message(const lamina_db *db);

/** The library version, e.g. "0.1.0". Static. */
const char *lamina_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LAMINA_H */
