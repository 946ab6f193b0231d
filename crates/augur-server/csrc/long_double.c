/* Redis's long double arithmetic for INCRBYFLOAT and HINCRBYFLOAT.
 *
 * Redis parses, adds and prints these increments as C `long double` (80-bit x87
 * extended precision on x86-64): string2ld, `value += incr`, and ld2string in its
 * LD_STR_HUMAN mode ("%.17Lf" with the trailing zeros removed), all in util.c. Ten
 * INCRBYFLOAT k 0.1 give "1" there and 0.9999999999999999 in double precision, so a
 * drop-in has to compute in the same type. Rust has no long double: these three
 * functions keep the value in a caller's 16-byte buffer and never pass it by value. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* string2ld's buffer: MAX_LONG_DOUBLE_CHARS in Redis's util.h. */
#define MAX_LONG_DOUBLE_CHARS (5 * 1024)

/* string2ld: 1 and *out set if s[0..len) is a whole long double (strtold's syntax, no
 * leading space, no NUL inside, not NaN, not out of range), else 0. */
int augur_ld_parse(const char *s, size_t len, long double *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *eptr;
    long double value;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    value = strtold(buf, &eptr);
    /* The whole text: strtold stops at a NUL inside it ("1\0" "2" is not a number). */
    if (isspace((unsigned char)buf[0]) || eptr != buf + len ||
        (errno == ERANGE && (value == HUGE_VALL || value == -HUGE_VALL || value == 0)) ||
        errno == EINVAL || isnan(value))
        return 0;
    *out = value;
    return 1;
}

/* *acc += *incr; 1 if the sum is finite (Redis refuses NaN and infinities). */
int augur_ld_add(long double *acc, const long double *incr) {
    long double v = *acc + *incr;
    if (isnan(v) || isinf(v)) return 0;
    *acc = v;
    return 1;
}

/* ld2string(LD_STR_HUMAN) of a finite value into buf (cap bytes, at least
 * MAX_LONG_DOUBLE_CHARS in Redis): its length, or 0 when it does not fit, where Redis
 * stores the empty string. */
size_t augur_ld_format_human(const long double *value, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%.17Lf", *value);
    size_t l;
    if (n < 0 || (size_t)n + 1 > cap) return 0;
    l = (size_t)n;
    if (memchr(buf, '.', l) != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') {
            p--;
            l--;
        }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    return l;
}

/* sizeof(long double): the Rust side's buffer must hold it. */
size_t augur_ld_size(void) { return sizeof(long double); }

/* isinf(*v) (HINCRBYFLOAT refuses an infinite increment before reading the field). */
int augur_ld_isinf(const long double *v) { return isinf(*v) != 0; }

/* getTimeoutFromObjectOrReply's seconds as milliseconds, rounded up: redis-server
 * 7.0.15 times out BLPOP k 0.0001 at once rather than blocking forever (measured with
 * redis-cli), so a positive fraction of a millisecond is 1 ms, not 0. Where the
 * product does not fit a long long the C cast is undefined; x86-64 (the x87 fistp
 * Redis's build emits) yields LLONG_MIN, which Redis then refuses as negative. */
long long augur_ld_seconds_to_ms(const long double *value) {
    long double ms = ceill(*value * 1000.0L);
    if (!(ms < 9223372036854775808.0L) || !(ms >= -9223372036854775808.0L))
        return (-9223372036854775807LL - 1);
    return (long long)ms;
}

/* SORT's score of a text (sort.c): strtod over a NUL-terminated copy, refused when it
 * stops before the NUL, on ERANGE, or for NaN. 1 and *out set if accepted. */
int augur_sort_strtod(const char *s, size_t len, double *out) {
    char *buf = malloc(len + 1);
    char *eptr;
    double v;
    int ok;
    if (buf == NULL) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &eptr);
    ok = eptr[0] == '\0' && errno != ERANGE && !isnan(v);
    free(buf);
    if (ok) *out = v;
    return ok;
}

/* string2d (util.c), which getDoubleFromObject uses for ZADD's scores, ZINCRBY's
 * increment and ZUNIONSTORE's weights: strtod over the whole text, refused when empty,
 * when it starts with a space, when it stops before the end (an embedded NUL too), on
 * an ERANGE overflow or underflow to zero, or for NaN. 1 and *out set if accepted. */
int augur_string2d(const char *s, size_t len, double *out) {
    char *buf, *eptr;
    double v;
    int ok;
    if (len == 0 || isspace((unsigned char)s[0])) return 0;
    buf = malloc(len + 1);
    if (buf == NULL) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtod(buf, &eptr);
    ok = (size_t)(eptr - buf) == len &&
         !(errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) &&
         !isnan(v);
    free(buf);
    if (ok) *out = v;
    return ok;
}

/* One bound of zslParseRange (t_zset.c), after its '(' if any: strtod over the text
 * as a C string, accepted when it stops at the string's end (the first NUL) and is not
 * NaN. So "" is 0 and an out-of-range value its ERANGE result (inf or 0), as in Redis. */
int augur_range_strtod(const char *s, size_t len, double *out) {
    char *buf, *eptr;
    double v;
    int ok;
    buf = malloc(len + 1);
    if (buf == NULL) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    v = strtod(buf, &eptr);
    ok = eptr[0] == '\0' && !isnan(v);
    free(buf);
    if (ok) *out = v;
    return ok;
}

/* addReplyHumanLongDouble's text of a double (geo.c's GEOPOS and WITHCOORD replies):
 * the value widened to long double (exact), then ld2string(LD_STR_HUMAN). */
size_t augur_double_format_human(double v, char *buf, size_t cap) {
    long double ld = v;
    return augur_ld_format_human(&ld, buf, cap);
}

/* printf's "%.<prec>f" of a double (geo.c: "%.4f" distances, "%f" in the invalid
 * longitude,latitude error): its length, or 0 when it does not fit. */
size_t augur_format_fixed(double v, int prec, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%.*f", prec, v);
    if (n < 0 || (size_t)n + 1 > cap) return 0;
    return (size_t)n;
}
