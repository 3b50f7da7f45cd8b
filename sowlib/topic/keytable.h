/* What the sources of the `sowlib.topic.keytable` extension share: the table's layout
 * (keytable.c owns it), read directly by the reader (reader.c), and the key of a value
 * (keyread.c). */
#ifndef SOWLIB_KEYTABLE_H
#define SOWLIB_KEYTABLE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

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

/* The index slot where the probe for `key` starts, in an index of 1 << bits slots. */
static inline size_t
slot_of(uint64_t key, int bits)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/* The decimal digits of `v` written to `out` (room for 20); their count. Two digits per
 * division, from a table of the hundred pairs. */
static inline Py_ssize_t
decimal_digits(uint64_t v, char *out)
{
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char reversed[20];
    char *at = reversed + 20;
    while (v >= 100) {
        unsigned pair = (unsigned)(v % 100) * 2;
        v /= 100;
        at -= 2;
        at[0] = pairs[pair];
        at[1] = pairs[pair + 1];
    }
    if (v >= 10) {
        at -= 2;
        at[0] = pairs[v * 2];
        at[1] = pairs[v * 2 + 1];
    }
    else {
        *--at = (char)('0' + (int)v);
    }
    Py_ssize_t n = (reversed + 20) - at;
    memcpy(out, at, (size_t)n);
    return n;
}

/* The entry number of `key`, or -1; `*where` gets its index slot (or the first
 * free slot on its probe path, for an insert). */
Py_ssize_t keytable_find(KeyTable *t, uint64_t key, size_t *where);

/* Add the Reader type to the module (reader.c); -1 on an error. */
int reader_add_type(PyObject *module);

/* The content key of a one-field key value, or of a SOW key's text (keyread.c): 1 and
 * `*key` set; 0 where the Python path decides; -1 with an error set. */
int reader_key_of_value(PyObject *value, const char *head, Py_ssize_t head_len, char *scratch,
                        Py_ssize_t room, PyObject *digest, uint64_t *key);
int reader_key_of_text(PyObject *value, uint64_t *key);

#endif
