/* Helpers of the configuration tests. */
#ifndef VP_TEST_CONFIG_UTIL_H
#define VP_TEST_CONFIG_UTIL_H

#include <string.h>

#include "vp_test.h"
#include "vulpes/config.h"

/* Loads `yaml` as "bad.yaml" over the defaults; checks the status, the message and that
 * nothing changed. */
static inline void expect_error(const char* yaml, vp_status status, const char* needle) {
    vp_config c, def;
    vp_config_defaults(&c);
    vp_config_defaults(&def);
    vp_clear_error();
    vp_status s = vp_config_load_string(&c, yaml, "bad.yaml");
    CHECK(s == status && strstr(vp_last_error(), needle) != NULL, "loading\n%.300s\n-> %s \"%s\", expected %s with \"%s\"",
          yaml, vp_status_name(s), vp_last_error(), vp_status_name(status), needle);
    const vp_config_key* d = vp_config_diff(&c, &def);
    CHECK(d == NULL, "a failed load changed %s", d ? d->name : "-");
}

#endif /* VP_TEST_CONFIG_UTIL_H */
