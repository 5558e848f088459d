/* The qrels label of every kept row, joined in one pass (gate/evaluation/label_join.py).
 *
 * Built when the package is installed, if a C compiler is at hand (hatch_build.py); without it
 * the numpy join does the work, with the same labels. Docnos arrive as numpy 'U' arrays: fixed
 * width rows of UCS4 code points, padded with zeros (a docno never holds NUL; label_join.py
 * sends tables that would hold one down the dict path).
 *
 * An open-addressing hash table of the judgments, keyed by (query, docno), is built in memory
 * the caller allocated; every kept row is then looked up in it. Exact: a hit is confirmed on the
 * query and on every code point, so two docnos that hash alike never share a label.
 */

#include <stdint.h>

#ifndef RG_SOURCE_SHA256
#define RG_SOURCE_SHA256 "unknown"
#endif

const char *rg_source_sha256(void) { return RG_SOURCE_SHA256; }

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static inline uint64_t key_of(const uint32_t *text, int64_t width, int64_t query) {
    uint64_t h = (uint64_t)query * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    for (int64_t i = 0; i < width && text[i]; i++) h = (h ^ text[i]) * 0x100000001B3ULL;
    return mix(h);
}

/* The same text: every code point equal, the shorter array read as zero beyond its width (a
 * 'U' array pads with zeros; a zero inside a docno is compared too, not taken for its end). */
static inline int same_text(const uint32_t *a, int64_t width_a, const uint32_t *b, int64_t width_b) {
    int64_t width = width_a > width_b ? width_a : width_b;
    for (int64_t i = 0; i < width; i++) {
        uint32_t x = i < width_a ? a[i] : 0, y = i < width_b ? b[i] : 0;
        if (x != y) return 0;
    }
    return 1;
}

/* The judgments come in n_groups groups: group g is rows judged_starts[g]..judged_starts[g+1] of
 * judged_docs (judged_width code points each), with their labels. Query q (0 <= q < n_queries)
 * owns kept rows kept_starts[q]..kept_starts[q+1], which are rows kept[...] of docs (width code
 * points each), and is judged by group[q] (-1: none; two queries may share a group). table holds
 * 2 * capacity int64 (capacity a power of two above the judgments' count), all -1: each
 * judgment is in it once, keyed by its group. The caller checks every index beforehand.
 * labels[r] is set for every kept row r that is judged; others are left as they are.
 * Returns 0, or -1 when a group has the same docno twice (the caller joins otherwise). */
int64_t rg_join_labels(const uint32_t *docs, int64_t width, const int64_t *kept, const int64_t *kept_starts,
                       int64_t n_queries, const int64_t *group, int64_t n_groups, const uint32_t *judged_docs,
                       int64_t judged_width, const int64_t *judged_starts, const int64_t *judged_labels,
                       int64_t *table, int64_t capacity, int64_t *labels) {
    const uint64_t slots = (uint64_t)capacity - 1;
    for (int64_t g = 0; g < n_groups; g++) {
        for (int64_t j = judged_starts[g]; j < judged_starts[g + 1]; j++) {
            const uint32_t *text = judged_docs + j * judged_width;
            uint64_t at = key_of(text, judged_width, g) & slots;
            while (table[2 * at] >= 0) {
                if (table[2 * at + 1] == g &&
                    same_text(judged_docs + table[2 * at] * judged_width, judged_width, text, judged_width))
                    return -1;
                at = (at + 1) & slots;
            }
            table[2 * at] = j;
            table[2 * at + 1] = g;
        }
    }
    for (int64_t q = 0; q < n_queries; q++) {
        int64_t g = group[q];
        if (g < 0) continue;
        for (int64_t r = kept_starts[q]; r < kept_starts[q + 1]; r++) {
            const uint32_t *text = docs + kept[r] * width;
            uint64_t at = key_of(text, width, g) & slots;
            for (; table[2 * at] >= 0; at = (at + 1) & slots) {
                int64_t j = table[2 * at];
                if (table[2 * at + 1] == g && same_text(judged_docs + j * judged_width, judged_width, text, width)) {
                    labels[r] = judged_labels[j];
                    break;
                }
            }
        }
    }
    return 0;
}
