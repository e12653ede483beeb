/* `vulpes compare RUN... [--out DIR] [--json | --csv]`: one table across run, walk-forward
 * and backtest folders (eval/compare.h), printed, and with --out written as compare.csv,
 * compare.json and compare.html. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "eval/compare.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: vulpes compare RUN... [--out DIR] [--json | --csv]\n\n"
            "One table of the figures of each folder's summary.json: a training run's test span (its exact\n"
            "backtest), a walk-forward's stitched test spans, a backtest folder's span. Columns: return, annual\n"
            "return, volatility, Sharpe, Sortino, max drawdown, Calmar, PSR > 0, trades, hit rate, exposure,\n"
            "buy & hold's return and Sharpe, alpha, beta and information ratio against buy & hold, the best\n"
            "validation Sharpe and the deflated Sharpe (docs/compare.md).\n\n"
            "  RUN        a folder written by vulpes train, vulpes walkforward or vulpes backtest --out\n"
            "  --out DIR  also write DIR/compare.csv, DIR/compare.json and DIR/compare.html (the page,\n"
            "             the best of each ranked column marked, each run linked to its report.html)\n"
            "  --json     print the JSON document instead of the table\n"
            "  --csv      print the CSV instead of the table\n");
}

int vp_cmd_compare(int argc, char** argv) {
    const char* out_dir = NULL;
    int json = 0, csv = 0;
    const vp_cli_opt opts[] = {
        {"--out", VP_CLI_TEXT, &out_dir, NULL, 0, 0, NULL},
        {"--json", VP_CLI_SWITCH, &json, NULL, 0, 0, NULL},
        {"--csv", VP_CLI_SWITCH, &csv, NULL, 0, 0, NULL},
    };
    const vp_cli_spec spec = {"compare", opts, (int)(sizeof opts / sizeof opts[0]), VP_CLI_MAX_POSITIONAL, 0, usage};
    vp_cli_args* cl = (vp_cli_args*)calloc(1, sizeof *cl);
    if (!cl) {
        fprintf(stderr, "vulpes compare: out of memory\n");
        return 1;
    }
    int rc = vp_cli_parse(&spec, argc, argv, cl);
    if (rc == 0 && cl->n_positional == 0) {
        fprintf(stderr, "vulpes compare: give at least one run folder\n\n");
        usage(stderr);
        rc = 2;
    }
    if (rc == 0 && json && csv) {
        fprintf(stderr, "vulpes compare: --json and --csv print one format each; give one of them\n");
        rc = 2;
    }
    if (rc != 0) {
        free(cl);
        return rc == VP_CLI_HELP ? 0 : rc;
    }

    // every folder's row; the first one that is not a run stops the command, named
    const int n = cl->n_positional;
    vp_compare_row* rows = (vp_compare_row*)calloc((size_t)n, sizeof *rows);
    vp_status s = rows ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "vulpes compare: out of memory for %d rows", n);
    for (int i = 0; s == VP_OK && i < n; ++i) s = vp_compare_load(cl->positional[i], &rows[i]);
    if (s == VP_OK) s = json ? vp_compare_write_json(stdout, rows, n)
                      : csv  ? vp_compare_write_csv(stdout, rows, n)
                             : vp_compare_print(stdout, rows, n);
    if (s == VP_OK && out_dir) {
        if (mkdir(out_dir, 0777) != 0) {
            struct stat sb;
            if (stat(out_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
                s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot make the folder '%s' for --out", out_dir);
        }
        if (s == VP_OK) s = vp_compare_write_dir(out_dir, rows, n);
        if (s == VP_OK) fprintf(stderr, "comparison written: %s/compare.html, compare.csv, compare.json\n", out_dir);
    }
    free(rows);
    free(cl);
    return s == VP_OK ? 0 : vp_cli_fail("in compare");
}
