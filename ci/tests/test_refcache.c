/* test_refcache.c — the CPU reference cache of exact cases (ci/refcache.h): an entry is
 * found again by a fresh process; a truncated, corrupted, emptied or misplaced file is
 * refused (counted, removed) and recomputed, never trusted; and end to end, a second run
 * finds every reference, a corrupted entry is recomputed and the verdicts do not change. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "refcache.h"
#include "runner_testutil.h"

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) { fwrite(data, 1, n, f); fclose(f); }
}

static size_t read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return n;
}

int main(void)
{
    char base[1024], dir[1100], path[1300], buf[8192], cmd[4096];
    t_db_path("refcache", base, sizeof base);
    snprintf(dir, sizeof dir, "%s.dir", base);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    system(cmd);

    refcache a, b;
    refcache_init(&a, dir, 0x1234);
    uint64_t k1 = refcache_key(&a, "case.one/M256", "{\"m\":256}", 7, 1, 2, 3);
    uint64_t k2 = refcache_key(&a, "case.one/M256", "{\"m\":256}", 8, 1, 2, 3);
    refcache_init(&b, dir, 0x1235);
    CHECK(k1 != k2 && k1 != refcache_key(&b, "case.one/M256", "{\"m\":256}", 7, 1, 2, 3),
          "the key covers the seed and the reference code version");
    refcache_free(&b);
    uint64_t h = 0;
    CHECK(refcache_get(&a, k1, "case.one/M256", &h) == 0 && a.misses == 1, "absent at first");
    CHECK(refcache_put(&a, k1, "case.one/M256", 0xdeadbeefcafef00dull) == 0, "written");
    CHECK(refcache_get(&a, k1, "case.one/M256", &h) == 1 && h == 0xdeadbeefcafef00dull, "known for the rest of the run");
    refcache_free(&a);

    /* a fresh process (a fresh cache object) reads the file */
    refcache_init(&a, dir, 0x1234);
    CHECK(refcache_get(&a, k1, "case.one/M256", &h) == 1 && h == 0xdeadbeefcafef00dull && a.hits == 1, "found on disk");
    refcache_free(&a);
    refcache_path(&a, k1, path, sizeof path);
    char good[8192];
    size_t n = read_file(path, good, sizeof good);
    CHECK(n > 40, "entry file %s", path);

    struct { const char *what; size_t len; long flip; const char *replace; } bad[] = {
        {"truncated by one byte", 0, -1, NULL},
        {"truncated to half", 0, -2, NULL},
        {"empty", 0, -3, NULL},
        {"one digit of the output hash changed", 0, -4, NULL},
        {"one byte of the checksum changed", 0, -5, NULL},
        {"trailing garbage", 0, -6, NULL},
        {"another case's entry under this key", 0, -7, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        memcpy(buf, good, n + 1);
        size_t len = n;
        char *p;
        switch (bad[i].flip) {
        case -1: len = n - 1; break;
        case -2: len = n / 2; break;
        case -3: len = 0; break;
        case -4: p = strstr(buf, "fnv1a64c:"); p[10] = p[10] == '0' ? '1' : '0'; break;
        case -5: p = strstr(buf, "checksum fnv1a64:"); p[20] = p[20] == '0' ? '1' : '0'; break;
        case -6: memcpy(buf + n, "x\n", 3); len = n + 2; break;
        case -7: {
            refcache o;
            refcache_init(&o, dir, 0x1234);
            uint64_t ko = refcache_key(&o, "case.two/M256", "{\"m\":256}", 7, 1, 2, 3);
            refcache_put(&o, ko, "case.two/M256", 0xdeadbeefcafef00dull);
            char po[1300];
            refcache_path(&o, ko, po, sizeof po);
            len = read_file(po, buf, sizeof buf);
            unlink(po);
            refcache_free(&o);
            break;
        }
        }
        write_file(path, buf, len);
        refcache_init(&a, dir, 0x1234);
        int got = refcache_get(&a, k1, "case.one/M256", &h);
        CHECK(got == 0 && a.rejected == 1 && access(path, F_OK) != 0, "%s: refused and removed (got %d)", bad[i].what, got);
        refcache_free(&a);
        write_file(path, good, n);
    }

    /* end to end on the cpu backend: exact cases of the smoke suite */
    char db[1100], out[1 << 16];
    snprintf(db, sizeof db, "%s.db", base);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'*", dir, db);
    system(cmd);
    const char *run = "%s run --suite smoke --backend all --filter %s --budget-ms 1 --no-ceilings --ref-cache %s --db %s "
                      "2>&1 >/dev/null | grep 'reference cache'";
    snprintf(cmd, sizeof cmd, run, QGMM_BENCH_EXE, "e4m3fn.bf16/", dir, db);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, " 0 found, 9 computed"), "first run computes 9 references: %s", out);
    snprintf(cmd, sizeof cmd, run, QGMM_BENCH_EXE, "e4m3fn.bf16/", dir, db);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, " 9 found, 0 computed"), "second run finds them: %s", out);
    snprintf(cmd, sizeof cmd, "f=$(ls %s/*.ref | head -1); head -c 30 $f > $f.x && mv $f.x $f", dir);
    system(cmd);
    snprintf(cmd, sizeof cmd, run, QGMM_BENCH_EXE, "e4m3fn.bf16/", dir, db);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, " 8 found, 1 computed (1 replacing a corrupt entry)"), "a truncated entry is recomputed: %s", out);
    /* a well-formed entry holding a wrong hash (a stale cache): the hash comparison fails, the
     * full byte comparison against the cpu passes, and the entry is corrected */
    snprintf(cmd, sizeof cmd, "ls %s/*.ref | head -1", dir);
    t_sh(cmd, out, sizeof out);
    out[strcspn(out, "\n")] = 0;
    n = read_file(out, buf, sizeof buf);
    char *oh = strstr(buf, "output_hash fnv1a64c:"), *ck = strstr(buf, "checksum fnv1a64:");
    CHECK(oh && ck, "entry format: %s", buf);
    char stale[17] = "";
    if (oh && ck) {
        oh[21] = oh[21] == 'a' ? 'b' : 'a';
        memcpy(stale, oh + 21, 16);
        snprintf(ck, sizeof buf - (size_t)(ck - buf), "checksum fnv1a64:%016llx\n",
                 (unsigned long long)store_fnv1a64(STORE_FNV_INIT, buf, (size_t)(ck - buf)));
        write_file(out, buf, strlen(buf));
    }
    snprintf(cmd, sizeof cmd, run, QGMM_BENCH_EXE, "e4m3fn.bf16/", dir, db);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, " 9 found, 0 computed"), "a stale entry is read as valid: %s", out);
    snprintf(cmd, sizeof cmd, "cat %s/*.ref | grep -c 'output_hash fnv1a64c:%s'", dir, stale);
    t_sh(cmd, out, sizeof out);
    CHECK(stale[0] && atoi(out) == 0, "and corrected by the full comparison (%d entries still hold %s)", atoi(out), stale);
    /* `references` fills a cache without a device: the same entries with one job or two, a
     * second call finds them all, and a run on that cache computes nothing and stores the
     * same output hashes (checked with the runs above, below) */
    char dir2[1100], dir3[1100];
    snprintf(dir2, sizeof dir2, "%s.refs2", base);
    snprintf(dir3, sizeof dir3, "%s.refs3", base);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir2, dir3);
    system(cmd);
    snprintf(cmd, sizeof cmd, "%s references --suite smoke --filter e4m3fn.bf16/ --ref-cache %s --jobs 2; echo rc=$?",
             QGMM_BENCH_EXE, dir2);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, "9 exact cases: 0 already cached, 9 computed, 0 skipped") && strstr(out, "rc=0"),
          "references computes the 9: %s", out);
    snprintf(cmd, sizeof cmd, "%s references --suite smoke --filter e4m3fn.bf16/ --ref-cache %s --jobs 1 | tail -1",
             QGMM_BENCH_EXE, dir3);
    t_sh(cmd, out, sizeof out);
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' && echo same", dir2, dir3);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, "same"), "one job and two write the same entries: %s", out);
    snprintf(cmd, sizeof cmd, "%s references --suite smoke --filter e4m3fn.bf16/ --ref-cache %s | tail -1", QGMM_BENCH_EXE,
             dir2);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, "9 exact cases: 9 already cached, 0 computed"), "a second call finds them: %s", out);
    snprintf(cmd, sizeof cmd, "%s references --jobs 0 2>&1; echo rc=$?", QGMM_BENCH_EXE);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, "rc=2"), "--jobs 0 is a usage error: %s", out);
    snprintf(cmd, sizeof cmd, run, QGMM_BENCH_EXE, "e4m3fn.bf16/", dir2, db);
    t_sh(cmd, out, sizeof out);
    CHECK(strstr(out, " 9 found, 0 computed"), "a run on the filled cache computes nothing: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir2, dir3);
    system(cmd);

    sqlite3 *hd;
    sqlite3_open(db, &hd);
    CHECK(t_count(hd, "SELECT count(*) FROM run WHERE state = 'complete'") == 5, "five runs");
    CHECK(t_count(hd, "SELECT count(*) FROM result WHERE verdict <> 'pass'") == 0, "every exact case passes every time");
    CHECK(t_count(hd, "SELECT count(*) FROM (SELECT series_id FROM result GROUP BY 1 HAVING count(DISTINCT output_hash) > 1)") == 0,
          "the same output bytes every run");
    sqlite3_close(hd);
    return t_report("test_refcache");
}
