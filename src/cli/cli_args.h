/* The one command-line parser of every vulpes command: a command's options as a table (a
 * switch, a text, an integer count or a choice, each optionally the override of a config
 * key), its positional arguments, key=value config overrides and --backend, with the same
 * rules and error messages everywhere. It depends on nothing else of the CLI, so a test links
 * it alone (tests/test_cli_args.c).
 *
 * Rules: an argument that does not start with '-' and holds '=' is a key=value override (a
 * command that takes none refuses it); any other argument not starting with '-' is
 * positional; an option's value is the next argument or follows '=' ("--out=DIR"); "--help"
 * or "-h" anywhere asks for the command's help. The overrides come out in the order given,
 * followed by the overrides of the options that set a key, so an option wins over the same
 * key given as key=value ("--backend cpu" over "run.backend=cuda"). */
#ifndef VP_CLI_ARGS_H
#define VP_CLI_ARGS_H

#include <stdio.h>
#include <stdint.h>

/* Most key=value overrides, options and positional arguments of one command line. */
#define VP_CLI_MAX_OVERRIDES 256
#define VP_CLI_MAX_OPTS 32
#define VP_CLI_MAX_POSITIONAL 256

/* Longest override an option makes, NUL included ("run.out=" and a path). */
#define VP_CLI_KV_MAX 1100

/* What vp_cli_parse returns when --help was asked for. */
#define VP_CLI_HELP (-1)

/* The values of --backend, every computing command's option (as run.backend where a config is used). */
#define VP_CLI_BACKENDS "cpu|cuda|auto"

/* What an option takes. */
typedef enum vp_cli_kind {
    VP_CLI_SWITCH = 0, /* no value: *(int*)dest = 1; with a key, the override key=true */
    VP_CLI_TEXT,       /* any text: *(const char**)dest */
    VP_CLI_COUNT,      /* an integer in [min, max]: *(int64_t*)dest */
    VP_CLI_CHOICE,     /* one of `choices`: *(const char**)dest */
    VP_CLI_KIND_COUNT
} vp_cli_kind;

/* One option of a command. */
typedef struct vp_cli_opt {
    const char* flag;    /* "--out" */
    vp_cli_kind kind;    /* what it takes */
    void* dest;          /* where the value goes (int*, const char** or int64_t* by kind; NULL: the key only) */
    const char* key;     /* the config key it overrides ("run.out"), or NULL */
    int64_t min, max;    /* a count's range */
    const char* choices; /* a choice's values, '|' between them ("cpu|cuda|auto") */
} vp_cli_opt;

/* A command's command line. */
typedef struct vp_cli_spec {
    const char* command;    /* "train", "data synth": the messages say "vulpes COMMAND: ..." */
    const vp_cli_opt* opts; /* [n_opts] its options */
    int n_opts;             /* at most VP_CLI_MAX_OPTS */
    int max_positional;     /* positional arguments it takes (CONFIG, FILE, KIND, RUN...), at most VP_CLI_MAX_POSITIONAL */
    int overrides;          /* 1: key=value arguments are config overrides; 0: refused */
    void (*usage)(FILE*);   /* writes the command's usage; --help prints it to stdout */
} vp_cli_spec;

/* What a command line held. */
typedef struct vp_cli_args {
    const char* positional[VP_CLI_MAX_POSITIONAL];       /* in order */
    int n_positional;                                    /* how many */
    char* over[VP_CLI_MAX_OVERRIDES + VP_CLI_MAX_OPTS];  /* key=value as given, then the options' overrides */
    int n_over;                                          /* how many */
    unsigned char given[VP_CLI_MAX_OPTS];                /* given[i]: option i of the spec was given */
    char kv[VP_CLI_MAX_OPTS][VP_CLI_KV_MAX];             /* storage of the options' overrides */
    char error[1400];                                    /* the usage error ("" when none) */
} vp_cli_args;

/* Parses argv[1 .. argc) (argv[0] names the command) by spec into *out. Returns 0; VP_CLI_HELP
 * when --help or -h was given, after printing spec->usage to stdout; or 2 after a usage error, whose message (out->error, "vulpes
 * COMMAND: ...") is printed to stderr with a pointer to "vulpes COMMAND --help". Options not
 * given leave their dest as it was (the caller's default). */
int vp_cli_parse(const vp_cli_spec* spec, int argc, char** argv, vp_cli_args* out);

/* Whether option `flag` of spec was given. */
int vp_cli_given(const vp_cli_spec* spec, const vp_cli_args* a, const char* flag);

#endif /* VP_CLI_ARGS_H */
