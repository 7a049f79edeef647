/* stats.c — see stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *sorted_copy(const double *x, size_t n)
{
    double *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    return s;
}

static double q_sorted(const double *s, size_t n, double p)
{
    if (n == 0) return NAN;
    double h = (double)(n - 1) * p;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1) return s[n - 1];
    return s[lo] + (h - (double)lo) * (s[lo + 1] - s[lo]);
}

double stats_quantile(const double *x, size_t n, double p)
{
    double *s = sorted_copy(x, n);
    if (!s) return NAN;
    double v = q_sorted(s, n, p);
    free(s);
    return v;
}

sample_stats stats_describe(const double *x, size_t n)
{
    sample_stats st;
    memset(&st, 0, sizeof st);
    if (n == 0) return st;
    double *s = sorted_copy(x, n);
    if (!s) return st;
    st.n = n;
    st.min = s[0];
    st.max = s[n - 1];
    st.q1 = q_sorted(s, n, 0.25);
    st.median = q_sorted(s, n, 0.5);
    st.q3 = q_sorted(s, n, 0.75);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += s[i];
    st.mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += (s[i] - st.mean) * (s[i] - st.mean);
    st.stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    free(s);
    return st;
}

double stats_mad(const double *x, size_t n)
{
    if (n == 0) return NAN;
    double med = stats_quantile(x, n, 0.5);
    double *d = malloc(n * sizeof *d);
    if (!d) return NAN;
    for (size_t i = 0; i < n; ++i) d[i] = fabs(x[i] - med);
    double mad = stats_quantile(d, n, 0.5);
    free(d);
    return 1.4826 * mad;
}

typedef struct tagged { double v; int from_a; } tagged;

static int cmp_tagged(const void *a, const void *b)
{
    return cmp_double(&((const tagged *)a)->v, &((const tagged *)b)->v);
}

/* Number of ways (count) that n1 ranks from 1..n1+n2 sum to each U value, by the
 * classic recurrence f(n1, n2, u) = f(n1-1, n2, u-n2) + f(n1, n2-1, u). Returns the
 * two-sided exact p for the observed U (min(u1,u2)). */
static double exact_p(size_t n1, size_t n2, double u_obs)
{
    size_t umax = n1 * n2;
    /* dp[i][j][u] over i<=n1, j<=n2 is large; roll over j with a 2D table per i. */
    size_t W = umax + 1;
    double *prev = calloc((n2 + 1) * W, sizeof(double));
    double *cur = calloc((n2 + 1) * W, sizeof(double));
    if (!prev || !cur) { free(prev); free(cur); return NAN; }
    /* i = 0: f(0, j, 0) = 1 */
    for (size_t j = 0; j <= n2; ++j) prev[j * W] = 1.0;
    for (size_t i = 1; i <= n1; ++i) {
        memset(cur, 0, (n2 + 1) * W * sizeof(double));
        cur[0] = 1.0;  /* f(i, 0, 0) = 1 */
        for (size_t j = 1; j <= n2; ++j)
            for (size_t u = 0; u <= i * j; ++u) {
                double a = u >= j ? prev[j * W + (u - j)] : 0.0;  /* largest is from the first sample */
                double b = cur[(j - 1) * W + u];
                cur[j * W + u] = a + b;
            }
        double *t = prev; prev = cur; cur = t;
    }
    double total = 0, tail = 0;
    for (size_t u = 0; u <= umax; ++u) {
        double f = prev[n2 * W + u];
        total += f;
        if ((double)u <= u_obs + 1e-9) tail += f;
    }
    free(prev);
    free(cur);
    double p = 2.0 * tail / total;
    return p > 1.0 ? 1.0 : p;
}

mw_result stats_mann_whitney(const double *a, size_t n1, const double *b, size_t n2)
{
    mw_result r;
    memset(&r, 0, sizeof r);
    r.p = 1.0;
    if (n1 == 0 || n2 == 0) return r;
    size_t n = n1 + n2;
    tagged *t = malloc(n * sizeof *t);
    if (!t) { r.p = NAN; return r; }
    for (size_t i = 0; i < n1; ++i) t[i] = (tagged){a[i], 1};
    for (size_t i = 0; i < n2; ++i) t[n1 + i] = (tagged){b[i], 0};
    qsort(t, n, sizeof *t, cmp_tagged);
    /* midranks; tie term sum(t^3 - t) */
    double rank_sum_a = 0, tie_term = 0;
    int ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && t[j + 1].v == t[i].v) ++j;
        double cnt = (double)(j - i + 1);
        double mid = ((double)i + (double)j) / 2.0 + 1.0;
        for (size_t k = i; k <= j; ++k)
            if (t[k].from_a) rank_sum_a += mid;
        if (cnt > 1) { ties = 1; tie_term += cnt * cnt * cnt - cnt; }
        i = j + 1;
    }
    free(t);
    double dn1 = (double)n1, dn2 = (double)n2, dn = (double)n;
    r.u1 = rank_sum_a - dn1 * (dn1 + 1) / 2.0;
    r.u2 = dn1 * dn2 - r.u1;
    double u_small = r.u1 < r.u2 ? r.u1 : r.u2;
    if (!ties && n1 <= 25 && n2 <= 25) {
        r.exact = 1;
        r.p = exact_p(n1, n2, u_small);
        return r;
    }
    double mu = dn1 * dn2 / 2.0;
    double var = dn1 * dn2 / 12.0 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    if (var <= 0) { r.p = 1.0; return r; }  /* every value equal */
    double u_big = r.u1 > r.u2 ? r.u1 : r.u2;
    r.z = (u_big - mu - 0.5) / sqrt(var);
    if (r.z < 0) r.z = 0;
    r.p = erfc(r.z / sqrt(2.0));  /* = 2 * (1 - Phi(z)) */
    if (r.p > 1.0) r.p = 1.0;
    return r;
}

double stats_median_ci_rel(const double *x, size_t n)
{
    if (n < 2) return INFINITY;
    double *s = sorted_copy(x, n);
    if (!s) return INFINITY;
    /* ranks n/2 -+ 0.98 sqrt(n) (1-based; the normal approximation of Binomial(n, 1/2) at 95 %) */
    double half = 0.98 * sqrt((double)n);
    long lo = (long)floor((double)n / 2.0 - half), hi = (long)ceil((double)n / 2.0 + 1.0 + half);
    if (lo < 1) lo = 1;
    if (hi > (long)n) hi = (long)n;
    double med = q_sorted(s, n, 0.5);
    double w = (s[hi - 1] - s[lo - 1]) / 2.0;
    free(s);
    return med > 0 ? w / med : INFINITY;
}
