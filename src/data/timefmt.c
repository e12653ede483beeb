/* Time parsing and formatting: ISO dates and date-times, DD.MM.YYYY, Unix seconds and
 * milliseconds; proleptic Gregorian calendar, UTC, millisecond resolution. */
#include <stdio.h>

#include "vulpes/data.h"

#define MS_PER_DAY INT64_C(86400000)

int64_t vp_days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The civil date of a day count (inverse of vp_days_from_civil). */
void vp_civil_from_days(int64_t z, int64_t* y, int* m, int* d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m) {
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

/* A cursor over the text being parsed. */
typedef struct cur {
    const char* p;   /* next character */
    const char* end; /* one past the last */
} cur;

/* Reads exactly n digits into *v; 0 when they are not there. */
static int digits(cur* c, int n, int* v) {
    if (c->end - c->p < n) return 0;
    int x = 0;
    for (int i = 0; i < n; ++i) {
        char ch = c->p[i];
        if (ch < '0' || ch > '9') return 0;
        x = x * 10 + (ch - '0');
    }
    c->p += n;
    *v = x;
    return 1;
}

static int take(cur* c, char ch) {
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* HH:MM[:SS[(.|,)fraction]] into milliseconds of the day (fraction truncated to ms). */
static int time_of_day(cur* c, int64_t* ms) {
    int hh, mi, ss = 0, frac = 0;
    if (!digits(c, 2, &hh) || !take(c, ':') || !digits(c, 2, &mi)) return 0;
    if (take(c, ':')) {
        if (!digits(c, 2, &ss)) return 0;
        if (c->p < c->end && (*c->p == '.' || *c->p == ',')) {
            c->p++;
            int nf = 0;
            while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                if (nf < 3) frac = frac * 10 + (*c->p - '0');
                ++nf;
                c->p++;
            }
            if (nf == 0 || nf > 9) return 0;
            for (; nf < 3; ++nf) frac *= 10;
        }
    }
    if (hh > 23 || mi > 59 || ss > 59) return 0;
    *ms = ((int64_t)hh * 3600 + mi * 60 + ss) * 1000 + frac;
    return 1;
}

/* Milliseconds of a valid civil date at midnight; 0 when the date does not exist. */
static int date_ms(int y, int m, int d, int64_t* ms) {
    if (m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return 0;
    *ms = vp_days_from_civil(y, m, d) * MS_PER_DAY;
    return 1;
}

/* YYYY-MM-DD[(T| )time[Z|(+|-)HH[:]MM|(+|-)HH]]. */
static int parse_iso(cur* c, int64_t* ms, vp_time_format* fmt) {
    int y, m, d;
    if (!digits(c, 4, &y) || !take(c, '-') || !digits(c, 2, &m) || !take(c, '-') || !digits(c, 2, &d)) return 0;
    if (!date_ms(y, m, d, ms)) return 0;
    *fmt = VP_TIME_ISO_DATE;
    if (c->p == c->end) return 1;
    if (!take(c, 'T') && !take(c, ' ')) return 0;
    int64_t tod;
    if (!time_of_day(c, &tod)) return 0;
    *ms += tod;
    *fmt = VP_TIME_ISO_DATETIME;

    /* Zone: Z or an offset east of UTC (subtracted to get UTC). */
    if (take(c, 'Z')) return c->p == c->end;
    if (c->p < c->end && (*c->p == '+' || *c->p == '-')) {
        int sign = *c->p++ == '-' ? -1 : 1;
        int oh, om = 0;
        if (!digits(c, 2, &oh)) return 0;
        if (c->p < c->end) {
            take(c, ':');
            if (!digits(c, 2, &om)) return 0;
        }
        if (oh > 23 || om > 59) return 0;
        *ms -= sign * ((int64_t)oh * 3600 + om * 60) * 1000;
    }
    return c->p == c->end;
}

/* DD.MM.YYYY[ time]. */
static int parse_dmy(cur* c, int64_t* ms, vp_time_format* fmt) {
    int y, m, d;
    if (!digits(c, 2, &d) || !take(c, '.') || !digits(c, 2, &m) || !take(c, '.') || !digits(c, 4, &y)) return 0;
    if (!date_ms(y, m, d, ms)) return 0;
    *fmt = VP_TIME_DMY;
    if (c->p == c->end) return 1;
    int64_t tod;
    if (!take(c, ' ') || !time_of_day(c, &tod)) return 0;
    *ms += tod;
    return c->p == c->end;
}

/* Unix time: seconds when 1e8 <= v < 1e11 (fraction allowed), milliseconds when
 * 1e11 <= v < 1e14; anything else is refused rather than guessed. */
static int parse_unix(cur* c, int64_t* ms, vp_time_format* fmt) {
    int64_t v = 0;
    int nd = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, ++nd) {
        if (nd >= 15) return 0;
        v = v * 10 + (*c->p - '0');
    }
    if (nd == 0) return 0;
    int frac = 0, nf = 0;
    if (take(c, '.')) {
        for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, ++nf)
            if (nf < 3) frac = frac * 10 + (*c->p - '0');
        if (nf == 0 || nf > 9) return 0;
        for (int k = nf; k < 3; ++k) frac *= 10;
    }
    if (c->p != c->end) return 0;
    if (v >= INT64_C(100000000) && v < INT64_C(100000000000)) {
        *ms = v * 1000 + frac;
        *fmt = VP_TIME_UNIX_S;
        return 1;
    }
    if (v >= INT64_C(100000000000) && v < INT64_C(100000000000000) && nf == 0) {
        *ms = v;
        *fmt = VP_TIME_UNIX_MS;
        return 1;
    }
    return 0;
}

int vp_time_parse(const char* s, size_t len, int64_t* ms, vp_time_format* fmt) {
    /* Trim blanks, then choose the format by shape: "YYYY-", "DD.MM.", or digits. */
    while (len > 0 && (*s == ' ' || *s == '\t')) ++s, --len;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) --len;
    cur c = {s, s + len};
    int64_t v = 0;
    vp_time_format f = VP_TIME_FORMAT_COUNT;
    int ok;
    if (len >= 10 && s[4] == '-') {
        ok = parse_iso(&c, &v, &f);
    } else if (len >= 10 && s[2] == '.' && s[5] == '.') {
        ok = parse_dmy(&c, &v, &f);
    } else {
        ok = parse_unix(&c, &v, &f);
    }
    if (!ok) return 0;
    *ms = v;
    if (fmt) *fmt = f;
    return 1;
}

const char* vp_time_format_name(vp_time_format f) {
    static const char* names[VP_TIME_FORMAT_COUNT] = {
        "ISO date", "ISO date-time", "DD.MM.YYYY HH:MM:SS[.mmm]", "Unix seconds", "Unix milliseconds"};
    return (int)f >= 0 && f < VP_TIME_FORMAT_COUNT ? names[f] : "unknown";
}

char* vp_time_format_iso(int64_t ms, char* buf, size_t cap) {
    /* Floor division so times before 1970 print the right date. */
    int64_t days = ms >= 0 ? ms / MS_PER_DAY : -((-ms + MS_PER_DAY - 1) / MS_PER_DAY);
    int64_t rem = ms - days * MS_PER_DAY;
    int64_t y;
    int m, d;
    vp_civil_from_days(days, &y, &m, &d);
    int hh = (int)(rem / 3600000), mi = (int)(rem / 60000 % 60), ss = (int)(rem / 1000 % 60);
    int milli = (int)(rem % 1000);
    if (milli)
        snprintf(buf, cap, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m, d, hh, mi, ss, milli);
    else
        snprintf(buf, cap, "%04lld-%02d-%02dT%02d:%02d:%02dZ", (long long)y, m, d, hh, mi, ss);
    return buf;
}
