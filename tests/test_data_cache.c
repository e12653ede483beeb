/* Tests of the binary bar cache: hits, invalidation, damage, unwritable folders, the
 * folder choice, and that nothing is written next to the source. */
#include "test_data_util.h"

#include "vp_test.h"
#include "vulpes/synth.h"

static int g_warnings = 0;
static void count_warnings(vp_log_level level, const char* msg, void* user) {
    (void)msg;
    (void)user;
    if (level >= VP_LOG_WARN) g_warnings++;
}

/* A folder with src/bars.csv (3000 synthetic bars, exact digits) and an empty cache/. */
typedef struct fixture {
    char dir[64];     /* the temp folder */
    char src[256];    /* the CSV */
    char cache[256];  /* the cache folder (not created) */
    vp_bars bars;     /* what was written */
} fixture;

static int fixture_make(fixture* f) {
    if (!tdu_mkdtemp(f->dir, sizeof f->dir)) return 0;
    char srcdir[128];
    snprintf(srcdir, sizeof srcdir, "%s/src", f->dir);
    snprintf(f->src, sizeof f->src, "%s/bars.csv", srcdir);
    snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
    vp_synth_cfg c = vp_synth_cfg_default(VP_SYNTH_REGIME);
    return mkdir(srcdir, 0755) == 0 && vp_synth_generate(&c, 3000, &f->bars, NULL) == VP_OK &&
           vp_bars_save_csv(&f->bars, f->src, -1) == VP_OK;
}

static void fixture_free(fixture* f) {
    vp_bars_free(&f->bars);
    tdu_rmtree(f->dir);
}

static vp_load_opts cache_opts(const fixture* f) {
    vp_load_opts o = vp_load_opts_default();
    o.cache_dir = f->cache;
    return o;
}

static void test_hit_and_invalidation(void) {
    fixture f;
    CHECK(fixture_make(&f), "fixture");
    vp_load_opts o = cache_opts(&f);
    vp_bars a, b;
    vp_load_report ra, rb;

    /* First load parses and writes the cache; the second reads it, bit for bit the same. */
    CHECK_OK(vp_bars_load_csv(f.src, &o, &a, &ra));
    CHECK(ra.from_cache == 0 && ra.cache_path[0] != '\0', "first load parses, writes %s", ra.cache_path);
    CHECK(tdu_count_entries(f.cache) == 1, "one cache file");
    CHECK(tdu_bars_equal(&a, &f.bars), "parsed bars equal the written ones");
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &rb));
    CHECK(rb.from_cache == 1 && strcmp(ra.cache_path, rb.cache_path) == 0, "second load from the cache");
    CHECK(tdu_bars_equal(&a, &b), "cache gives identical bars");
    CHECK(rb.rows_read == 3000 && rb.rows_kept == 3000 && rb.has_volume == 1 &&
              strcmp(rb.time_format, ra.time_format) == 0 && rb.spacing.interval_ms == 3600000,
          "report rebuilt from the cache");
    vp_bars_free(&b);

    /* Same size, one digit changed: the content hash catches it and the file is parsed again. */
    FILE* fp = fopen(f.src, "r+b");
    CHECK(fp != NULL, "reopen source");
    if (fp) {
        fseek(fp, -3, SEEK_END);
        int ch = fgetc(fp);
        fseek(fp, -3, SEEK_END);
        fputc(ch == '1' ? '2' : '1', fp);
        fclose(fp);
    }
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &rb));
    CHECK(rb.from_cache == 0, "changed content re-parsed");
    CHECK(b.n == 3000 && b.volume[2999] != a.volume[2999] && b.close[2999] == a.close[2999], "new value seen");
    vp_bars_free(&b);
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &rb));
    CHECK(rb.from_cache == 1 && b.volume[2999] != a.volume[2999], "rewritten cache used");
    vp_bars_free(&b);

    /* Appended row: size differs, parsed again. */
    fp = fopen(f.src, "ab");
    if (fp) {
        fputs("2100-01-01T00:00:00Z,1,2,0.5,1.5,7\n", fp);
        fclose(fp);
    }
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &rb));
    CHECK(rb.from_cache == 0 && b.n == 3001 && b.volume[3000] == 7.0, "appended row parsed");
    vp_bars_free(&b);

    /* Caching off: nothing read or written. */
    vp_load_opts off = o;
    off.use_cache = 0;
    CHECK_OK(vp_bars_load_csv(f.src, &off, &b, &rb));
    CHECK(rb.from_cache == 0 && rb.cache_path[0] == '\0', "cache off");
    vp_bars_free(&b);

    /* Nothing was ever written next to the source. */
    char srcdir[128];
    snprintf(srcdir, sizeof srcdir, "%s/src", f.dir);
    CHECK(tdu_count_entries(srcdir) == 1, "source folder untouched (%d entries)", tdu_count_entries(srcdir));
    vp_bars_free(&a);
    fixture_free(&f);
}

static void test_damaged_cache(void) {
    fixture f;
    CHECK(fixture_make(&f), "fixture");
    vp_load_opts o = cache_opts(&f);
    vp_bars b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &r));
    vp_bars_free(&b);
    vp_log_set_callback(count_warnings, NULL);

    /* A flipped byte in the columns: the payload hash refuses it. */
    FILE* fp = fopen(r.cache_path, "r+b");
    CHECK(fp != NULL, "open cache");
    if (fp) {
        fseek(fp, -100, SEEK_END);
        int ch = fgetc(fp);
        fseek(fp, -100, SEEK_END);
        fputc(ch ^ 0x55, fp);
        fclose(fp);
    }
    g_warnings = 0;
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &r));
    CHECK(r.from_cache == 0 && g_warnings == 1 && tdu_bars_equal(&b, &f.bars), "flipped byte: warned %d, re-parsed",
          g_warnings);
    vp_bars_free(&b);

    /* A truncated file: refused the same way. */
    CHECK(truncate(r.cache_path, 3000) == 0, "truncate");
    g_warnings = 0;
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &r));
    CHECK(r.from_cache == 0 && g_warnings == 1 && tdu_bars_equal(&b, &f.bars), "truncated: warned %d", g_warnings);
    vp_bars_free(&b);
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &r));
    CHECK(r.from_cache == 1, "healed");
    vp_bars_free(&b);

    /* An unwritable cache folder (under a regular file) only warns. */
    char blocked[320], filepath[300];
    CHECK(tdu_write(f.dir, "plainfile", "x", filepath, sizeof filepath), "plain file");
    snprintf(blocked, sizeof blocked, "%s/sub", filepath);
    o.cache_dir = blocked;
    g_warnings = 0;
    CHECK_OK(vp_bars_load_csv(f.src, &o, &b, &r));
    CHECK(g_warnings == 1 && r.from_cache == 0 && r.cache_path[0] == '\0' && tdu_bars_equal(&b, &f.bars),
          "unwritable folder: %d warnings", g_warnings);
    vp_bars_free(&b);
    vp_log_set_callback(NULL, NULL);
    fixture_free(&f);
}

static void test_cache_folder_choice(void) {
    char buf[512];
    const char* saved_home = getenv("HOME");
    char home[256];
    snprintf(home, sizeof home, "%s", saved_home ? saved_home : "");
    vp_load_opts o = vp_load_opts_default();

    /* The option wins, then VULPES_CACHE_DIR, then XDG_CACHE_HOME/vulpes, then ~/.cache/vulpes. */
    setenv("VULPES_CACHE_DIR", "/tmp/vc1", 1);
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    setenv("HOME", "/tmp/home", 1);
    o.cache_dir = "/tmp/opt";
    CHECK(vp_cache_dir(&o, buf, sizeof buf) == VP_OK && strcmp(buf, "/tmp/opt") == 0, "option: %s", buf);
    o.cache_dir = NULL;
    CHECK(vp_cache_dir(&o, buf, sizeof buf) == VP_OK && strcmp(buf, "/tmp/vc1") == 0, "env: %s", buf);
    unsetenv("VULPES_CACHE_DIR");
    CHECK(vp_cache_dir(&o, buf, sizeof buf) == VP_OK && strcmp(buf, "/tmp/xdg/vulpes") == 0, "xdg: %s", buf);
    unsetenv("XDG_CACHE_HOME");
    CHECK(vp_cache_dir(NULL, buf, sizeof buf) == VP_OK && strcmp(buf, "/tmp/home/.cache/vulpes") == 0, "home: %s", buf);
    unsetenv("HOME");
    CHECK_STATUS(vp_cache_dir(NULL, buf, sizeof buf), VP_ERR_IO, "VULPES_CACHE_DIR");
    if (home[0]) setenv("HOME", home, 1);

    /* A load through VULPES_CACHE_DIR writes there. */
    fixture f;
    CHECK(fixture_make(&f), "fixture");
    setenv("VULPES_CACHE_DIR", f.cache, 1);
    vp_bars b;
    vp_load_report r;
    CHECK_OK(vp_bars_load_csv(f.src, NULL, &b, &r));
    CHECK(strncmp(r.cache_path, f.cache, strlen(f.cache)) == 0 && tdu_count_entries(f.cache) == 1, "written to %s",
          r.cache_path);
    vp_bars_free(&b);
    unsetenv("VULPES_CACHE_DIR");
    fixture_free(&f);
}

/* Dropped rows are remembered: a skipping load may use the entry, a strict one may not. */
static void test_cache_with_dropped_rows(void) {
    char dir[64], cache[128];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temp dir");
    snprintf(cache, sizeof cache, "%s/cache", dir);
    vp_load_opts o = vp_load_opts_default();
    o.cache_dir = cache;
    o.skip_bad_rows = 1;
    vp_bars a, b;
    vp_load_report ra, rb;
    CHECK_OK(vp_bars_load_csv("tests/data/bad_mixed.csv", &o, &a, &ra));
    CHECK_OK(vp_bars_load_csv("tests/data/bad_mixed.csv", &o, &b, &rb));
    CHECK(ra.from_cache == 0 && rb.from_cache == 1, "second load from the cache");
    CHECK(rb.rows_read == 9 && rb.rows_dropped == 5 && rb.n_reasons == 5 && strcmp(ra.reasons[3], rb.reasons[3]) == 0,
          "drop counts and reasons cached");
    CHECK(tdu_bars_equal(&a, &b), "same bars");
    vp_bars_free(&a);
    vp_bars_free(&b);
    o.skip_bad_rows = 0;
    CHECK_STATUS(vp_bars_load_csv("tests/data/bad_mixed.csv", &o, &b, &rb), VP_ERR_PARSE,
                 "line 3, column 3 (High): high < low");
    tdu_rmtree(dir);
}

int main(void) {
    RUN_TEST(test_hit_and_invalidation);
    RUN_TEST(test_damaged_cache);
    RUN_TEST(test_cache_folder_choice);
    RUN_TEST(test_cache_with_dropped_rows);
    return vpt_finish();
}
