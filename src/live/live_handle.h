/* Internal: what a live handle holds (live_open.c makes it, live.c steps it). */
#ifndef VP_LIVE_HANDLE_H
#define VP_LIVE_HANDLE_H

#include "data/features_stream.h"
#include "eval/backtest_checks.h"
#include "model/model_internal.h"
#include "rollout/rollout_step.h"
#include "vulpes/config.h"
#include "vulpes/live.h"

/* The training data's ATR period (vp_train_data_prepare's vp_atr). */
#define VP_LIVE_ATR_PERIOD 14

/* The account: the rollout's state of one window, its table and the step's scratch. */
typedef struct vp_live_account {
    int32_t t, window_end, position, bars_held;
    uint32_t episode;
    double cash, equity, peak, entry, take_profit, stop_loss;
    float last_size;
    int32_t steps, offset, last, alive, ruin;
    vp_env_fill_rec fill;
    int32_t scratch[VP_ENV_BRANCHES];
    vp_env_state st;  /* views of the fields above */
    vp_ro_windows win; /* views of the fields above */
} vp_live_account;

struct vp_live {
    char* path;               /* the checkpoint's path */
    vp_config cfg;            /* its config, with the overrides */
    vp_data_record rec;       /* the record of its training data (when has_rec) */
    int has_rec;
    int force;                /* opts.force */
    vp_backend* b;            /* the CPU */
    vp_model model;           /* the network and its parameters */
    int model_on;
    vp_model_inc inc;         /* its weights laid out for one-sample GEMMs */
    vp_model_acts* acts;      /* one sample's forward */
    vp_buffer pf_buf;         /* the portfolio [1, P] */
    vp_tensor pf;
    vp_feat_stream* fs;       /* the features */
    float* frow;              /* [F] the new bar's feature row */
    vp_model_inc_ring ring;   /* the last K bars' rows the encoder keeps */
    int64_t warmup;           /* the first decision's bar */
    int64_t n;                /* bars taken */
    int64_t last_time;        /* the last bar's time */
    double atr_sum, atr;      /* Wilder's ATR: the sum of the first period's true ranges, the ATR */
    vp_env_bar bars[2];       /* the previous bar and the new one, as the step reads them */
    int64_t* hist_time;       /* [warmup + 1] the bars up to the first decision, for the checks */
    double* hist_close;
    vp_backtest_checks checks; /* the checks' notes */
    vp_instrument instrument; /* the contract and costs */
    int32_t episode_bars;     /* the training run's episode length */
    vp_ro_dims dims;          /* the step's constants, as the rollout's */
    vp_live_account acc;      /* the account */
    int32_t k;                /* steps taken */
    int pending;              /* 1: a decision awaits the next bar */
    int32_t action[VP_ENV_BRANCHES]; /* its choices */
    int closed;               /* 1: closed out after a ruin */
    int64_t closed_bar;       /* the bar whose open closed it */
};

/* Points the account's state and table views at its fields and starts it flat at `equity`. */
void vp_live_account_reset(vp_live_account* a, double equity);

#endif /* VP_LIVE_HANDLE_H */
