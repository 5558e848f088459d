/* One pass over a block of a TREC run in its common layout (gate/inputs/readers/native.py).
 *
 * Built when the package is installed, if a C compiler is at hand (hatch_build.py); without it
 * the numpy reader does all the work, with the same results. This pass only takes blocks it can
 * vouch for: every line "qid Q0 docno rank score tag" with exactly one blank (space or tab)
 * between fields and a newline right after the sixth, ASCII only, no other control byte, no
 * comment line, column 2 Q0 / q0 / 0, an integer rank, fields within their limits. Anything
 * else returns -1 and the numpy reader reads the block, and names the line at fault.
 *
 * Scores are parsed exactly: a value is written only when it equals Python's float() of the
 * token bit for bit (Clinger's fast path: a mantissa of at most 2^53 times or over an exact
 * power of ten up to 1e22, one correctly rounded operation; 16-19 digit mantissas through the
 * 64-bit long double, rejecting results that lie exactly half-way between two doubles, where a
 * second rounding could differ). Every other token is flagged for float().
 */

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const double P10[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if LDBL_MANT_DIG == 64 /* the x87 80-bit format; elsewhere float() takes these tokens */
#define HAVE_WIDE_LONG_DOUBLE 1
static const long double P10L[28] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
    1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
    1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
#else
#define HAVE_WIDE_LONG_DOUBLE 0
#endif

/* The SHA-256 of the source this library was built from (hatch_build.py passes it): the loader
 * uses a library only when it matches the runscan.c beside it, so a build left from an older
 * source (a pull into an editable install) is never called. */
#ifndef RG_SOURCE_SHA256
#define RG_SOURCE_SHA256 "unknown"
#endif
const char *rg_source_sha256(void) { return RG_SOURCE_SHA256; }

/* 1 when the long double path is compiled in (the loader checks it against float()). */
int rg_wide_long_double(void) { return HAVE_WIDE_LONG_DOUBLE; }

/* Parse s[0:len] as a decimal; 1 and *out on an exact result, 0 to leave it to float(). */
static int parse_score(const uint8_t *s, int64_t len, double *out) {
    int64_t j = 0;
    int neg = 0;
    if (len <= 0) return 0;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        j = 1;
    }
    uint64_t mant = 0;
    int sig = 0, frac = 0, any = 0, dot = 0;
    for (; j < len; j++) {
        uint8_t c = s[j];
        if (c >= '0' && c <= '9') {
            any = 1;
            if (mant > 0 || c != '0') {
                if (++sig > 19) return 0;
                mant = mant * 10 + (uint64_t)(c - '0');
            }
            if (dot) frac++;
        } else if (c == '.') {
            if (dot) return 0;
            dot = 1;
        } else {
            break;
        }
    }
    if (!any) return 0;
    int exp = 0;
    if (j < len) {
        if (s[j] != 'e' && s[j] != 'E') return 0;
        j++;
        int eneg = 0;
        if (j < len && (s[j] == '+' || s[j] == '-')) {
            eneg = s[j] == '-';
            j++;
        }
        int digits = 0;
        for (; j < len; j++) {
            uint8_t c = s[j];
            if (c < '0' || c > '9') return 0;
            if (++digits > 4) return 0;
            exp = exp * 10 + (c - '0');
        }
        if (!digits) return 0;
        if (eneg) exp = -exp;
    }
    int p = exp - frac;
    double value;
    if (mant == 0) {
        value = 0.0;
    } else if (mant <= ((uint64_t)1 << 53) && p >= -22 && p <= 22) {
        double m = (double)mant;
        value = p >= 0 ? m * P10[p] : m / P10[-p];
    } else {
#if HAVE_WIDE_LONG_DOUBLE
        if (p < -27 || p > 27) return 0;
        long double m = (long double)mant;
        long double q = p >= 0 ? m * P10L[p] : m / P10L[-p];
        int e2;
        long double fr = frexpl(q, &e2);
        uint64_t bits = (uint64_t)(fr * 18446744073709551616.0L);
        if ((bits & 0x7FF) == 0x400) return 0; /* half-way between two doubles: float() decides */
        value = (double)q;
#else
        return 0;
#endif
    }
    *out = neg ? -value : value;
    return 1;
}

/* Scan buf[0:n] (whole lines). Per row: the offsets and lengths of the query id, the docno, the
 * score and the tag, the score's value (and 1 in fallback[] where float() must parse it), and new_query[] = 1
 * where the query id differs from the row before. Returns the number of rows, or -1. */
int64_t rg_scan_run_block(const uint8_t *buf, int64_t n, int64_t max_rows, int64_t max_id, int64_t max_rank,
                          int64_t max_number, int64_t max_line, int64_t *qid_start, int32_t *qid_len,
                          int64_t *doc_start, int32_t *doc_len, int64_t *score_start, int32_t *score_len,
                          int64_t *tag_start, int32_t *tag_len, double *scores, uint8_t *fallback,
                          uint8_t *new_query) {
    int64_t i = 0, row = 0;
    int64_t prev_q = -1, prev_ql = 0;
    while (i < n) {
        if (row >= max_rows) return -1;
        int64_t line = i;
        if (buf[i] == '#') return -1;
        int64_t ts[6], tl[6];
        for (int f = 0; f < 6; f++) {
            int64_t s = i;
            while (i < n && buf[i] > 32) {
                if (buf[i] >= 127) return -1; /* non-ASCII or DEL: the numpy reader judges it */
                i++;
            }
            if (i == s || i >= n) return -1;
            uint8_t c = buf[i];
            if (f < 5 ? (c != ' ' && c != '\t') : c != '\n') return -1;
            ts[f] = s;
            tl[f] = i - s;
            i++;
        }
        if (i - 1 - line > max_line) return -1;
        if (tl[0] > max_id || tl[2] > max_id || tl[3] > max_rank || tl[4] > max_number || tl[5] > max_id)
            return -1;
        /* column 2: Q0, q0 or 0 */
        const uint8_t *z = buf + ts[1];
        if (!((tl[1] == 1 && z[0] == '0') || (tl[1] == 2 && (z[0] | 0x20) == 'q' && z[1] == '0'))) return -1;
        /* rank: [+-]digits */
        const uint8_t *r = buf + ts[3];
        int64_t k = (r[0] == '+' || r[0] == '-') ? 1 : 0;
        if (k == tl[3]) return -1;
        for (; k < tl[3]; k++)
            if (r[k] < '0' || r[k] > '9') return -1;
        qid_start[row] = ts[0];
        qid_len[row] = (int32_t)tl[0];
        doc_start[row] = ts[2];
        doc_len[row] = (int32_t)tl[2];
        score_start[row] = ts[4];
        score_len[row] = (int32_t)tl[4];
        tag_start[row] = ts[5];
        tag_len[row] = (int32_t)tl[5];
        double value = 0.0;
        fallback[row] = !parse_score(buf + ts[4], tl[4], &value);
        scores[row] = value;
        new_query[row] = prev_q < 0 || prev_ql != tl[0] || memcmp(buf + prev_q, buf + ts[0], (size_t)tl[0]) != 0;
        prev_q = ts[0];
        prev_ql = tl[0];
        row++;
    }
    return row;
}

/* The duplicate screen's hash of (query code, docno bytes) for every row of a block, exactly as
 * runs._hash_columns_numpy computes it: docs is the block's (width, rows) byte matrix, zero
 * beyond each docno; each 8-byte little-endian word of a docno that is not zero is mixed in. */
void rg_hash_columns(const uint8_t *docs, int64_t width, int64_t rows, const int32_t *codes, uint64_t *out) {
    for (int64_t i = 0; i < rows; i++) {
        uint64_t h = (uint64_t)(int64_t)codes[i] * 0x9E3779B97F4A7C15ULL;
        for (int64_t k = 0; k < width; k += 8) {
            uint64_t w = 0;
            int64_t end = k + 8 < width ? k + 8 : width;
            for (int64_t b = k; b < end; b++) w |= (uint64_t)docs[b * rows + i] << (8 * (b - k));
            if (w != 0) {
                uint64_t mixed = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
                h = mixed ^ (mixed >> 31);
            }
        }
        out[i] = h;
    }
}
