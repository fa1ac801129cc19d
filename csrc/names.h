/* The rules for a listing's names, in one place for the two checks of a batch: csrc/readdir.c's
 * check_names (a batch Python packed) and csrc/cpython/pull.c's take_name (a batch C pulls from
 * the filesystem's iterator). A name is 1 to PYFUSE_NAME_MAX bytes, has no '/' and no NUL, and
 * is not twice in its batch: each side finds a duplicate by the name's FNV-1a hash in a table of
 * PYFUSE_DUP_SLOTS slots (pyfuse_cdef.h). tests/test_pull.py runs both on the same names.
 * Plain C (no libfuse, no Python), so that both modules can include it. */
#ifndef PYFUSE_NAMES_H
#define PYFUSE_NAMES_H

#include <stdint.h>

#define PYFUSE_NAME_MAX 255            /* bytes; a longer name is refused (ENAMETOOLONG) */
#define PYFUSE_NAME_HASH0 2166136261u  /* FNV-1a's offset basis: a name's hash before its bytes */

/* The hash h with the name's next byte c in it (FNV-1a). */
static inline uint32_t pyfuse_name_hash(uint32_t h, unsigned char c)
{
    return (h ^ c) * 16777619u;
}

/* Whether c may be in a name: anything but '/' and NUL. */
static inline int pyfuse_name_byte(unsigned char c)
{
    return c != '/' && c != '\0';
}

#endif
