/* What the two sources of the `sowlib.topic.keytable` extension share: the table's
 * layout (keytable.c owns it) and the calls keyread.c makes into it. */
#ifndef SOWLIB_KEYTABLE_H
#define SOWLIB_KEYTABLE_H

#include <Python.h>
#include <stdint.h>

#define EMPTY UINT32_MAX
#define DUMMY (UINT32_MAX - 1)
#define MAX_ENTRIES (UINT32_MAX - 2)
#define DEAD (-1)       /* `off` of a removed entry (its obj is NULL) */
#define BOXED (-2)      /* `off` of an entry whose value is `obj` */
#define MIN_BITS 3

typedef struct {
    uint64_t key;
    int64_t off;   /* the unboxed value, or DEAD, or BOXED */
    PyObject *obj; /* the value when off == BOXED, else NULL */
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *entries;
    uint32_t *index;
    Py_ssize_t used;    /* entries filled, dead ones included */
    Py_ssize_t live;    /* entries not dead */
    Py_ssize_t usable;  /* entries allocated */
    int bits;           /* the index has 1 << bits slots */
    PyObject *others;   /* dict of every other key, or NULL */
} KeyTable;

extern PyTypeObject KeyTableType;

/* The decimal digits of `v` written to `out` (room for 20); their count. */
static inline Py_ssize_t
decimal_digits(uint64_t v, char *out)
{
    char reversed[20];
    Py_ssize_t n = 0;
    do {
        reversed[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = reversed[n - 1 - i];
    }
    return n;
}

/* The entry number of `key`, or -1; `*where` gets its index slot (or the first
 * free slot on its probe path, for an insert). */
Py_ssize_t keytable_find(KeyTable *t, uint64_t key, size_t *where);

/* The Record of entry `ix` (a live entry), read from
 * `log.mm`; NotImplemented where the Python path must decide; NULL on an error. */
PyObject *keytable_read_entry(KeyTable *t, Py_ssize_t ix, PyObject *log,
                              PyTypeObject *record_type, PyObject *topic,
                              PyObject *message_type, PyObject *doc);

/* Add the KeyReader type to the module (keyread.c); -1 on an error. */
int keyread_add_type(PyObject *module);

#endif
