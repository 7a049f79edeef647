/* test_digest.c — SHA-256 (FIPS 180-4 vectors) and the run-content digest that decides
 * "the same run" for a uuid already stored: result order, env and clocks do not change
 * it, a sample or the suite does; a record and its stored copy agree; store_write_run
 * reports a stored uuid as the same or a different run and writes nothing either way. */
#include <string.h>

#include "runner_testutil.h"
#include "sha256.h"

static void sha_vectors(void)
{
    char hex[65];
    sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "sha256('') = %s", hex);
    sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256(abc) = %s", hex);
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m, strlen(m), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "sha256(448 bits) = %s", hex);
    /* one million 'a', fed in odd-sized pieces to cross block boundaries */
    sha256_ctx c;
    char a[997];
    memset(a, 'a', sizeof a);
    sha256_init(&c);
    for (size_t left = 1000000; left;) {
        size_t n = left < sizeof a ? left : sizeof a;
        sha256_update(&c, a, n);
        left -= n;
    }
    sha256_final_hex(&c, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "sha256(1M a) = %s", hex);
}

static void digest_of(const run_record *r, char hex[65])
{
    CHECK(store_run_digest(r, hex) == 0, "digest");
}

static void run_digest(void)
{
    char path[1024], err[512], d0[65], d1[65], stored[65];
    t_db_path("digest", path, sizeof path);
    sqlite3 *db = NULL;
    if (store_open(path, &db, err, sizeof err)) { fprintf(stderr, "open: %s\n", err); exit(1); }
    run_record r;
    t_make_run(&r, 4, 6, 50, 0.02, 9, 5000);
    digest_of(&r, d0);

    /* what does not enter it: result order, env, clocks, derived values */
    run_record o;
    t_make_run(&o, 4, 6, 50, 0.02, 9, 5000);
    snprintf(o.uuid, sizeof o.uuid, "%s", r.uuid);
    rr_result tmp = o.results[0];
    o.results[0] = o.results[3];
    o.results[3] = tmp;
    rr_set(&o.env_json, "{\"extra\":\"ignored\"}");
    rr_set(&o.contexts[0].clocks_json, "{\"sm\":1980}");
    o.results[1].pct_of_ceiling = 42;
    digest_of(&o, d1);
    CHECK(!strcmp(d0, d1), "reordered results, env and clocks: same digest");
    /* what does: a sample, the suite */
    o.results[2].samples_us[0] += 1;
    digest_of(&o, d1);
    CHECK(strcmp(d0, d1) != 0, "a changed sample changes the digest");
    o.results[2].samples_us[0] -= 1;
    rr_set(&o.suite, "other");
    digest_of(&o, d1);
    CHECK(strcmp(d0, d1) != 0, "another suite changes the digest");

    /* a record and its stored copy agree; a stored uuid is the same or a different run */
    int already = -1;
    int64_t id = 0, id2 = 0;
    CHECK(store_write_run(db, &r, "local", &already, &id, err, sizeof err) == 0 && already == STORE_RUN_NEW,
          "first write: %s", err);
    CHECK(store_run_digest_db(db, r.uuid, stored) == 0 && !strcmp(stored, d0), "stored copy digests the same");
    CHECK(store_run_digest_db(db, "00000000-0000-4000-8000-000000000000", stored) == -1, "unknown uuid");
    long long samples = t_count(db, "SELECT count(*) FROM sample");
    rr_set(&o.suite, r.suite);
    CHECK(store_write_run(db, &o, "upload", &already, &id2, err, sizeof err) == 0 && already == STORE_RUN_SAME &&
              id2 == id,
          "same content again: %s", err);
    o.results[0].samples_us[1] *= 2;
    CHECK(store_write_run(db, &o, "upload", &already, &id2, err, sizeof err) == 0 &&
              already == STORE_RUN_DIFFERENT && id2 == id,
          "other content, same uuid: %s", err);
    CHECK(t_count(db, "SELECT count(*) FROM run") == 1 && t_count(db, "SELECT count(*) FROM sample") == samples,
          "neither wrote anything");
    rr_free(&r);
    rr_free(&o);
    store_close(db);
}

/* Opening for writing without creating: a missing file and an empty one are refused as such. */
static void open_upgrade(void)
{
    char path[1024], err[512];
    t_db_path("upgrade", path, sizeof path);
    sqlite3 *db = NULL;
    CHECK(store_open_upgrade(path, &db, err, sizeof err) == STORE_MISSING && !db, "missing: %s", err);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    CHECK(store_open_upgrade(path, &db, err, sizeof err) == STORE_EMPTY && !db, "empty: %s", err);
    CHECK(store_open_version(path, 1, &db, err, sizeof err) == 0, "v1: %s", err);
    store_close(db);
    CHECK(store_open_upgrade(path, &db, err, sizeof err) == STORE_OK && db, "older store: %s", err);
    CHECK(t_count(db, "PRAGMA user_version") == store_latest_version(), "migrated");
    store_close(db);
}

int main(void)
{
    sha_vectors();
    run_digest();
    open_upgrade();
    return t_report("test_digest");
}
