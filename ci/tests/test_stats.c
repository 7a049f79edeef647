/* test_stats.c — the statistics pinned to values computed by hand / from tables:
 * quantiles (numpy type 7), MAD, Mann-Whitney U (exact and normal approximation). */
#include <math.h>
#include <string.h>

#include "runner_testutil.h"
#include "stats.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

int main(void)
{
    const double q[] = {4, 1, 3, 2};
    CHECK(NEAR(stats_quantile(q, 4, 0.25), 1.75, 1e-12), "q1 %g", stats_quantile(q, 4, 0.25));
    CHECK(NEAR(stats_quantile(q, 4, 0.5), 2.5, 1e-12), "median");
    CHECK(NEAR(stats_quantile(q, 4, 1.0), 4.0, 1e-12), "max");
    sample_stats s = stats_describe(q, 4);
    CHECK(s.n == 4 && s.min == 1 && s.max == 4 && NEAR(s.mean, 2.5, 1e-12), "describe");
    CHECK(NEAR(s.stddev, sqrt(5.0 / 3.0), 1e-12), "stddev n-1 %g", s.stddev);
    const double m[] = {1, 2, 3, 4, 100};  /* median 3, |dev| 2 1 0 1 97 -> MAD 1 */
    CHECK(NEAR(stats_mad(m, 5), 1.4826, 1e-12), "mad %g", stats_mad(m, 5));

    /* complete separation, n = 5 + 5: U = 0, exact two-sided p = 2 / C(10,5) = 2/252 */
    const double a[] = {1, 2, 3, 4, 5}, b[] = {6, 7, 8, 9, 10};
    mw_result r = stats_mann_whitney(a, 5, b, 5);
    CHECK(r.exact && r.u1 == 0 && r.u2 == 25, "U %g %g", r.u1, r.u2);
    CHECK(NEAR(r.p, 2.0 / 252.0, 1e-12), "exact p %g", r.p);
    /* symmetric in the argument order */
    mw_result r2 = stats_mann_whitney(b, 5, a, 5);
    CHECK(r2.u1 == 25 && NEAR(r2.p, r.p, 1e-15), "swap");
    /* one overlap: a' = {1,2,3,4,7}, b = {5,6,8,9,10}: U_a = 2 (7>5, 7>6); exact p = 2 *
     * #(U <= 2) / 252 = 2 * (1 + 1 + 2) / 252 (partitions of 0, 1, 2 into <= 5 parts <= 5) */
    const double a2[] = {1, 2, 3, 4, 7}, b2[] = {5, 6, 8, 9, 10};
    r = stats_mann_whitney(a2, 5, b2, 5);
    CHECK(r.u1 == 2, "U %g", r.u1);
    CHECK(NEAR(r.p, 8.0 / 252.0, 1e-12), "exact p %g want %g", r.p, 8.0 / 252.0);
    /* identical samples: p = 1 */
    r = stats_mann_whitney(a, 5, a, 5);
    CHECK(r.p > 0.99, "identical p %g", r.p);
    /* ties force the normal approximation: x = {1,1,2,2,3}, y = {2,3,3,4,4}.
     * Midranks: 1,1 -> 1.5; 2 x3 -> 4; 3 x3 -> 7; 4 x2 -> 9.5. R_x = 1.5+1.5+4+4+7 = 18,
     * U_x = 18 - 15 = 3. Tie term = (8-2)+(27-3)+(27-3)+(8-2) = 60; var = 25/12 * (11 - 60/90)
     * = 21.527777...; z = (22 - 12.5 - 0.5) / sqrt(var) = 1.9397; p = erfc(z / sqrt 2). */
    const double x[] = {1, 1, 2, 2, 3}, y[] = {2, 3, 3, 4, 4};
    r = stats_mann_whitney(x, 5, y, 5);
    double var = 25.0 / 12.0 * (11.0 - 60.0 / 90.0), z = 9.0 / sqrt(var);
    CHECK(!r.exact && r.u1 == 3, "ties: exact %d U %g", r.exact, r.u1);
    CHECK(NEAR(r.z, z, 1e-9) && NEAR(r.p, erfc(z / sqrt(2.0)), 1e-12), "ties z %g p %g", r.z, r.p);
    CHECK(NEAR(r.p, 0.05242, 5e-5), "ties p %g (table: 0.0524)", r.p);
    /* large samples, shifted by 20 %: p far below 0.001; unshifted: not */
    double big1[60], big2[60], big3[60];
    for (int i = 0; i < 60; ++i) {
        big1[i] = 100 + (i % 7) * 0.3 + i * 0.001;
        big2[i] = 120 + (i % 5) * 0.3 + i * 0.001;
        big3[i] = 100 + (i % 5) * 0.3 + i * 0.0011;
    }
    CHECK(stats_mann_whitney(big2, 60, big1, 60).p < 1e-6, "shift p");
    CHECK(stats_mann_whitney(big3, 60, big1, 60).p > 0.001, "no shift p %g", stats_mann_whitney(big3, 60, big1, 60).p);
    CHECK(stats_mann_whitney(a, 0, b, 5).p == 1.0, "empty");
    /* the median's 95 % interval (order statistics n/2 -+ 0.98 sqrt n): 1..100 -> ranks 40 and 61 */
    double seq[100], flat[9];
    for (int i = 0; i < 100; ++i) seq[i] = 100 - i;
    for (int i = 0; i < 9; ++i) flat[i] = 7.5;
    CHECK(NEAR(stats_median_ci_rel(seq, 100), 10.5 / 50.5, 1e-12), "median interval %g", stats_median_ci_rel(seq, 100));
    CHECK(stats_median_ci_rel(flat, 9) == 0, "a flat sample is converged");
    CHECK(isinf(stats_median_ci_rel(flat, 1)), "one sample has no interval");
    return t_report("test_stats");
}
