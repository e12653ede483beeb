/* The one-machine launcher on small /bin/sh programs: every rank's variables, exit codes, a
 * failing rank stopping the others, a program that cannot start; the request checks of
 * `--gpus N`; the file rendezvous; the one-rank communicator. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist_impl.h"
#include "vp_test.h"

static char g_dir[256]; /* scratch folder of this test */

/* Reads file path into buf[n] ("" when absent). */
static void read_text(const char* path, char* buf, size_t n) {
    buf[0] = '\0';
    FILE* f = fopen(path, "r");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every rank sees its own rank variables and the rendezvous; inherited values are replaced. */
static void test_env_per_rank(void) {
    setenv("VULPES_RANK", "7", 1); // a stale value the launcher must not pass on
    char script[1024];
    snprintf(script, sizeof script,
             "echo \"$VULPES_RANK $VULPES_WORLD_SIZE $VULPES_LOCAL_RANK $VULPES_LOCAL_SIZE $VULPES_RENDEZVOUS "
             "$KEEP_ME\" > %s/rank$VULPES_RANK.txt",
             g_dir);
    setenv("KEEP_ME", "kept", 1);
    char* argv[] = {"/bin/sh", "-c", script, NULL};
    vp_launch_result r;
    CHECK_OK(vp_launch_spawn(3, argv, "/shared/rdv", NULL, &r));
    CHECK(r.failed_rank == -1 && r.stopped == 0, "failed_rank %d stopped %d", r.failed_rank, r.stopped);
    for (int k = 0; k < 3; ++k) {
        char path[512], got[256], want[256];
        snprintf(path, sizeof path, "%s/rank%d.txt", g_dir, k);
        read_text(path, got, sizeof got);
        snprintf(want, sizeof want, "%d 3 %d 3 /shared/rdv kept\n", k, k);
        CHECK(strcmp(got, want) == 0, "rank %d wrote '%s', expected '%s'", k, got, want);
    }
    unsetenv("VULPES_RANK");
    // without a rendezvous the variable is absent
    snprintf(script, sizeof script, "echo \"[${VULPES_RENDEZVOUS-unset}]\" > %s/nordv$VULPES_RANK.txt", g_dir);
    setenv("VULPES_RENDEZVOUS", "/stale", 1);
    char* argv2[] = {"/bin/sh", "-c", script, NULL};
    CHECK_OK(vp_launch_spawn(1, argv2, NULL, NULL, NULL));
    unsetenv("VULPES_RENDEZVOUS");
    char path[512], got[64];
    snprintf(path, sizeof path, "%s/nordv0.txt", g_dir);
    read_text(path, got, sizeof got);
    CHECK(strcmp(got, "[unset]\n") == 0, "rank 0 saw '%s'", got);
}

/* A rank that exits 3 fails the launch by name, and the others, still running, are stopped. */
static void test_failing_rank_stops_others(void) {
    char script[1024];
    // rank 1 fails after 1 s (the others have set their traps by then); the others would sleep 60 s
    // and then leave a file
    snprintf(script, sizeof script,
             "if [ \"$VULPES_RANK\" = 1 ]; then sleep 1; exit 3; fi; trap 'kill $!; echo term > %s/term$VULPES_RANK.txt; exit 143' TERM; "
             "sleep 60 & wait; echo done > %s/done$VULPES_RANK.txt",
             g_dir, g_dir);
    char* argv[] = {"/bin/sh", "-c", script, NULL};
    vp_launch_result r;
    const double t0 = now_s();
    CHECK_STATUS(vp_launch_spawn(3, argv, NULL, NULL, &r), VP_ERR_STATE, "rank 1 of 3 exited with status 3");
    const double took = now_s() - t0;
    CHECK(took < 20.0, "the launch took %.1f s: the others were not stopped", took);
    CHECK(r.failed_rank == 1 && r.exit_code == 3 && r.term_signal == 0, "failed_rank %d exit %d signal %d",
          r.failed_rank, r.exit_code, r.term_signal);
    CHECK(r.stopped == 2, "stopped %d ranks, expected 2", r.stopped);
    CHECK(strstr(vp_last_error(), "2 other ranks stopped") != NULL, "message '%s'", vp_last_error());
    for (int k = 0; k < 3; k += 2) {
        char path[512], got[64];
        snprintf(path, sizeof path, "%s/term%d.txt", g_dir, k);
        read_text(path, got, sizeof got);
        CHECK(strcmp(got, "term\n") == 0, "rank %d did not get SIGTERM ('%s')", k, got);
        snprintf(path, sizeof path, "%s/done%d.txt", g_dir, k);
        struct stat st;
        CHECK(stat(path, &st) != 0, "rank %d ran to its end", k);
    }
}

/* A rank that ignores SIGTERM is killed after the grace; a killed rank is reported by signal. */
static void test_grace_and_signal(void) {
    char script[512];
    snprintf(script, sizeof script, "if [ \"$VULPES_RANK\" = 0 ]; then sleep 1; kill -9 $$; fi; trap '' TERM; exec sleep 30");
    char* argv[] = {"/bin/sh", "-c", script, NULL};
    vp_launch_opts o = vp_launch_opts_default();
    o.grace_s = 0.5;
    vp_launch_result r;
    const double t0 = now_s();
    CHECK_STATUS(vp_launch_spawn(2, argv, NULL, &o, &r), VP_ERR_STATE, "rank 0 of 2 was killed by signal 9");
    CHECK(now_s() - t0 < 15.0, "the stubborn rank was not killed after the grace (%.1f s)", now_s() - t0);
    CHECK(r.stopped == 1, "stopped %d ranks, expected 1", r.stopped);
    CHECK(r.failed_rank == 0 && r.term_signal == SIGKILL && r.exit_code == -1, "failed %d signal %d exit %d",
          r.failed_rank, r.term_signal, r.exit_code);
}

/* A program that cannot start is exit 127, named. */
static void test_cannot_start(void) {
    char* argv[] = {"/nonexistent/vulpes-binary", NULL};
    vp_launch_result r;
    CHECK_STATUS(vp_launch_spawn(2, argv, NULL, NULL, &r), VP_ERR_STATE, "could not be started");
    CHECK(r.exit_code == 127, "exit %d", r.exit_code);
    char* empty[] = {NULL};
    CHECK_STATUS(vp_launch_spawn(1, empty, NULL, NULL, NULL), VP_ERR_INVALID_ARG, "argv is NULL or empty");
    char* ok[] = {"/bin/true", NULL};
    CHECK_STATUS(vp_launch_spawn(0, ok, NULL, NULL, NULL), VP_ERR_INVALID_ARG, "0 ranks");
}

static volatile sig_atomic_t g_stop = 0; /* the launcher's stop flag in test_stop_forwarded */

static void on_alarm(int sig) {
    (void)sig;
    g_stop = SIGHUP;
}

/* A stop request of the launcher's own reaches every rank. */
static void test_stop_forwarded(void) {
    char script[512];
    snprintf(script, sizeof script, "trap 'kill $!; echo hup > %s/hup$VULPES_RANK.txt; exit 129' HUP; sleep 30 & wait",
             g_dir);
    char* argv[] = {"/bin/sh", "-c", script, NULL};
    // the request arrives 1 s in, once the ranks have set their traps
    g_stop = 0;
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 0}, {1, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    vp_launch_opts o = vp_launch_opts_default();
    o.stop = &g_stop;
    vp_launch_result r;
    CHECK_STATUS(vp_launch_spawn(2, argv, NULL, &o, &r), VP_ERR_STATE, "exited with status 129");
    signal(SIGALRM, SIG_DFL);
    for (int k = 0; k < 2; ++k) {
        char path[512], got[64];
        snprintf(path, sizeof path, "%s/hup%d.txt", g_dir, k);
        read_text(path, got, sizeof got);
        CHECK(strcmp(got, "hup\n") == 0, "rank %d did not get SIGHUP ('%s')", k, got);
    }
}

/* The checks of a `--gpus N` request, each naming its rule. */
static void test_check(void) {
    vp_config cfg;
    vp_config_defaults(&cfg);
    cfg.learn.batch = 64;
    cfg.env.n_envs = 12;
    CHECK_OK(vp_launch_check(&cfg, 1, 0)); // one rank: today's run, on any backend
    CHECK_STATUS(vp_launch_check(&cfg, 0, 8), VP_ERR_INVALID_ARG, "--gpus 0: at least 1");
    CHECK_STATUS(vp_launch_check(&cfg, 2, 8), VP_ERR_UNSUPPORTED, "--gpus 2 needs run.backend cuda");
    cfg.run.backend = VP_RUN_BACKEND_CUDA;
    CHECK_OK(vp_launch_check(&cfg, 2, 2));
    CHECK_OK(vp_launch_check(&cfg, 4, 8));
    CHECK_STATUS(vp_launch_check(&cfg, 4, 2), VP_ERR_UNSUPPORTED, "--gpus 4: this machine shows 2 CUDA devices");
    CHECK_STATUS(vp_launch_check(&cfg, 2, 0), VP_ERR_UNSUPPORTED, "this machine shows 0 CUDA devices");
    CHECK_STATUS(vp_launch_check(&cfg, 3, 8), VP_ERR_INVALID_ARG, "learn.batch = 64 is not divisible by 3");
    cfg.learn.batch = 48;
    CHECK_STATUS(vp_launch_check(&cfg, 8, 8), VP_ERR_INVALID_ARG, "env.n_envs = 12 is not divisible by 8");
    snprintf(cfg.train.algo, sizeof cfg.train.algo, "ppo");
    CHECK_STATUS(vp_launch_check(&cfg, 2, 8), VP_ERR_UNSUPPORTED, "train.algo ppo runs on one GPU");
    CHECK_STATUS(vp_launch_check(&cfg, 65, 100), VP_ERR_INVALID_ARG, "at most 64 ranks");
}

/* The rendezvous: publish then wait reads the record; a stale record, a wrong size and a
 * timeout are refused by name. */
static void test_rendezvous(void) {
    char rdv[512];
    CHECK_OK(vp_launch_rendezvous_make(rdv, sizeof rdv));
    struct stat st;
    CHECK(stat(rdv, &st) == 0 && S_ISDIR(st.st_mode), "no folder %s", rdv);
    // nothing there yet: a short wait times out, naming the file
    char buf[16];
    CHECK_STATUS(vp_rendezvous_wait(rdv, VP_RENDEZVOUS_NCCL_ID, buf, sizeof buf, 0.05), VP_ERR_IO,
                 "did not appear within 0.05 s");
    // a writer in another process after a delay; the reader waits for it
    pid_t p = fork();
    if (p == 0) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        _exit(vp_rendezvous_publish(rdv, VP_RENDEZVOUS_NCCL_ID, "0123456789abcdef", 16) == VP_OK ? 0 : 1);
    }
    CHECK_OK(vp_rendezvous_wait(rdv, VP_RENDEZVOUS_NCCL_ID, buf, sizeof buf, 10.0));
    CHECK(memcmp(buf, "0123456789abcdef", 16) == 0, "read back '%.16s'", buf);
    int st_child = 0;
    waitpid(p, &st_child, 0);
    CHECK(WIFEXITED(st_child) && WEXITSTATUS(st_child) == 0, "the publisher failed");
    // a second publish into the same folder: a stale record
    CHECK_STATUS(vp_rendezvous_publish(rdv, VP_RENDEZVOUS_NCCL_ID, "x", 1), VP_ERR_STATE, "already exists");
    // a record of another size
    char small[8];
    CHECK_STATUS(vp_rendezvous_wait(rdv, VP_RENDEZVOUS_NCCL_ID, small, sizeof small, 1.0), VP_ERR_PARSE,
                 "holds 16 bytes, expected 8");
    CHECK_STATUS(vp_rendezvous_publish("/nonexistent/rdv", "id", "x", 1), VP_ERR_IO, "does not exist");
    CHECK_STATUS(vp_rendezvous_publish("", "id", "x", 1), VP_ERR_INVALID_ARG, "VULPES_RENDEZVOUS is unset");
    vp_launch_rendezvous_remove(rdv);
    CHECK(stat(rdv, &st) != 0, "%s left behind", rdv);
}

/* One rank: the communicator needs nothing and its collectives leave the data as it was;
 * more ranks on the CPU outside mpirun are refused by name (a build with MPI: they run under
 * mpirun; without: they need MPI), as NCCL forced on the CPU is. */
static void test_comm_one_rank(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    vp_dist d = vp_dist_single();
    vp_comm* c = NULL;
    CHECK_OK(vp_comm_init(&c, &d, b, NULL));
    CHECK(vp_comm_get_kind(c) == VP_COMM_LOCAL && vp_comm_rank(c) == 0 && vp_comm_size(c) == 1, "kind %s",
          vp_comm_kind_name(vp_comm_get_kind(c)));
    float x[5] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-20f};
    const float x0[5] = {1.5f, -2.0f, 3.25f, 0.0f, 1e-20f};
    int64_t n = 5;
    vp_tensor t = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, n);
    CHECK_OK(vp_comm_allreduce_sum(c, &t));
    CHECK_OK(vp_comm_broadcast(c, &t, 0));
    CHECK(memcmp(x, x0, sizeof x) == 0, "one rank's collectives changed the data");
    CHECK_STATUS(vp_comm_broadcast(c, &t, 1), VP_ERR_INVALID_ARG, "root 1 is not a rank of 1");
    vp_tensor ti = vp_tensor_1d(x, VP_I32, VP_MEM_HOST, n);
    CHECK_STATUS(vp_comm_allreduce_sum(c, &ti), VP_ERR_INVALID_ARG, "vp_comm_allreduce_sum");
    vp_comm_free(c);
    // more ranks on the CPU: MPI's, under mpirun only (tests/test_cli_dist_mpi.sh runs them)
    d.size = 2;
    d.local_size = 2;
    d.source = VP_DIST_VULPES;
    CHECK_STATUS(vp_comm_init(&c, &d, b, NULL), VP_ERR_UNSUPPORTED, "2 ranks on the CPU backend");
    CHECK(strstr(vp_last_error(), "mpirun") != NULL, "the refusal does not name mpirun: %s", vp_last_error());
    CHECK(c == NULL, "a refused communicator was returned");
    vp_comm_opts o = vp_comm_opts_default();
    o.force_nccl = 1;
    d = vp_dist_single();
    CHECK_STATUS(vp_comm_init(&c, &d, b, &o), VP_ERR_UNSUPPORTED, "need the CUDA backend");
    CHECK(vp_comm_size(NULL) == 1 && vp_comm_rank(NULL) == 0 && vp_comm_get_kind(NULL) == VP_COMM_LOCAL, "NULL");
    vp_backend_free(b);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/vp_test_dist_launch_%ld", (long)getpid());
    mkdir(g_dir, 0755);
    RUN_TEST(test_env_per_rank);
    RUN_TEST(test_failing_rank_stops_others);
    RUN_TEST(test_grace_and_signal);
    RUN_TEST(test_cannot_start);
    RUN_TEST(test_stop_forwarded);
    RUN_TEST(test_check);
    RUN_TEST(test_rendezvous);
    RUN_TEST(test_comm_one_rank);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return vpt_finish();
}
