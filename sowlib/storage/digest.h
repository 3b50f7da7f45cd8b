/* The two digests sowlib's files and keys use, written from the published description
 * of the algorithms (XXH64, and XXH3 with 64-bit output, seed 0 and the default secret):
 * the record checksum is XXH3-64 of the record's bytes, a content key is XXH64 (seed 0)
 * of its text. The xxhash package computes both for the Python paths; these are their C
 * forms, checked against the package by tests/storage/test_digest.py over every length
 * up to a few kilobytes and the lengths where the algorithm changes its steps.
 *
 * Inputs are read as little-endian words, as the description says (memcpy: no
 * alignment is assumed); the machines sowlib builds on are little-endian. */
#ifndef SOWLIB_DIGEST_H
#define SOWLIB_DIGEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DG_P32_1 0x9E3779B1U
#define DG_P32_2 0x85EBCA77U
#define DG_P32_3 0xC2B2AE3DU
#define DG_P64_1 0x9E3779B185EBCA87ULL
#define DG_P64_2 0xC2B2AE3D27D4EB4FULL
#define DG_P64_3 0x165667B19E3779F9ULL
#define DG_P64_4 0x85EBCA77C2B2AE63ULL
#define DG_P64_5 0x27D4EB2F165667C5ULL
#define DG_MX1 0x165667919E3779F9ULL
#define DG_MX2 0x9FB21C651E98DF25ULL

static inline uint64_t
dg_read64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t
dg_read32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t
dg_swap64(uint64_t v)
{
    uint64_t out = 0;
    for (int i = 0; i < 8; i++) {
        out = (out << 8) | ((v >> (8 * i)) & 0xFF);
    }
    return out;
}

static inline uint64_t
dg_rotl(uint64_t v, int r)
{
    return (v << r) | (v >> (64 - r));
}

/* ------------------------------------------------------------------ XXH64 */

static inline uint64_t
dg64_round(uint64_t acc, uint64_t lane)
{
    return dg_rotl(acc + lane * DG_P64_2, 31) * DG_P64_1;
}

static inline uint64_t
dg64_merge(uint64_t h, uint64_t v)
{
    h ^= dg64_round(0, v);
    return h * DG_P64_1 + DG_P64_4;
}

static inline uint64_t
dg64_avalanche(uint64_t h)
{
    h ^= h >> 33;
    h *= DG_P64_2;
    h ^= h >> 29;
    h *= DG_P64_3;
    return h ^ (h >> 32);
}

static inline uint64_t
dg_xxh64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + DG_P64_1 + DG_P64_2, v2 = seed + DG_P64_2, v3 = seed,
                 v4 = seed - DG_P64_1;
        for (; end - p >= 32; p += 32) {
            v1 = dg64_round(v1, dg_read64(p));
            v2 = dg64_round(v2, dg_read64(p + 8));
            v3 = dg64_round(v3, dg_read64(p + 16));
            v4 = dg64_round(v4, dg_read64(p + 24));
        }
        h = dg_rotl(v1, 1) + dg_rotl(v2, 7) + dg_rotl(v3, 12) + dg_rotl(v4, 18);
        h = dg64_merge(h, v1);
        h = dg64_merge(h, v2);
        h = dg64_merge(h, v3);
        h = dg64_merge(h, v4);
    }
    else {
        h = seed + DG_P64_5;
    }
    h += (uint64_t)len;
    for (; end - p >= 8; p += 8) {
        h ^= dg64_round(0, dg_read64(p));
        h = dg_rotl(h, 27) * DG_P64_1 + DG_P64_4;
    }
    if (end - p >= 4) {
        h ^= (uint64_t)dg_read32(p) * DG_P64_1;
        h = dg_rotl(h, 23) * DG_P64_2 + DG_P64_3;
        p += 4;
    }
    for (; p < end; p++) {
        h ^= (uint64_t)*p * DG_P64_5;
        h = dg_rotl(h, 11) * DG_P64_1;
    }
    return dg64_avalanche(h);
}

/* ------------------------------------------------------------------ XXH3-64 */

/* The default secret of the description (192 bytes). */
static const unsigned char dg_secret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

#define DG_STRIPE 64
#define DG_STRIPES_PER_BLOCK ((sizeof dg_secret - DG_STRIPE) / 8) /* 16 */
#define DG_BLOCK (DG_STRIPE * DG_STRIPES_PER_BLOCK)                /* 1024 bytes */

/* The 128-bit product of a and b, its halves xored. */
static inline uint64_t
dg_fold(uint64_t a, uint64_t b)
{
#if defined(__SIZEOF_INT128__)
    __uint128_t m = (__uint128_t)a * b;
    return (uint64_t)m ^ (uint64_t)(m >> 64);
#else
    uint64_t al = a & 0xFFFFFFFFU, ah = a >> 32, bl = b & 0xFFFFFFFFU, bh = b >> 32;
    uint64_t ll = al * bl, hl = ah * bl, lh = al * bh, hh = ah * bh;
    uint64_t cross = (ll >> 32) + (hl & 0xFFFFFFFFU) + lh;
    uint64_t hi = (hl >> 32) + (cross >> 32) + hh;
    uint64_t lo = (cross << 32) | (ll & 0xFFFFFFFFU);
    return lo ^ hi;
#endif
}

static inline uint64_t
dg3_avalanche(uint64_t h)
{
    h ^= h >> 37;
    h *= DG_MX1;
    return h ^ (h >> 32);
}

static inline uint64_t
dg3_mix16(const unsigned char *in, const unsigned char *secret)
{
    return dg_fold(dg_read64(in) ^ dg_read64(secret), dg_read64(in + 8) ^ dg_read64(secret + 8));
}

static inline uint64_t
dg3_upto16(const unsigned char *p, size_t len)
{
    const unsigned char *s = dg_secret;
    if (len > 8) {
        uint64_t lo = dg_read64(p) ^ (dg_read64(s + 24) ^ dg_read64(s + 32));
        uint64_t hi = dg_read64(p + len - 8) ^ (dg_read64(s + 40) ^ dg_read64(s + 48));
        uint64_t acc = (uint64_t)len + dg_swap64(lo) + hi + dg_fold(lo, hi);
        return dg3_avalanche(acc);
    }
    if (len >= 4) {
        uint64_t joined = (uint64_t)dg_read32(p + len - 4) + ((uint64_t)dg_read32(p) << 32);
        uint64_t h = joined ^ (dg_read64(s + 8) ^ dg_read64(s + 16));
        h ^= dg_rotl(h, 49) ^ dg_rotl(h, 24);
        h *= DG_MX2;
        h ^= (h >> 35) + (uint64_t)len;
        h *= DG_MX2;
        return h ^ (h >> 28);
    }
    if (len > 0) {
        uint32_t joined = ((uint32_t)p[0] << 16) | ((uint32_t)p[len >> 1] << 24) |
                          (uint32_t)p[len - 1] | ((uint32_t)len << 8);
        uint64_t flip = (uint64_t)(dg_read32(s) ^ dg_read32(s + 4));
        return dg64_avalanche((uint64_t)joined ^ flip);
    }
    return dg64_avalanche(dg_read64(s + 56) ^ dg_read64(s + 64));
}

static inline uint64_t
dg3_upto240(const unsigned char *p, size_t len)
{
    const unsigned char *s = dg_secret;
    uint64_t acc = (uint64_t)len * DG_P64_1;
    if (len <= 128) {
        if (len > 32) {
            if (len > 64) {
                if (len > 96) {
                    acc += dg3_mix16(p + 48, s + 96);
                    acc += dg3_mix16(p + len - 64, s + 112);
                }
                acc += dg3_mix16(p + 32, s + 64);
                acc += dg3_mix16(p + len - 48, s + 80);
            }
            acc += dg3_mix16(p + 16, s + 32);
            acc += dg3_mix16(p + len - 32, s + 48);
        }
        acc += dg3_mix16(p, s);
        acc += dg3_mix16(p + len - 16, s + 16);
        return dg3_avalanche(acc);
    }
    size_t rounds = len / 16;
    for (size_t i = 0; i < 8; i++) {
        acc += dg3_mix16(p + 16 * i, s + 16 * i);
    }
    acc = dg3_avalanche(acc);
    for (size_t i = 8; i < rounds; i++) {
        acc += dg3_mix16(p + 16 * i, s + 16 * (i - 8) + 3);
    }
    acc += dg3_mix16(p + len - 16, s + 136 - 17);
    return dg3_avalanche(acc);
}

static inline void
dg3_stripe(uint64_t *acc, const unsigned char *in, const unsigned char *secret)
{
    for (int i = 0; i < 8; i++) {
        uint64_t value = dg_read64(in + 8 * i);
        uint64_t keyed = value ^ dg_read64(secret + 8 * i);
        acc[i ^ 1] += value;
        acc[i] += (keyed & 0xFFFFFFFFU) * (keyed >> 32);
    }
}

static inline void
dg3_scramble(uint64_t *acc, const unsigned char *secret)
{
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= dg_read64(secret + 8 * i);
        acc[i] = a * DG_P32_1;
    }
}

static inline uint64_t
dg3_long(const unsigned char *p, size_t len)
{
    const unsigned char *s = dg_secret;
    uint64_t acc[8] = {DG_P32_3, DG_P64_1, DG_P64_2, DG_P64_3,
                       DG_P64_4, DG_P32_2, DG_P64_5, DG_P32_1};
    size_t blocks = (len - 1) / DG_BLOCK;
    for (size_t b = 0; b < blocks; b++) {
        for (size_t n = 0; n < DG_STRIPES_PER_BLOCK; n++) {
            dg3_stripe(acc, p + b * DG_BLOCK + n * DG_STRIPE, s + n * 8);
        }
        dg3_scramble(acc, s + sizeof dg_secret - DG_STRIPE);
    }
    size_t stripes = ((len - 1) - blocks * DG_BLOCK) / DG_STRIPE;
    for (size_t n = 0; n < stripes; n++) {
        dg3_stripe(acc, p + blocks * DG_BLOCK + n * DG_STRIPE, s + n * 8);
    }
    dg3_stripe(acc, p + len - DG_STRIPE, s + sizeof dg_secret - DG_STRIPE - 7);
    uint64_t h = (uint64_t)len * DG_P64_1;
    for (int i = 0; i < 4; i++) {
        h += dg_fold(acc[2 * i] ^ dg_read64(s + 11 + 16 * i),
                     acc[2 * i + 1] ^ dg_read64(s + 11 + 16 * i + 8));
    }
    return dg3_avalanche(h);
}

/* XXH3-64 of len bytes at data, seed 0, the default secret. */
static inline uint64_t
dg_xxh3_64(const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len <= 16) {
        return dg3_upto16(p, len);
    }
    if (len <= 240) {
        return dg3_upto240(p, len);
    }
    return dg3_long(p, len);
}

#endif
