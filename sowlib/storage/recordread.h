/* The C interface of `sowlib.storage.recordread` to other extensions of sowlib: its
 * module attribute `c_api` is a capsule named RECORDREAD_API holding a RecordReadApi.
 * (The key table's by-key read uses it: no Python call, tuple or int in between.) */
#ifndef SOWLIB_RECORDREAD_H
#define SOWLIB_RECORDREAD_H

#include <Python.h>
#include <stdint.h>

#define RECORDREAD_API "sowlib.storage.recordread.c_api"

/* The fields of an intact common PUT record (a u64 key, nothing optional). */
typedef struct {
    uint64_t seq;
    double timestamp;               /* epoch seconds */
    const unsigned char *payload;   /* inside the buffer read */
    Py_ssize_t payload_len;
} CommonPut;

typedef struct {
    /* The common PUT record at `off` of `base`, whose `limit` bytes may be read: 1 and
     * `*out` set when one is there intact (checksum checked), as `read_put` finds it; 0
     * for anything else (the Python path decides); -1 with an error set. */
    int (*common_put)(const unsigned char *base, Py_ssize_t off, Py_ssize_t limit,
                      CommonPut *out);
} RecordReadApi;

#endif
