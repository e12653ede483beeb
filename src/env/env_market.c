/* The environment's market: bars validated and copied once into the backend's memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env_impl.h"

/* Bars packed per upload: the host scratch stays at 4 MiB however long the market is. */
#define VP_ENV_PACK_CHUNK 65536

_Static_assert(sizeof(vp_env_bar) == 64, "a vp_env_bar fills one 64-byte cache line");

/* Checks one bar: finite positive prices inside [low, high], ATR and spread finite and >= 0. */
static vp_status check_bar(const vp_env_market_desc* d, int64_t i) {
    double o = d->open[i], h = d->high[i], l = d->low[i], c = d->close[i], a = d->atr[i];
    double sp = d->spread ? d->spread[i] : d->default_spread;
    VP_REQUIRE(isfinite(o) && isfinite(h) && isfinite(l) && isfinite(c) && o > 0 && h > 0 && l > 0 && c > 0,
               VP_ERR_INVALID_ARG, "vp_env_market_init: bar %lld has a non-positive or non-finite price "
               "(open %g high %g low %g close %g)", (long long)i, o, h, l, c);
    VP_REQUIRE(l <= o && l <= c && o <= h && c <= h, VP_ERR_INVALID_ARG,
               "vp_env_market_init: bar %lld breaks low <= open,close <= high (open %g high %g low %g close %g)",
               (long long)i, o, h, l, c);
    VP_REQUIRE(isfinite(a) && a >= 0, VP_ERR_INVALID_ARG, "vp_env_market_init: bar %lld has ATR %g (finite, >= 0 "
               "required)", (long long)i, a);
    VP_REQUIRE(isfinite(sp) && sp >= 0, VP_ERR_INVALID_ARG, "vp_env_market_init: bar %lld has spread %g (finite, "
               ">= 0 required)", (long long)i, sp);
    return VP_OK;
}

/* Copies host bytes to backend memory through a 4-byte-element view (there is no f64 dtype). */
static vp_status upload_bytes(vp_backend* b, vp_mem mem, void* dst, const void* src, size_t bytes) {
    vp_tensor view = vp_tensor_1d(dst, VP_I32, mem, (int64_t)(bytes / 4));
    return vp_upload(b, &view, src, bytes);
}

vp_status vp_env_market_init(vp_env_market* m, vp_backend* b, const vp_env_market_desc* d) {
    VP_REQUIRE(m != NULL && b != NULL && d != NULL, VP_ERR_INVALID_ARG,
               "vp_env_market_init: market, backend or description is NULL");
    memset(m, 0, sizeof *m);
    VP_REQUIRE(d->open && d->high && d->low && d->close && d->atr, VP_ERR_INVALID_ARG,
               "vp_env_market_init: open, high, low, close or atr is NULL");
    VP_REQUIRE(d->n_bars >= 2 && d->n_bars <= INT32_MAX, VP_ERR_SHAPE,
               "vp_env_market_init: %lld bars (2 .. 2^31-1 allowed)", (long long)d->n_bars);
    VP_REQUIRE(d->begin >= 0 && d->begin < d->end && d->end <= d->n_bars, VP_ERR_INVALID_ARG,
               "vp_env_market_init: span [%lld, %lld) is not inside [0, %lld)", (long long)d->begin,
               (long long)d->end, (long long)d->n_bars);
    VP_REQUIRE(d->spread || (isfinite(d->default_spread) && d->default_spread >= 0), VP_ERR_INVALID_ARG,
               "vp_env_market_init: default spread %g (finite, >= 0 required)", d->default_spread);
    VP_REQUIRE(isfinite(d->bars_per_year) && d->bars_per_year >= 0, VP_ERR_INVALID_ARG,
               "vp_env_market_init: bars_per_year %g (finite, >= 0 required; 0: unknown)", d->bars_per_year);

    /* the feature matrix is referenced, not copied: check its rows and where it lives */
    if (d->features) {
        const vp_tensor* f = d->features;
        VP_TRY(vp_tensor_check("vp_env_market_init", "features", b, f, VP_F32));
        VP_TRY(vp_tensor_check_rows("vp_env_market_init", "features", b, f, VP_F32, d->n_bars, vp_tensor_cols(f)));
        m->features = *f;
    }
    for (int64_t i = 0; i < d->n_bars; ++i) VP_TRY(check_bar(d, i));

    /* one allocation of [T] records, filled chunk by chunk through a host scratch */
    size_t bytes = (size_t)d->n_bars * sizeof(vp_env_bar);
    vp_mem mem = vp_backend_native_mem(b);
    int64_t chunk = d->n_bars < VP_ENV_PACK_CHUNK ? d->n_bars : VP_ENV_PACK_CHUNK;
    vp_env_bar* scratch = (vp_env_bar*)calloc((size_t)chunk, sizeof(vp_env_bar));
    VP_REQUIRE(scratch != NULL, VP_ERR_OOM, "vp_env_market_init: no host memory for %lld packed bars", (long long)chunk);
    vp_status s = vp_buffer_alloc(b, mem, bytes, &m->storage);
    vp_env_bar* dst = (vp_env_bar*)m->storage.dev;
    for (int64_t i0 = 0; s == VP_OK && i0 < d->n_bars; i0 += chunk) {
        int64_t k = d->n_bars - i0 < chunk ? d->n_bars - i0 : chunk;
        for (int64_t j = 0; j < k; ++j) {
            scratch[j].open = d->open[i0 + j], scratch[j].high = d->high[i0 + j];
            scratch[j].low = d->low[i0 + j], scratch[j].close = d->close[i0 + j], scratch[j].atr = d->atr[i0 + j];
            scratch[j].spread = d->spread ? d->spread[i0 + j] : d->default_spread;
        }
        s = upload_bytes(b, mem, dst + i0, scratch, (size_t)k * sizeof(vp_env_bar));
    }
    free(scratch);
    if (s != VP_OK) {
        vp_buffer_free(b, &m->storage);
        return vp_error_context(s, "vp_env_market_init: copying the bars");
    }
    m->backend = b;
    m->n_bars = d->n_bars;
    m->begin = d->begin;
    m->end = d->end;
    m->bars = dst;
    m->bars_per_year = d->bars_per_year;
    return VP_OK;
}

void vp_env_market_free(vp_env_market* m) {
    if (!m) return;
    if (m->backend) vp_buffer_free(m->backend, &m->storage);
    memset(m, 0, sizeof *m);
}
