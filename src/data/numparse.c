/* Locale-independent decimal number parsing for the CSV loader.
 *
 * The common case (at most 19 significant digits, a mantissa below 2^53 and a decimal
 * exponent within +-22) is exact by Clinger's fast path: one correctly rounded multiply
 * or divide by an exactly representable power of ten. Anything else goes to strtod on
 * a NUL-terminated copy, which rounds correctly too. */
#include <ctype.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"

/* Powers of ten that doubles hold exactly. */
static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Case-insensitive match of s[0, len) against a lower-case word. */
static int word_is(const char* s, size_t len, const char* word) {
    if (strlen(word) != len) return 0;
    for (size_t i = 0; i < len; ++i)
        if (tolower((unsigned char)s[i]) != word[i]) return 0;
    return 1;
}

/* "nan", "inf", "infinity" (sign already taken). */
static int parse_special(const char* p, const char* end, int neg, double* out) {
    size_t n = (size_t)(end - p);
    if (word_is(p, n, "nan")) {
        *out = NAN;
        return 1;
    }
    if (word_is(p, n, "inf") || word_is(p, n, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return 1;
    }
    return 0;
}

/* strtod on a NUL-terminated copy of buf[0, len) (room for len + 1); retries with the
 * locale's decimal point if the C one was refused. */
static int strtod_copy(const char* s, size_t len, char* buf, double* out) {
    memcpy(buf, s, len);
    buf[len] = '\0';
    char* endp = NULL;
    double v = strtod(buf, &endp);
    if (endp != buf + len) {
        const char* dp = localeconv()->decimal_point;
        char* dot = strchr(buf, '.');
        if (!dot || !dp || strlen(dp) != 1) return 0;
        *dot = dp[0];
        v = strtod(buf, &endp);
        if (endp != buf + len) return 0;
    }
    *out = v;
    return 1;
}

/* strtod on a copy: on the stack when short, else on the heap (a valid number may have
 * any number of digits; the text was checked to be one before). */
static int parse_slow(const char* s, size_t len, double* out) {
    char buf[512];
    if (len < sizeof buf) return strtod_copy(s, len, buf, out);
    char* heap = (char*)malloc(len + 1);
    if (!heap) return 0;
    int ok = strtod_copy(s, len, heap, out);
    free(heap);
    return ok;
}

int vp_parse_double(const char* s, size_t len, double* out) {
    const char* p = s;
    const char* end = s + len;
    if (p == end) return 0;

    /* Sign, then the special words. */
    int neg = 0;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        ++p;
        if (p == end) return 0;
    }
    if (!(*p >= '0' && *p <= '9') && *p != '.') return parse_special(p, end, neg, out);

    /* Mantissa digits: up to 19 significant ones in m, the decimal exponent in e10;
     * leading zeros are skipped before the digit loops. */
    uint64_t m = 0;
    int nd = 0, dropped = 0;
    int64_t e10 = 0;
    const char* start = p;
    while (p < end && *p == '0') ++p;
    for (; p < end && (unsigned)(*p - '0') < 10u; ++p) {
        if (nd < 19) {
            m = m * 10 + (uint64_t)(*p - '0');
            ++nd;
        } else {
            ++e10;
            dropped = 1;
        }
    }
    int any = p > start;
    if (p < end && *p == '.') {
        const char* frac = ++p;
        if (nd == 0)
            for (; p < end && *p == '0'; ++p) --e10;
        for (; p < end && (unsigned)(*p - '0') < 10u; ++p) {
            if (nd < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                ++nd;
                --e10;
            } else {
                dropped = 1;
            }
        }
        any = any || p > frac;
    }
    if (!any) return 0;

    /* Exponent. */
    if (p < end && (*p == 'e' || *p == 'E')) {
        ++p;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p == end || !(*p >= '0' && *p <= '9')) return 0;
        int64_t e = 0;
        for (; p < end && *p >= '0' && *p <= '9'; ++p)
            if (e < 100000) e = e * 10 + (*p - '0');
        e10 += eneg ? -e : e;
    }
    if (p != end) return 0;

    /* Zero, the exact fast path, or strtod. */
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    if (!dropped && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
        double v = (double)m;
        v = e10 < 0 ? v / P10[-e10] : v * P10[e10];
        *out = neg ? -v : v;
        return 1;
    }
    return parse_slow(s, len, out);
}
