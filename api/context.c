/* Contexts: one backend, one device, one stream/queue. */
#include "qgmm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_status create(const char *backend, int device, void *stream, int adopt,
                          qgmm_context **out)
{
    if (!out) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "out is NULL");
    if (!backend) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "backend is NULL");
    if (device < 0)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "device is %d; must be >= 0", device);
    /* NULL is a valid native stream (the runtime's default stream): the backend is told
     * apart from "create your own" by a distinct value. */
    if (adopt && !stream) stream = QGMM_NATIVE_STREAM_DEFAULT;
    char reason[512];
    const qgmm_backend_vtable *vt = qgmm_registry_find(backend, reason, sizeof reason);
    if (!vt)
        return qgmm_set_error(NULL, QGMM_ERR_BACKEND_UNAVAILABLE, "backend \"%s\" is unavailable: %s",
                              backend, reason);
    int n = vt->device_count();
    if (device >= n)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "device is %d but backend \"%s\" has %d device(s)", device, backend, n);
    qgmm_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a context");
    ctx->vt = vt;
    snprintf(ctx->backend_name, sizeof ctx->backend_name, "%s", vt->name);
    qgmm_status s = vt->context_create(ctx, device, stream, &ctx->impl);
    if (s != QGMM_OK) {
        qgmm_set_error(NULL, s, "backend \"%s\" could not create a context on device %d: %s",
                       backend, device, ctx->last_error[0] ? ctx->last_error : qgmm_status_string(s));
        free(ctx);
        return s;
    }
    if (vt->context_describe) vt->context_describe(ctx->impl, ctx->describe, sizeof ctx->describe);
    else snprintf(ctx->describe, sizeof ctx->describe, "%s device %d", vt->name, device);
    *out = ctx;
    return QGMM_OK;
}

qgmm_status qgmm_context_create(const char *backend, int device, qgmm_context **out)
{
    qgmm_clear_error(NULL);
    return create(backend, device, NULL, 0, out);
}

qgmm_status qgmm_context_create_with_stream(const char *backend, int device, void *native_stream,
                                            qgmm_context **out)
{
    qgmm_clear_error(NULL);
    if (backend && (strcmp(backend, "cpu") == 0 || strcmp(backend, "vulkan") == 0))
        return qgmm_set_error(NULL, QGMM_ERR_UNSUPPORTED,
                              "backend \"%s\" has no native streams to adopt", backend);
    return create(backend, device, native_stream, 1, out);
}

void qgmm_context_destroy(qgmm_context *ctx)
{
    if (!ctx) return;
    uint32_t st = 0;
    ctx->vt->synchronize(ctx, &st);
    ctx->vt->context_destroy(ctx->impl);
    free(ctx);
}

/* ---------------------------------------------------------------- offsets log */
static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int same_use(const qgmm_offsets_use *u, const qgmm_offsets_use *v)
{
    return same_text(u->op, v->op) && same_text(u->arg, v->arg) && same_text(u->rule, v->rule) &&
           same_text(u->what, v->what);
}

static qgmm_status record_use(qgmm_context *ctx, qgmm_status s, qgmm_offsets_use u)
{
    if (s != QGMM_OK) return s;
    if (ctx->offsets_owner) {
        u.op = ctx->offsets_owner;
        u.arg = ctx->offsets_owner_arg;
        u.rule = NULL;
        u.what = NULL;
    }
    for (int i = 0; i < ctx->offsets_log_len; ++i)
        if (same_use(&ctx->offsets_log[i], &u)) return s;
    if (ctx->offsets_log_len == QGMM_OFFSETS_LOG_CAP) {
        ++ctx->offsets_log_dropped;
        return s;
    }
    ctx->offsets_log[ctx->offsets_log_len++] = u;
    return s;
}

qgmm_status qgmm_offsets_enqueued(qgmm_context *ctx, qgmm_status s, const char *op, const char *arg,
                                  const char *rule)
{
    const qgmm_offsets_use u = {op, arg, rule, NULL};
    return record_use(ctx, s, u);
}

qgmm_status qgmm_device_check_enqueued(qgmm_context *ctx, qgmm_status s, const char *op, const char *arg,
                                       const char *what)
{
    const qgmm_offsets_use u = {op, arg, NULL, what};
    return record_use(ctx, s, u);
}

void qgmm_offsets_owner(qgmm_context *ctx, const char *op, const char *arg)
{
    ctx->offsets_owner = op;
    ctx->offsets_owner_arg = arg;
}

static void offsets_log_clear(qgmm_context *ctx)
{
    ctx->offsets_log_len = 0;
    ctx->offsets_log_dropped = 0;
}

/* The BAD_OFFSETS message: the status word is one bit for the whole context, so it names
 * every op that read device offsets since the last synchronize (one of them saw bad ones). */
static qgmm_status bad_offsets(qgmm_context *ctx)
{
    static const char what[] = "decreasing, negative or out-of-range group offsets";
    const int n = ctx->offsets_log_len;
    if (n == 0)
        return qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS,
                              "an op since the last synchronize read %s (device check); that op "
                              "wrote nothing", what);
    if (n == 1 && !ctx->offsets_log_dropped) {
        const qgmm_offsets_use *u = &ctx->offsets_log[0];
        return qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS, "%s: %s holds %s%s%s (device check); %s wrote nothing",
                              u->op, u->arg, u->what ? u->what : what, u->rule ? ", or " : "",
                              u->rule ? u->rule : "", u->op);
    }
    int any_what = 0; /* a device check of something other than group offsets */
    for (int i = 0; i < n; ++i) any_what |= ctx->offsets_log[i].what != NULL;
    if (any_what)
        qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS,
                       "at least one of the %d ops with device checks enqueued since the last "
                       "synchronize found bad input (device check) and wrote nothing:",
                       n + ctx->offsets_log_dropped);
    else
        qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS,
                       "at least one of the %d ops with device offsets enqueued since the last "
                       "synchronize read %s (device check) and wrote nothing:",
                       n + ctx->offsets_log_dropped, what);
    for (int i = 0; i < n; ++i) {
        const qgmm_offsets_use *u = &ctx->offsets_log[i];
        if (any_what)
            qgmm_error_append(ctx, QGMM_ERR_BAD_OFFSETS, "%s %s (%s: %s%s%s)", i ? ";" : "", u->op, u->arg,
                              u->what ? u->what : what, u->rule ? ", or " : "", u->rule ? u->rule : "");
        else
            qgmm_error_append(ctx, QGMM_ERR_BAD_OFFSETS, "%s %s (%s%s%s)", i ? ";" : "", u->op, u->arg,
                              u->rule ? ", or " : "", u->rule ? u->rule : "");
    }
    if (ctx->offsets_log_dropped)
        qgmm_error_append(ctx, QGMM_ERR_BAD_OFFSETS, "; and %d more", ctx->offsets_log_dropped);
    return QGMM_ERR_BAD_OFFSETS;
}

qgmm_status qgmm_synchronize(qgmm_context *ctx)
{
    qgmm_clear_error(ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    uint32_t st = 0;
    qgmm_status s = ctx->vt->synchronize(ctx, &st);
    if (s == QGMM_OK && (st & QGMM_DEVICE_STATUS_BAD_OFFSETS)) s = bad_offsets(ctx);
    offsets_log_clear(ctx);
    return s;
}

const char *qgmm_context_describe(const qgmm_context *ctx) { return ctx ? ctx->describe : ""; }
const char *qgmm_context_backend_name(const qgmm_context *ctx) { return ctx ? ctx->backend_name : ""; }
qgmm_backend_ctx *qgmm_context_impl(const qgmm_context *ctx) { return ctx ? ctx->impl : NULL; }
