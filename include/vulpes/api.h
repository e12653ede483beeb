/* vulpes: a flat C API for foreign callers (Python's ctypes, C++, Rust) in the shared library
 * libvulpes.so.
 *
 * Only opaque handles, plain pointers, integers, doubles and C strings cross it: no struct of
 * the library is part of it. Every function that can fail returns 0 on success or a vp_status
 * code (vulpes/status.h: 1 VP_ERR_INVALID_ARG ... 10 VP_ERR_STATE); vp_api_last_error() then
 * says what failed and where, for a user. Handles are used from one thread at a time; the error
 * message is per thread. Shapes are row-major; float means IEEE float32, int32 means int32_t.
 *
 * What is here: a checkpoint's network on the CPU (the C forward: Q per action head, C51
 * log-probabilities, IQN quantiles, and its parameters by name), a vector of market
 * environments on the CPU or on CUDA (vulpes/env.h) with its observation buffers in the
 * backend's memory, and the training and backtest jobs (`vulpes train`, `vulpes backtest`)
 * writing a run folder, and a search space read as `vulpes search` reads it (the Optuna bridge's).
 * docs/python.md describes the Python package built on it. */
#ifndef VULPES_API_H
#define VULPES_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this API: bumped when a function changes (the library's own is vulpes/version.h). */
#define VP_API_VERSION 1

/* VP_API_VERSION of the library loaded (a caller checks it against the one it was written for). */
int vp_api_version(void);

/* The calling thread's last error message without the developer's source location tail
 * (" (VP_ERR_..., file.c:123)"), which stays when the environment sets VULPES_DEBUG=1. Valid until
 * the thread's next call into the library; "" when nothing failed. */
const char* vp_api_last_error(void);

/* The name of a status code ("VP_ERR_IO"; "VP_OK" for 0). */
const char* vp_api_status_name(int status);

/* ---- a checkpoint's network on the CPU ---------------------------------------------------------- */

/* An open network: the checkpoint's model configuration and parameters on the CPU backend. */
typedef struct vp_api_model vp_api_model;

/* Opens `checkpoint` (best.safetensors or last.safetensors of a training run: checksum, the config
 * in its metadata, the parameters checked against the network that config makes) into *out. The
 * forward runs in full FP32. A PPO checkpoint (train.algo ppo) opens as its actor-critic
 * (vulpes/ppo.h), an IQL checkpoint (train.algo iql) as its network (vulpes/iql.h). Close with
 * vp_api_model_close. */
int vp_api_model_open(const char* checkpoint, vp_api_model** out);

/* Frees a network (NULL is a no-op). */
void vp_api_model_close(vp_api_model* m);

/* A model configuration value by its vp_model_cfg field name (vulpes/model.h) into *out:
 * "n_features" F, "n_portfolio" P, "window" K, "hidden", "encoder" (0 mamba2 / 1 tlob / 2 none), "mamba_state",
 * "mamba_head_dim", "mamba_conv", "head_hidden", "n_atoms" Z, "v_min", "v_max", "n_branches",
 * "branch_size0" .. "branch_size7", "iqn_cos", "ln_eps", "rms_eps", "n_heads" (A, the sum of
 * the branch sizes), the input modules' "vsn", "vsn_hidden", "spectral_norm", "kan" (0 / 1),
 * "kan_grid", "kan_order", "kan_range", and the head modules' "stoch_depth", "q_denoise",
 * "cross_branch" (0 / 1) and "risk_budget", and "adaptive_atoms" (0 / 1), the TLOB encoder's
 * "tlob_blocks", "tlob_heads", "tlob_feature_heads", "tlob_mlp"; "ppo" is 1 for a PPO
 * actor-critic, "iql" 1 for an IQL network. An unknown name is VP_ERR_INVALID_ARG naming it. */
int vp_api_model_cfg(const vp_api_model* m, const char* name, double* out);

/* Parameter tensors of the network (the rows of its parameter table, in table order; a PPO
 * actor-critic's or an IQL network's: the tensors its checkpoint holds, in the checkpoint's order). */
int vp_api_model_n_params(const vp_api_model* m);

/* Name of parameter i ("trunk.w1", as in the checkpoint); NULL when i is out of range. */
const char* vp_api_model_param_name(const vp_api_model* m, int i);

/* Shape of parameter `name` into shape[2] and its rank (1 or 2) into *ndim; VP_ERR_INVALID_ARG
 * for a name the network does not have. */
int vp_api_model_param_shape(const vp_api_model* m, const char* name, int64_t* shape /* [2] */, int* ndim);

/* Copies parameter `name` into dst [cap] floats (cap must be at least its element count). */
int vp_api_model_param(const vp_api_model* m, const char* name, float* dst /* [cap] */, int64_t cap);

/* The C forward (vp_model_forward) of `batch` samples, all buffers host memory:
 *   window    [batch, K, F] the feature rows t-K+1 .. t of each sample's decision bar t
 *   portfolio [batch, P]    the portfolio vector at t (vulpes/env.h)
 *   taus      [batch, n_taus] IQN sample points in (0, 1), or NULL with n_taus 0 (no IQN head)
 * writes
 *   q         [batch, A]    C51 expected values per action head (the env's action layout)
 *   log_probs [batch, A, Z] C51 log-probabilities per head, or NULL when not wanted
 *   quantiles [batch, n_taus, A] IQN quantile values, or NULL when not wanted (needs taus)
 * batch >= 1. A PPO actor-critic, and an IQL network, writes its policy logits into q (one
 * categorical per branch) and takes no taus, log_probs or quantiles. */
int vp_api_model_forward(vp_api_model* m, const float* window, const float* portfolio, const float* taus,
                         int64_t batch, int n_taus, float* q, float* log_probs, float* quantiles);

/* The risk-budget head's scale of each sample's size (docs/modules.md) from the last
 * vp_api_model_forward into dst [cap >= its batch] (host memory); VP_ERR_STATE when the
 * network has no such head or no forward ran. */
int vp_api_model_size_scale(const vp_api_model* m, float* dst, int64_t cap);

/* A PPO actor-critic's values (an IQL network's V(s)) [batch] of the last vp_api_model_forward
 * into dst [cap >= its batch] (host memory); VP_ERR_STATE for a DQN network or before a forward. */
int vp_api_model_values(const vp_api_model* m, float* dst, int64_t cap);

/* ---- a Decision Transformer checkpoint's network (docs/dt.md) ----------------------------------- */

typedef struct vp_api_dt vp_api_dt;

/* Opens a train.algo dt checkpoint's network on the CPU in FP32 into *out (close with
 * vp_api_dt_close). */
int vp_api_dt_open(const char* checkpoint, vp_api_dt** out);

/* Closes it (NULL is a no-op). */
void vp_api_dt_close(vp_api_dt* m);

/* Configuration value `name` into *out: the encoder's names of vp_api_model_cfg and "context",
 * "embed", "heads", "layers", "timesteps", "target_return" (the checkpoint's). */
int vp_api_dt_cfg(const vp_api_dt* m, const char* name, double* out);

/* Number of its parameter tensors (vp_dt_net_tensors' order). */
int vp_api_dt_n_params(const vp_api_dt* m);

/* Name of tensor i (NULL out of range). */
const char* vp_api_dt_param_name(const vp_api_dt* m, int i);

/* Shape of tensor `name` into shape [2] and *ndim (1 or 2). */
int vp_api_dt_param_shape(const vp_api_dt* m, const char* name, int64_t* shape /* [2] */, int* ndim);

/* Tensor `name` into dst [cap >= its numel]. */
int vp_api_dt_param(const vp_api_dt* m, const char* name, float* dst /* [cap] */, int64_t cap);

/* The C forward of `batch` sequences of K = context steps (host memory, row-major): window
 * [batch, K, W, F] (each step's window of W = model.window feature rows), portfolio [batch, K, P],
 * actions [batch, K, 4], rtg [batch, K], ts [batch, K] (timesteps), valid [batch, K] (1 or 0:
 * padding after a sequence's steps) into logits [batch, 3K, A] (the state token of step j at
 * row 3j + 1). */
int vp_api_dt_forward(vp_api_dt* m, const float* window, const float* portfolio, const int32_t* actions,
                      const float* rtg, const int32_t* ts, const float* valid, int64_t batch, float* logits);

/* ---- a vector of market environments ------------------------------------------------------------ */

/* n envs over one span of a market (a data file or a synthetic one), on one backend, with the
 * buffers of their observations and actions in that backend's memory. */
typedef struct vp_api_env vp_api_env;

/* Opens n_envs environments into *out as a training run would make them: the config file
 * `config` (NULL: the defaults) with the "key=value" overrides [n_overrides] (vp_config_resolve),
 * its data.path (CSV file or synth:KIND[:...]), features, instrument and env.* settings. `span`
 * is "train", "val", "test" (the config's time split) or "all" (every bar after the feature
 * warm-up). `backend` is "cpu", "cuda" or "auto" (the GPU when usable). n_envs 0 takes env.n_envs.
 * The first observation (vp_env_reset) is in the buffers. */
int vp_api_env_open(const char* config, const char* const* overrides, int n_overrides, const char* span,
                    const char* backend, int64_t n_envs, vp_api_env** out);

/* Frees the envs and their buffers (NULL is a no-op); pointers from vp_api_env_buffer die. */
void vp_api_env_close(vp_api_env* e);

/* A shape or setting of the envs into *out: "n_envs", "window" K, "n_features" F, "n_portfolio" P
 * (8), "n_branches" (4), "branch_size0" .. "branch_size3" (3, 4, 3, 3: the env's action layout,
 * vulpes/action.h), "episode_bars", "device" (0 CPU, 1 CUDA), "device_id" (the CUDA device),
 * "span_begin", "span_end" (the market's bars [begin, end)), "n_bars". Unknown: VP_ERR_INVALID_ARG. */
int vp_api_env_info(const vp_api_env* e, const char* name, int64_t* out);

/* Buffer `name` of the envs, in the backend's memory (host on the CPU, device on CUDA), valid
 * until vp_api_env_close; dtype is 0 for float32, 1 for int32; shape [ndim] up to 3:
 *   "window"    float [n, K, F] feature rows obs-K+1 .. obs of each env (rows below 0 read row 0)
 *   "portfolio" float [n, P]    the portfolio vector (docs/env.md)
 *   "bar"       int32 [n]       the decision bar obs of each env
 *   "reward"    float [n]       the last step's reward
 *   "done"      float [n]       1 where the last step ended an episode (the env restarted)
 *   "actions"   int32 [n, 4]    the caller writes the next step's choices here
 *   "features"  float [T, F]    the market's feature matrix (read only), T its bars
 * Returns the pointer, or NULL (error set) for an unknown name. */
void* vp_api_env_buffer(vp_api_env* e, const char* name, int* dtype, int* ndim, int64_t* shape /* [3] */);

/* Restarts every env at episode 0 (vp_env_reset); seed >= 0 first replaces the env seed
 * (env.seed of a run, here the given value), seed < 0 keeps it. Writes the observation buffers
 * and zeroes reward and done. On CUDA it waits for the device before returning. */
int vp_api_env_reset(vp_api_env* e, int64_t seed);

/* Steps every env once with the "actions" buffer (vp_env_step: out-of-range choices are an error
 * on the CPU and clamped on CUDA), writing reward, done and the next observation. On CUDA it waits
 * for the device before returning, so the buffers can be read at once. */
int vp_api_env_step(vp_api_env* e);

/* ---- jobs: training and backtests, writing run folders ------------------------------------------- */

/* `vulpes train`: trains under the config file `config` with the "key=value" overrides
 * [n_overrides] on `backend` ("cpu", "cuda", "auto"; NULL: run.backend), into `out` (NULL:
 * run.out, else runs/YYYYmmdd-HHMMSS-NAME); force 1 reuses a non-empty folder as --force does.
 * Progress lines go to stderr when progress is 1. At the end the test span's exact backtest
 * writes trades.csv, equity.csv, report.html and summary.json; the run folder's path goes to
 * run_dir [cap]. While it runs, Ctrl-C (SIGINT) or SIGTERM stops it between iterations with
 * last.safetensors written, as `vulpes train` does: the call then returns VP_ERR_STATE naming the
 * folder (run_dir is set); the caller's signal handlers are restored on return. */
int vp_api_train(const char* config, const char* const* overrides, int n_overrides, const char* backend,
                 const char* out, int force, int progress, char* run_dir /* [cap] */, int64_t cap);

/* `vulpes backtest`: the checkpoint's network on `data` (NULL: the bars it trained on) over
 * `span` ("train", "val", "test", "all"; NULL: test, or all with from / to) or from / to (ISO
 * dates or bar indices; NULL: the span's) with `segments` windows (1: the exact backtest), the
 * "key=value" cost and contract overrides [n_overrides], on `backend`, into `out` (NULL:
 * runs/YYYYmmdd-HHMMSS-backtest); force as `vulpes backtest --force`. Writes trades.csv,
 * equity.csv, summary.json, report.html; the folder's path goes to out_dir [cap]. */
int vp_api_backtest(const char* checkpoint, const char* data, const char* span, const char* from, const char* to,
                    int64_t segments, const char* const* overrides, int n_overrides, const char* backend,
                    const char* out, int force, char* out_dir /* [cap] */, int64_t cap);

/* ---- a search space (docs/search.md), read as `vulpes search` reads it ------------------------- */

/* An open search space: its keys, each with its distribution, read against a base config. */
typedef struct vp_api_space vp_api_space;

/* Reads search space `space` (a YAML file's path; with is_text 1 the YAML text itself) against
 * the config file `config` (NULL: the defaults) with the "key=value" overrides [n_overrides] into
 * *out, as `vulpes search CONFIG SPACE.yaml` reads it; a refusal names the file, line and key. */
int vp_api_space_open(const char* config, const char* const* overrides, int n_overrides, const char* space,
                      int is_text, vp_api_space** out);

/* Releases a space (NULL is a no-op). */
void vp_api_space_close(vp_api_space* s);

/* The number of keys of the space (1 .. 32), in file order. */
int vp_api_space_n_params(const vp_api_space* s);

/* Key i of the space: its name ("learn.lr") into key [cap], its distribution into *dist (0 uniform,
 * 1 log_uniform, 2 int, 3 choice), its bounds into *lo and *hi (a choice: 0 and 0), its number of
 * values into *n_choices (0 but for a choice). */
int vp_api_space_param(const vp_api_space* s, int i, char* key /* [cap] */, int64_t cap, int* dist, double* lo,
                       double* hi, int* n_choices);

/* Value j of key i's choice as the space writes it ("64", "true", "tlob"); NULL when i or j is out
 * of range or key i is no choice. */
const char* vp_api_space_choice(const vp_api_space* s, int i, int j);

/* Checks values [n] (one text a key reads per key of the space, in its order) as trial `trial`'s:
 * each set into the base config, the whole config checked (vp_search_apply); a refusal names the
 * trial and its values. */
int vp_api_space_check(const vp_api_space* s, const char* const* values, int n, int64_t trial);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_API_H */
