/*
** closure.c: a scheduled function or a per-worker resource, and the context a function runs in
** (ds_closure_ in closure.h).
**
** A closure is created by schedule (or create_per_worker_dataset / iter) and freed once its
** outcome is final: completed, failed or cancelled. Between runs (back on the FIFO after a
** failure) it keeps its id and attempt count. The context fields (worker, actor, cpu, device,
** status, cleanup) describe the current run only; the coordinator sets them before each run.
*/
#include "strategies/ps/closure.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "strategies/ps/coordinatorInt.h"
#include "strategies/core/strategiesInt.h"

ds_closure *ds__closure_new(ds_coordinator *c, ds__closure_kind kind) {
  ds_closure *cl = base_xcalloc(1, sizeof *cl);
  cl->coord = c;
  cl->kind = kind;
  cl->worker = -1;
  return cl;
}

void ds__closure_free(ds_closure *cl) {
  if (cl == NULL) return;
  for (int i = 0; i < cl->nargs; i++)
    if (cl->args[i].kind == DS_CLOSURE_ARG_VALUE) ds_value_free((ds_value *)cl->args[i].value);
  free(cl->args);
  free(cl);
}

int             ds_closure_worker(const ds_closure *ctx) { return ctx->worker; }
const char     *ds_closure_device(const ds_closure *ctx) { return ctx->device; }
sim_actor      *ds_closure_actor(const ds_closure *ctx) { return ctx->actor; }
sim_cpu        *ds_closure_cpu(const ds_closure *ctx) { return ctx->cpu; }
ds_coordinator *ds_closure_coordinator(const ds_closure *ctx) { return ctx->coord; }
int64_t         ds_closure_id(const ds_closure *ctx) { return ctx->id; }
int             ds_closure_attempt(const ds_closure *ctx) { return ctx->attempts; }
int             ds_closure_num_args(const ds_closure *ctx) { return ctx->nargs; }
const ds_status *ds_closure_status(const ds_closure *ctx) { return &ctx->status; }

const ds_value *ds_closure_value(const ds_closure *ctx, int i) {
  if (i < 0 || i >= ctx->nargs || ctx->args[i].kind != DS_CLOSURE_ARG_VALUE) return NULL;
  return ctx->args[i].value;
}

static void *worker_element(const ds_closure *ctx, int i, ds__closure_kind kind) {
  if (i < 0 || i >= ctx->nargs || ctx->args[i].kind != DS_CLOSURE_ARG_PER_WORKER) return NULL;
  return ds__per_worker_resource(ctx->args[i].per_worker, ctx->worker, kind);
}

ds_dataset *ds_closure_dataset(const ds_closure *ctx, int i) {
  return worker_element(ctx, i, DS__CLOSURE_DATASET);
}

ds_dataset_iterator *ds_closure_iterator(const ds_closure *ctx, int i) {
  return worker_element(ctx, i, DS__CLOSURE_ITERATOR);
}

int ds_closure_get_next(ds_closure *ctx, int i, md_tensor **out) {
  ds_dataset_iterator *it = ds_closure_iterator(ctx, i);
  if (it == NULL)
    return ds_closure_fail(ctx, DS_TYPE_ERROR, "argument %d is not a per-worker iterator", i);
  return ds_dataset_get_next(it, out, &ctx->status);
}

int ds_closure_fail(ds_closure *ctx, ds_error_kind kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_status_vset(&ctx->status, kind, fmt, ap);
  va_end(ap);
  return -1;
}

int ds_closure_fail_ps(ds_closure *ctx, int ps) {
  return ds_closure_fail(ctx, DS_UNAVAILABLE_ERROR, "Socket closed\nAdditional " 
                         DS_COORDINATOR_PS_RPC_ERROR "/replica:0/task:%d:\n:{\"grpc_status\":14}",
                         ps);
}

void ds_closure_on_kill(ds_closure *ctx, ds_closure_cleanup_fn fn, void *arg) {
  ctx->cleanup = fn;
  ctx->cleanup_arg = arg;
}

/* TF's execute_on: an argument whose per-worker value failed to build fails the closure with
** ClosureInputError, which keeps the original error's kind. */
static int check_inputs(ds_closure *cl) {
  for (int i = 0; i < cl->nargs; i++) {
    if (cl->args[i].kind != DS_CLOSURE_ARG_PER_WORKER) continue;
    const ds_remote_value *rv = ds__per_worker_value(cl->args[i].per_worker, cl->worker);
    if (rv->state == DS_REMOTE_READY && rv->error.kind == DS_OK) continue;
    ds_error_kind kind = rv->state == DS_REMOTE_READY ? rv->error.kind : DS_CANCELLED_ERROR;
    return ds_closure_fail(cl, kind, "Input has an error, the original exception is %s: %s",
                           ds_error_kind_name(kind), rv->state == DS_REMOTE_READY
                           ? rv->error.message : "the per-worker value is not built");
  }
  return 0;
}

int ds__closure_run_function(ds_closure *cl, ds_value **result) {
  *result = NULL;
  ds_status_clear(&cl->status);
  cl->cleanup = NULL;
  cl->attempts++;
  if (check_inputs(cl) != 0) return -1;
  if (cl->fn.fn(cl, cl->fn.user, result) == 0) return 0;
  if (cl->status.kind == DS_OK)
    ds_closure_fail(cl, DS_RUNTIME_ERROR, "closure %lld failed without an error",
                    (long long)cl->id);
  ds_value_free(*result);
  *result = NULL;
  return -1;
}

void ds__closure_run_resource(ds_closure *cl) {
  ds_status st;
  ds_status_clear(&st);
  void *made = NULL;
  if (cl->kind == DS__CLOSURE_DATASET) {
    made = cl->dataset_fn(cl->dataset_user, &st);
    if (made == NULL && st.kind == DS_OK)
      ds_status_set(&st, DS_TYPE_ERROR, "dataset_fn returned no dataset");
  } else if (cl->source->state == DS_REMOTE_READY && cl->source->error.kind == DS_OK) {
    made = ds_dataset_make_iterator(cl->source->resource);
  } else {
    ds_status_set(&st, cl->source->error.kind != DS_OK ? cl->source->error.kind : DS_CANCELLED_ERROR,
                  "Input has an error, the original exception is: %s",
                  cl->source->error.kind != DS_OK ? cl->source->error.message
                  : "the worker's dataset is not built");
  }
  if (made != NULL) ds__remote_value_set_resource(cl->out, made);
  else ds__remote_value_set_error(cl->out, &st);
}
