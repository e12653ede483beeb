/* `vulpes config`: print every key with its default and doc, or check a config file and
 * print it resolved. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "vulpes/config.h"

static void config_usage(FILE* f) {
    fprintf(f,
            "usage: vulpes config --defaults [--markdown]   every key with its default and doc (YAML or Markdown)\n"
            "       vulpes config CONFIG [key=value ...]     check a config file, print it resolved\n");
}

int vp_cmd_config(int argc, char** argv) {
    int defaults = 0, markdown = 0;
    const char* path = NULL;
    int first_override = argc;
    // options, the file, then key=value overrides
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            config_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--defaults") == 0) {
            defaults = 1;
        } else if (strcmp(argv[i], "--markdown") == 0) {
            markdown = 1;
        } else if (strchr(argv[i], '=')) {
            first_override = i;
            break;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "vulpes config: unexpected argument '%s'\n", argv[i]);
            config_usage(stderr);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (defaults == (path != NULL) || (markdown && !defaults)) {
        config_usage(stderr);
        return 2;
    }
    // the defaults, or the file with its overrides
    vp_config cfg;
    vp_status s = vp_config_resolve(&cfg, path, argc - first_override, argv + first_override);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes: %s\n", vp_cli_error());
        return 1;
    }
    vp_config_style style = defaults ? (markdown ? VP_CONFIG_STYLE_MARKDOWN : VP_CONFIG_STYLE_DOCS) : VP_CONFIG_STYLE_YAML;
    if (vp_config_print(&cfg, style, stdout) != VP_OK) return vp_cli_fail("printing the configuration");
    return 0;
}
