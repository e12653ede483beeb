/* The one-machine launcher: the request checked, the ranks started with their variables,
 * waited for, and stopped together when one fails. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef VP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "dist/dist_impl.h"
#include "vulpes/launch.h"

extern char** environ;

/* Most ranks one launch starts (one per GPU of a machine, with room). */
#define VP_LAUNCH_MAX_RANKS 64

int vp_launch_cuda_devices(void) {
#ifdef VP_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
#else
    return 0;
#endif
}

/* What n ranks share of one run: DQN's learner, learn.batch and env.n_envs each in n equal
 * parts; `who` names the request in the messages ("--gpus 4", "4 ranks"), `unit` what one
 * rank is ("GPU", "rank"). */
static vp_status check_shares(const vp_config* cfg, int n, const char* who, const char* unit) {
    VP_REQUIRE(strcmp(cfg->train.algo, "dqn") == 0, VP_ERR_UNSUPPORTED,
               "%s: train.algo %s runs on one %s; the data-parallel learner is DQN's", who, cfg->train.algo, unit);
    VP_REQUIRE(cfg->learn.batch % n == 0, VP_ERR_INVALID_ARG,
               "%s: learn.batch = %lld is not divisible by %d (each rank takes learn.batch / %d)", who,
               (long long)cfg->learn.batch, n, n);
    VP_REQUIRE(cfg->env.n_envs % n == 0, VP_ERR_INVALID_ARG,
               "%s: env.n_envs = %lld is not divisible by %d (each rank steps env.n_envs / %d)", who,
               (long long)cfg->env.n_envs, n, n);
    return VP_OK;
}

vp_status vp_launch_check(const vp_config* cfg, int gpus, int devices) {
    VP_REQUIRE(cfg != NULL, VP_ERR_INVALID_ARG, "vp_launch_check: cfg is NULL");
    VP_REQUIRE(gpus >= 1, VP_ERR_INVALID_ARG, "--gpus %d: at least 1", gpus);
    if (gpus == 1) return VP_OK;
    VP_REQUIRE(gpus <= VP_LAUNCH_MAX_RANKS, VP_ERR_INVALID_ARG, "--gpus %d: at most %d ranks on one machine", gpus,
               VP_LAUNCH_MAX_RANKS);
    VP_REQUIRE(cfg->run.backend == VP_RUN_BACKEND_CUDA, VP_ERR_UNSUPPORTED,
               "--gpus %d needs run.backend cuda (or --backend cuda): each rank runs on its own GPU", gpus);
    VP_REQUIRE(gpus <= devices, VP_ERR_UNSUPPORTED, "--gpus %d: this machine shows %d CUDA device%s", gpus, devices,
               devices == 1 ? "" : "s");
    char who[32];
    snprintf(who, sizeof who, "--gpus %d", gpus);
    return check_shares(cfg, gpus, who, "GPU");
}

vp_status vp_launch_check_ranks(const vp_config* cfg, int ranks) {
    VP_REQUIRE(cfg != NULL && ranks >= 1, VP_ERR_INVALID_ARG, "vp_launch_check_ranks: cfg is NULL or %d ranks", ranks);
    if (ranks == 1) return VP_OK;
    char who[32];
    snprintf(who, sizeof who, "%d ranks", ranks);
    return check_shares(cfg, ranks, who, "rank");
}

vp_launch_opts vp_launch_opts_default(void) {
    vp_launch_opts o;
    memset(&o, 0, sizeof o);
    o.grace_s = 30.0;
    o.poll_s = 0.01;
    return o;
}

/* Seconds on the monotonic clock. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The variables the launcher sets (any inherited value of them is dropped). */
static const char* const RANK_VARS[] = {"VULPES_RANK=", "VULPES_WORLD_SIZE=", "VULPES_LOCAL_RANK=",
                                        "VULPES_LOCAL_SIZE=", "VULPES_RENDEZVOUS="};
#define N_RANK_VARS 5

/* One rank's environment: the process's, less the launcher's variables, plus rank k's. */
typedef struct rank_env {
    char** envp;                  /* [n_inherited + N_RANK_VARS + 1] NULL-terminated */
    char vars[N_RANK_VARS][1100]; /* the rank's own "NAME=value" strings */
} rank_env;

static int is_rank_var(const char* e) {
    for (int i = 0; i < N_RANK_VARS; ++i)
        if (strncmp(e, RANK_VARS[i], strlen(RANK_VARS[i])) == 0) return 1;
    return 0;
}

/* Builds rank k's environment before the fork (the child only points environ at it). */
static vp_status rank_env_make(rank_env* re, int k, int n, const char* rendezvous) {
    size_t count = 0;
    for (char** e = environ; *e; ++e) ++count;
    re->envp = (char**)calloc(count + N_RANK_VARS + 1, sizeof *re->envp);
    VP_REQUIRE(re->envp != NULL, VP_ERR_OOM, "vp_launch_spawn: out of host memory");
    size_t j = 0;
    for (char** e = environ; *e; ++e)
        if (!is_rank_var(*e)) re->envp[j++] = *e;
    snprintf(re->vars[0], sizeof re->vars[0], "VULPES_RANK=%d", k);
    snprintf(re->vars[1], sizeof re->vars[1], "VULPES_WORLD_SIZE=%d", n);
    snprintf(re->vars[2], sizeof re->vars[2], "VULPES_LOCAL_RANK=%d", k);
    snprintf(re->vars[3], sizeof re->vars[3], "VULPES_LOCAL_SIZE=%d", n);
    for (int i = 0; i < 4; ++i) re->envp[j++] = re->vars[i];
    if (rendezvous) {
        snprintf(re->vars[4], sizeof re->vars[4], "VULPES_RENDEZVOUS=%s", rendezvous);
        re->envp[j++] = re->vars[4];
    }
    re->envp[j] = NULL;
    return VP_OK;
}

/* Sends sig to every rank still running; returns how many it reached. */
static int signal_ranks(const pid_t* pid, const int* done, int n, int sig) {
    int sent = 0;
    for (int k = 0; k < n; ++k)
        if (!done[k] && pid[k] > 0 && kill(pid[k], sig) == 0) ++sent;
    return sent;
}

/* Waits for the ranks, stopping the others at the first failure or stop request. */
static void wait_ranks(const pid_t* pid, int n, const vp_launch_opts* o, vp_launch_result* r) {
    int done[VP_LAUNCH_MAX_RANKS] = {0};
    int left = n, forwarded = 0;
    double term_at = -1.0;
    int killed = 0;
    while (left > 0) {
        int any = 0;
        for (int k = 0; k < n; ++k) {
            if (done[k]) continue;
            int st = 0;
            pid_t w = waitpid(pid[k], &st, WNOHANG);
            if (w == 0 || (w < 0 && errno == EINTR)) continue;
            done[k] = 1;
            --left;
            any = 1;
            const int failed = w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
            if (failed && r->failed_rank < 0) {
                r->failed_rank = k;
                r->exit_code = (w > 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
                r->term_signal = (w > 0 && WIFSIGNALED(st)) ? WTERMSIG(st) : 0;
            }
        }
        // a failure: the others are told to stop, then killed after the grace
        if (r->failed_rank >= 0 && term_at < 0.0 && left > 0) {
            r->stopped += signal_ranks(pid, done, n, SIGTERM);
            term_at = now_s();
        }
        // a stop request of the launcher's own: forwarded once (not SIGINT: a terminal's Ctrl-C
        // already reached every rank of the process group, and a second one ends a rank at once)
        if (o->stop && *o->stop && !forwarded && left > 0) {
            if (*o->stop != SIGINT) signal_ranks(pid, done, n, (int)*o->stop);
            forwarded = 1;
            if (term_at < 0.0) term_at = now_s();
        }
        if (term_at >= 0.0 && !killed && left > 0 && now_s() - term_at > o->grace_s) {
            signal_ranks(pid, done, n, SIGKILL);
            killed = 1;
        }
        if (!any && left > 0) {
            struct timespec ts = {(time_t)o->poll_s, (long)((o->poll_s - (double)(time_t)o->poll_s) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
}

vp_status vp_launch_spawn(int n, char* const argv[], const char* rendezvous, const vp_launch_opts* opts,
                          vp_launch_result* res) {
    const char* fn = "vp_launch_spawn";
    VP_REQUIRE(n >= 1 && n <= VP_LAUNCH_MAX_RANKS, VP_ERR_INVALID_ARG, "%s: %d ranks (1 .. %d)", fn, n,
               VP_LAUNCH_MAX_RANKS);
    VP_REQUIRE(argv != NULL && argv[0] != NULL, VP_ERR_INVALID_ARG, "%s: argv is NULL or empty", fn);
    VP_REQUIRE(rendezvous == NULL || strlen(rendezvous) < VP_DIST_PATH_MAX, VP_ERR_INVALID_ARG,
               "%s: rendezvous path too long", fn);
    const vp_launch_opts o = opts ? *opts : vp_launch_opts_default();
    VP_REQUIRE(o.grace_s >= 0.0 && o.poll_s > 0.0 && o.poll_s < 10.0, VP_ERR_INVALID_ARG,
               "%s: grace %g s and poll %g s", fn, o.grace_s, o.poll_s);
    vp_launch_result r = {-1, 0, 0, 0};
    if (res) *res = r;
    // every rank's environment first: the children only exec
    rank_env* envs = (rank_env*)calloc((size_t)n, sizeof *envs);
    VP_REQUIRE(envs != NULL, VP_ERR_OOM, "%s: out of host memory", fn);
    vp_status s = VP_OK;
    for (int k = 0; k < n && s == VP_OK; ++k) s = rank_env_make(&envs[k], k, n, rendezvous);
    pid_t pid[VP_LAUNCH_MAX_RANKS];
    int started = 0;
    fflush(NULL);
    for (int k = 0; k < n && s == VP_OK; ++k) {
        pid_t p = fork();
        if (p == 0) {
            environ = envs[k].envp;
            execvp(argv[0], argv);
            _exit(127); // not found or not executable: the launcher reports exit 127
        }
        if (p < 0) {
            s = vp_set_error(VP_ERR_STATE, VP_WHERE, "%s: fork of rank %d failed: %s", fn, k, strerror(errno));
            break;
        }
        pid[started++] = p;
    }
    // a failed fork stops the ranks already started, as a failed rank does
    if (s != VP_OK && started > 0) {
        for (int k = 0; k < started; ++k) kill(pid[k], SIGTERM);
        for (int k = 0; k < started; ++k) waitpid(pid[k], NULL, 0);
    } else if (s == VP_OK) {
        wait_ranks(pid, n, &o, &r);
    }
    for (int k = 0; k < n; ++k) free(envs[k].envp);
    free(envs);
    if (res) *res = r;
    if (s != VP_OK) return s;
    if (r.failed_rank >= 0) {
        if (r.term_signal)
            VP_FAIL(VP_ERR_STATE, "rank %d of %d was killed by signal %d (%s); %d other rank%s stopped",
                    r.failed_rank, n, r.term_signal, strsignal(r.term_signal), r.stopped, r.stopped == 1 ? "" : "s");
        VP_FAIL(VP_ERR_STATE, "rank %d of %d exited with status %d%s; %d other rank%s stopped", r.failed_rank, n,
                r.exit_code, r.exit_code == 127 ? " (the program could not be started)" : "", r.stopped,
                r.stopped == 1 ? "" : "s");
    }
    return VP_OK;
}

vp_status vp_launch_self(int n, int argc, char** argv, const vp_launch_opts* opts, vp_launch_result* res) {
    const char* fn = "vp_launch_self";
    VP_REQUIRE(argc >= 1 && argv != NULL, VP_ERR_INVALID_ARG, "%s: no command line", fn);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    VP_REQUIRE(len > 0, VP_ERR_IO, "%s: cannot read /proc/self/exe: %s", fn, strerror(errno));
    exe[len] = '\0';
    char** av = (char**)calloc((size_t)argc + 2, sizeof *av);
    VP_REQUIRE(av != NULL, VP_ERR_OOM, "%s: out of host memory", fn);
    av[0] = exe;
    for (int i = 0; i < argc; ++i) av[i + 1] = argv[i];
    char rdv[1024];
    vp_status s = vp_launch_rendezvous_make(rdv, sizeof rdv);
    if (s == VP_OK) {
        s = vp_launch_spawn(n, av, rdv, opts, res);
        vp_launch_rendezvous_remove(rdv);
    }
    free(av);
    return s;
}

vp_status vp_launch_rendezvous_make(char* dir, size_t n) {
    VP_REQUIRE(dir != NULL && n > 0, VP_ERR_INVALID_ARG, "vp_launch_rendezvous_make: dir is NULL");
    const char* tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0]) tmp = "/tmp";
    int w = snprintf(dir, n, "%s/vulpes-rendezvous-XXXXXX", tmp);
    VP_REQUIRE(w > 0 && (size_t)w < n, VP_ERR_INVALID_ARG, "vp_launch_rendezvous_make: %s is too long a TMPDIR", tmp);
    VP_REQUIRE(mkdtemp(dir) != NULL, VP_ERR_IO, "vp_launch_rendezvous_make: cannot make %s: %s", dir,
               strerror(errno));
    return VP_OK;
}

void vp_launch_rendezvous_remove(const char* dir) {
    if (!dir || !dir[0]) return;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, VP_RENDEZVOUS_NCCL_ID);
    remove(path);
    rmdir(dir);
}
