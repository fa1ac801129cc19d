/* The rules for a listing's names, in one place for the two checks of a batch: csrc/readdir.c's
 * check_names (a batch Python packed) and csrc/cpython/pull.c's take_name (a batch C pulls from
 * the filesystem's iterator). A name is 1 to PYFUSE_NAME_MAX bytes, has no '/' and no NUL, and
 * is not twice in its batch: each side finds a duplicate by the name's hash
 * (pyfuse_name_scan) in a table of PYFUSE_DUP_SLOTS slots (pyfuse_cdef.h). tests/test_pull.py
 * runs both on the same names. Plain C (no libfuse, no Python), so that both modules can
 * include it. */
#ifndef PYFUSE_NAMES_H
#define PYFUSE_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PYFUSE_NAME_MAX 255 /* bytes; a longer name is refused (ENAMETOOLONG) */

#define PYFUSE_BYTES_(c) (0x0101010101010101ull * (unsigned char)(c))

/* 0x80 in each byte of w that is 0, and 0 in every other byte (no borrow between bytes). */
static inline uint64_t pyfuse_zero_bytes_(uint64_t w)
{
    const uint64_t low7 = PYFUSE_BYTES_(0x7f);

    return ~(((w & low7) + low7) | w | low7);
}

/* One word of a name: 0x80 in its bytes that may not be in a name ('/' or NUL); its hash
 * *h stirred with it. */
static inline uint64_t pyfuse_name_word_(uint64_t w, uint64_t *h)
{
    *h = (*h ^ w) * 0x9e3779b97f4a7c15ull;
    *h ^= *h >> 32;
    return pyfuse_zero_bytes_(w) | pyfuse_zero_bytes_(w ^ PYFUSE_BYTES_('/'));
}

/* Checks a name's len (>= 1) bytes at p and hashes them, eight at a time: returns 1 (and the
 * hash in *hash) if no byte is '/' or NUL, else 0. Every load is of a fixed size (no memcpy
 * call, nothing read outside the name): a name's last word is its last eight bytes, even if
 * they overlap the word before; a shorter name is read as two overlapping halves (4 to 7
 * bytes) or as its first, middle and last byte under 0x01 bytes, which are neither '/' nor
 * NUL. The word is then a function of the name's bytes that differs for every two names of one
 * length, and the length is in the hash. */
static inline int pyfuse_name_scan(const void *p, size_t len, uint32_t *hash)
{
    const unsigned char *q = p;
    uint64_t h = 0xcbf29ce484222325ull ^ len, bad = 0, w;

    if (len >= 8) {
        size_t i = 0;

        for (; i + 8 < len; i += 8) {
            memcpy(&w, q + i, 8);
            bad |= pyfuse_name_word_(w, &h);
        }
        memcpy(&w, q + len - 8, 8);
    } else if (len >= 4) {
        uint32_t lo, hi;

        memcpy(&lo, q, 4);
        memcpy(&hi, q + len - 4, 4);
        w = lo | (uint64_t)hi << 32;
    } else {
        w = q[0] | (uint64_t)q[len / 2] << 8 | (uint64_t)q[len - 1] << 16
            | PYFUSE_BYTES_(1) << 24;
    }
    bad |= pyfuse_name_word_(w, &h);
    *hash = (uint32_t)(h * 0x9e3779b97f4a7c15ull >> 32);
    return bad == 0;
}

#endif
