/* vulpes: the run configuration (SPEC sections 1 and 8).
 *
 * Every key lives in one table below (an X-macro per section): its name, type, default,
 * allowed range and a line of documentation. The same table generates the typed struct
 * `vp_config` (cfg.learn.lr, cfg.model.hidden, ...), the runtime key table that loading,
 * overrides and printing walk, `vulpes config --defaults` and docs/config.md. Adding a
 * key is one row here.
 *
 * A configuration is a YAML mapping with a nested mapping per section (or dotted keys);
 * `key=value` overrides apply after the file. Unknown keys, wrong types, out-of-range
 * values, duplicate keys and malformed YAML are errors naming the key, the file and the
 * line (or "command line"), with the nearest known key for an unknown one. A config text
 * is UTF-8, at most VP_CONFIG_MAX_BYTES long and nested at most VP_CONFIG_DEPTH_MARGIN
 * levels below its deepest key; anchors, aliases and tags other than the core ones of a
 * key's type (!!str, !!int, !!float, !!bool) are refused, and so is every value that is
 * not UTF-8 text a config file can hold (from a file or the command line). */
#ifndef VULPES_CONFIG_H
#define VULPES_CONFIG_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Capacity of a string value, terminating NUL included. */
#define VP_CONFIG_STR_MAX 512

/* Largest value of an INT key whose range has no upper end (10^9): such keys are counts
 * (bars, steps, items) that the library may hold in int, so the sum of two still fits in
 * int and any product of two in int64. run.seed alone takes any int64 in its range. */
#define VP_CONFIG_INT_MAX 1000000000

/* Largest configuration text the loader reads (a file, or the config in a checkpoint's
 * metadata), in bytes. */
#define VP_CONFIG_MAX_BYTES (1 << 20)

/* Levels of nested mappings and lists the loader reads beyond the deepest key's
 * ("section.key": 2), enough to report a misplaced mapping or list under a key. */
#define VP_CONFIG_DEPTH_MARGIN 4

/* run.backend: where the run computes. */
typedef enum vp_run_backend {
    VP_RUN_BACKEND_AUTO = 0, /* the GPU when one is usable, else the CPU */
    VP_RUN_BACKEND_CPU,      /* the plain-C backend */
    VP_RUN_BACKEND_CUDA,     /* the CUDA backend (fails without a GPU) */
    VP_RUN_BACKEND_COUNT
} vp_run_backend;

/* run.precision: GEMM arithmetic on the GPU; the index order is vp_precision's (ops.h). */
typedef enum vp_run_precision {
    VP_RUN_PRECISION_FP32 = 0, /* full FP32 */
    VP_RUN_PRECISION_TF32,     /* TF32 tensor cores (FP32 on the CPU) */
    VP_RUN_PRECISION_BF16,     /* BF16 operands, FP32 accumulation */
    VP_RUN_PRECISION_COUNT
} vp_run_precision;

/* ---- the key table ----------------------------------------------------------------------
 * X(section, name, KIND, default, lo, hi, bounds, values, doc)
 *   KIND    INT (int64_t), FLOAT (double), BOOL (bool), STRING (char[VP_CONFIG_STR_MAX]),
 *           ENUM (int: the index of the value in `values`)
 *   default a number for INT / FLOAT, true / false for BOOL, a string for STRING / ENUM
 *   lo, hi  the allowed range of INT / FLOAT (INFINITY for none; an INT key's open upper
 *           end stops at VP_CONFIG_INT_MAX); `bounds` says whether each end is included:
 *           "[]", "[)", "(]" or "()"
 *   values  ENUM: the allowed values, "a|b|c"; NULL otherwise
 *   doc     one line */
#define VP_CFG_INF INFINITY

/* [data] the bar file. */
#define VP_CFG_KEYS_data(X)                                                                 \
    X(data, path, STRING, "", 0, 0, "[]", NULL,                                            \
      "CSV file of bars (time, open, high, low, close, volume), relative to the config "   \
      "file's folder (on the command line: to the working directory)")                     \
    X(data, price_side, ENUM, "mid", 0, 0, "[]", "mid|bid|ask",                             \
      "side of the book the bars' prices are: fills pay the spread from there")            \
    X(data, skip_bad_rows, BOOL, false, 0, 1, "[]", NULL,                                  \
      "drop and count rows that break a validation rule instead of failing")

/* [split] the train / val / test split by time. */
#define VP_CFG_KEYS_split(X)                                                                \
    X(split, train, FLOAT, 0.7, 0, 1, "(]", NULL, "fraction of the bars, oldest first, used for training") \
    X(split, val, FLOAT, 0.15, 0, 1, "[)", NULL, "fraction after the training span used for validation")  \
    X(split, test, FLOAT, 0.15, 0, 1, "[)", NULL, "fraction after the validation span held out for test") \
    X(split, embargo, INT, 0, 0, VP_CFG_INF, "[)", NULL, "bars left out between consecutive spans")

/* [features] feature normalisation. */
#define VP_CFG_KEYS_features(X)                                                             \
    X(features, window, INT, 256, 2, VP_CFG_INF, "[)", NULL,                               \
      "bars in the trailing window of the rolling z-score normalisation")

/* [instrument] the traded contract. */
#define VP_CFG_KEYS_instrument(X)                                                           \
    X(instrument, tick_size, FLOAT, 0.01, 0, VP_CFG_INF, "()", NULL, "smallest price increment") \
    X(instrument, multiplier, FLOAT, 1.0, 0, VP_CFG_INF, "()", NULL,                       \
      "currency per point of price per contract (point value)")                            \
    X(instrument, commission, FLOAT, 0.005, 0, VP_CFG_INF, "[)", NULL,                     \
      "commission per contract traded, in account currency")                                \
    X(instrument, slippage_ticks, FLOAT, 1.0, 0, VP_CFG_INF, "[)", NULL,                   \
      "ticks of slippage against the trader on every fill (stops and take-profits too)")    \
    X(instrument, spread_ticks, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                     \
      "bid-ask spread in ticks on every bar when the CSV has no spread (or bid and ask) column") \
    X(instrument, financing_long, FLOAT, 0.0, -1, 1, "[]", NULL,                           \
      "yearly rate on a long position's notional, charged per bar held (> 0 cost, < 0 credit)") \
    X(instrument, financing_short, FLOAT, 0.0, -1, 1, "[]", NULL,                          \
      "yearly rate on a short position's notional, charged per bar held (> 0 cost, < 0 credit)") \
    X(instrument, max_leverage, FLOAT, 20.0, 0, VP_CFG_INF, "[)", NULL,                    \
      "largest position notional / equity an order growing the position may reach (it is cut); 0: none") \
    X(instrument, max_position, FLOAT, 100.0, 0, VP_CFG_INF, "()", NULL,                   \
      "largest position in contracts (the size branch picks 0.25..1 of it)")               \
    X(instrument, initial_equity, FLOAT, 100000.0, 0, VP_CFG_INF, "()", NULL,              \
      "account equity at the start of every episode and backtest")

/* [env] episodes and rewards. */
#define VP_CFG_KEYS_env(X)                                                                  \
    X(env, n_envs, INT, 4096, 1, VP_CFG_INF, "[)", NULL, "environments stepped together")  \
    X(env, episode_bars, INT, 1024, 2, VP_CFG_INF, "[)", NULL,                             \
      "bars in one episode window (random start inside the training span)")                \
    X(env, ruin_fraction, FLOAT, 0.5, 0, 1, "[)", NULL,                                    \
      "an episode ends when equity falls below this fraction of initial_equity; a "       \
      "backtest or validation window at or below it is closed out at the next open")     \
    X(env, reward_scale, FLOAT, 100.0, 0, VP_CFG_INF, "()", NULL,                          \
      "reward = equity change / initial_equity x reward_scale")                            \
    X(env, drawdown_penalty, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                        \
      "weight of the per-step increase in drawdown subtracted from the reward")            \
    X(env, turnover_penalty, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                        \
      "weight of the contracts traded (as a fraction of max_position) subtracted from the reward")

/* [model] the agent network (SPEC section 4). */
#define VP_CFG_KEYS_model(X)                                                                \
    X(model, window, INT, 8, 1, 4096, "[]", NULL, "bars seen per decision (K)")            \
    X(model, hidden, INT, 256, 1, 65536, "[]", NULL, "trunk width (H)")                    \
    X(model, encoder, ENUM, "mamba2", 0, 0, "[]", "mamba2|tlob|none",                      \
      "market encoder over the K bars' trunk rows: the Mamba2 mixer, the TLOB dual-attention " \
      "blocks, or none (the last bar's trunk output only); replaces model.use_mamba (docs/model.md)") \
    X(model, mamba_state, INT, 16, 1, 1024, "[]", NULL, "Mamba2 state size (N)")           \
    X(model, mamba_head_dim, INT, 64, 1, 65536, "[]", NULL, "Mamba2 head width; must divide model.hidden") \
    X(model, mamba_conv, INT, 4, 1, 64, "[]", NULL, "Mamba2 causal depthwise convolution width") \
    X(model, tlob_blocks, INT, 2, 1, 16, "[]", NULL, "TLOB: dual-attention blocks (model.encoder = tlob)") \
    X(model, tlob_heads, INT, 4, 1, 128, "[]", NULL,                                       \
      "TLOB: heads of the temporal attention over the K bars; must divide model.hidden")   \
    X(model, tlob_feature_heads, INT, 1, 1, 64, "[]", NULL,                                \
      "TLOB: heads of the feature attention over the H trunk features; must divide model.window") \
    X(model, tlob_mlp, INT, 4, 1, 16, "[]", NULL, "TLOB: MLP expansion (width x tlob_mlp, GELU)") \
    X(model, head_hidden, INT, 128, 1, 65536, "[]", NULL,                                  \
      "hidden width of the value, advantage and IQN MLPs")                                 \
    X(model, n_atoms, INT, 51, 2, 4096, "[]", NULL, "C51 atoms (Z)")                       \
    X(model, v_min, FLOAT, -10.0, -VP_CFG_INF, VP_CFG_INF, "()", NULL, "lowest C51 atom")  \
    X(model, v_max, FLOAT, 10.0, -VP_CFG_INF, VP_CFG_INF, "()", NULL, "highest C51 atom")  \
    X(model, iqn_taus, INT, 64, 1, 4096, "[]", NULL, "IQN quantile samples of the online network") \
    X(model, iqn_target_taus, INT, 64, 1, 4096, "[]", NULL,                                \
      "IQN quantile samples of the target network")                                        \
    X(model, iqn_cos, INT, 64, 1, 4096, "[]", NULL, "cosine features of the IQN tau embedding") \
    /* head modules (task M2; docs/modules.md) */                                          \
    X(model, stoch_depth, FLOAT, 0.0, 0, 1, "[)", NULL,                                    \
      "stochastic depth: drop probability of the Mamba2 residual branch per sample in training (0: off)") \
    X(model, q_denoise, BOOL, false, 0, 1, "[]", NULL,                                     \
      "Q-denoise refinement: residual MLP A -> 2A -> A over the C51 Q that picks actions") \
    X(model, cross_branch, BOOL, false, 0, 1, "[]", NULL,                                  \
      "cross-branch messages between the branch representations before the advantage outputs") \
    X(model, risk_budget, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                           \
      "risk-budget head: CVaR budget (reward units) of the sigmoid scaler of the chosen size (0: off)") \
    VP_CFG_KEYS_model_input(X)

/* [model] the input modules (docs/modules.md, "Input modules"), each off by default. */
#define VP_CFG_KEYS_model_input(X)                                                          \
    X(model, vsn, BOOL, false, 0, 1, "[]", NULL,                                           \
      "variable selection: a softmax gate over the features of each bar before the trunk") \
    X(model, vsn_hidden, INT, 16, 1, 65536, "[]", NULL, "hidden width of the variable selection network") \
    X(model, spectral_norm, BOOL, false, 0, 1, "[]", NULL,                                 \
      "divide the trunk's linear weights by their spectral norm (one power iteration per learner step)") \
    X(model, kan, BOOL, false, 0, 1, "[]", NULL,                                           \
      "a B-spline KAN layer in place of the trunk's first linear layer")                   \
    X(model, kan_grid, INT, 5, 1, 64, "[]", NULL, "grid intervals of the KAN splines")     \
    X(model, kan_order, INT, 3, 0, 5, "[]", NULL, "order of the KAN splines (3: cubic)")   \
    X(model, kan_range, FLOAT, 3.0, 0, VP_CFG_INF, "()", NULL,                             \
      "the KAN grid spans [-kan_range, kan_range] (features are z-scores)")

/* [learn] the learner step: optimiser, target network, returns. */
#define VP_CFG_KEYS_learn(X)                                                                \
    X(learn, batch, INT, 8192, 1, VP_CFG_INF, "[)", NULL, "transitions per learner step (B)") \
    X(learn, lr, FLOAT, 1e-4, 0, VP_CFG_INF, "()", NULL, "AdamW learning rate")            \
    X(learn, beta1, FLOAT, 0.9, 0, 1, "[)", NULL, "AdamW first-moment decay")              \
    X(learn, beta2, FLOAT, 0.999, 0, 1, "[)", NULL, "AdamW second-moment decay")           \
    X(learn, eps, FLOAT, 1.5e-4, 0, VP_CFG_INF, "()", NULL, "AdamW epsilon")               \
    X(learn, weight_decay, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL, "AdamW decoupled weight decay") \
    X(learn, clip_norm, FLOAT, 10.0, 0, VP_CFG_INF, "[)", NULL,                            \
      "global gradient-norm clip (PyTorch semantics); 0 turns it off")                     \
    X(learn, tau, FLOAT, 0.005, 0, 1, "(]", NULL, "Polyak target update rate per learner step") \
    X(learn, gamma, FLOAT, 0.99, 0, 1, "[]", NULL, "discount per step")                    \
    X(learn, n_step, INT, 3, 1, 256, "[]", NULL, "steps in the n-step return")            \
    /* learner modules (issue 16; docs/modules.md), each off by default */                 \
    X(learn, adaptive_atoms, BOOL, false, 0, 1, "[]", NULL,                                \
      "adaptive atom spacing: per-branch learned C51 support (softmax spacing logits) on [v_min, v_max]") \
    X(learn, popart, BOOL, false, 0, 1, "[]", NULL,                                        \
      "PopArt: C51 and IQN targets normalised by running return statistics; IQN output layer rescaled to keep its outputs") \
    X(learn, popart_beta, FLOAT, 3e-4, 0, 1, "(]", NULL,                                   \
      "PopArt: rate of the running mean and second moment of the targets per learner step") \
    X(learn, lr_schedule, ENUM, "constant", 0, 0, "[]", "constant|cosine|warmup_cosine",   \
      "learning rate over the run's learner steps (computed on the device each step)")     \
    X(learn, warmup_steps, INT, 0, 0, VP_CFG_INF, "[)", NULL,                              \
      "learner steps of the linear warm-up of lr_schedule warmup_cosine")

/* [signals] the training-signal bus and its rules (docs/modules.md); all off by default. */
#define VP_CFG_KEYS_signals(X)                                                              \
    X(signals, enable, BOOL, false, 0, 1, "[]", NULL,                                      \
      "write the training-signal bus each learner step and log it (any rule turns it on)") \
    X(signals, every, INT, 100, 1, 1000000, "[]", NULL,                                    \
      "learner steps between applications of the rules, counted on the device")           \
    X(signals, fast_rate, FLOAT, 0.1, 0, 1, "(]", NULL, "rate of the fast EMAs of loss and TD error") \
    X(signals, slow_rate, FLOAT, 0.01, 0, 1, "(]", NULL, "rate of the slow EMAs of loss and TD error") \
    X(signals, adapt_tau, BOOL, false, 0, 1, "[]", NULL,                                   \
      "Polyak tau from the online-target Q divergence, within [tau_min, tau_max]")         \
    X(signals, tau_min, FLOAT, 1e-4, 0, 1, "(]", NULL, "smallest tau of the tau rule")     \
    X(signals, tau_max, FLOAT, 0.05, 0, 1, "(]", NULL, "largest tau of the tau rule")      \
    X(signals, div_ref, FLOAT, 0.1, 0, VP_CFG_INF, "()", NULL,                             \
      "Q divergence, in Q standard deviations, at which the tau rule gives learn.tau")     \
    X(signals, adapt_epsilon, BOOL, false, 0, 1, "[]", NULL,                               \
      "scale the scheduled epsilon by 1 + eps_gain x TD-error trend")                      \
    X(signals, eps_gain, FLOAT, 1.0, -VP_CFG_INF, VP_CFG_INF, "()", NULL,                  \
      "epsilon scale per unit of TD-error trend")                                          \
    X(signals, eps_scale_min, FLOAT, 0.5, 0, VP_CFG_INF, "[)", NULL, "smallest epsilon scale") \
    X(signals, eps_scale_max, FLOAT, 2.0, 0, VP_CFG_INF, "[)", NULL, "largest epsilon scale") \
    X(signals, adapt_gamma, BOOL, false, 0, 1, "[]", NULL,                                 \
      "move the bootstrap's gamma against the loss trend, within [gamma_min, gamma_max]")  \
    X(signals, gamma_min, FLOAT, 0.9, 0, 1, "(]", NULL, "smallest gamma of the gamma rule") \
    X(signals, gamma_max, FLOAT, 0.999, 0, 1, "(]", NULL, "largest gamma of the gamma rule") \
    X(signals, gamma_rate, FLOAT, 0.01, -VP_CFG_INF, VP_CFG_INF, "()", NULL,               \
      "gamma step per unit of loss trend at each application")                             \
    X(signals, kelly, BOOL, false, 0, 1, "[]", NULL,                                       \
      "cap the collection's position size at kelly_fraction x edge / variance of the greedy return") \
    X(signals, kelly_fraction, FLOAT, 0.5, 0, VP_CFG_INF, "()", NULL, "fraction of the Kelly bet") \
    X(signals, kelly_min, FLOAT, 0.1, 0, 1, "[]", NULL, "smallest Kelly cap (a factor on max_position)")

/* [replay] the replay ring and prioritised sampling. */
#define VP_CFG_KEYS_replay(X)                                                               \
    X(replay, capacity, INT, 1048576, 1, VP_CFG_INF, "[)", NULL, "transitions the replay ring holds") \
    X(replay, prioritized, BOOL, true, 0, 1, "[]", NULL, "prioritised sampling; false: uniform") \
    X(replay, alpha, FLOAT, 0.6, 0, 1, "[]", NULL, "priority exponent")                    \
    X(replay, beta0, FLOAT, 0.4, 0, 1, "[]", NULL, "importance-sampling exponent at the start") \
    X(replay, beta_steps, INT, 20000, 1, VP_CFG_INF, "[)", NULL,                           \
      "learner steps over which beta anneals linearly to 1")                               \
    X(replay, warmup, INT, 65536, 1, VP_CFG_INF, "[)", NULL,                               \
      "transitions collected before the first learner step")

/* [collect] exploration while collecting. */
#define VP_CFG_KEYS_collect(X)                                                              \
    X(collect, epsilon_start, FLOAT, 1.0, 0, 1, "[]", NULL, "exploration rate at the start") \
    X(collect, epsilon_end, FLOAT, 0.05, 0, 1, "[]", NULL, "exploration rate after annealing") \
    X(collect, epsilon_steps, INT, 10000, 0, VP_CFG_INF, "[)", NULL,                       \
      "collection steps (each steps all n_envs envs) over which epsilon anneals linearly")

/* [curiosity] the forward-model intrinsic reward (ICM, docs/modules.md "Curiosity"). */
#define VP_CFG_KEYS_curiosity(X)                                                            \
    X(curiosity, enabled, BOOL, false, 0, 1, "[]", NULL,                                   \
      "add eta x the forward model's error on the next portfolio vector to each collected reward") \
    X(curiosity, eta, FLOAT, 0.01, 0, VP_CFG_INF, "[)", NULL,                              \
      "scale of the intrinsic reward eta x 0.5 ||f - p'||^2")                              \
    X(curiosity, hidden, INT, 128, 1, 65536, "[]", NULL, "hidden width of the forward model's MLP") \
    X(curiosity, lr, FLOAT, 1e-3, 0, VP_CFG_INF, "()", NULL,                               \
      "AdamW learning rate of the forward model (one step per learner step)")

/* [her] goal-conditioned training with hindsight relabelling (docs/modules.md "Hindsight relabelling"). */
#define VP_CFG_KEYS_her(X)                                                                  \
    X(her, enabled, BOOL, false, 0, 1, "[]", NULL,                                         \
      "condition the policy on a goal episode return and relabel sampled goals with the achieved one") \
    X(her, ratio, FLOAT, 0.8, 0, 1, "[]", NULL,                                            \
      "probability that a sampled transition of a finished episode has its goal relabelled") \
    X(her, lambda, FLOAT, 1.0, 0, VP_CFG_INF, "[)", NULL,                                  \
      "weight of the goal term -lambda |R_ep - g| added at the step that ends an episode")  \
    X(her, goal, FLOAT, 0.0, -VP_CFG_INF, VP_CFG_INF, "()", NULL,                          \
      "goal g given at collection: a target episode return in reward units (sum of the env's rewards)") \
    X(her, eval_goal, FLOAT, 0.0, -VP_CFG_INF, VP_CFG_INF, "()", NULL,                     \
      "goal the policy is conditioned on in validation, the test span and backtests")      \
    X(her, episodes, INT, 64, 1, 65536, "[]", NULL,                                        \
      "finished episodes each env remembers for relabelling (older ones are not relabelled)")

/* [ppo] PPO (train.algo ppo; docs/ppo.md); it shares learn.lr, beta1, beta2, eps, weight_decay,
 * clip_norm and gamma and ignores the replay, collect and learn.batch keys. */
#define VP_CFG_KEYS_ppo(X)                                                                  \
    X(ppo, rollout_steps, INT, 128, 1, VP_CFG_INF, "[)", NULL,                             \
      "steps of every env collected per iteration (T): a rollout of n_envs x T rows")        \
    X(ppo, epochs, INT, 4, 1, VP_CFG_INF, "[)", NULL, "passes over the rollout per iteration") \
    X(ppo, minibatches, INT, 4, 1, VP_CFG_INF, "[)", NULL,                                 \
      "minibatches per epoch (must divide n_envs x rollout_steps)")                        \
    X(ppo, clip, FLOAT, 0.2, 0, VP_CFG_INF, "()", NULL, "clip range of the probability ratio") \
    X(ppo, vf_clip, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                                 \
      "clip range of the value around the collected value; 0: the plain squared error")    \
    X(ppo, ent_coef, FLOAT, 0.01, 0, VP_CFG_INF, "[)", NULL, "entropy bonus coefficient")  \
    X(ppo, vf_coef, FLOAT, 0.5, 0, VP_CFG_INF, "[)", NULL, "value loss coefficient")       \
    X(ppo, gae_lambda, FLOAT, 0.95, 0, 1, "[]", NULL, "lambda of GAE(lambda)")              \
    X(ppo, target_kl, FLOAT, 0.0, 0, VP_CFG_INF, "[)", NULL,                               \
      "stop an iteration's epochs once approx_kl exceeds it; 0: off")                      \
    X(ppo, norm_adv, BOOL, true, 0, 1, "[]", NULL, "normalise the advantages per minibatch")

/* [iql] IQL, offline from a recorded dataset (train.algo iql; docs/iql.md); it shares learn.lr,
 * beta1, beta2, eps, weight_decay, clip_norm and gamma, and train.train_steps as its updates per
 * iteration, and ignores the replay and collect keys. */
#define VP_CFG_KEYS_iql(X)                                                                  \
    X(iql, dataset, STRING, "", 0, 0, "[]", NULL,                                          \
      "the dataset `vulpes record` wrote on the training span (required for train.algo iql)") \
    X(iql, expectile, FLOAT, 0.7, 0, 1, "()", NULL, "tau of the value's expectile regression") \
    X(iql, beta, FLOAT, 3.0, 0, VP_CFG_INF, "[)", NULL,                                    \
      "inverse temperature of the policy's advantage weights exp(beta A)")                  \
    X(iql, adv_clip, FLOAT, 100.0, 0, VP_CFG_INF, "()", NULL,                              \
      "largest advantage weight: min(exp(beta A), adv_clip)")                              \
    X(iql, tau_polyak, FLOAT, 0.005, 0, 1, "(]", NULL,                                     \
      "Polyak rate of the target Q heads after each update")                               \
    X(iql, batch, INT, 256, 0, VP_CFG_INF, "[)", NULL,                                     \
      "dataset rows per update, drawn with replacement; 0: learn.batch")
/* [dt] the Decision Transformer (train.algo dt; docs/dt.md): offline, from a recorded dataset; it
 * shares learn.lr, beta1, beta2, eps, weight_decay and clip_norm; one update per iteration. */
#define VP_CFG_KEYS_dt(X)                                                                   \
    X(dt, dataset, STRING, "", 0, 0, "[]", NULL,                                           \
      "the recorded dataset (vulpes record) it trains on; required, recorded on the training span") \
    X(dt, context, INT, 20, 1, 64, "[]", NULL, "K: steps per sequence (3K tokens)")          \
    X(dt, layers, INT, 3, 1, 16, "[]", NULL, "transformer blocks")                          \
    X(dt, heads, INT, 1, 1, 4, "[]", NULL, "attention heads, 1 to 4 (must divide dt.embed)") \
    X(dt, embed, INT, 128, 1, 4096, "[]", NULL, "token width D")                            \
    X(dt, batch, INT, 64, 1, 8192, "[]", NULL, "sequences per update")                      \
    X(dt, target_return, STRING, "best", 0, 0, "[]", NULL,                                  \
      "return-to-go the policy is conditioned on in evaluation: a number, or best (the dataset's best episode return)")

/* [train] the training loop. */
#define VP_CFG_KEYS_train(X)                                                                \
    X(train, algo, STRING, "dqn", 0, 0, "[]", NULL,                                        \
      "the training algorithm, an entry of the table in src/learn/algo.c (dqn, ppo, iql, dt)")           \
    X(train, iterations, INT, 20000, 1, VP_CFG_INF, "[)", NULL,                            \
      "iterations of collect + learner steps")                                             \
    X(train, train_steps, INT, 1, 0, VP_CFG_INF, "[)", NULL, "learner steps per iteration") \
    X(train, collect_steps, INT, 1, 0, VP_CFG_INF, "[)", NULL,                             \
      "collection steps per iteration (each steps all n_envs envs)")                       \
    X(train, eval_every, INT, 500, 0, VP_CFG_INF, "[)", NULL,                              \
      "iterations between validations (0: only at the end)")                               \
    X(train, checkpoint_every, INT, 2000, 0, VP_CFG_INF, "[)", NULL,                       \
      "iterations between checkpoints (0: only at the end)")                               \
    X(train, log_every, INT, 100, 1, VP_CFG_INF, "[)", NULL,                               \
      "iterations between metrics.jsonl lines")

/* [run] seed, backend and run folder. */
#define VP_CFG_KEYS_run(X)                                                                  \
    X(run, seed, INT, 1, 0, VP_CFG_INF, "[)", NULL,                                       \
      "seed of every random draw (same seed, config and backend: same numbers)")           \
    X(run, backend, ENUM, "auto", 0, 0, "[]", "auto|cpu|cuda",                             \
      "where to compute: auto takes the GPU when one is usable")                           \
    X(run, out, STRING, "", 0, 0, "[]", NULL,                                              \
      "run folder; empty: runs/YYYYmmdd-HHMMSS-NAME")                                      \
    X(run, name, STRING, "", 0, 0, "[]", NULL,                                             \
      "NAME in the default run folder; empty: the config file's name")                    \
    X(run, precision, ENUM, "tf32", 0, 0, "[]", "fp32|tf32|bf16",                          \
      "GEMM arithmetic on the GPU (the CPU always computes in FP32); bf16 is refused for now: " \
      "BF16 products take bf16 operands and the networks keep f32 activations")          \
    X(run, devices, STRING, "", 0, 0, "[]", NULL,                                          \
      "CUDA devices that walkforward folds, ablate runs and search trials spread over, "   \
      "a comma list of indices (0,2); empty: every visible device")

/* [walkforward] fold layout of `vulpes walkforward` (its flags of the same names override). */
#define VP_CFG_KEYS_walkforward(X)                                                          \
    X(walkforward, train_bars, INT, 0, 0, VP_CFG_INF, "[)", NULL,                         \
      "bars of each fold's train span (vulpes walkforward needs it > 0)")                  \
    X(walkforward, val_bars, INT, 0, 0, VP_CFG_INF, "[)", NULL,                           \
      "bars of each fold's validation span (vulpes walkforward needs it > 0)")             \
    X(walkforward, test_bars, INT, 0, 0, VP_CFG_INF, "[)", NULL,                          \
      "bars of each fold's test span (vulpes walkforward needs it > 0)")                   \
    X(walkforward, step_bars, INT, 0, 0, VP_CFG_INF, "[)", NULL,                          \
      "bars between the starts of consecutive folds; 0: test_bars, so test spans tile")    \
    X(walkforward, embargo_bars, INT, -1, -1, VP_CFG_INF, "[)", NULL,                     \
      "bars left out between the spans of a fold; -1: split.embargo")                      \
    X(walkforward, anchored, BOOL, false, 0, 1, "[]", NULL,                                \
      "every train span starts at the first usable bar and grows fold by fold")            \
    X(walkforward, warm_start, BOOL, false, 0, 1, "[]", NULL,                              \
      "a fold starts training from the previous fold's selected parameters")               \
    X(walkforward, max_folds, INT, 0, 0, VP_CFG_INF, "[)", NULL,                          \
      "at most this many folds, the first ones; 0: every fold that fits")                 \
    X(walkforward, parallel, INT, 1, 1, VP_CFG_INF, "[)", NULL,                            \
      "folds trained at once (each on its own backend stream); 1: one after another")

/* [metrics] how results are measured. */
#define VP_CFG_KEYS_metrics(X)                                                              \
    X(metrics, risk_free_rate, FLOAT, 0.0, -1, 1, "[]", NULL,                              \
      "yearly risk-free rate subtracted in Sharpe and Sortino (always stated beside them)")

/* The sections, in file order. */
#define VP_CONFIG_SECTIONS(S)                                                               \
    S(data) S(split) S(features) S(instrument) S(env) S(model) S(learn) S(signals) S(replay) \
    S(collect) S(curiosity) S(her) S(ppo) S(iql) S(train) S(walkforward) S(metrics) S(run) \
    S(dt)

/* ---- the typed struct, generated from the table ---------------------------------------- */

/* The C type of a key of each KIND, and one struct vp_config_SECTION per section. */
#define VP_CFG_FIELD_INT(name) int64_t name;
#define VP_CFG_FIELD_FLOAT(name) double name;
#define VP_CFG_FIELD_BOOL(name) bool name;
#define VP_CFG_FIELD_STRING(name) char name[VP_CONFIG_STR_MAX];
#define VP_CFG_FIELD_ENUM(name) int name;
#define VP_CFG_FIELD_(sec, name, kind, def, lo, hi, bounds, values, doc) VP_CFG_FIELD_##kind(name)
#define VP_CFG_SECTION_STRUCT_(sec) \
    typedef struct vp_config_##sec { VP_CFG_KEYS_##sec(VP_CFG_FIELD_) } vp_config_##sec;
VP_CONFIG_SECTIONS(VP_CFG_SECTION_STRUCT_)

/* One member per section in vp_config. */
#define VP_CFG_MEMBER_(sec) vp_config_##sec sec;

/* A whole configuration: one sub-struct per section, one field per key. */
typedef struct vp_config {
    VP_CONFIG_SECTIONS(VP_CFG_MEMBER_)
} vp_config;

/* ---- the runtime key table --------------------------------------------------------------- */

/* Type of a key's value. */
typedef enum vp_config_kind {
    VP_CONFIG_INT = 0, /* int64_t */
    VP_CONFIG_FLOAT,   /* double, never NaN */
    VP_CONFIG_BOOL,    /* bool */
    VP_CONFIG_STRING,  /* char[VP_CONFIG_STR_MAX] */
    VP_CONFIG_ENUM,    /* int, index into `values` */
    VP_CONFIG_KIND_COUNT
} vp_config_kind;

/* One key of the table. */
typedef struct vp_config_key {
    const char* name;     /* dotted name, "learn.lr" */
    vp_config_kind kind;  /* value type */
    size_t offset;        /* byte offset of the field in vp_config */
    double def_num;       /* default of INT, FLOAT, BOOL */
    const char* def_str;  /* default of STRING and ENUM (NULL for the others) */
    double lo, hi;        /* allowed range of INT and FLOAT */
    const char* bounds;   /* "[]", "[)", "(]" or "()": which ends of [lo, hi] are allowed */
    const char* values;   /* ENUM: "a|b|c"; NULL otherwise */
    const char* doc;      /* one line */
} vp_config_key;

/* Number of keys in the table. */
int vp_config_key_count(void);

/* Key `i` of the table (0 <= i < vp_config_key_count()), in file order; NULL out of range. */
const vp_config_key* vp_config_key_at(int i);

/* The key named `name` ("learn.lr"); NULL when there is none. */
const vp_config_key* vp_config_find_key(const char* name);

/* The known key nearest to `name` by edit distance (whole dotted name, or the last part
 * under another section); never NULL. */
const vp_config_key* vp_config_nearest_key(const char* name);

/* Name of the ENUM value `index` of key `k` written into buf[n]; returns buf ("" when out
 * of range). */
const char* vp_config_enum_name(const vp_config_key* k, int index, char* buf, size_t n);

/* ---- values --------------------------------------------------------------------------------- */

/* Fills every key with its default. */
void vp_config_defaults(vp_config* cfg);

/* Writes key `k`'s value in `cfg` as it appears in YAML into buf[n] (strings unquoted);
 * returns buf. */
const char* vp_config_format_value(const vp_config* cfg, const vp_config_key* k, char* buf, size_t n);

/* The first key whose value differs between `a` and `b`, NULL when they are equal. */
const vp_config_key* vp_config_diff(const vp_config* a, const vp_config* b);

/* Sets key `name` from its text `value` (a YAML plain scalar: 3, 1e-4, true, cpu, a path).
 * Unknown key, wrong type or out of range: VP_ERR_INVALID_ARG with a message starting with
 * `source` ("command line", "run.yaml:12"). Cross-key rules are vp_config_check's. */
vp_status vp_config_set(vp_config* cfg, const char* name, const char* value, const char* source);

/* Applies one "key=value" command-line override (source "command line"). */
vp_status vp_config_override(vp_config* cfg, const char* assignment);

/* Checks the rules that tie keys together (split fractions sum to at most 1,
 * v_min < v_max, mamba_head_dim divides hidden, ...); the message names the keys. */
vp_status vp_config_check(const vp_config* cfg);

/* ---- YAML -------------------------------------------------------------------------------------- */

/* Applies the YAML file at `path` on top of `cfg` (unset keys keep their value); on an
 * error `cfg` is unchanged. A relative data.path the file sets is taken relative to the
 * file's folder (data/x.csv in examples/a.yaml is examples/data/x.csv). Errors (VP_ERR_IO,
 * VP_ERR_PARSE, VP_ERR_INVALID_ARG) name the file, the line (and the column for anchors,
 * aliases, nesting and bad bytes) and the key. */
vp_status vp_config_load_file(vp_config* cfg, const char* path);

/* Same as vp_config_load_file for YAML text `yaml` (`name` stands for the file in
 * messages; data.path is kept as written). */
vp_status vp_config_load_string(vp_config* cfg, const char* yaml, const char* name);

/* Defaults, then the file at `path` (NULL: none), then the "key=value" strings
 * overrides [n_overrides] in order, then vp_config_check. */
vp_status vp_config_resolve(vp_config* cfg, const char* path, int n_overrides, char* const* overrides);

/* Makes data.path absolute, as a run records it (config.yaml, checkpoints): a relative path
 * resolved against the working directory (realpath; joined to it when the file is absent);
 * "", synth: specs and absolute paths unchanged. Fails when the result exceeds a string key. */
vp_status vp_config_absolute_data_path(vp_config* cfg);

/* How vp_config_print writes a configuration. */
typedef enum vp_config_style {
    VP_CONFIG_STYLE_YAML = 0, /* every key, nested by section */
    VP_CONFIG_STYLE_DOCS,     /* the same, each key preceded by its doc, type and range */
    VP_CONFIG_STYLE_MARKDOWN, /* a table per section: key, type, default, range, doc */
    VP_CONFIG_STYLE_COUNT
} vp_config_style;

/* Writes `cfg` to `out` in `style` (MARKDOWN shows cfg's values as the defaults column). */
vp_status vp_config_print(const vp_config* cfg, vp_config_style style, FILE* out);

/* The YAML text of `cfg` (STYLE_YAML) in a malloc'd string the caller frees (for a
 * checkpoint's metadata). */
vp_status vp_config_to_yaml(const vp_config* cfg, char** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_CONFIG_H */
