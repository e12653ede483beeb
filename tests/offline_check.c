/* A dataset against the data of a config, for tests/test_cli_record.sh: loads DATASET
 * (vp_offline_load), the bars of CONFIG with its key=value overrides (vp_train_data_load) and
 * checks the dataset against them (vp_offline_check_data). Prints "dataset matches: ..." and
 * exits 0, or prints the refusal and exits 1.
 *   usage: offline_check DATASET CONFIG [key=value ...] */
#include <stdio.h>
#include <string.h>

#include "vulpes/vulpes.h"

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: offline_check DATASET CONFIG [key=value ...]\n");
        return 2;
    }
    vp_offline_data d;
    vp_config cfg;
    vp_train_data t;
    memset(&t, 0, sizeof t);
    vp_status s = vp_offline_load(argv[1], &d);
    if (s == VP_OK) s = vp_config_resolve(&cfg, argv[2], argc - 3, argv + 3);
    if (s == VP_OK) s = vp_train_data_load(&t, &cfg);
    char where[1100];
    snprintf(where, sizeof where, "dataset %s", argv[1]);
    if (s == VP_OK) s = vp_offline_check_data(&d, &t, where);
    if (s == VP_OK) printf("dataset matches: %s, span [%lld, %lld)\n", t.source, (long long)d.span.begin,
                           (long long)d.span.end);
    else fprintf(stderr, "refused: %s\n", vp_last_error());
    vp_train_data_free(&t);
    vp_offline_free(&d);
    return s == VP_OK ? 0 : 1;
}
