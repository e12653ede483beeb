/* What a training run checks and decides before it starts: its folder, whether a folder can
 * be resumed, and whether the data's scales fit the arithmetic of training. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "learn/train_checks.h"

/* The run folder: the resume folder, --out / run.out, or runs/YYYYmmdd-HHMMSS-NAME. */
vp_status vp_train_pick_dir(const vp_config* cfg, const vp_train_opts* o, char* dir, size_t n) {
    if (o->run_dir && o->run_dir[0]) {
        snprintf(dir, n, "%s", o->run_dir);
        return VP_OK;
    }
    VP_REQUIRE(o->mode != VP_RUN_RESUME, VP_ERR_INVALID_ARG, "a resume needs the run folder to continue");
    if (cfg->run.out[0]) {
        snprintf(dir, n, "%s", cfg->run.out);
        return VP_OK;
    }
    char name[256];
    if (!cfg->run.name[0]) vp_run_name_from_path(o->config_path, name, sizeof name);
    else VP_REQUIRE(snprintf(name, sizeof name, "%s", cfg->run.name) < (int)sizeof name, VP_ERR_INVALID_ARG,
                    "run.name '%.40s...' is too long", cfg->run.name);
    return vp_run_dir_default(dir, n, "runs", name, time(NULL));
}

/* A resume needs DIR/last.safetensors: said first of a folder that is no run at all (no
 * config.yaml); in a run's folder the claim comes first, so a run in progress is reported as
 * in use, and the load under the lock names what is missing. */
vp_status vp_train_check_resumable(const char* dir) {
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    if (access(path, R_OK) == 0) return VP_OK;
    snprintf(path, sizeof path, "%s/last.safetensors", dir);
    VP_REQUIRE(access(path, R_OK) == 0, VP_ERR_IO, "cannot resume '%s': cannot read %s: %s", dir, path,
               strerror(errno));
    return VP_OK;
}

/* Refuses scales that no double or float carries, before anything is made: the largest
 * notional (prices x instrument.multiplier x instrument.max_position) must stay far inside
 * the double range, instrument.initial_equity must be a normal number, and the reward of a
 * bar that moves by the whole price at full size (notional / initial_equity x
 * env.reward_scale) must fit a float with room (1e30), or every learner step is NaN. */
vp_status vp_train_check_scales(const vp_config* cfg, const vp_train_data* d) {
    const vp_bars* b = &d->bars;
    double pmax = 0.0;
    for (int64_t i = 0; i < b->n; ++i) {
        const double p[4] = {b->open[i], b->high[i], b->low[i], b->close[i]};
        for (int k = 0; k < 4; ++k) pmax = fabs(p[k]) > pmax || isnan(p[k]) ? fabs(p[k]) : pmax;
    }
    const double mult = cfg->instrument.multiplier, pos = cfg->instrument.max_position;
    const double eq = cfg->instrument.initial_equity, scale = cfg->env.reward_scale;
    const double notional = pmax * mult * pos;
    VP_REQUIRE(isfinite(notional) && notional < 1e300, VP_ERR_INVALID_ARG,
               "%s: the bars' prices (up to %g) x instrument.multiplier (%g) x instrument.max_position (%g) = %g "
               "overflow double arithmetic: rescale the prices or the instrument",
               d->source, pmax, mult, pos, notional);
    VP_REQUIRE(isnormal(eq), VP_ERR_INVALID_ARG,
               "instrument.initial_equity = %g is subnormal: equity, returns and rewards would not be finite", eq);
    const double reward = notional / eq * scale;
    VP_REQUIRE(isfinite(reward) && reward <= 1e30, VP_ERR_INVALID_ARG,
               "%s: a bar moving by its price at full size is a reward of %g (prices up to %g x "
               "instrument.multiplier %g x instrument.max_position %g / instrument.initial_equity %g x "
               "env.reward_scale %g), beyond what float rewards carry (1e30): every learner step would be NaN",
               d->source, reward, pmax, mult, pos, eq, scale);
    return VP_OK;
}

const char* vp_train_dqn_switch(const vp_config* cfg) {
    const vp_config_signals* sg = &cfg->signals;
    return cfg->learn.adaptive_atoms     ? "learn.adaptive_atoms"
           : cfg->learn.popart           ? "learn.popart"
           : cfg->learn.lr_schedule != 0 ? "learn.lr_schedule"
           : cfg->curiosity.enabled      ? "curiosity.enabled"
           : cfg->her.enabled            ? "her.enabled"
           : sg->enable                  ? "signals.enable"
           : sg->adapt_tau               ? "signals.adapt_tau"
           : sg->adapt_epsilon           ? "signals.adapt_epsilon"
           : sg->adapt_gamma             ? "signals.adapt_gamma"
           : sg->kelly                   ? "signals.kelly"
                                         : NULL;
}
