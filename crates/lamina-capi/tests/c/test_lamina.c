/*
 * The C test suite of lamina.h, linked against liblamina exactly as a user would:
 *   cc -std=c99 -I include test_lamina.c -L <dir> -llamina -lpthread
 * Run as: test_lamina <scratch-dir>   (driven by tests/c_suite.rs under `cargo test`)
 * Prints "N passed, M failed" last and exits 0 only if M is 0.
 */
#define _POSIX_C_SOURCE 200809L

#include "lamina.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- A tiny harness; the counters are shared with worker threads. ---- */

static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static int checks_passed;
static int checks_failed;

static void record_check(int ok, const char *file, int line, const char *what) {
    pthread_mutex_lock(&counts_lock);
    if (ok) {
        checks_passed++;
    } else {
        checks_failed++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    }
    pthread_mutex_unlock(&counts_lock);
}

#define CHECK(cond) record_check((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

/* Checks a status; on mismatch prints both statuses and the NULL-scope and db messages. */
static void check_status(int got, int want, const lamina_db *db, const char *file, int line,
                         const char *call) {
    if (got != want) {
        fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s); message: '%s' / '%s'\n",
                file, line, call, got, lamina_strerror(got), want, lamina_strerror(want),
                lamina_last_error_message(NULL), lamina_last_error_message(db));
    }
    record_check(got == want, file, line, call);
}

#define CHECK_STATUS(db, call, want) check_status((call), (want), (db), __FILE__, __LINE__, #call)

static int contains(const char *haystack, const char *needle) {
    return haystack != NULL && strstr(haystack, needle) != NULL;
}

#define CHECK_MESSAGE(db, needle)                                                             \
    do {                                                                                      \
        const char *m_ = lamina_last_error_message(db);                                       \
        record_check(contains(m_, needle), __FILE__, __LINE__, "message contains " needle);   \
        if (!contains(m_, needle)) fprintf(stderr, "  message was: '%s'\n", m_);              \
    } while (0)

/* ---- Helpers ---- */

static const char *scratch_dir;

static char *db_path(const char *name) {
    size_t len = strlen(scratch_dir) + 1 + strlen(name) + 1;
    char *path = malloc(len);
    if (path == NULL) abort();
    snprintf(path, len, "%s/%s", scratch_dir, name);
    return path;
}

static lamina_options mem_options(void) {
    lamina_options opts;
    lamina_options_init(&opts);
    opts.engine = "mem";
    opts.durability = LAMINA_DURABILITY_NONE;
    return opts;
}

static lamina_db *open_mem(const char *path) {
    lamina_options opts = mem_options();
    lamina_db *db = NULL;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_OK);
    if (db == NULL) {
        fprintf(stderr, "cannot continue without a database at %s\n", path);
        exit(2);
    }
    return db;
}

static int put_str(lamina_db *db, const char *key, const char *value) {
    return lamina_put(db, key, strlen(key), value, strlen(value));
}

/* Whether the value of key is exactly `want` (length want_len). */
static int value_is(lamina_db *db, const char *key, const void *want, size_t want_len) {
    unsigned char buf[LAMINA_VALUE_BYTES_MAX];
    size_t len = sizeof buf;
    int rc = lamina_get(db, key, strlen(key), buf, &len);
    return rc == LAMINA_OK && len == want_len && (want_len == 0 || memcmp(buf, want, len) == 0);
}

static int absent(lamina_db *db, const char *key) {
    size_t len = 0;
    return lamina_get(db, key, strlen(key), NULL, &len) == LAMINA_NOT_FOUND && len == 0;
}

/* ---- Tests ---- */

static void test_version_and_strerror(void) {
    int s;
    CHECK(lamina_version() != NULL && strchr(lamina_version(), '.') != NULL);
    for (s = LAMINA_OK; s <= LAMINA_UNSUPPORTED; s++) {
        int t;
        CHECK(lamina_strerror(s) != NULL && strlen(lamina_strerror(s)) > 0);
        for (t = LAMINA_OK; t < s; t++) CHECK(strcmp(lamina_strerror(s), lamina_strerror(t)) != 0);
    }
    CHECK(strcmp(lamina_strerror(-1), "unknown lamina status") == 0);
    CHECK(strcmp(lamina_strerror(1000), "unknown lamina status") == 0);
    CHECK(contains(lamina_strerror(LAMINA_VALUE_BUFFER_TOO_SMALL), "too small"));
}

static void test_options_init(void) {
    lamina_options opts;
    memset(&opts, 0x5a, sizeof opts);
    lamina_options_init(&opts);
    CHECK(opts.engine == NULL);
    CHECK(opts.durability == LAMINA_DURABILITY_SYNC);
    CHECK(opts.memory_budget_bytes == 4u << 20);
    CHECK(opts.cache_bytes == 15u << 20);
    CHECK(opts.disk_budget_bytes == 0);
    CHECK(opts.create_if_missing == 1);
    lamina_options_init(NULL); /* ignored */
}

static void test_open_refuses_bad_arguments_and_options(void) {
    char *path = db_path("open-errors");
    char *missing = db_path("never-created");
    lamina_options opts;
    lamina_db *db = (lamina_db *)&opts; /* garbage the failing calls must overwrite with NULL */

    CHECK_STATUS(NULL, lamina_open(path, NULL, NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "out is NULL");
    CHECK_STATUS(NULL, lamina_open(NULL, NULL, &db), LAMINA_INVALID_ARGUMENT);
    CHECK(db == NULL);
    CHECK_MESSAGE(NULL, "dir is NULL");
    CHECK_STATUS(NULL, lamina_open("", NULL, &db), LAMINA_INVALID_ARGUMENT);

    /* The defaults (the default engine, sync durability) open a database of their own. */
    {
        char *defaults_path = db_path("open-defaults");
        CHECK_STATUS(NULL, lamina_open(defaults_path, NULL, &db), LAMINA_OK);
        CHECK(db != NULL);
        CHECK_STATUS(db, lamina_put(db, "k", 1, "v", 1), LAMINA_OK);
        CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
        db = NULL;
        free(defaults_path);
    }

    opts = mem_options();
    opts.engine = "no-such-engine";
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "unknown engine");

    opts = mem_options();
    opts.durability = 42;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "durability");

    opts = mem_options();
    opts.durability = LAMINA_DURABILITY_BUFFERED;
    opts.durability_max_delay_us = 0;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "max_delay");
    opts.durability_max_delay_us = 61000000u; /* over the one-minute bound */
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    opts.durability_max_delay_us = 2000;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    db = NULL;

    opts = mem_options();
    opts.memory_budget_bytes = 1;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "memory_budget_bytes");

    opts = mem_options();
    opts.cache_bytes = UINT64_MAX;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "cache_bytes");

    /* Only the in-memory engines (mem, trie) enforce a memory limit; others refuse it. */
    opts = mem_options();
    opts.engine = "fdtree";
    opts.memory_limit_bytes = 1u << 30;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_UNSUPPORTED);
    CHECK_MESSAGE(NULL, "memory_limit_bytes");

    /* The log write buffer is a setting of trie and mem only; out of range it is refused. */
    opts = mem_options();
    opts.engine = "fdtree";
    opts.log_buffer_bytes = 1u << 20;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_UNSUPPORTED);
    opts = mem_options();
    opts.log_buffer_bytes = 1;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "buffer_bytes");

    opts = mem_options();
    opts.create_if_missing = 0;
    CHECK_STATUS(NULL, lamina_open(missing, &opts, &db), LAMINA_IO_ERROR);
    CHECK(db == NULL);

    /* Good options open; a second handle on the same directory is refused while it lives. */
    opts = mem_options();
    opts.cache_bytes = 0;
    opts.memory_budget_bytes = 64u << 10;
    CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_OK);
    CHECK(db != NULL);
    {
        lamina_db *second = NULL;
        CHECK_STATUS(NULL, lamina_open(path, &opts, &second), LAMINA_IO_ERROR);
        CHECK(second == NULL);
        CHECK_MESSAGE(NULL, "already open");
    }
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(NULL), LAMINA_OK);
    free(path);
    free(missing);
}

static void test_put_get_delete_and_small_buffers(void) {
    char *path = db_path("basic");
    lamina_db *db = open_mem(path);
    unsigned char buf[16];
    size_t len;
    static const unsigned char binary_key[] = {0x00, 0xff, 0x00, 0x01};
    static const unsigned char binary_value[] = {0x00, 0x00, 0x7f};

    CHECK_STATUS(db, put_str(db, "apple", "red"), LAMINA_OK);
    CHECK(value_is(db, "apple", "red", 3));
    CHECK_STATUS(db, put_str(db, "apple", "green"), LAMINA_OK); /* overwrite */
    CHECK(value_is(db, "apple", "green", 5));

    /* Size query: NULL buffer with capacity 0 reports the full length. */
    len = 0;
    CHECK_STATUS(db, lamina_get(db, "apple", 5, NULL, &len), LAMINA_VALUE_BUFFER_TOO_SMALL);
    CHECK(len == 5);
    /* Too small: nothing copied (the sentinel survives), *len = the full length. */
    memset(buf, 0xaa, sizeof buf);
    len = 4;
    CHECK_STATUS(db, lamina_get(db, "apple", 5, buf, &len), LAMINA_VALUE_BUFFER_TOO_SMALL);
    CHECK(len == 5);
    CHECK(buf[0] == 0xaa && buf[3] == 0xaa);
    /* Exactly large enough. */
    len = 5;
    CHECK_STATUS(db, lamina_get(db, "apple", 5, buf, &len), LAMINA_OK);
    CHECK(len == 5 && memcmp(buf, "green", 5) == 0 && buf[5] == 0xaa);
    /* Too-small and not-found outcomes are not failures: they record no message. */
    CHECK(strcmp(lamina_last_error_message(db), "") == 0);

    /* Missing key: NOT_FOUND and *len = 0. */
    len = sizeof buf;
    CHECK_STATUS(db, lamina_get(db, "pear", 4, buf, &len), LAMINA_NOT_FOUND);
    CHECK(len == 0);

    /* The empty value, written from a NULL pointer, read into a NULL buffer. */
    CHECK_STATUS(db, lamina_put(db, "empty", 5, NULL, 0), LAMINA_OK);
    len = 0;
    CHECK_STATUS(db, lamina_get(db, "empty", 5, NULL, &len), LAMINA_OK);
    CHECK(len == 0);

    /* Binary keys and values with NUL bytes. */
    CHECK_STATUS(db, lamina_put(db, binary_key, sizeof binary_key, binary_value,
                                sizeof binary_value), LAMINA_OK);
    len = sizeof buf;
    CHECK_STATUS(db, lamina_get(db, binary_key, sizeof binary_key, buf, &len), LAMINA_OK);
    CHECK(len == sizeof binary_value && memcmp(buf, binary_value, len) == 0);
    len = sizeof buf;
    CHECK_STATUS(db, lamina_get(db, binary_key, 3, buf, &len), LAMINA_NOT_FOUND); /* a prefix */

    /* Delete reports whether the key existed. */
    CHECK_STATUS(db, lamina_delete(db, "apple", 5), LAMINA_OK);
    CHECK(absent(db, "apple"));
    CHECK_STATUS(db, lamina_delete(db, "apple", 5), LAMINA_NOT_FOUND);
    CHECK_STATUS(db, lamina_delete(db, "never", 5), LAMINA_NOT_FOUND);

    CHECK_STATUS(db, lamina_sync(db), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

static void test_oversized_input_changes_nothing(void) {
    char *path = db_path("limits");
    lamina_db *db = open_mem(path);
    static unsigned char key[LAMINA_KEY_BYTES_MAX + 1];
    static unsigned char value[LAMINA_VALUE_BYTES_MAX + 1];
    static unsigned char out[LAMINA_VALUE_BYTES_MAX + 1];
    size_t len;
    lamina_iter *it = NULL;

    memset(key, 'k', sizeof key);
    memset(value, 'v', sizeof value);

    /* The limits are inclusive. */
    CHECK_STATUS(db, lamina_put(db, key, LAMINA_KEY_BYTES_MAX, value, LAMINA_VALUE_BYTES_MAX),
                 LAMINA_OK);
    len = sizeof out;
    CHECK_STATUS(db, lamina_get(db, key, LAMINA_KEY_BYTES_MAX, out, &len), LAMINA_OK);
    CHECK(len == LAMINA_VALUE_BYTES_MAX);

    /* One byte over is refused, names the limit, and changes nothing. */
    CHECK_STATUS(db, lamina_put(db, key, LAMINA_KEY_BYTES_MAX + 1, "x", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "1024");
    CHECK_STATUS(db, lamina_put(db, key, LAMINA_KEY_BYTES_MAX, value, LAMINA_VALUE_BYTES_MAX + 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "4096");
    len = sizeof out;
    CHECK_STATUS(db, lamina_get(db, key, LAMINA_KEY_BYTES_MAX, out, &len), LAMINA_OK);
    CHECK(len == LAMINA_VALUE_BYTES_MAX && out[0] == 'v');
    CHECK_STATUS(db, lamina_get(db, key, LAMINA_KEY_BYTES_MAX + 1, out, &len),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_delete(db, key, LAMINA_KEY_BYTES_MAX + 1), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_compare_and_swap(db, key, LAMINA_KEY_BYTES_MAX + 1, NULL, 0, "x", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_compare_and_swap(db, key, LAMINA_KEY_BYTES_MAX, value,
                                             LAMINA_VALUE_BYTES_MAX + 1, "x", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_compare_and_swap(db, key, LAMINA_KEY_BYTES_MAX, value,
                                             LAMINA_VALUE_BYTES_MAX, value,
                                             LAMINA_VALUE_BYTES_MAX + 1),
                 LAMINA_INVALID_ARGUMENT);

    /* Absurd lengths are refused before a byte is read. */
    CHECK_STATUS(db, lamina_put(db, key, SIZE_MAX, "x", 1), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_put(db, "k", 1, value, SIZE_MAX), LAMINA_INVALID_ARGUMENT);

    /* Iterator bounds are limited like keys. */
    CHECK_STATUS(db, lamina_iter_open(db, key, LAMINA_KEY_BYTES_MAX + 1, NULL, 0, &it),
                 LAMINA_INVALID_ARGUMENT);
    CHECK(it == NULL);
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, key, LAMINA_KEY_BYTES_MAX + 1, &it),
                 LAMINA_INVALID_ARGUMENT);

    /* Only the one valid key exists. */
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 0, &it), LAMINA_OK);
    {
        static unsigned char kbuf[LAMINA_KEY_BYTES_MAX];
        size_t klen = sizeof kbuf, vlen = sizeof out;
        CHECK_STATUS(db, lamina_iter_next(it, kbuf, &klen, out, &vlen), LAMINA_OK);
        CHECK(klen == LAMINA_KEY_BYTES_MAX && vlen == LAMINA_VALUE_BYTES_MAX);
        klen = sizeof kbuf;
        vlen = sizeof out;
        CHECK_STATUS(db, lamina_iter_next(it, kbuf, &klen, out, &vlen), LAMINA_NOT_FOUND);
    }
    lamina_iter_close(it);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

struct message_probe {
    const lamina_db *db;
    int saw_empty;
};

static void *probe_message(void *arg) {
    struct message_probe *probe = arg;
    probe->saw_empty = strcmp(lamina_last_error_message(probe->db), "") == 0;
    return NULL;
}

static void test_null_arguments(void) {
    char *path = db_path("nulls");
    lamina_db *db = open_mem(path);
    unsigned char buf[8];
    size_t len = sizeof buf, klen = sizeof buf;
    lamina_iter *it = NULL;

    /* A NULL handle. */
    CHECK_STATUS(NULL, put_str(NULL, "k", "v"), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "db is NULL");
    CHECK_STATUS(NULL, lamina_get(NULL, "k", 1, buf, &len), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_delete(NULL, "k", 1), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_compare_and_swap(NULL, "k", 1, NULL, 0, "v", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_sync(NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_iter_open(NULL, NULL, 0, NULL, 0, &it), LAMINA_INVALID_ARGUMENT);
    CHECK(it == NULL);

    /* NULL data with a nonzero length. */
    CHECK_STATUS(db, lamina_put(db, NULL, 1, "v", 1), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "key is NULL");
    CHECK_STATUS(db, lamina_put(db, "k", 1, NULL, 1), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "value is NULL");
    CHECK_STATUS(db, lamina_get(db, NULL, 1, buf, &len), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_delete(db, NULL, 1), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, NULL, 1, "v", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, NULL, 0, NULL, 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 1, NULL, 0, &it), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 1, &it), LAMINA_INVALID_ARGUMENT);

    /* Output arguments. */
    CHECK_STATUS(db, put_str(db, "k", "v"), LAMINA_OK);
    CHECK_STATUS(db, lamina_get(db, "k", 1, buf, NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "value_len is NULL");
    len = 5;
    CHECK_STATUS(db, lamina_get(db, "k", 1, NULL, &len), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "value_buf is NULL");
    CHECK(len == 5); /* failures leave the length alone */
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 0, NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 0, &it), LAMINA_OK);
    len = sizeof buf;
    CHECK_STATUS(NULL, lamina_iter_next(NULL, buf, &klen, buf, &len), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "iter is NULL");
    CHECK_STATUS(db, lamina_iter_next(it, buf, NULL, buf, &len), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "key_len is NULL");
    CHECK_STATUS(db, lamina_iter_next(it, buf, &klen, buf, NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(db, "value_len is NULL");
    klen = 4;
    CHECK_STATUS(db, lamina_iter_next(it, NULL, &klen, buf, &len), LAMINA_INVALID_ARGUMENT);
    /* None of that advanced the iterator. */
    klen = sizeof buf;
    len = sizeof buf;
    CHECK_STATUS(db, lamina_iter_next(it, buf, &klen, buf, &len), LAMINA_OK);
    CHECK(klen == 1 && buf[0] == 'v' && len == 1);
    lamina_iter_close(it);
    lamina_iter_close(NULL);

    /* Messages are per thread: another thread has none for this handle. */
    {
        pthread_t thread;
        struct message_probe probe;
        probe.db = db;
        probe.saw_empty = 0;
        CHECK(strcmp(lamina_last_error_message(db), "") != 0);
        CHECK(pthread_create(&thread, NULL, probe_message, &probe) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
        CHECK(probe.saw_empty);
    }
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

static void test_compare_and_swap(void) {
    char *path = db_path("cas");
    lamina_db *db = open_mem(path);

    /* expected NULL: insert if absent. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, NULL, 0, "one", 3), LAMINA_OK);
    CHECK(value_is(db, "k", "one", 3));
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, NULL, 0, "two", 3),
                 LAMINA_COMPARE_FAILED);
    /* A mismatch changes nothing. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, "uno", 3, "two", 3),
                 LAMINA_COMPARE_FAILED);
    CHECK(value_is(db, "k", "one", 3));
    CHECK(strcmp(lamina_last_error_message(db), "") == 0); /* an outcome, not a failure */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, "one", 3, "two", 3), LAMINA_OK);
    CHECK(value_is(db, "k", "two", 3));
    /* new_value NULL: delete. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, "two", 3, NULL, 0), LAMINA_OK);
    CHECK(absent(db, "k"));
    /* A failed swap on an absent key says so: LAMINA_NOT_FOUND, not COMPARE_FAILED. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "k", 1, "two", 3, NULL, 0), LAMINA_NOT_FOUND);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "never", 5, "x", 1, "y", 1), LAMINA_NOT_FOUND);
    CHECK(absent(db, "never")); /* and changes nothing */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "never", 5, "", 0, "y", 1), LAMINA_NOT_FOUND);
    CHECK(strcmp(lamina_last_error_message(db), "") == 0); /* an outcome, not a failure */
    /* The empty value is not absence. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "e", 1, NULL, 0, "", 0), LAMINA_OK);
    CHECK(value_is(db, "e", "", 0));
    CHECK_STATUS(db, lamina_compare_and_swap(db, "e", 1, NULL, 0, "x", 1),
                 LAMINA_COMPARE_FAILED);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "e", 1, "", 0, "x", 1), LAMINA_OK);
    CHECK(value_is(db, "e", "x", 1));
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

/* The empty key is a key: stored, read, swapped, batched, deleted, listed first, and a
 * bound that names it; in every engine (test_every_engine_by_name) and across a reopen. */
static void test_empty_key(void) {
    char *path = db_path("empty-key");
    lamina_db *db = open_mem(path);
    lamina_batch *batch = NULL;
    lamina_iter *it = NULL;
    unsigned char key[8], value[16];
    size_t klen, vlen;

    CHECK_STATUS(db, put_str(db, "a", "va"), LAMINA_OK);
    vlen = 0;
    CHECK_STATUS(db, lamina_get(db, "", 0, NULL, &vlen), LAMINA_NOT_FOUND);
    CHECK_STATUS(db, lamina_delete(db, NULL, 0), LAMINA_NOT_FOUND);
    CHECK_STATUS(db, lamina_put(db, "", 0, "first", 5), LAMINA_OK);
    CHECK(value_is(db, "", "first", 5));
    CHECK_STATUS(db, lamina_put(db, NULL, 0, "", 0), LAMINA_OK); /* NULL, 0: the empty key */
    CHECK(value_is(db, "", "", 0));
    CHECK(value_is(db, "a", "va", 2));

    /* Listed first, whether the start is NULL or the empty key. */
    CHECK_STATUS(db, lamina_iter_open(db, "", 0, NULL, 0, &it), LAMINA_OK);
    klen = sizeof key;
    vlen = sizeof value;
    CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
    CHECK(klen == 0 && vlen == 0);
    klen = sizeof key;
    vlen = sizeof value;
    CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
    CHECK(klen == 1 && key[0] == 'a');
    lamina_iter_close(it);
    CHECK_STATUS(db, lamina_iter_open_hinted(db, NULL, 0, "a", 1, 1, &it), LAMINA_OK);
    klen = sizeof key;
    vlen = sizeof value;
    CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
    CHECK(klen == 0);
    klen = sizeof key;
    vlen = sizeof value;
    CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_NOT_FOUND);
    lamina_iter_close(it);

    /* Compare-and-swap and batches on it. */
    CHECK_STATUS(db, lamina_compare_and_swap(db, "", 0, NULL, 0, "x", 1), LAMINA_COMPARE_FAILED);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "", 0, "", 0, "cas", 3), LAMINA_OK);
    CHECK(value_is(db, "", "cas", 3));
    CHECK_STATUS(NULL, lamina_batch_create(&batch), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_delete(batch, "", 0), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_put(batch, "b", 1, "vb", 2), LAMINA_OK);
    CHECK_STATUS(db, lamina_write_batch(db, batch), LAMINA_OK);
    CHECK(absent(db, ""));
    CHECK_STATUS(db, lamina_compare_and_swap(db, "", 0, "cas", 3, NULL, 0), LAMINA_NOT_FOUND);
    CHECK_STATUS(db, lamina_compare_and_swap(db, "", 0, NULL, 0, "kept", 4), LAMINA_OK);
    lamina_batch_destroy(batch);

    /* Durable across a close and reopen. */
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    db = open_mem(path);
    CHECK(value_is(db, "", "kept", 4));
    CHECK(value_is(db, "b", "vb", 2));
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

/* Drains `it`, checking keys ascend; returns how many pairs it gave, -1 on a bad status. */
static int drain(lamina_db *db, lamina_iter *it, char *first, char *last) {
    unsigned char key[LAMINA_KEY_BYTES_MAX + 1], prev[LAMINA_KEY_BYTES_MAX + 1];
    unsigned char value[LAMINA_VALUE_BYTES_MAX];
    size_t prev_len = 0;
    int count = 0;
    for (;;) {
        size_t klen = LAMINA_KEY_BYTES_MAX, vlen = sizeof value;
        int rc = lamina_iter_next(it, key, &klen, value, &vlen);
        if (rc == LAMINA_NOT_FOUND) break;
        CHECK_STATUS(db, rc, LAMINA_OK);
        if (rc != LAMINA_OK) return -1;
        if (count > 0) {
            size_t n = prev_len < klen ? prev_len : klen;
            int cmp = memcmp(prev, key, n);
            CHECK(cmp < 0 || (cmp == 0 && prev_len < klen));
        }
        /* Values are "v" + key in these tests. */
        CHECK(vlen == klen + 1 && value[0] == 'v' && memcmp(value + 1, key, klen) == 0);
        memcpy(prev, key, klen);
        prev_len = klen;
        key[klen] = '\0';
        if (count == 0 && first != NULL) strcpy(first, (char *)key);
        if (last != NULL) strcpy(last, (char *)key);
        count++;
    }
    return count;
}

static int count_range(lamina_db *db, const char *start, const char *end, char *first,
                       char *last) {
    lamina_iter *it = NULL;
    int n;
    CHECK_STATUS(db, lamina_iter_open(db, start, start ? strlen(start) : 0, end,
                                      end ? strlen(end) : 0, &it),
                 LAMINA_OK);
    if (it == NULL) return -1;
    n = drain(db, it, first, last);
    lamina_iter_close(it);
    return n;
}

static void test_write_batch(void) {
    char *path = db_path("batch");
    lamina_db *db = open_mem(path);
    lamina_batch *batch = NULL;
    static unsigned char big[LAMINA_VALUE_BYTES_MAX + 1];

    CHECK_STATUS(NULL, lamina_batch_create(NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_batch_create(&batch), LAMINA_OK);
    CHECK(batch != NULL && lamina_batch_count(batch) == 0);
    CHECK_STATUS(db, put_str(db, "gone", "soon"), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_put(batch, "a", 1, "1", 1), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_put(batch, "b", 1, NULL, 0), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_delete(batch, "gone", 4), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_batch_put(batch, "a", 1, "2", 1), LAMINA_OK); /* later wins */
    CHECK(lamina_batch_count(batch) == 4);
    /* Refused operations leave the batch as it was. */
    CHECK_STATUS(NULL, lamina_batch_put(batch, "c", 1, big, sizeof big), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "4096");
    /* (lengths are checked before any byte is read) */
    CHECK_STATUS(NULL, lamina_batch_put(batch, "c", LAMINA_KEY_BYTES_MAX + 1, "x", 1),
                 LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_batch_delete(batch, NULL, 1), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_batch_put(NULL, "c", 1, "x", 1), LAMINA_INVALID_ARGUMENT);
    CHECK_MESSAGE(NULL, "batch is NULL");
    CHECK_STATUS(NULL, lamina_batch_delete(NULL, "c", 1), LAMINA_INVALID_ARGUMENT);
    CHECK(lamina_batch_count(batch) == 4);
    CHECK(lamina_batch_count(NULL) == 0);
    /* Nothing is applied before lamina_write_batch. */
    CHECK(absent(db, "a"));
    CHECK_STATUS(db, lamina_write_batch(db, batch), LAMINA_OK);
    CHECK(value_is(db, "a", "2", 1));
    CHECK(value_is(db, "b", "", 0));
    CHECK(absent(db, "gone"));
    CHECK(lamina_batch_count(batch) == 4); /* left as it was */
    CHECK_STATUS(db, lamina_write_batch(db, NULL), LAMINA_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, lamina_write_batch(NULL, batch), LAMINA_INVALID_ARGUMENT);
    lamina_batch_clear(batch);
    CHECK(lamina_batch_count(batch) == 0);
    CHECK_STATUS(db, lamina_write_batch(db, batch), LAMINA_OK); /* empty: a no-op */
    lamina_batch_clear(NULL);
    lamina_batch_destroy(batch);
    lamina_batch_destroy(NULL);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

#define KEYS 300 /* more than one page of the iterator (128) */

static void test_iteration(void) {
    char *path = db_path("iter");
    lamina_db *db = open_mem(path);
    char first[64], last[64];
    int i;

    for (i = 0; i < KEYS; i++) {
        char key[16], value[17];
        snprintf(key, sizeof key, "k%03d", i);
        snprintf(value, sizeof value, "v%s", key);
        CHECK_STATUS(db, put_str(db, key, value), LAMINA_OK);
    }
    CHECK(count_range(db, NULL, NULL, first, last) == KEYS);
    CHECK(strcmp(first, "k000") == 0 && strcmp(last, "k299") == 0);
    /* [start, end): start included, end excluded. */
    CHECK(count_range(db, "k010", "k020", first, last) == 10);
    CHECK(strcmp(first, "k010") == 0 && strcmp(last, "k019") == 0);
    CHECK(count_range(db, "k0105", "k0125", first, last) == 2); /* between keys */
    CHECK(strcmp(first, "k011") == 0 && strcmp(last, "k012") == 0);
    CHECK(count_range(db, "k250", NULL, first, last) == 50);
    CHECK(count_range(db, NULL, "k100", first, last) == 100);
    CHECK(strcmp(last, "k099") == 0);
    CHECK(count_range(db, "k100", "k100", NULL, NULL) == 0);
    CHECK(count_range(db, "k200", "k100", NULL, NULL) == 0);
    CHECK(count_range(db, "z", NULL, NULL, NULL) == 0);
    CHECK(count_range(db, "", NULL, NULL, NULL) == KEYS); /* empty start = from the first */
    CHECK(count_range(db, NULL, "", NULL, NULL) == 0);    /* empty end = nothing */

    /* A hint sizes the first page: with a hint of 1 the iterator has fetched only "k000"
     * when it returns it, so a key put right after it (before the next call) is returned
     * next; without a hint the first page of 128 was fetched before the put, and the next
     * pair is "k001". Either way every key present throughout is returned once. */
    {
        static const size_t hints[] = {1, 0};
        size_t h;
        for (h = 0; h < sizeof hints / sizeof hints[0]; h++) {
            lamina_iter *it = NULL;
            unsigned char key[8], value[16];
            size_t klen = sizeof key, vlen = sizeof value;
            int n;
            CHECK_STATUS(db, lamina_iter_open_hinted(db, NULL, 0, "k200", 4, hints[h], &it),
                         LAMINA_OK);
            CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
            CHECK(klen == 4 && memcmp(key, "k000", 4) == 0);
            CHECK_STATUS(db, put_str(db, "k0005", "vk0005"), LAMINA_OK);
            klen = sizeof key;
            vlen = sizeof value;
            CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
            if (hints[h] == 1) {
                CHECK(klen == 5 && memcmp(key, "k0005", 5) == 0);
            } else {
                CHECK(klen == 4 && memcmp(key, "k001", 4) == 0);
            }
            n = drain(db, it, NULL, NULL); /* pages grow past the hint; nothing is lost */
            CHECK(n == (hints[h] == 1 ? 199 : 198));
            lamina_iter_close(it);
            CHECK_STATUS(db, lamina_delete(db, "k0005", 5), LAMINA_OK);
        }
        /* A huge hint is capped; the old call is the hint 0. */
        {
            lamina_iter *it = NULL;
            CHECK_STATUS(db, lamina_iter_open_hinted(db, "k100", 4, NULL, 0, SIZE_MAX, &it),
                         LAMINA_OK);
            CHECK(drain(db, it, NULL, NULL) == KEYS - 100);
            lamina_iter_close(it);
            CHECK_STATUS(db, lamina_iter_open_hinted(db, "k100", 4, NULL, 0, 1, NULL),
                         LAMINA_INVALID_ARGUMENT);
        }
    }

    /* Buffer too small: not advanced, both lengths reported, one retry succeeds. */
    {
        lamina_iter *it = NULL;
        unsigned char key[8], value[8];
        size_t klen, vlen;
        CHECK_STATUS(db, lamina_iter_open(db, "k007", 4, NULL, 0, &it), LAMINA_OK);
        klen = 0;
        vlen = 0;
        CHECK_STATUS(db, lamina_iter_next(it, NULL, &klen, NULL, &vlen),
                     LAMINA_KEY_BUFFER_TOO_SMALL);
        CHECK(klen == 4 && vlen == 5);
        memset(key, 0xaa, sizeof key);
        memset(value, 0xaa, sizeof value);
        klen = 3;
        vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen),
                     LAMINA_KEY_BUFFER_TOO_SMALL);
        CHECK(klen == 4 && vlen == 5 && key[0] == 0xaa && value[0] == 0xaa);
        klen = sizeof key;
        vlen = 4;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen),
                     LAMINA_VALUE_BUFFER_TOO_SMALL);
        CHECK(klen == 4 && vlen == 5 && key[0] == 0xaa && value[0] == 0xaa);
        klen = sizeof key;
        vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
        CHECK(klen == 4 && memcmp(key, "k007", 4) == 0);
        CHECK(vlen == 5 && memcmp(value, "vk007", 5) == 0);
        klen = sizeof key;
        vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
        CHECK(klen == 4 && memcmp(key, "k008", 4) == 0);
        lamina_iter_close(it);
    }

    /* The end is sticky; a page boundary is crossed without loss. */
    {
        lamina_iter *it = NULL;
        unsigned char key[8], value[8];
        size_t klen = sizeof key, vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_open(db, "k299", 4, NULL, 0, &it), LAMINA_OK);
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_OK);
        klen = sizeof key;
        vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_NOT_FOUND);
        CHECK(klen == 0 && vlen == 0);
        klen = sizeof key;
        vlen = sizeof value;
        CHECK_STATUS(db, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_NOT_FOUND);
        lamina_iter_close(it);
    }

    /* Writes during an iteration: keys untouched throughout are all returned. */
    {
        lamina_iter *it = NULL;
        int n;
        CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 0, &it), LAMINA_OK);
        CHECK_STATUS(db, put_str(db, "k1505", "vk1505"), LAMINA_OK); /* inside the range */
        n = drain(db, it, NULL, NULL);
        CHECK(n == KEYS || n == KEYS + 1);
        lamina_iter_close(it);
    }
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

#define CAS_THREADS 8
#define CAS_INCREMENTS 250

struct cas_worker {
    lamina_db *db;
    int failures;
    int retries;
};

static uint64_t decode_u64(const unsigned char *buf) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--) v = (v << 8) | buf[i];
    return v;
}

static void encode_u64(unsigned char *buf, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) buf[i] = (unsigned char)(v >> (8 * i));
}

static void *cas_increments(void *arg) {
    struct cas_worker *w = arg;
    int i;
    for (i = 0; i < CAS_INCREMENTS; i++) {
        for (;;) {
            unsigned char current[8], next[8];
            size_t len = sizeof current;
            int rc = lamina_get(w->db, "counter", 7, current, &len);
            if (rc != LAMINA_OK || len != 8) {
                w->failures++;
                return NULL;
            }
            encode_u64(next, decode_u64(current) + 1);
            rc = lamina_compare_and_swap(w->db, "counter", 7, current, 8, next, 8);
            if (rc == LAMINA_OK) break;
            if (rc != LAMINA_COMPARE_FAILED) {
                fprintf(stderr, "cas: %s: %s\n", lamina_strerror(rc),
                        lamina_last_error_message(w->db));
                w->failures++;
                return NULL;
            }
            w->retries++;
        }
    }
    return NULL;
}

static void test_concurrent_cas_increments(void) {
    char *path = db_path("concurrent");
    lamina_db *db = open_mem(path);
    pthread_t threads[CAS_THREADS];
    struct cas_worker workers[CAS_THREADS];
    unsigned char zero[8], final_value[8];
    size_t len = sizeof final_value;
    int i, failures = 0, started = 0;

    encode_u64(zero, 0);
    CHECK_STATUS(db, lamina_put(db, "counter", 7, zero, 8), LAMINA_OK);
    for (i = 0; i < CAS_THREADS; i++) {
        workers[i].db = db;
        workers[i].failures = 0;
        workers[i].retries = 0;
        if (pthread_create(&threads[i], NULL, cas_increments, &workers[i]) == 0) started++;
    }
    CHECK(started == CAS_THREADS);
    for (i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        failures += workers[i].failures;
    }
    CHECK(failures == 0);
    CHECK_STATUS(db, lamina_get(db, "counter", 7, final_value, &len), LAMINA_OK);
    CHECK(len == 8 && decode_u64(final_value) == (uint64_t)started * CAS_INCREMENTS);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    free(path);
}

static void test_reopen_after_close(void) {
    char *path = db_path("reopen");
    lamina_db *db = open_mem(path);
    lamina_iter *it = NULL;
    unsigned char key[8], value[8];
    size_t klen = sizeof key, vlen = sizeof value;
    int i;

    for (i = 0; i < 10; i++) {
        char k[8], v[9];
        snprintf(k, sizeof k, "r%d", i);
        snprintf(v, sizeof v, "v%s", k);
        CHECK_STATUS(db, put_str(db, k, v), LAMINA_OK);
    }
    CHECK_STATUS(db, lamina_delete(db, "r3", 2), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);

    db = open_mem(path);
    CHECK(value_is(db, "r0", "vr0", 3));
    CHECK(value_is(db, "r9", "vr9", 3));
    CHECK(absent(db, "r3"));
    CHECK(count_range(db, NULL, NULL, NULL, NULL) == 9);
    CHECK_STATUS(db, put_str(db, "r10", "vr10"), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);

    /* An iterator outliving its handle fails cleanly and keeps the directory locked. */
    db = open_mem(path);
    CHECK(value_is(db, "r10", "vr10", 4));
    CHECK_STATUS(db, lamina_iter_open(db, NULL, 0, NULL, 0, &it), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
    CHECK_STATUS(NULL, lamina_iter_next(it, key, &klen, value, &vlen), LAMINA_ERROR);
    {
        lamina_options opts = mem_options();
        lamina_db *again = NULL;
        CHECK_STATUS(NULL, lamina_open(path, &opts, &again), LAMINA_IO_ERROR);
        lamina_iter_close(it);
        CHECK_STATUS(NULL, lamina_open(path, &opts, &again), LAMINA_OK);
        CHECK(count_range(again, NULL, NULL, NULL, NULL) == 10);
        CHECK_STATUS(NULL, lamina_close(again), LAMINA_OK);
    }
    free(path);
}

/* Every engine opens by name and serves the API; the persistent ones keep their data across a
 * close. A wrong engine on an existing database is refused. */
/* Whether a 1-row scan from the beginning returns the empty key. */
static int first_key_is_empty(lamina_db *db) {
    lamina_iter *it = NULL;
    unsigned char key[8], value[8];
    size_t klen = sizeof key, vlen = sizeof value;
    int rc;
    if (lamina_iter_open_hinted(db, NULL, 0, NULL, 0, 1, &it) != LAMINA_OK) return 0;
    rc = lamina_iter_next(it, key, &klen, value, &vlen);
    lamina_iter_close(it);
    return rc == LAMINA_OK && klen == 0;
}

static void test_every_engine_by_name(void) {
    static const struct {
        const char *name;
        int persists; /* whether reopening must find the data */
    } engines[] = {
        {"fdtree", 1}, {"fdtree-fc", 1}, {"fdtree-xm", 1}, {"fdtree-ds", 1},
        {"trie", 1},   {"mem", 1},       {"nbtree", 1},    {"latree", 1},
        {"latree-btree", 1},             {"fptree", 1},
    };
    size_t i;
    for (i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        char name[64];
        char *path;
        lamina_options opts;
        lamina_db *db = NULL;
        snprintf(name, sizeof name, "engine-%s", engines[i].name);
        path = db_path(name);
        lamina_options_init(&opts);
        opts.engine = engines[i].name;
        opts.durability = LAMINA_DURABILITY_NONE;
        CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_OK);
        if (db == NULL) {
            fprintf(stderr, "  engine %s did not open\n", engines[i].name);
            free(path);
            continue;
        }
        CHECK_STATUS(db, put_str(db, "b", "2"), LAMINA_OK);
        CHECK_STATUS(db, put_str(db, "a", "1"), LAMINA_OK);
        CHECK_STATUS(db, lamina_delete(db, "b", 1), LAMINA_OK);
        CHECK_STATUS(db, lamina_put(db, "", 0, "e", 1), LAMINA_OK); /* the empty key */
        CHECK(value_is(db, "a", "1", 1));
        CHECK(value_is(db, "", "e", 1));
        CHECK(absent(db, "b"));
        CHECK(first_key_is_empty(db));
        CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
        db = NULL;

        opts.engine = strcmp(engines[i].name, "mem") == 0 ? "trie" : "mem";
        CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_ERROR);
        CHECK(db == NULL);
        CHECK_MESSAGE(NULL, "cannot be opened as");

        if (engines[i].persists) {
            opts.engine = engines[i].name;
            CHECK_STATUS(NULL, lamina_open(path, &opts, &db), LAMINA_OK);
            if (db != NULL) {
                if (!value_is(db, "a", "1", 1)) {
                    fprintf(stderr, "  engine %s lost a write\n", engines[i].name);
                }
                CHECK(value_is(db, "a", "1", 1));
                CHECK(value_is(db, "", "e", 1));
                CHECK(absent(db, "b"));
                CHECK(first_key_is_empty(db));
                CHECK_STATUS(NULL, lamina_close(db), LAMINA_OK);
            }
        }
        free(path);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <scratch-dir>\n", argv[0]);
        return 2;
    }
    scratch_dir = argv[1];
    test_version_and_strerror();
    test_options_init();
    test_open_refuses_bad_arguments_and_options();
    test_put_get_delete_and_small_buffers();
    test_oversized_input_changes_nothing();
    test_null_arguments();
    test_compare_and_swap();
    test_empty_key();
    test_write_batch();
    test_iteration();
    test_concurrent_cas_increments();
    test_reopen_after_close();
    test_every_engine_by_name();
    printf("%d passed, %d failed\n", checks_passed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
