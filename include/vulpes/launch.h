/* vulpes: starting the ranks of a data-parallel run on one machine (`vulpes train CONFIG
 * --gpus N`; docs/distributed.md). The request is checked first, with nothing made; then N
 * copies of a program start with the rank variables vp_dist reads, and the launcher waits for
 * them all, stopping the others when one fails. */
#ifndef VULPES_LAUNCH_H
#define VULPES_LAUNCH_H

#include <signal.h>
#include <stddef.h>

#include "vulpes/config.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA devices this process sees (0 in a build without CUDA or on a machine without a GPU). */
int vp_launch_cuda_devices(void);

/* Checks `--gpus gpus` against a resolved config and `devices` visible GPUs, changing nothing:
 * gpus >= 1; more than 1 needs run.backend cuda, at most `devices` GPUs, train.algo dqn, and
 * learn.batch and env.n_envs divisible by gpus. The message names the rule and the values. */
vp_status vp_launch_check(const vp_config* cfg, int gpus, int devices);

/* Checks a run of `ranks` ranks of any backend against a resolved config, changing nothing:
 * train.algo dqn, and learn.batch and env.n_envs divisible by ranks (ranks 1: nothing). The
 * message names the rule and the values (a CPU rank under mpirun, before it connects). */
vp_status vp_launch_check_ranks(const vp_config* cfg, int ranks);

/* Launcher options; vp_launch_opts_default fills them. */
typedef struct vp_launch_opts {
    double grace_s;                      /* after SIGTERM, seconds a rank has to end before SIGKILL (30) */
    double poll_s;                       /* seconds between checks of the ranks (0.01) */
    const volatile sig_atomic_t* stop;   /* non-zero: forward that signal to every rank once, SIGINT excepted (a
                                            terminal's Ctrl-C reaches the ranks itself); then the grace (NULL: none) */
} vp_launch_opts;

/* Defaults: 30 s grace, 10 ms polls, no stop flag. */
vp_launch_opts vp_launch_opts_default(void);

/* What became of the ranks. */
typedef struct vp_launch_result {
    int failed_rank;  /* the first rank seen to fail, or -1 when every rank exited 0 */
    int exit_code;    /* its exit code (-1 when a signal ended it) */
    int term_signal;  /* the signal that ended it (0 when it exited) */
    int stopped;      /* ranks the launcher sent SIGTERM (or SIGKILL after the grace) */
} vp_launch_result;

/* Starts n copies of argv (argv[0] found on PATH as execvp does; NULL-terminated), rank k with
 * VULPES_RANK=k, VULPES_WORLD_SIZE=n, VULPES_LOCAL_RANK=k, VULPES_LOCAL_SIZE=n and, when
 * rendezvous is not NULL, VULPES_RENDEZVOUS=rendezvous, and waits for all of them. When one
 * exits non-zero or is killed, the others get SIGTERM (SIGKILL after the grace), and the call
 * returns VP_ERR_STATE naming the rank and its status; *res (may be NULL) tells the same. */
vp_status vp_launch_spawn(int n, char* const argv[], const char* rendezvous, const vp_launch_opts* opts,
                          vp_launch_result* res);

/* `vulpes COMMAND ... --gpus n` on one machine: a fresh rendezvous folder, then n copies of this
 * program (/proc/self/exe) with argv[0 .. argc) after it (the command first), through
 * vp_launch_spawn; the folder is removed at the end. */
vp_status vp_launch_self(int n, int argc, char** argv, const vp_launch_opts* opts, vp_launch_result* res);

/* Makes a fresh, empty rendezvous folder under $TMPDIR (else /tmp) into dir[n]. */
vp_status vp_launch_rendezvous_make(char* dir, size_t n);

/* Removes a rendezvous folder made by vp_launch_rendezvous_make and the NCCL id in it. */
void vp_launch_rendezvous_remove(const char* dir);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_LAUNCH_H */
