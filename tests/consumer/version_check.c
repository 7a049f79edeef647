/*
 * What a program linked against an installed qgmm sees: the header under its installed
 * name, the version of the loaded library, and where each backend plugin came from.
 * Usage: version_check EXPECTED_VERSION PLUGIN_DIR [backend...]
 * Fails unless qgmm_version() is EXPECTED_VERSION and every named backend was loaded from
 * PLUGIN_DIR (the installed plugin folder; no environment variable involved).
 */
#include <qgmm/qgmm.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s EXPECTED_VERSION PLUGIN_DIR [backend...]\n", argv[0]);
        return 2;
    }
    int bad = 0;
    printf("qgmm_version() = %s\n", qgmm_version());
    if (strcmp(qgmm_version(), argv[1]) != 0) {
        fprintf(stderr, "version mismatch: the library says %s, the package %s\n", qgmm_version(), argv[1]);
        bad = 1;
    }
    const size_t dir_len = strlen(argv[2]);
    for (int a = 3; a < argc; ++a) {
        int found = 0;
        for (int i = 0; i < qgmm_backend_count(); ++i) {
            qgmm_backend_info info;
            if (qgmm_backend_get_info(i, &info) != QGMM_OK || strcmp(info.name, argv[a]) != 0) continue;
            found = 1;
            printf("%s: available %d, library %s%s%s\n", info.name, info.available, info.library,
                   info.reason[0] ? ", " : "", info.reason);
            if (strncmp(info.library, argv[2], dir_len) != 0 || info.library[dir_len] != '/') {
                fprintf(stderr, "backend %s was not loaded from %s\n", argv[a], argv[2]);
                bad = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "backend %s is not listed\n", argv[a]);
            bad = 1;
        }
    }
    return bad;
}
