/*
 * Plain-function shim over WiredTiger 3.2.1's C API: its handle methods are function
 * pointers (conn->open_session, session->open_cursor, ...) and the cursor key/value
 * accessors are variadic, which Rust cannot call portably. Each function here is one or two
 * calls; transactions, retries and ownership live in Rust (src/wiredtiger/). Tables use
 * key_format=u and value_format=u (raw byte strings as WT_ITEM). Pointers returned by
 * lp_wt_search / lp_wt_current are valid until the cursor next moves or is reset.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wiredtiger.h>

/*
 * WiredTiger reports the detail of an error (which limit, which file) through its event
 * handler, not its return code. The handler keeps the calling thread's last message so the
 * Rust side can put it in the lamina error; informational messages are dropped.
 */
static __thread char last_error[1024];

static int handle_error(WT_EVENT_HANDLER *handler, WT_SESSION *session, int error,
                        const char *message) {
    (void)handler;
    (void)session;
    (void)error;
    snprintf(last_error, sizeof last_error, "%s", message);
    return 0;
}

static int handle_message(WT_EVENT_HANDLER *handler, WT_SESSION *session,
                          const char *message) {
    (void)handler;
    (void)session;
    (void)message;
    return 0;
}

static WT_EVENT_HANDLER event_handler = {handle_error, handle_message, NULL, NULL};

/* Copies (NUL-terminated, truncated to len) and clears this thread's last error message. */
void lp_wt_take_error(char *out, size_t len) {
    if (len == 0)
        return;
    snprintf(out, len, "%s", last_error);
    last_error[0] = '\0';
}

int lp_wt_open(const char *home, const char *config, WT_CONNECTION **conn) {
    return wiredtiger_open(home, &event_handler, config, conn);
}

int lp_wt_conn_close(WT_CONNECTION *conn, const char *config) {
    return conn->close(conn, config);
}

int lp_wt_open_session(WT_CONNECTION *conn, WT_SESSION **session) {
    return conn->open_session(conn, NULL, "isolation=snapshot", session);
}

int lp_wt_session_close(WT_SESSION *session) { return session->close(session, NULL); }

int lp_wt_create(WT_SESSION *session, const char *uri, const char *config) {
    return session->create(session, uri, config);
}

int lp_wt_open_cursor(WT_SESSION *session, const char *uri, const char *config,
                      WT_CURSOR **cursor) {
    return session->open_cursor(session, uri, NULL, config, cursor);
}

int lp_wt_cursor_close(WT_CURSOR *cursor) { return cursor->close(cursor); }

int lp_wt_begin(WT_SESSION *session, const char *config) {
    return session->begin_transaction(session, config);
}

int lp_wt_commit(WT_SESSION *session, const char *config) {
    return session->commit_transaction(session, config);
}

int lp_wt_rollback(WT_SESSION *session) { return session->rollback_transaction(session, NULL); }

int lp_wt_log_flush(WT_SESSION *session, const char *config) {
    return session->log_flush(session, config);
}

static void set_key(WT_CURSOR *cursor, const void *k, size_t klen) {
    WT_ITEM key;
    memset(&key, 0, sizeof key);
    key.data = k;
    key.size = klen;
    cursor->set_key(cursor, &key);
}

int lp_wt_search(WT_CURSOR *cursor, const void *k, size_t klen, const void **v, size_t *vlen) {
    WT_ITEM value;
    int rc;
    set_key(cursor, k, klen);
    if ((rc = cursor->search(cursor)) != 0)
        return rc;
    memset(&value, 0, sizeof value);
    if ((rc = cursor->get_value(cursor, &value)) != 0)
        return rc;
    *v = value.data;
    *vlen = value.size;
    return 0;
}

int lp_wt_insert(WT_CURSOR *cursor, const void *k, size_t klen, const void *v, size_t vlen) {
    WT_ITEM value;
    set_key(cursor, k, klen);
    memset(&value, 0, sizeof value);
    value.data = v;
    value.size = vlen;
    cursor->set_value(cursor, &value);
    return cursor->insert(cursor);
}

int lp_wt_remove(WT_CURSOR *cursor, const void *k, size_t klen) {
    set_key(cursor, k, klen);
    return cursor->remove(cursor);
}

int lp_wt_search_near(WT_CURSOR *cursor, const void *k, size_t klen, int *exact) {
    set_key(cursor, k, klen);
    return cursor->search_near(cursor, exact);
}

int lp_wt_next(WT_CURSOR *cursor) { return cursor->next(cursor); }

int lp_wt_current(WT_CURSOR *cursor, const void **k, size_t *klen, const void **v,
                  size_t *vlen) {
    WT_ITEM key, value;
    int rc;
    memset(&key, 0, sizeof key);
    memset(&value, 0, sizeof value);
    if ((rc = cursor->get_key(cursor, &key)) != 0)
        return rc;
    if ((rc = cursor->get_value(cursor, &value)) != 0)
        return rc;
    *k = key.data;
    *klen = key.size;
    *v = value.data;
    *vlen = value.size;
    return 0;
}

int lp_wt_reset(WT_CURSOR *cursor) { return cursor->reset(cursor); }

const char *lp_wt_strerror(int rc) { return wiredtiger_strerror(rc); }
