/* Reader: the one C reader of live records by key. One type, three reads:
 *
 *   - `rows(keys)`: the Records of many content keys (a query's rows, a scan's batches,
 *     the by-key read when `lookup`/`get` hand over), `(rows, pending)`;
 *   - `lookup(value)`: `Topic.lookup` of a one-field content key value;
 *   - `get(text)`: `Topic.get` of a content key's SOW key text;
 *
 * and `head(n)`, the first keys of the table (a query's `top_n` with no filter and no
 * order reads only those), and ByKey, the front a topic binds as its `lookup` (the
 * reference: the Python method it falls back to). A read of at most KEEP_MOST keys keeps
 * its Records by key and record offset and gives them again while the key's entry holds
 * that offset (a record is never changed where it is written); a new map or table
 * forgets them.
 *
 * Each read finds a key in the key map's table (a KeyTable, keytable.c), reads the
 * common record at its offset in the log's map (checked by sowlib.storage.recordread's
 * C interface, what its `read_put` reads) and builds its Record here (`record_of`):
 * one probe, one checked read, one constructor for all three.
 *
 * Contracts, all arguments, none read by attribute name:
 *
 *   - made with what a Record holds besides the record (record_type, a tuple type with
 *     Record's fields; topic; message_type; doc, a Record's doc until first touched,
 *     None: the payload) and the record cache's `get`/`put` with its cost and admission
 *     rule (for lookup/get);
 *   - `set_table(table)`: the key map's current table, called by the key map each time
 *     it installs one (a table that is not a KeyTable: every read NotImplemented);
 *   - `set_map(mm)`: the log's current map, called by the log each time it maps the
 *     file anew (growth, compaction, a read-only opener's refresh) or closes it (None).
 *     A map the log has replaced is never read: the call comes before the log uses the
 *     new map, under the same lock the reads take;
 *   - `bind(heap, acquire, release[, head])`: for lookup/get, the expiry queue's heap
 *     (a list, never rebound by its owner: not empty means an expiration may be due,
 *     NotImplemented), the topic lock's acquire and release, and the content key's
 *     domain (bytes: `lookup` hashes `head + text` with XXH64, as the content key
 *     generator does; `digest` for keys longer than the scratch buffer).
 *
 * `rows` is called under the topic's lock; `lookup`/`get` probe the cache without it
 * (writers drop a key from the cache under the lock before changing it) and take it
 * for the table probe and the read (before the probe, the key's entry is looked up and
 * its record's first lines prefetched from the last map bound: a hint, read again). Keys whose record this does not read (not an int
 * in [0, 2**64), an entry with header fields, another record shape, a damaged record)
 * are handed back: NotImplemented for one key, left in `rows` and counted in `pending`
 * for many; the Python path (Views.records_of_log, Topic.lookup's) decides and raises.
 * The Python paths are the references: tests/test_rowread.py, tests/test_keyread.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../storage/recordread.h"
#include "keytable.h"

static const RecordReadApi *records; /* sowlib.storage.recordread's C interface, or NULL */

/* A Record `rows` made for `key` from the record at `off` of the bound map. A record is
 * never changed where it is written, so while the map is the same, a key whose entry
 * still holds `off` has this Record (`set_map` and `set_table` forget them all). */
typedef struct {
    uint64_t key;
    int64_t off;
    PyObject *rec; /* NULL: an empty place */
} Kept;

/* Places for kept Records (a power of two), and the most keys a read may ask for to have
 * its Records kept: a small read (a top_n page, an equality on a rare value) is often
 * asked again; a large one would only churn them. */
#define KEPT_BITS 8
#define KEPT (1 << KEPT_BITS)
#define KEEP_MOST 64

typedef struct {
    PyObject_HEAD
    PyTypeObject *record_type;
    PyObject *topic;
    PyObject *message_type;
    PyObject *doc;       /* a Record's doc until first touched (None: the payload) */
    PyObject *table;     /* set_table: the key map's current table */
    PyObject *map;       /* set_map: the log's current map, None when closed */
    PyObject *digest;    /* bytes -> int: XXH64 of keys past the scratch buffer */
    PyObject *cache_get; /* key -> Record or None */
    PyObject *cache_put; /* (key, record, cost) -> None; None: no caching */
    Py_ssize_t cost_base;
    Py_ssize_t cost_factor;
    uint64_t admit_mask;
    uint64_t draws;      /* the admission's xorshift state, never 0 */
    PyObject *heap;      /* bind: the expiry queue (a list); NULL until bound */
    PyObject *acquire;   /* bind: the topic lock's acquire and release */
    PyObject *release;
    PyObject *head;      /* bind: bytes, the content key's domain; NULL: no lookup */
    /* where the bound map was when bound: only ever prefetched from (a prefetch of an
     * address no longer mapped does nothing); every read takes the map's buffer */
    const unsigned char *hint;
    Py_ssize_t hint_len;
    char scratch[256];   /* the bytes of a key being hashed */
    Kept kept[KEPT];     /* the Records small reads made last, by key (see `rows`) */
} Reader;

static inline void
prefetch(const void *p)
{
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/* ------------------------------------------------------------------ one record */

/* The Record of the common record `put` read under content key `key`. New reference, or
 * NULL with an error set.
 *
 * The Record is not tracked by the cyclic collector: it holds only a str, bytes, an int,
 * a float, None and the shared deferred document, none of which can lead back to it (the
 * document decoded on first touch goes in its __dict__, and a decoded document holds
 * only values parsed from the payload; a caller storing the Record inside its own
 * decoded document makes a cycle that is never freed). Tracking it made every collection
 * while a large result was alive walk each of its rows, and the oldest generation's
 * collections, which large results trigger, walk everything else the process holds. */
static PyObject *
record_of(Reader *r, uint64_t key, const CommonPut *put)
{
    char digits[20];
    Py_ssize_t n = decimal_digits(key, digits);
    PyObject *text = PyUnicode_New(n, 127);
    if (text != NULL) {
        memcpy(PyUnicode_1BYTE_DATA(text), digits, (size_t)n);
    }
    PyObject *items[5] = {
        text,
        PyBytes_FromStringAndSize((const char *)put->payload, put->payload_len),
        PyLong_FromUnsignedLongLong(put->seq),
        PyFloat_FromDouble(put->timestamp),
        PyBytes_FromStringAndSize(NULL, 0),
    };
    PyObject *rec = r->record_type->tp_alloc(r->record_type, 9);
    for (int i = 0; i < 5; i++) {
        if (items[i] == NULL) {
            Py_CLEAR(rec);
        }
    }
    if (rec == NULL) {
        for (int i = 0; i < 5; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    /* (sow_key, data, seq, timestamp, expiration, topic, message_type, correlation_id,
     *  doc): a common record has no expiration and no correlation id */
    PyTuple_SET_ITEM(rec, 0, items[0]);
    PyTuple_SET_ITEM(rec, 1, items[1]);
    PyTuple_SET_ITEM(rec, 2, items[2]);
    PyTuple_SET_ITEM(rec, 3, items[3]);
    PyTuple_SET_ITEM(rec, 4, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(rec, 5, Py_NewRef(r->topic));
    PyTuple_SET_ITEM(rec, 6, Py_NewRef(r->message_type));
    PyTuple_SET_ITEM(rec, 7, items[4]);
    PyTuple_SET_ITEM(rec, 8, Py_NewRef(r->doc == Py_None ? items[1] : r->doc));
    if (PyObject_GC_IsTracked(rec)) {
        PyObject_GC_UnTrack(rec);
    }
    return rec;
}

/* The bound table, when a KeyTable, and the bound map's buffer (release it): 1; 0 when
 * either is not there (another table, a closed map: the Python path); the caller holds
 * the lock. */
static int
table_and_map(Reader *r, KeyTable **table, Py_buffer *view)
{
    if (records == NULL || r->table == NULL || !Py_IS_TYPE(r->table, &KeyTableType) ||
        r->map == NULL || r->map == Py_None) {
        return 0;
    }
    if (PyObject_GetBuffer(r->map, view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear(); /* a closed map: the Python path says so */
        return 0;
    }
    *table = (KeyTable *)r->table;
    return 1;
}

/* The Record of `key` under the lock: a new reference, None (absent), NotImplemented
 * (the Python path), or NULL with an error set. The one-key form of `rows`. */
static PyObject *
read_one(Reader *r, uint64_t key)
{
    KeyTable *table;
    Py_buffer view;
    if (!table_and_map(r, &table, &view)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    size_t where;
    Py_ssize_t ix = keytable_find(table, key, &where);
    PyObject *rec;
    if (ix < 0) {
        rec = Py_NewRef(Py_None);
    }
    else if (table->entries[ix].off < 0) {
        rec = Py_NewRef(Py_NotImplemented); /* header fields: the Python path */
    }
    else {
        /* the map's length bounds the read; the checksum is checked */
        CommonPut put;
        int got = records->common_put(view.buf, table->entries[ix].off, view.len, &put);
        rec = got < 0 ? NULL : got == 0 ? Py_NewRef(Py_NotImplemented) : record_of(r, key, &put);
    }
    PyBuffer_Release(&view);
    return rec;
}

/* ------------------------------------------------------------------ many records */

/* A record to read: its offset, and its key (and the key's place in the keys given). */
typedef struct {
    int64_t off;
    Py_ssize_t pos;
    uint64_t key;
} Wanted;

static inline void
swap(Wanted *a, Wanted *b)
{
    Wanted t = *a;
    *a = *b;
    *b = t;
}

/* Sort `w[0..n)` by offset: one pass when already sorted (the keys of a scan), else a
 * quicksort (median of three, the smaller side recursed into) ending in insertion sorts. */
static void
sort_by_offset(Wanted *w, Py_ssize_t n)
{
    Py_ssize_t i = 1;
    while (i < n && w[i - 1].off <= w[i].off) {
        i++;
    }
    if (i >= n) {
        return;
    }
    while (n > 16) {
        Py_ssize_t mid = n / 2, last = n - 1;
        if (w[mid].off < w[0].off) {
            swap(&w[mid], &w[0]);
        }
        if (w[last].off < w[0].off) {
            swap(&w[last], &w[0]);
        }
        if (w[last].off < w[mid].off) {
            swap(&w[last], &w[mid]);
        }
        int64_t pivot = w[mid].off;
        Py_ssize_t lo = 0, hi = last;
        while (lo <= hi) {
            while (w[lo].off < pivot) {
                lo++;
            }
            while (w[hi].off > pivot) {
                hi--;
            }
            if (lo <= hi) {
                swap(&w[lo], &w[hi]);
                lo++;
                hi--;
            }
        }
        /* now w[0..hi] <= pivot <= w[lo..n) */
        if (hi + 1 < n - lo) {
            sort_by_offset(w, hi + 1);
            w += lo;
            n -= lo;
        }
        else {
            sort_by_offset(w + lo, n - lo);
            n = hi + 1;
        }
    }
    for (Py_ssize_t j = 1; j < n; j++) {
        Wanted t = w[j];
        Py_ssize_t k = j;
        while (k > 0 && w[k - 1].off > t.off) {
            w[k] = w[k - 1];
            k--;
        }
        w[k] = t;
    }
}

/* Keys are looked up a group at a time: the index slots of the group are prefetched,
 * then their entries, before any is read, so the cache misses of a group overlap. The
 * records are read in file order a block at a time: the first line of every record of
 * a block is prefetched in one tight loop before any of them is built, and the further
 * lines of a record a few places ahead. Records scattered over a large map (a few
 * hundred rows of a million-record file) each sit on a page the TLB does not hold: the
 * block's page walks then overlap instead of each stalling the build of a record (a
 * range query's ~500 rows at 1,000,000 records: about 30% less time in `rows`). */
#define GROUP 32
#define BLOCK 256
#define AHEAD 12
#define AHEAD_BYTES 320

/* The value of the exact int `key` as a u64: 1, or 0 when it is negative or needs more
 * than 64 bits. Read off its digits where the layout is known (a content key is a
 * 64-bit hash: the generic conversion takes its slow path for most of them). */
static inline int
u64_of(PyObject *key, uint64_t *out)
{
#if PY_VERSION_HEX < 0x030C0000 && PyLong_SHIFT == 30
    const digit *d = ((PyLongObject *)key)->ob_digit;
    switch (Py_SIZE(key)) {
    case 0:
        *out = 0;
        return 1;
    case 1:
        *out = d[0];
        return 1;
    case 2:
        *out = (uint64_t)d[1] << 30 | d[0];
        return 1;
    case 3:
        if (d[2] >> 4) {
            return 0;
        }
        *out = (uint64_t)d[2] << 60 | (uint64_t)d[1] << 30 | d[0];
        return 1;
    default:
        return 0; /* negative, or past 90 bits */
    }
#else
    uint64_t k = PyLong_AsUnsignedLongLong(key);
    if (k == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* a negative or too big int: the Python path */
        return 0;
    }
    *out = k;
    return 1;
#endif
}

/* Step 1 of `rows`: where each key's record is. The keys left to the Python path go to
 * `found` (counted in `*pending`), the records to read to `wanted`; gives their number. */
static Py_ssize_t
locate(KeyTable *table, PyObject *const *keys, Py_ssize_t n, PyObject **found, Wanted *wanted,
       Py_ssize_t *pending)
{
    Py_ssize_t m = 0;
    uint64_t ks[GROUP];
    Py_ssize_t at[GROUP];
    for (Py_ssize_t lo = 0; lo < n; lo += GROUP) {
        Py_ssize_t hi = lo + GROUP < n ? lo + GROUP : n;
        /* the next group's int objects, scattered in memory */
        for (Py_ssize_t i = hi; i < hi + GROUP && i < n; i++) {
            prefetch(keys[i]);
        }
        int g = 0;
        for (Py_ssize_t i = lo; i < hi; i++) {
            PyObject *key = keys[i];
            uint64_t k;
            if (PyLong_CheckExact(key) && u64_of(key, &k)) {
                ks[g] = k;
                at[g] = i;
                g++;
                prefetch(&table->index[slot_of(k, table->bits)]);
                continue;
            }
            found[i] = Py_NewRef(key);
            (*pending)++;
        }
        for (int q = 0; q < g; q++) {
            uint32_t ix = table->index[slot_of(ks[q], table->bits)];
            if (ix < DUMMY) {
                prefetch(&table->entries[ix]);
            }
        }
        for (int q = 0; q < g; q++) {
            size_t where;
            Py_ssize_t ix = keytable_find(table, ks[q], &where);
            if (ix < 0) {
                continue; /* absent */
            }
            if (table->entries[ix].off >= 0) {
                wanted[m].off = table->entries[ix].off;
                wanted[m].pos = at[q];
                wanted[m].key = ks[q];
                m++;
            }
            else {
                found[at[q]] = Py_NewRef(keys[at[q]]);
                (*pending)++;
            }
        }
    }
    return m;
}

/* Step 2 of `rows`: read the wanted records in file order into `found`. 0, or -1 with
 * an error set. */
static int
read_wanted(Reader *r, Py_buffer *view, PyObject *const *keys, Wanted *wanted, Py_ssize_t m,
            PyObject **found, Py_ssize_t *pending)
{
    sort_by_offset(wanted, m);
    const unsigned char *base = view->buf;
    int keep = m <= KEEP_MOST;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (j % BLOCK == 0) {
            Py_ssize_t end = j + BLOCK < m ? j + BLOCK : m;
            for (Py_ssize_t q = j; q < end; q++) {
                if (wanted[q].off < view->len) {
                    prefetch(base + wanted[q].off);
                }
            }
        }
        if (j + AHEAD < m && wanted[j + AHEAD].off < view->len - AHEAD_BYTES) {
            const unsigned char *ahead = base + wanted[j + AHEAD].off;
            for (int line = 0; line < AHEAD_BYTES; line += 64) {
                prefetch(ahead + line);
            }
        }
        Wanted *w = &wanted[j];
        Kept *place = &r->kept[slot_of(w->key, KEPT_BITS)];
        if (place->rec != NULL && place->key == w->key && place->off == w->off) {
            found[w->pos] = Py_NewRef(place->rec);
            continue;
        }
        CommonPut put;
        int got = records->common_put(base, w->off, view->len, &put);
        if (got < 0) {
            return -1;
        }
        if (got == 0) {
            found[w->pos] = Py_NewRef(keys[w->pos]);
            (*pending)++;
        }
        else if ((found[w->pos] = record_of(r, w->key, &put)) == NULL) {
            return -1;
        }
        else if (keep) {
            place->key = w->key;
            place->off = w->off;
            Py_XSETREF(place->rec, Py_NewRef(found[w->pos]));
        }
    }
    return 0;
}

/* `rows` of the n keys at `keys` (borrowed: nothing below runs Python code, and the
 * caller holds the container they are in). */
static PyObject *
rows_of(Reader *r, KeyTable *table, Py_buffer *view, PyObject *const *keys, Py_ssize_t n)
{
    PyObject **found = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    Wanted *wanted = PyMem_Malloc(((size_t)n + 1) * sizeof(Wanted));
    PyObject *out = NULL;
    Py_ssize_t pending = 0;
    if (found == NULL || wanted == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = locate(table, keys, n, found, wanted, &pending);
    if (read_wanted(r, view, keys, wanted, m, found, &pending) < 0) {
        goto done;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        count += found[i] != NULL;
    }
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0, at = 0; i < n; i++) {
        if (found[i] != NULL) {
            PyList_SET_ITEM(list, at++, found[i]);
            found[i] = NULL;
        }
    }
    PyObject *number = PyLong_FromSsize_t(pending);
    out = number == NULL ? NULL : PyTuple_Pack(2, list, number);
    Py_DECREF(list);
    Py_XDECREF(number);
done:
    if (found != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_XDECREF(found[i]);
        }
    }
    PyMem_Free(found);
    PyMem_Free(wanted);
    return out;
}

static PyObject *
Reader_rows(Reader *r, PyObject *keys)
{
    if (!PyList_CheckExact(keys)) {
        PyErr_SetString(PyExc_TypeError, "Reader.rows: keys must be a list");
        return NULL;
    }
    KeyTable *table;
    Py_buffer view;
    if (!table_and_map(r, &table, &view)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* keys holds only what the caller put there and nothing below runs Python code */
    PyObject *out = rows_of(r, table, &view, PySequence_Fast_ITEMS(keys), PyList_GET_SIZE(keys));
    PyBuffer_Release(&view);
    return out;
}

/* How far ahead `rows_at` prefetches the places of the key list it reads. */
#define AHEAD_KEYS 16

/* rows_at(keys, positions, start, count): `rows` of keys[positions[start + i]] for i in
 * range(count) (a saved key set: positions, 4-byte unsigned ints, into the key list it
 * was saved against), without the list of those keys or an int per position. */
static PyObject *
Reader_rows_at(Reader *r, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "Reader.rows_at takes 4 arguments");
        return NULL;
    }
    PyObject *keys = args[0];
    if (!PyList_CheckExact(keys)) {
        Py_RETURN_NOTIMPLEMENTED; /* another sequence of keys: the Python path lists them */
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[2]);
    Py_ssize_t count = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[3]);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer at;
    if (PyObject_GetBuffer(args[1], &at, PyBUF_FORMAT) < 0) {
        return NULL;
    }
    PyObject *out = NULL;
    PyObject **items = NULL;
    if (at.itemsize != 4 || at.format == NULL || strcmp(at.format, "I") != 0) {
        PyErr_SetString(PyExc_TypeError, "Reader.rows_at: positions must be an array('I')");
        goto done;
    }
    Py_ssize_t size = at.len / 4;
    if (start < 0 || count < 0 || start > size || count > size - start) {
        PyErr_SetString(PyExc_IndexError, "Reader.rows_at: start and count out of range");
        goto done;
    }
    KeyTable *table;
    Py_buffer view;
    if (!table_and_map(r, &table, &view)) {
        out = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    items = PyMem_Malloc(((size_t)count + 1) * sizeof(PyObject *));
    if (items == NULL) {
        PyErr_NoMemory();
        PyBuffer_Release(&view);
        goto done;
    }
    const uint32_t *pos = (const uint32_t *)at.buf + start;
    PyObject *const *all = PySequence_Fast_ITEMS(keys);
    Py_ssize_t n = PyList_GET_SIZE(keys);
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i + AHEAD_KEYS < count && pos[i + AHEAD_KEYS] < (uint64_t)n) {
            prefetch(&all[pos[i + AHEAD_KEYS]]);
        }
        if (pos[i] >= (uint64_t)n) {
            PyErr_SetString(PyExc_IndexError, "Reader.rows_at: a position past the keys");
            PyBuffer_Release(&view);
            goto done;
        }
        items[i] = all[pos[i]];
    }
    /* the list and the positions are the caller's, and nothing below runs Python code */
    out = rows_of(r, table, &view, items, count);
    PyBuffer_Release(&view);
done:
    PyMem_Free(items);
    PyBuffer_Release(&at);
    return out;
}

/* The first `n` live keys of the bound table in its order (what `list(table)[:n]`
 * gives), listing no more than those; NotImplemented where the table is not a KeyTable,
 * or when other keys (held after the ints) would be reached. */
static PyObject *
Reader_head(Reader *r, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "Reader.head: n must not be negative");
        return NULL;
    }
    if (r->table == NULL || !Py_IS_TYPE(r->table, &KeyTableType)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    KeyTable *t = (KeyTable *)r->table;
    Py_ssize_t every = t->live + (t->others == NULL ? 0 : PyDict_GET_SIZE(t->others));
    Py_ssize_t want = n < every ? n : every;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t j = 0; j < t->used && PyList_GET_SIZE(out) < want; j++) {
        if (t->entries[j].off == DEAD) {
            continue;
        }
        PyObject *key = PyLong_FromUnsignedLongLong(t->entries[j].key);
        if (key == NULL || PyList_Append(out, key) < 0) {
            Py_XDECREF(key);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(key);
    }
    if (PyList_GET_SIZE(out) < want) {
        Py_DECREF(out); /* the others' keys would follow */
        Py_RETURN_NOTIMPLEMENTED;
    }
    return out;
}

/* ------------------------------------------------------------------ by key */

static int
admitted(Reader *r)
{
    uint64_t x = r->draws;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->draws = x;
    return ((x >> 32) & r->admit_mask) == 0;
}

/* Put `rec` (read by key, admitted as RecordCache.offer admits: `admitted`) in the
 * cache. 0, or -1. */
static int
offer(Reader *r, PyObject *key, PyObject *rec)
{
    PyObject *cost = PyLong_FromSsize_t(r->cost_base +
                                        PyBytes_GET_SIZE(PyTuple_GET_ITEM(rec, 1)) * r->cost_factor);
    if (cost == NULL) {
        return -1;
    }
    PyObject *call[3] = {key, rec, cost};
    PyObject *done = PyObject_Vectorcall(r->cache_put, call, 3, NULL);
    Py_DECREF(cost);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* Start loading the record of `k` while the cache is probed and the lock taken: its
 * entry is looked up (the table is only changed holding the GIL, which this holds) and
 * the first lines of the record at its offset in the last map bound are prefetched. A
 * hint only: what it finds is read again, under the lock, from the map's buffer. */
static void
foresee(Reader *r, uint64_t k)
{
    if (r->table == NULL || !Py_IS_TYPE(r->table, &KeyTableType) || r->hint == NULL) {
        return;
    }
    KeyTable *table = (KeyTable *)r->table;
    size_t where;
    Py_ssize_t ix = keytable_find(table, k, &where);
    if (ix >= 0) {
        int64_t off = table->entries[ix].off;
        if (off >= 0 && off < r->hint_len - 192) {
            for (int line = 0; line < 256; line += 64) {
                prefetch(r->hint + off + line);
            }
        }
    }
}

/* The cache probe, then under the lock the read of `k` and the cache's offer. */
static PyObject *
by_key(Reader *r, uint64_t k)
{
    foresee(r, k);
    PyObject *key = PyLong_FromUnsignedLongLong(k);
    if (key == NULL) {
        return NULL;
    }
    PyObject *rec = PyObject_Vectorcall(r->cache_get, &key, 1, NULL);
    if (rec != Py_None) {
        Py_DECREF(key);
        return rec; /* cached, or NULL: an error */
    }
    Py_DECREF(rec);
    int offered = r->cache_put != Py_None && admitted(r);
    PyObject *locked = PyObject_CallNoArgs(r->acquire);
    if (locked == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(locked);
    rec = read_one(r, k);
    if (rec != NULL && offered && PyTuple_Check(rec) && offer(r, key, rec) < 0) {
        Py_CLEAR(rec);
    }
    Py_DECREF(key);
    /* release whatever happened, keeping an error raised under the lock */
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject *released = PyObject_CallNoArgs(r->release);
    if (released == NULL) {
        Py_XDECREF(rec);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(trace);
        return NULL;
    }
    Py_DECREF(released);
    PyErr_Restore(type, value, trace);
    return rec;
}

/* NotImplemented before `bind`, or while an expiration may be due: 1; else 0. */
static int
hands_over(Reader *r)
{
    return r->heap == NULL || PyList_GET_SIZE(r->heap) > 0;
}

static PyObject *
Reader_lookup(Reader *r, PyObject *value)
{
    if (hands_over(r) || r->head == NULL) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    uint64_t k;
    int got = reader_key_of_value(value, PyBytes_AS_STRING(r->head), PyBytes_GET_SIZE(r->head),
                                  r->scratch, (Py_ssize_t)sizeof r->scratch, r->digest, &k);
    if (got <= 0) {
        return got < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    }
    return by_key(r, k);
}

static PyObject *
Reader_get(Reader *r, PyObject *text)
{
    uint64_t k;
    if (hands_over(r) || !reader_key_of_text(text, &k)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return by_key(r, k);
}

/* ------------------------------------------------------------------ the type */

/* Forget every kept Record (a new table or map). */
static void
forget_kept(Reader *r)
{
    for (int i = 0; i < KEPT; i++) {
        Py_CLEAR(r->kept[i].rec);
    }
}

static PyObject *
Reader_set_table(Reader *r, PyObject *table)
{
    forget_kept(r);
    Py_XSETREF(r->table, Py_NewRef(table));
    Py_RETURN_NONE;
}

static PyObject *
Reader_set_map(Reader *r, PyObject *map)
{
    if (map != Py_None && !PyObject_CheckBuffer(map)) {
        PyErr_SetString(PyExc_TypeError, "Reader.set_map: a map (a buffer) or None");
        return NULL;
    }
    forget_kept(r);
    Py_XSETREF(r->map, Py_NewRef(map));
    r->hint = NULL;
    r->hint_len = 0;
    Py_buffer view;
    if (map != Py_None) {
        if (PyObject_GetBuffer(map, &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear(); /* a closed map: nothing to prefetch */
        }
        else {
            r->hint = view.buf;
            r->hint_len = view.len;
            PyBuffer_Release(&view);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *
Reader_bind(Reader *r, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"heap", "acquire", "release", "head", NULL};
    PyObject *heap, *acquire, *release, *head = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OO|O!:bind", names, &PyList_Type, &heap,
                                     &acquire, &release, &PyBytes_Type, &head)) {
        return NULL;
    }
    if (!PyCallable_Check(acquire) || !PyCallable_Check(release)) {
        PyErr_SetString(PyExc_TypeError, "Reader.bind: acquire and release must be callable");
        return NULL;
    }
    Py_XSETREF(r->heap, Py_NewRef(heap));
    Py_XSETREF(r->acquire, Py_NewRef(acquire));
    Py_XSETREF(r->release, Py_NewRef(release));
    if (head != NULL) {
        Py_XSETREF(r->head, Py_NewRef(head));
    }
    Py_RETURN_NONE;
}

static int
Reader_traverse(Reader *r, visitproc visit, void *arg)
{
    Py_VISIT(r->record_type);
    Py_VISIT(r->topic);
    Py_VISIT(r->message_type);
    Py_VISIT(r->doc);
    Py_VISIT(r->table);
    Py_VISIT(r->map);
    Py_VISIT(r->digest);
    Py_VISIT(r->cache_get);
    Py_VISIT(r->cache_put);
    Py_VISIT(r->heap);
    Py_VISIT(r->acquire);
    Py_VISIT(r->release);
    Py_VISIT(r->head);
    for (int i = 0; i < KEPT; i++) {
        Py_VISIT(r->kept[i].rec);
    }
    return 0;
}

static int
Reader_clear(Reader *r)
{
    Py_CLEAR(r->record_type);
    Py_CLEAR(r->topic);
    Py_CLEAR(r->message_type);
    Py_CLEAR(r->doc);
    Py_CLEAR(r->table);
    Py_CLEAR(r->map);
    Py_CLEAR(r->digest);
    Py_CLEAR(r->cache_get);
    Py_CLEAR(r->cache_put);
    Py_CLEAR(r->heap);
    Py_CLEAR(r->acquire);
    Py_CLEAR(r->release);
    Py_CLEAR(r->head);
    forget_kept(r);
    return 0;
}

static void
Reader_dealloc(Reader *r)
{
    PyObject_GC_UnTrack(r);
    Reader_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
Reader_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {
        "record_type", "topic", "message_type", "doc", "digest", "cache_get", "cache_put",
        "cost_base", "cost_factor", "admit_mask", NULL,
    };
    PyObject *record_type, *topic, *message_type, *doc, *digest, *cache_get, *cache_put;
    Py_ssize_t cost_base, cost_factor;
    unsigned long long admit_mask;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!UUOOOOnnK:Reader", names, &PyType_Type,
                                     &record_type, &topic, &message_type, &doc, &digest,
                                     &cache_get, &cache_put, &cost_base, &cost_factor,
                                     &admit_mask)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)record_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Reader: record_type must be a tuple type");
        return NULL;
    }
    if (!PyCallable_Check(digest) || !PyCallable_Check(cache_get) ||
        (cache_put != Py_None && !PyCallable_Check(cache_put))) {
        PyErr_SetString(PyExc_TypeError, "Reader: digest and the cache's get/put must be "
                                         "callable");
        return NULL;
    }
    Reader *r = (Reader *)type->tp_alloc(type, 0);
    if (r == NULL) {
        return NULL;
    }
    r->record_type = (PyTypeObject *)Py_NewRef(record_type);
    r->topic = Py_NewRef(topic);
    r->message_type = Py_NewRef(message_type);
    r->doc = Py_NewRef(doc);
    r->digest = Py_NewRef(digest);
    r->cache_get = Py_NewRef(cache_get);
    r->cache_put = Py_NewRef(cache_put);
    r->cost_base = cost_base;
    r->cost_factor = cost_factor;
    r->admit_mask = admit_mask;
    /* any nonzero seed; the address varies from one reader to the next */
    r->draws = ((uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ULL) | 1;
    return (PyObject *)r;
}

static PyMethodDef Reader_methods[] = {
    {"rows", (PyCFunction)Reader_rows, METH_O,
     "rows(keys, /): (rows, pending): the Records of many keys, those not read left in "
     "place and counted; NotImplemented without a KeyTable and an open map."},
    {"rows_at", (PyCFunction)(void (*)(void))Reader_rows_at, METH_FASTCALL,
     "rows_at(keys, positions, start, count, /): rows of keys[positions[start + i]] for i "
     "in range(count) (positions: an array('I')); NotImplemented as rows, or when keys is "
     "not a list."},
    {"head", (PyCFunction)Reader_head, METH_O,
     "head(n, /): the first n live keys of the table in its order, listing no more; "
     "NotImplemented without a KeyTable or when other keys would be reached."},
    {"lookup", (PyCFunction)Reader_lookup, METH_O,
     "lookup(value, /): Topic.lookup of a one-field content key value; None when absent, "
     "NotImplemented where the Python path decides."},
    {"get", (PyCFunction)Reader_get, METH_O,
     "get(text, /): Topic.get of a content key's SOW key text; as lookup."},
    {"set_table", (PyCFunction)Reader_set_table, METH_O,
     "set_table(table, /): the key map's current table (the key map calls it)."},
    {"set_map", (PyCFunction)Reader_set_map, METH_O,
     "set_map(mm, /): the log's current map, None when closed (the log calls it)."},
    {"bind", (PyCFunction)(void (*)(void))Reader_bind, METH_VARARGS | METH_KEYWORDS,
     "bind(heap, acquire, release, head=..., /): what lookup and get need besides."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sowlib.topic.keytable.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Reader(...): the records of live keys, one or many (see reader.c).",
    .tp_new = Reader_new,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_traverse = (traverseproc)Reader_traverse,
    .tp_clear = (inquiry)Reader_clear,
    .tp_methods = Reader_methods,
};

/* ------------------------------------------------------------------ the topic's front */

/* ByKey(fallback, handed): what a topic binds as its `lookup` (or `get`), so that the
 * common call is one C call from the caller's frame: one positional argument goes to the
 * callable `point` gave (a Reader's `lookup`/`get`, or any one-argument callable
 * answering NotImplemented where it does not decide), and on its NotImplemented to
 * `handed` (the Python path after the C reader: the value alone); any other call
 * (several values, keywords, nothing pointed) goes to `fallback` (the topic's Python
 * method, the reference) as it was made. */
typedef struct {
    PyObject_HEAD
    PyObject *read;     /* one-argument callable, or NULL */
    PyObject *fallback; /* the Python method */
    PyObject *handed;   /* the Python path of one value the reader handed over */
    vectorcallfunc vectorcall;
} ByKey;

static PyObject *
ByKey_vectorcall(ByKey *f, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *read = f->read;
    if (read != NULL && PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL) {
        Py_INCREF(read); /* `point` may replace it while the read waits for the lock */
        PyObject *rec;
        if (PyCFunction_CheckExact(read) && PyCFunction_GET_FLAGS(read) == METH_O) {
            rec = PyCFunction_GET_FUNCTION(read)(PyCFunction_GET_SELF(read), args[0]);
        }
        else {
            rec = PyObject_Vectorcall(read, args, 1, NULL);
        }
        Py_DECREF(read);
        if (rec != Py_NotImplemented) {
            return rec; /* the record, None, or NULL: an error */
        }
        Py_DECREF(rec);
        return PyObject_Vectorcall(f->handed, args, 1, NULL);
    }
    return PyObject_Vectorcall(f->fallback, args, nargsf, kwnames);
}

static PyObject *
ByKey_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"fallback", "handed", NULL};
    PyObject *fallback, *handed;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:ByKey", names, &fallback, &handed)) {
        return NULL;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(handed)) {
        PyErr_SetString(PyExc_TypeError, "ByKey: fallback and handed must be callable");
        return NULL;
    }
    ByKey *f = (ByKey *)type->tp_alloc(type, 0);
    if (f == NULL) {
        return NULL;
    }
    f->fallback = Py_NewRef(fallback);
    f->handed = Py_NewRef(handed);
    f->vectorcall = (vectorcallfunc)ByKey_vectorcall;
    return (PyObject *)f;
}

static PyObject *
ByKey_point(ByKey *f, PyObject *read)
{
    if (read != Py_None && !PyCallable_Check(read)) {
        PyErr_SetString(PyExc_TypeError, "ByKey.point: a callable or None");
        return NULL;
    }
    Py_XSETREF(f->read, read == Py_None ? NULL : Py_NewRef(read));
    Py_RETURN_NONE;
}

/* The fallback's attributes (its name, signature through __wrapped__, docstring). */
static PyObject *
ByKey_getattro(ByKey *f, PyObject *name)
{
    PyObject *got = PyObject_GenericGetAttr((PyObject *)f, name);
    if (got == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        got = PyObject_GetAttr(f->fallback, name);
    }
    return got;
}

static PyObject *
ByKey_doc(ByKey *f, void *closure)
{
    (void)closure;
    return PyObject_GetAttrString(f->fallback, "__doc__");
}

static PyObject *
ByKey_wrapped(ByKey *f, void *closure)
{
    (void)closure;
    return Py_NewRef(f->fallback);
}

static PyObject *
ByKey_repr(ByKey *f)
{
    return PyUnicode_FromFormat("<by-key front of %R>", f->fallback);
}

static int
ByKey_traverse(ByKey *f, visitproc visit, void *arg)
{
    Py_VISIT(f->read);
    Py_VISIT(f->fallback);
    Py_VISIT(f->handed);
    return 0;
}

static int
ByKey_clear(ByKey *f)
{
    Py_CLEAR(f->read);
    Py_CLEAR(f->fallback);
    Py_CLEAR(f->handed);
    return 0;
}

static void
ByKey_dealloc(ByKey *f)
{
    PyObject_GC_UnTrack(f);
    ByKey_clear(f);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyMethodDef ByKey_methods[] = {
    {"point", (PyCFunction)ByKey_point, METH_O,
     "point(read, /): the one-argument callable tried first (None: always the fallback)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ByKey_getset[] = {
    {"__doc__", (getter)ByKey_doc, NULL, NULL, NULL},
    {"__wrapped__", (getter)ByKey_wrapped, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ByKeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sowlib.topic.keytable.ByKey",
    .tp_basicsize = sizeof(ByKey),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ByKey, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = ByKey_new,
    .tp_dealloc = (destructor)ByKey_dealloc,
    .tp_traverse = (traverseproc)ByKey_traverse,
    .tp_clear = (inquiry)ByKey_clear,
    .tp_getattro = (getattrofunc)ByKey_getattro,
    .tp_repr = (reprfunc)ByKey_repr,
    .tp_methods = ByKey_methods,
    .tp_getset = ByKey_getset,
};

int
reader_add_type(PyObject *module)
{
    if (records == NULL && (records = PyCapsule_Import(RECORDREAD_API, 0)) == NULL) {
        PyErr_Clear(); /* not built: every read is the Python path's */
    }
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&ByKeyType) < 0) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "ByKey", (PyObject *)&ByKeyType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Reader", (PyObject *)&ReaderType);
}
