/*
 * main.c - kestrel-eval entry point: the subcommand table and the dispatcher.
 * Each command family lives in its own cmd_*.c file.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_command commands[] = {
    /* name, function, usage, summary */
    {"logits", cmd_logits, "--engine cpu|cuda|PATH --model FILE.gguf --tokens 1,2,3 [--out FILE.npy] [--top K] [--options OPTS]",
     "run tokens teacher-forced and write (T, vocab) logits or print the top-K"},
    {"inspect", cmd_inspect, "FILE [--kv-only] [--tensors-only]",
     "print a GGUF model's or oracle dump's metadata and tensor table"},
    {"gen-model", cmd_gen_model, "--preset qwen3.5-27b|qwen3.5-9b|qwen3.5-2b|tiny --type q4_0|q8_0|f16|f32 --seed N -o FILE.gguf [--vocab N] [--layers N] [-j THREADS]", "write a synthetic Qwen3.5 GGUF of a real shape with random weights (docs/presets.md)"},
    {"ab", cmd_ab, "SUITE.yaml --case NAME --a LIB_A --b LIB_B [--a-options OPTS] [--b-options OPTS] [--rounds N] [--order ab|balanced | --seed N] [--db PATH] [--label TEXT] [--force]", "interleaved A/B of two engine builds on one decode-bench case, in fresh processes"},
    {"check", cmd_check, "SUITE.yaml [--list | --json] [--engine NAME=LIB]...", "validate a suite file (every key, type, reference and file) without running it"},
    {"report", cmd_report, "[RUN_ID|latest] [--against NAME|RUN_ID] [--format text|md|json|junit|html] [-o FILE] [--only-regressions] [--last N] [--db PATH]", "compare a run with a baseline (or its own gates): verdicts per case and metric"},
    {"baseline", cmd_baseline, "set RUN_ID|latest NAME [--note TEXT] | list | show NAME | delete NAME | export NAME -o FILE | import FILE [--name NAME] [--db PATH]", "name runs as baselines; export/import self-contained baseline archives"},
    {"history", cmd_history, "[--case GLOB] [--metric NAME | --kernel GLOB] [--last N] [--format text|csv|json] [--db PATH]", "a metric (or a kernel's ms per step) over time per case, with the engine SHA-256 of each point"},
    {"query", cmd_query, "SQL [--format table|csv|json] [--db PATH]", "run SQL on a read-only connection to the results DB"},
    {"run", cmd_run, "SUITE.yaml [--db PATH] [--engine NAME=PATH]... [--case GLOB]... [--tag T]... [--label TEXT] [--against NAME|RUN_ID]", "run a suite's cases (each in its own process) and record the results in the SQLite store"},
    /* KESTREL-COMMANDS: one line per command; keep this marker for the other families */
};

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

void cli_error(const char *fmt, ...) {
    va_list ap;
    fputs("kestrel-eval: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage(const char *cmd) {
    const cli_command *c = find_command(cmd);
    if (c) fprintf(stderr, "usage: kestrel-eval %s %s\n", c->name, c->usage);
    return EXIT_USAGE;
}

static void print_help(FILE *f) {
    fprintf(f, "usage: kestrel-eval <command> [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'kestrel-eval help <command>' shows a command's arguments.\n"
               "Exit codes: 0 ok, 1 gate failed / regressed / crashed, 2 usage or input error.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        if (argc > 2 && find_command(argv[2])) {
            const cli_command *c = find_command(argv[2]);
            printf("usage: kestrel-eval %s %s\n  %s\n", c->name, c->usage, c->summary);
            return EXIT_OK;
        }
        print_help(stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("kestrel-eval %s\n", PACKAGE_VERSION);
        return EXIT_OK;
    }
    const cli_command *c = find_command(name);
    if (!c) {
        cli_error("unknown command '%s' (try 'kestrel-eval help')", name);
        return EXIT_USAGE;
    }
    int rc = c->fn(argc - 1, argv + 1);
    /* like git: a command whose output could not be written has failed */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("error writing standard output: %s", strerror(errno));
        return rc ? rc : EXIT_USAGE;
    }
    return rc;
}
