/* Internal to eval: what the backtest's and the walk-forward's files share. */
#ifndef VP_EVAL_EVAL_IMPL_H
#define VP_EVAL_EVAL_IMPL_H

/* v with 15 significant digits, or 17 when 15 do not read back as v, into buf[32]; returns buf. */
const char* vp_eval_format_exact(double v, char* buf);

#endif /* VP_EVAL_EVAL_IMPL_H */
