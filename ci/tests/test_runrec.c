/* test_runrec.c — rr_set_clipped: text the runner takes from elsewhere (the commit subject)
 * is cut to the run format's 512-byte limit at a UTF-8 character boundary, unchanged when
 * it fits. */
#include <stdlib.h>
#include <string.h>

#include "runner_testutil.h"
#include "runrec.h"

int main(void)
{
    char *s = NULL;
    rr_set_clipped(&s, "vulkan casts: short", RR_MAX_NAME);
    CHECK(!strcmp(s, "vulkan casts: short"), "short subject kept: %s", s);

    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    rr_set_clipped(&s, big, RR_MAX_NAME);
    CHECK(strlen(s) == RR_MAX_NAME && !strncmp(s, big, RR_MAX_NAME), "ASCII cut to %d bytes: %zu", RR_MAX_NAME, strlen(s));

    /* a 2-byte character (U+00E9) straddling the limit goes whole */
    memset(big, 'a', sizeof big - 1);
    big[RR_MAX_NAME - 1] = (char)0xC3;
    big[RR_MAX_NAME] = (char)0xA9;
    rr_set_clipped(&s, big, RR_MAX_NAME);
    CHECK(strlen(s) == RR_MAX_NAME - 1, "cut before the split character: %zu", strlen(s));

    rr_set_clipped(&s, NULL, RR_MAX_NAME);
    CHECK(s && !s[0], "NULL -> empty");
    free(s);
    return t_report("test_runrec");
}
