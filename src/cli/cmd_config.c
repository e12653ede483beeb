/* `vulpes config`: print every key with its default and doc, or check a config file and
 * print it resolved (the line parsed by the shared parser, cli_args.h). */
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
    const vp_cli_opt opts[] = {
        {"--defaults", VP_CLI_SWITCH, &defaults, NULL, 0, 0, NULL},
        {"--markdown", VP_CLI_SWITCH, &markdown, NULL, 0, 0, NULL},
    };
    const vp_cli_spec spec = {"config", opts, (int)(sizeof opts / sizeof opts[0]), 1, 1, config_usage};
    vp_cli_args a;
    int rc = vp_cli_parse(&spec, argc, argv, &a);
    if (rc == VP_CLI_HELP) return 0;
    if (rc != 0) return rc;
    const char* path = a.n_positional ? a.positional[0] : NULL;
    if (defaults == (path != NULL) || (markdown && !defaults) || (defaults && a.n_over > 0)) {
        config_usage(stderr);
        return 2;
    }
    // the defaults, or the file with its overrides
    vp_config cfg;
    vp_status s = vp_config_resolve(&cfg, path, a.n_over, a.over);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes: %s\n", vp_cli_error());
        return 1;
    }
    vp_config_style style = defaults ? (markdown ? VP_CONFIG_STYLE_MARKDOWN : VP_CONFIG_STYLE_DOCS) : VP_CONFIG_STYLE_YAML;
    if (vp_config_print(&cfg, style, stdout) != VP_OK) return vp_cli_fail("printing the configuration");
    return 0;
}
