/* `vulpes data inspect FILE`. */
#include <stdio.h>

#include "cli/commands.h"

int vp_cmd_data(int argc, char** argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "vulpes data: the bar loader is not part of this build yet\n");
    return 1;
}
