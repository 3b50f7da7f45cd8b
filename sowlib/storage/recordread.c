/* The optional C forms of two reads of the log: one checked read of the common PUT
 * record, and the payloads of many PUT records a recovery walk has just verified.
 *
 * `read_put(buf, off, limit)` gives what `sowlib.storage.walk.read_put` gives for a
 * PUT record with a u64 key and nothing optional, whose checksum holds:
 * (seq, timestamp seconds, 0.0, b"", framed length, payload). For anything else
 * (another record shape, a record that is not intact, an offset outside the
 * bytes) it returns None and the caller takes the Python path, which decides and
 * raises. The Python path is the reference; tests/storage/test_recordread.py checks
 * that both agree on intact, damaged and foreign bytes.
 *
 * `common_run(buf, off, limit)` is the C form of `sowlib.storage.entries.common_run`,
 * the recovery walk over a run of common records: it stops exactly where the reference
 * stops and gives the same offsets and keys.
 *
 * `tail_run(buf, off, limit)` is the C form of `sowlib.storage.entries.tail_run`: a
 * read-only refresh's common case (a run of common records, then nothing written yet)
 * in one call, its lists ready for the key map and the index set (or `()`: nothing
 * written at the offset, a refresh finding nothing new).
 *
 * `put_payloads(buf, offsets, limit)` gives what `sowlib.storage.walk.put_payloads`
 * gives for those offsets (the payload of each PUT record, found from its framing,
 * checksums not checked) or None when a record does not look like a PUT there; it is
 * stricter than the reference (every record must lie within the limit and its payload
 * past the fixed header), never looser.
 *
 * `kept_chunks(buf, offsets, first, limit, chunk)` is the C form of
 * `sowlib.storage.compaction.kept_chunks`: a compaction's check of the records it keeps
 * (checksum included), their new offsets and their bytes gathered into chunks of about
 * `chunk` bytes (one copy, no object per run), in one call.
 *
 * The checksum is xxh3-64 of the record up to its last 8 bytes, which hold it in
 * canonical (big-endian) order, computed by digest.h (the algorithm's C form, written
 * from its description and checked against the xxhash package the Python paths use by
 * tests/storage/test_digest.py). `xxh3_64(buf)` and `xxh64(buf, seed)` give its two
 * digests to Python, for those tests.
 *
 * `advise(buf, start, length, advice)` is madvise over part of a memory map with the GIL
 * released (what `mmap.madvise` does holding it): sowlib.storage.warm populates a log's
 * page tables in the background with it, and a query never waits for a chunk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifndef _WIN32
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "digest.h"
#include "recordread.h"

/* The layout of the common record (see docs/storage-format.md). */
#define HEAD_SIZE 36     /* fixed header and the u64 key: where the payload starts */
#define OVERHEAD 44      /* HEAD_SIZE and the 8-byte checksum */
#define MARKER 0xF5      /* byte 4 of every record */
#define KIND_BYTE 0x41   /* a PUT whose key is a u64 */
#define KEY_BYTES 8
#define FIXED_HEAD 28    /* the fixed header every record starts with */
#define KIND_MASK 0x0F
#define KIND_PUT 0x01
#define FLAG_RESERVED 0x80

static RecordReadApi api; /* what the capsule c_api points to */

static uint32_t
load_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v; /* the file is little-endian, as are the machines sowlib builds on */
}

static uint64_t
load_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t
load_canonical_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Whether the checksum of the record at rec, of body bytes before its checksum, holds. */
static int
checksum_holds(const unsigned char *rec, Py_ssize_t body)
{
    return dg_xxh3_64(rec, (size_t)body) == load_canonical_u64(rec + body);
}

static PyObject *
fields_of(const CommonPut *put)
{
    PyObject *out = PyTuple_New(6);
    if (out == NULL) {
        return NULL;
    }
    PyObject *items[6] = {
        PyLong_FromUnsignedLongLong(put->seq),
        PyFloat_FromDouble(put->timestamp),
        PyFloat_FromDouble(0.0),
        PyBytes_FromStringAndSize(NULL, 0),
        PyLong_FromSsize_t(put->payload_len + OVERHEAD),
        PyBytes_FromStringAndSize((const char *)put->payload, put->payload_len),
    };
    int failed = 0;
    for (int i = 0; i < 6; i++) {
        if (items[i] == NULL) {
            failed = 1;
            items[i] = Py_NewRef(Py_None);
        }
        PyTuple_SET_ITEM(out, i, items[i]);
    }
    if (failed) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The length of the intact common record at off (checksum included), 0 when there is
 * none there, -1 with an error set. */
static Py_ssize_t
intact_common(const unsigned char *base, Py_ssize_t off, Py_ssize_t limit)
{
    if (off < 0 || limit < OVERHEAD || off > limit - OVERHEAD) {
        return 0;
    }
    const unsigned char *rec = base + off;
    uint32_t length = load_u32(rec);
    uint32_t payload = load_u32(rec + 8);
    if (rec[4] != MARKER || rec[5] != KIND_BYTE || rec[6] != KEY_BYTES || rec[7] != 0) {
        return 0;
    }
    if ((uint64_t)length != (uint64_t)payload + OVERHEAD
        || (uint64_t)length > (uint64_t)(limit - off)) {
        return 0;
    }
    return checksum_holds(rec, (Py_ssize_t)length - 8) ? (Py_ssize_t)length : 0;
}

/* The arguments (buf, off, limit) of read_put and common_run: the buffer acquired
 * (release it) and the limit cut to its length. 0, or -1 with an error set. */
static int
buffer_args(PyObject *const *args, Py_ssize_t nargs, const char *usage, Py_buffer *buf,
            Py_ssize_t *off, Py_ssize_t *limit)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s takes 3 arguments", usage);
        return -1;
    }
    *off = PyLong_AsSsize_t(args[1]);
    if (*off == -1 && PyErr_Occurred()) {
        return -1;
    }
    *limit = PyLong_AsSsize_t(args[2]);
    if (*limit == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (PyObject_GetBuffer(args[0], buf, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (*limit > buf->len) {
        *limit = buf->len;
    }
    return 0;
}

/* RecordReadApi.common_put (see recordread.h). */
static int
common_put(const unsigned char *base, Py_ssize_t off, Py_ssize_t limit, CommonPut *out)
{
    Py_ssize_t length = intact_common(base, off, limit);
    if (length <= 0) {
        return (int)length;
    }
    const unsigned char *rec = base + off;
    int64_t stamp;
    memcpy(&stamp, rec + 20, sizeof stamp);
    out->seq = load_u64(rec + 12);
    out->timestamp = (double)stamp / 1e6;
    out->payload = rec + HEAD_SIZE;
    out->payload_len = length - OVERHEAD;
    return 1;
}

static PyObject *
read_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    Py_buffer buf;
    Py_ssize_t off, limit;
    if (buffer_args(args, nargs, "read_put(buf, off, limit)", &buf, &off, &limit) < 0) {
        return NULL;
    }
    PyObject *result = Py_None;
    CommonPut put;
    int found = common_put((const unsigned char *)buf.buf, off, limit, &put);
    if (found < 0) {
        result = NULL;
    } else if (found) {
        result = fields_of(&put);
    }
    PyBuffer_Release(&buf);
    if (result == Py_None) {
        Py_RETURN_NONE;
    }
    return result;
}

static PyObject *
put_payloads(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "put_payloads(buf, offsets, limit) takes 3 arguments");
        return NULL;
    }
    if (!PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "put_payloads: offsets must be a list");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (limit > buf.len) {
        limit = buf.len;
    }
    PyObject *offsets = args[1];
    Py_ssize_t count = PyList_GET_SIZE(offsets);
    PyObject *out = PyList_New(count);
    if (out == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* offsets holds only ints and nothing here runs Python code: the list cannot
         * change while it is read */
        Py_ssize_t off = PyLong_AsSsize_t(PyList_GET_ITEM(offsets, i));
        if (off == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return NULL;
        }
        if (off < 0 || limit < FIXED_HEAD || off > limit - FIXED_HEAD) {
            goto not_here;
        }
        const unsigned char *rec = base + off;
        uint32_t length = load_u32(rec);
        uint32_t size = load_u32(rec + 8);
        if (rec[4] != MARKER || (rec[5] & KIND_MASK) != KIND_PUT || (rec[5] & FLAG_RESERVED)) {
            goto not_here;
        }
        /* the payload ends where the checksum starts and lies past the fixed header */
        if ((uint64_t)length > (uint64_t)(limit - off)
            || (uint64_t)length < (uint64_t)size + FIXED_HEAD + 8) {
            goto not_here;
        }
        Py_ssize_t end = (Py_ssize_t)length - 8;
        PyObject *payload = PyBytes_FromStringAndSize(
            (const char *)rec + end - (Py_ssize_t)size, (Py_ssize_t)size);
        if (payload == NULL) {
            Py_DECREF(out);
            PyBuffer_Release(&buf);
            return NULL;
        }
        PyList_SET_ITEM(out, i, payload);
    }
    PyBuffer_Release(&buf);
    return out;
not_here:
    Py_DECREF(out);
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

static PyObject *
common_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    Py_buffer buf;
    Py_ssize_t off, limit;
    if (buffer_args(args, nargs, "common_run(buf, off, limit)", &buf, &off, &limit) < 0) {
        return NULL;
    }
    PyObject *words = PyList_New(0);
    int64_t *offsets = NULL;
    Py_ssize_t count = 0, room = 0;
    PyObject *result = NULL;
    if (words == NULL) {
        goto done;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    for (;;) {
        Py_ssize_t length = intact_common(base, off, limit);
        if (length < 0) {
            goto done;
        }
        if (length == 0) {
            break;
        }
        const unsigned char *rec = base + off;
        if (count == room) {
            Py_ssize_t grown = room ? room * 2 : 1024;
            int64_t *more = PyMem_Realloc(offsets, (size_t)grown * sizeof *offsets);
            if (more == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            offsets = more;
            room = grown;
        }
        PyObject *word = PyLong_FromUnsignedLongLong(load_u64(rec + 28));
        if (word == NULL || PyList_Append(words, word) < 0) {
            Py_XDECREF(word);
            goto done;
        }
        Py_DECREF(word);
        offsets[count++] = (int64_t)off;
        off += length;
    }
    {
        PyObject *packed = PyBytes_FromStringAndSize(
            (const char *)offsets, count * (Py_ssize_t)sizeof *offsets);
        if (packed != NULL) {
            result = Py_BuildValue("(nNO)", off, packed, words);
        }
    }
done:
    PyMem_Free(offsets);
    Py_XDECREF(words);
    PyBuffer_Release(&buf);
    return result;
}

/* Append v to list (a new reference given up either way); 0, or -1 with an error set. */
static int
append_new(PyObject *list, PyObject *v)
{
    if (v == NULL) {
        return -1;
    }
    int failed = PyList_Append(list, v);
    Py_DECREF(v);
    return failed;
}

/* tail_run(buf, off, limit): the C form of sowlib.storage.entries.tail_run (the
 * reference; see its docstring): a refresh's run of new common records, when at least
 * one starts at off and the run is followed by a zero length field (nothing written
 * yet) wholly before limit: (end of the run, offsets, u64 keys, framed sizes, seq of
 * the last, payloads), lists; () when that zero is at off itself (nothing new); else
 * None. */
static PyObject *
tail_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    Py_buffer buf;
    Py_ssize_t off, limit;
    if (buffer_args(args, nargs, "tail_run(buf, off, limit)", &buf, &off, &limit) < 0) {
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t start = off, last = -1;
    if (off >= 0 && off <= limit - 4 && load_u32(base + off) == 0) {
        PyBuffer_Release(&buf); /* nothing written at off yet */
        return PyTuple_New(0);
    }
    /* first pass: where the run stops, and whether nothing follows it */
    for (;;) {
        Py_ssize_t length = intact_common(base, off, limit);
        if (length <= 0) {
            break;
        }
        last = off;
        off += length;
    }
    if (last < 0 || off > limit - 4 || load_u32(base + off) != 0) {
        PyBuffer_Release(&buf);
        Py_RETURN_NONE;
    }
    PyObject *lists[4] = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    if (lists[0] == NULL || lists[1] == NULL || lists[2] == NULL || lists[3] == NULL) {
        goto done;
    }
    for (Py_ssize_t at = start; at < off;) {
        const unsigned char *rec = base + at;
        Py_ssize_t length = (Py_ssize_t)load_u32(rec);
        if (append_new(lists[0], PyLong_FromSsize_t(at)) < 0
            || append_new(lists[1], PyLong_FromUnsignedLongLong(load_u64(rec + 28))) < 0
            || append_new(lists[2], PyLong_FromSsize_t(length)) < 0
            || append_new(lists[3], PyBytes_FromStringAndSize((const char *)rec + HEAD_SIZE,
                                                             length - OVERHEAD)) < 0) {
            goto done;
        }
        at += length;
    }
    result = Py_BuildValue("(nOOONO)", off, lists[0], lists[1], lists[2],
                           PyLong_FromUnsignedLongLong(load_u64(base + last + 12)), lists[3]);
done:
    for (int i = 0; i < 4; i++) {
        Py_XDECREF(lists[i]);
    }
    PyBuffer_Release(&buf);
    return result;
}

/* The bytes of a compaction's next chunk, gathered (see `kept_chunks`). */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Gathered;

/* Append buf[start:end] to `g`; 0, or -1 with MemoryError set. */
static int
gather(Gathered *g, const unsigned char *base, Py_ssize_t start, Py_ssize_t end)
{
    Py_ssize_t n = end - start;
    if (g->len + n > g->cap) {
        Py_ssize_t cap = g->cap ? g->cap : 1 << 16;
        while (cap < g->len + n) {
            cap *= 2;
        }
        char *grown = PyMem_Realloc(g->data, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        g->data = grown;
        g->cap = cap;
    }
    memcpy(g->data + g->len, base + start, (size_t)n);
    g->len += n;
    return 0;
}

/* Hand `g`'s bytes to `chunks` as one bytes object and empty it; 0, or -1. */
static int
hand_over(Gathered *g, PyObject *chunks)
{
    PyObject *bytes = PyBytes_FromStringAndSize(g->data, g->len);
    if (bytes == NULL || PyList_Append(chunks, bytes) < 0) {
        Py_XDECREF(bytes);
        return -1;
    }
    Py_DECREF(bytes);
    g->len = 0;
    return 0;
}

/* One run of kept bytes ends: gather it; a chunk of at least `chunk` bytes gathered is
 * handed over (as the reference joins its runs). 0, or -1. */
static int
end_run(Gathered *g, PyObject *chunks, const unsigned char *base, Py_ssize_t start,
        Py_ssize_t end, Py_ssize_t chunk)
{
    if (gather(g, base, start, end) < 0) {
        return -1;
    }
    return g->len >= chunk ? hand_over(g, chunks) : 0;
}

/* kept_chunks(buf, offsets, first, limit, chunk): the C form of
 * sowlib.storage.compaction.kept_chunks (the reference; see its docstring): the check of
 * the records kept, their new offsets, and their bytes gathered into chunks, one copy. */
static PyObject *
kept_chunks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "kept_chunks(buf, offsets, first, limit, chunk) takes 5 arguments");
        return NULL;
    }
    if (!PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "kept_chunks: offsets must be a list");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(args[2]);
    if (first == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t chunk = PyLong_AsSsize_t(args[4]);
    if (chunk == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (limit > buf.len) {
        limit = buf.len;
    }
    PyObject *offsets = args[1];
    Py_ssize_t count = PyList_GET_SIZE(offsets);
    PyObject *news = PyList_New(0);
    PyObject *chunks = PyList_New(0);
    PyObject *result = NULL;
    Gathered g = {NULL, 0, 0};
    Py_ssize_t bad = -1;
    if (news == NULL || chunks == NULL) {
        goto done;
    }
    const unsigned char *base = (const unsigned char *)buf.buf;
    Py_ssize_t new = first, run_start = 0, run_end = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* offsets holds only ints and nothing here runs Python code on them */
        Py_ssize_t off = PyLong_AsSsize_t(PyList_GET_ITEM(offsets, i));
        if (off == -1 && PyErr_Occurred()) {
            goto done;
        }
        if (off < 0 || limit < 5 || off > limit - 5) {
            bad = i;
            break;
        }
        const unsigned char *rec = base + off;
        Py_ssize_t length = (Py_ssize_t)load_u32(rec);
        if (rec[4] != MARKER || length < FIXED_HEAD + 8 || length > limit - off
            || !checksum_holds(rec, length - 8)) {
            bad = i;
            break;
        }
        PyObject *at = PyLong_FromSsize_t(new);
        if (at == NULL || PyList_Append(news, at) < 0) {
            Py_XDECREF(at);
            goto done;
        }
        Py_DECREF(at);
        new += length;
        if (off != run_end) {
            if (run_end > run_start && end_run(&g, chunks, base, run_start, run_end, chunk) < 0) {
                goto done;
            }
            run_start = off;
        }
        run_end = off + length;
        if (run_end - run_start >= chunk) {
            if (end_run(&g, chunks, base, run_start, run_end, chunk) < 0) {
                goto done;
            }
            run_start = run_end;
        }
    }
    if (run_end > run_start && gather(&g, base, run_start, run_end) < 0) {
        goto done;
    }
    if (g.len > 0 && hand_over(&g, chunks) < 0) {
        goto done;
    }
    result = Py_BuildValue("(OOn)", news, chunks, bad);
done:
    PyMem_Free(g.data);
    Py_XDECREF(news);
    Py_XDECREF(chunks);
    PyBuffer_Release(&buf);
    return result;
}

static PyObject *
xxh3_64(PyObject *module, PyObject *data)
{
    (void)module;
    Py_buffer buf;
    if (PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint64_t h = dg_xxh3_64(buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *
xxh64(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "xxh64(buf, seed) takes 2 arguments");
        return NULL;
    }
    uint64_t seed = PyLong_AsUnsignedLongLong(args[1]);
    if (seed == (uint64_t)-1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    uint64_t h = dg_xxh64(buf.buf, (size_t)buf.len, seed);
    PyBuffer_Release(&buf);
    return PyLong_FromUnsignedLongLong(h);
}

static PyObject *
advise(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "advise(buf, start, length, advice) takes 4 arguments");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t length = PyLong_AsSsize_t(args[2]);
    long advice = PyLong_AsLong(args[3]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (start < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "advise: start and length must not be negative");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    int err = 0;
#ifdef _WIN32
    err = 38; /* ENOSYS: no madvise */
    PyBuffer_Release(&buf);
#else
    /* The buffer is released before the call: the caller keeps the map mapped meanwhile
     * (sowlib.storage.warm's lock), and a map unmapped under the call anyway (a process
     * exiting) makes madvise fail with ENOMEM, never a crash, where an exported buffer
     * would make that close raise. */
    Py_ssize_t page = (Py_ssize_t)sysconf(_SC_PAGESIZE);
    Py_ssize_t lo = start - start % page;
    Py_ssize_t hi = length > buf.len - start ? buf.len : start + length;
    char *base = (char *)buf.buf + lo;
    int aligned = ((uintptr_t)buf.buf) % (uintptr_t)page == 0;
    PyBuffer_Release(&buf);
    if (!aligned) {
        err = EINVAL; /* not the start of a map */
    } else if (lo < hi) {
        size_t size = (size_t)(hi - lo);
        Py_BEGIN_ALLOW_THREADS
        if (madvise(base, size, (int)advice) != 0) {
            err = errno;
        }
        Py_END_ALLOW_THREADS
    }
#endif
    return PyLong_FromLong(err);
}

static PyMethodDef methods[] = {
    {"advise", (PyCFunction)(void (*)(void))advise, METH_FASTCALL,
     "advise(buf, start, length, advice): madvise over that part of a map (page aligned, "
     "clipped to it), the GIL released; 0 or the errno."},
    {"common_run", (PyCFunction)(void (*)(void))common_run, METH_FASTCALL,
     "common_run(buf, off, limit): (where the run of intact common records from off stops, "
     "their offsets as native int64 bytes, their u64 keys)."},
    {"tail_run", (PyCFunction)(void (*)(void))tail_run, METH_FASTCALL,
     "tail_run(buf, off, limit): (end, offsets, keys, sizes, last seq, payloads) of the run "
     "of new common records from off when nothing follows it, else None."},
    {"put_payloads", (PyCFunction)(void (*)(void))put_payloads, METH_FASTCALL,
     "put_payloads(buf, offsets, limit): the payloads of the PUT records at offsets, or None."},
    {"xxh3_64", xxh3_64, METH_O, "xxh3_64(buf): XXH3-64 of the bytes (seed 0): the record checksum."},
    {"xxh64", (PyCFunction)(void (*)(void))xxh64, METH_FASTCALL,
     "xxh64(buf, seed): XXH64 of the bytes: the content key digest (seed 0)."},
    {"kept_chunks", (PyCFunction)(void (*)(void))kept_chunks, METH_FASTCALL,
     "kept_chunks(buf, offsets, first, limit, chunk): (new offsets, the kept bytes in chunks, "
     "index of the first damaged record or -1)."},
    {"read_put", (PyCFunction)(void (*)(void))read_put, METH_FASTCALL,
     "read_put(buf, off, limit): the fields of the common PUT record at off, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "sowlib.storage.recordread",
    "The optional C form of one checked read of the common PUT record.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit_recordread(void)
{
    api.common_put = common_put;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(&api, RECORDREAD_API, NULL);
    if (capsule == NULL || PyModule_AddObjectRef(module, "c_api", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(module);
        return NULL;
    }
    Py_DECREF(capsule);
    if (PyModule_AddIntConstant(module, "HEAD_SIZE", HEAD_SIZE) < 0
        || PyModule_AddIntConstant(module, "OVERHEAD", OVERHEAD) < 0
        || PyModule_AddIntConstant(module, "MARKER", MARKER) < 0
        || PyModule_AddIntConstant(module, "KIND_BYTE", KIND_BYTE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
