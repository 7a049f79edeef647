/* run_peers.c — the PyTorch peers of `qgmm-bench run --peers torch`; see run_peers.h. */
#define _GNU_SOURCE
#include "run_peers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rundoc.h"

extern char **environ;

int peers_parse(const char *list, char *err, size_t cap)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (strcmp(p, "torch") != 0) {
            snprintf(err, cap, "--peers %s: unknown peer \"%s\" (known: torch)", list, p);
            return -1;
        }
    return 0;
}

/* The probe prints one line: the torch version, or why there is no peer (exit 3). */
static const char PROBE[] =
    "import sys\n"
    "try:\n"
    "    import torch\n"
    "except Exception as e:\n"
    "    print('python3 cannot import torch (%s: %s)' % (type(e).__name__, str(e).splitlines()[0] if str(e) else ''))\n"
    "    sys.exit(3)\n"
    "if not torch.cuda.is_available():\n"
    "    print('torch %s sees no CUDA GPU' % torch.__version__)\n"
    "    sys.exit(3)\n"
    "print(torch.__version__)\n";

/* Runs python3 with argv[1..] (argv[0] is replaced by "python3"), stdout to `out_fd`
 * (-1: inherited). Returns the exit status, 127 when python3 could not be started,
 * 128 + signal when the child was killed. */
static int run_python(char *const argv[], int out_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return 127;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 127;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

int peers_torch_probe(char *version, size_t vcap, char *why, size_t cap)
{
    int fds[2];
    version[0] = why[0] = 0;
    if (pipe(fds) != 0) {
        snprintf(why, cap, "no pipe to ask python3 about torch");
        return 0;
    }
    char *argv[] = {"python3", "-c", (char *)PROBE, NULL};
    int rc = run_python(argv, fds[1]);
    close(fds[1]);
    char line[400] = "";
    ssize_t n = read(fds[0], line, sizeof line - 1);
    close(fds[0]);
    line[n > 0 ? n : 0] = 0;
    line[strcspn(line, "\n")] = 0;
    if (rc == 0 && line[0]) {
        snprintf(version, vcap, "%s", line);
        return 1;
    }
    if (rc == 127) snprintf(why, cap, "python3 is not on PATH");
    else if (line[0]) snprintf(why, cap, "%s", line);
    else snprintf(why, cap, "python3 could not be asked about torch (exit %d)", rc);
    return 0;
}

static void script_path(char *out, size_t cap)
{
    snprintf(out, cap, "ci/peers/torch_peers.py");
    if (access(out, R_OK) == 0) return;
    snprintf(out, cap, "%s/ci/peers/torch_peers.py", QGMM_SOURCE_DIR);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            if (cap >= RUN_DOC_MAX_BYTES + 1) break;
            char *b = realloc(buf, cap * 2);
            if (!b) { free(buf); buf = NULL; break; }
            buf = b;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    *len = n;
    return buf;
}

int peers_torch_run(const char *cases_json, double budget_ms, const char *sha, run_record *out, char *err,
                    size_t cap)
{
    char script[1200], doc[1100], budget[32];
    script_path(script, sizeof script);
    snprintf(doc, sizeof doc, "%s.torch.json", cases_json);
    snprintf(budget, sizeof budget, "%g", budget_ms);
    char *argv[] = {"python3", script, "--cases", (char *)cases_json, "--out", doc, "--budget-ms", budget,
                    "--sha", (char *)(sha && sha[0] ? sha : "unknown"), "--reason", "peers", NULL};
    int rc = run_python(argv, -1);
    if (rc != 0) {
        unlink(doc);
        if (rc > 128) snprintf(err, cap, "%s was stopped by signal %d", script, rc - 128);
        else snprintf(err, cap, "%s exited with status %d (its messages are above)", script, rc);
        return -1;
    }
    size_t len = 0;
    char *text = read_all(doc, &len);
    unlink(doc);
    if (!text) {
        snprintf(err, cap, "%s wrote no readable document %s", script, doc);
        return -1;
    }
    char why[600];
    int bad = run_from_json(text, len, out, why, sizeof why);
    free(text);
    if (bad) {
        snprintf(err, cap, "the document of %s is refused: %s", script, why);
        return -1;
    }
    if (out->n_contexts != 1) {
        snprintf(err, cap, "the document of %s has %zu contexts, not 1", script, out->n_contexts);
        return -1;
    }
    return 0;
}
