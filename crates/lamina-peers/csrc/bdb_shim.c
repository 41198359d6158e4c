/*
 * Plain-function shim over Berkeley DB 5.3's C API, whose handle methods are function
 * pointers in structs (env->open, db->get, ...). Each function here is one call; all logic
 * (retries, comparisons, ownership) lives in Rust (src/bdb/). Returned keys and values are
 * malloc'ed by BDB (DB_DBT_MALLOC, required on DB_THREAD handles) and freed by the caller
 * with free().
 */
#include <db.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * BDB writes the detail of an error (which page, which check) through the environment's
 * error callback, not its return code. The callback keeps the calling thread's last message
 * so the Rust side can put it in the lamina error (instead of BDB printing it to stderr).
 */
static __thread char last_error[1024];

static void errcall(const DB_ENV *env, const char *prefix, const char *message) {
    (void)env;
    (void)prefix;
    snprintf(last_error, sizeof last_error, "%s", message);
}

/* Copies (NUL-terminated, truncated to len) and clears this thread's last error message. */
void lp_bdb_take_error(char *out, size_t len) {
    if (len == 0)
        return;
    snprintf(out, len, "%s", last_error);
    last_error[0] = '\0';
}

int lp_bdb_open(const char *dir, uint64_t cache_bytes, int txn_nosync, DB_ENV **env_out,
                DB **db_out) {
    DB_ENV *env = NULL;
    DB *db = NULL;
    int rc;
    *env_out = NULL;
    *db_out = NULL;
    if ((rc = db_env_create(&env, 0)) != 0)
        return rc;
    env->set_errcall(env, errcall);
    if ((rc = env->set_cachesize(env, (u_int32_t)(cache_bytes >> 30),
                                 (u_int32_t)(cache_bytes & ((1u << 30) - 1)), 1)) != 0)
        goto fail;
    /* Deadlocks between concurrent transactions are broken at once; the loser retries. */
    if ((rc = env->set_lk_detect(env, DB_LOCK_DEFAULT)) != 0)
        goto fail;
    /* Page locks of large batches and many threads. */
    if ((rc = env->set_lk_max_locks(env, 200000)) != 0 ||
        (rc = env->set_lk_max_objects(env, 200000)) != 0 ||
        (rc = env->set_lk_max_lockers(env, 20000)) != 0)
        goto fail;
    if ((rc = env->set_lg_bsize(env, 4u << 20)) != 0)
        goto fail;
    if ((rc = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1)) != 0)
        goto fail;
    if (txn_nosync && (rc = env->set_flags(env, DB_TXN_NOSYNC, 1)) != 0)
        goto fail;
    rc = env->open(env, dir,
                   DB_CREATE | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL | DB_INIT_TXN |
                       DB_RECOVER | DB_THREAD | DB_PRIVATE,
                   0644);
    if (rc != 0)
        goto fail;
    if ((rc = db_create(&db, env, 0)) != 0)
        goto fail;
    rc = db->open(db, NULL, "data.db", NULL, DB_BTREE, DB_CREATE | DB_AUTO_COMMIT | DB_THREAD,
                  0644);
    if (rc != 0) {
        db->close(db, 0);
        goto fail;
    }
    *env_out = env;
    *db_out = db;
    return 0;
fail:
    env->close(env, 0);
    return rc;
}

int lp_bdb_close(DB_ENV *env, DB *db) {
    int rc = env->txn_checkpoint(env, 0, 0, 0);
    int rc2 = db->close(db, 0);
    int rc3 = env->close(env, 0);
    return rc != 0 ? rc : (rc2 != 0 ? rc2 : rc3);
}

static void fill(DBT *dbt, const void *data, size_t size) {
    memset(dbt, 0, sizeof *dbt);
    dbt->data = (void *)data;
    dbt->size = (u_int32_t)size;
}

int lp_bdb_get(DB *db, DB_TXN *txn, const void *k, size_t klen, void **v, size_t *vlen,
               uint32_t flags) {
    DBT key, data;
    int rc;
    fill(&key, k, klen);
    memset(&data, 0, sizeof data);
    data.flags = DB_DBT_MALLOC;
    rc = db->get(db, txn, &key, &data, flags);
    *v = rc == 0 ? data.data : NULL;
    *vlen = rc == 0 ? data.size : 0;
    return rc;
}

int lp_bdb_put(DB *db, DB_TXN *txn, const void *k, size_t klen, const void *v, size_t vlen) {
    DBT key, data;
    fill(&key, k, klen);
    fill(&data, v, vlen);
    return db->put(db, txn, &key, &data, 0);
}

int lp_bdb_del(DB *db, DB_TXN *txn, const void *k, size_t klen) {
    DBT key;
    fill(&key, k, klen);
    return db->del(db, txn, &key, 0);
}

int lp_bdb_txn_begin(DB_ENV *env, DB_TXN **txn) { return env->txn_begin(env, NULL, txn, 0); }
int lp_bdb_txn_commit(DB_TXN *txn) { return txn->commit(txn, 0); }
int lp_bdb_txn_abort(DB_TXN *txn) { return txn->abort(txn); }

int lp_bdb_cursor_open(DB *db, DB_TXN *txn, DBC **cursor, uint32_t flags) {
    return db->cursor(db, txn, cursor, flags);
}

/* Moves the cursor with `op`; for DB_SET_RANGE, (seek, seeklen) is the key to seek. */
int lp_bdb_cursor_get(DBC *cursor, const void *seek, size_t seeklen, void **k, size_t *klen,
                      void **v, size_t *vlen, uint32_t op) {
    DBT key, data;
    int rc;
    fill(&key, seek, seeklen);
    key.flags = DB_DBT_MALLOC;
    memset(&data, 0, sizeof data);
    data.flags = DB_DBT_MALLOC;
    rc = cursor->get(cursor, &key, &data, op);
    *k = rc == 0 ? key.data : NULL;
    *klen = rc == 0 ? key.size : 0;
    *v = rc == 0 ? data.data : NULL;
    *vlen = rc == 0 ? data.size : 0;
    return rc;
}

int lp_bdb_cursor_close(DBC *cursor) { return cursor->close(cursor); }

int lp_bdb_log_flush(DB_ENV *env) { return env->log_flush(env, NULL); }

/* out: keys, cache hits, cache misses, cache bytes. */
int lp_bdb_stats(DB_ENV *env, DB *db, uint64_t out[4]) {
    DB_BTREE_STAT *bt = NULL;
    DB_MPOOL_STAT *mp = NULL;
    int rc = db->stat(db, NULL, &bt, DB_FAST_STAT);
    if (rc != 0)
        return rc;
    out[0] = bt->bt_nkeys;
    free(bt);
    rc = env->memp_stat(env, &mp, NULL, 0);
    if (rc != 0)
        return rc;
    out[1] = mp->st_cache_hit;
    out[2] = mp->st_cache_miss;
    out[3] = (uint64_t)mp->st_gbytes * (1u << 30) + mp->st_bytes;
    free(mp);
    return 0;
}

const char *lp_bdb_strerror(int rc) { return db_strerror(rc); }
