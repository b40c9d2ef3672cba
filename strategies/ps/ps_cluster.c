/*
** ps_cluster.c: TF_CONFIG and the cluster spec of ParameterServerStrategy (ds_ps_), as
** multi_worker_util.py reads them.
*/
#include "strategies/ps/psInt.h"

#include <string.h>
#include <jansson.h>

/* ---- TF_CONFIG and the cluster spec ------------------------------------------------------ */

static int job_count(json_t *cluster, const char *job, int *count, ds_status *st) {
  json_t *list = json_object_get(cluster, job);
  *count = 0;
  if (list == NULL) return 0;
  if (!json_is_array(list))
    return ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG: cluster.%s must be a list of task addresses", job);
  for (size_t i = 0; i < json_array_size(list); i++)
    if (!json_is_string(json_array_get(list, i)))
      return ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG: cluster.%s[%zu] must be an address string",
                           job, i);
  *count = (int)json_array_size(list);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ValueError naming the first job (in name order: jansson's own order is a hash's) that is not
** one of the four. */
static int check_jobs(json_t *cluster, ds_status *st) {
  static const char *const known[] = { "chief", "worker", "ps", "evaluator" };
  size_t n = json_object_size(cluster), k = 0;
  const char **names = base_xcalloc(n, sizeof *names);
  const char *key;
  json_t *value;
  json_object_foreach(cluster, key, value) {
    int ok = 0;
    for (int j = 0; j < 4; j++) ok |= strcmp(key, known[j]) == 0;
    if (!ok) names[k++] = key;
  }
  (void)value;
  int rc = 0;
  if (k > 0) {
    qsort(names, k, sizeof *names, by_name);
    rc = ds_status_set(st, DS_VALUE_ERROR, "disallowed task type \"%s\" in the cluster spec; allowed "
                       "types are chief, worker, ps and evaluator", names[0]);
  }
  free(names);
  return rc;
}

static int parse_tf_config(json_t *root, ds_ps_cluster_spec *out, ds_status *st) {
  json_t *cluster = json_object_get(root, "cluster"), *task = json_object_get(root, "task");
  if (!json_is_object(cluster))
    return ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG: \"cluster\" must be an object of jobs");
  if (check_jobs(cluster, st) != 0 || job_count(cluster, "chief", &out->chief, st) != 0 ||
      job_count(cluster, "worker", &out->workers, st) != 0 || job_count(cluster, "ps", &out->ps, st) != 0 ||
      job_count(cluster, "evaluator", &out->evaluators, st) != 0)
    return -1;
  if (task == NULL) return 0;
  json_t *type = json_object_get(task, "type"), *index = json_object_get(task, "index");
  if (!json_is_object(task) || (type && !json_is_string(type)) || (index && !json_is_integer(index)))
    return ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG: \"task\" must be {\"type\": string, \"index\": "
                         "integer}");
  if (type && strlen(json_string_value(type)) >= sizeof out->task_type)
    return ds_status_set(st, DS_VALUE_ERROR, "Unrecognized task_type: %s", json_string_value(type));
  if (type) snprintf(out->task_type, sizeof out->task_type, "%s", json_string_value(type));
  out->task_index = index ? (int)json_integer_value(index) : 0;
  return 0;
}

int ds_ps_cluster_spec_from_tf_config(const char *json, ds_ps_cluster_spec *out, ds_status *st) {
  json_error_t err;
  json_t *root = json_loads(json, 0, &err);
  if (root == NULL)
    return ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG is not JSON: %s (line %d, column %d)", err.text,
                         err.line, err.column);
  *out = (ds_ps_cluster_spec){ .task_index = 0 };
  int rc = json_is_object(root) ? parse_tf_config(root, out, st)
                                : ds_status_set(st, DS_VALUE_ERROR, "TF_CONFIG must be a JSON object");
  json_decref(root);
  return rc;
}

static int spec_count(const ds_ps_cluster_spec *c, const char *job) {
  return strcmp(job, "chief") == 0 ? c->chief : strcmp(job, "worker") == 0 ? c->workers
       : strcmp(job, "ps") == 0 ? c->ps : strcmp(job, "evaluator") == 0 ? c->evaluators : -1;
}

/* _verify_args_and_config, _validate_cluster_spec and _connect_to_cluster's checks, in order. */
int ds__ps_check_spec(const ds_ps_cluster_spec *c, ds_status *st) {
  const char *type = c->task_type;
  if (c->chief + c->workers + c->ps + c->evaluators == 0)
    return ds_status_set(st, DS_VALUE_ERROR, "Cluster spec must be non-empty in the cluster resolver");
  if (type[0] && spec_count(c, type) < 0)
    return ds_status_set(st, DS_VALUE_ERROR, "Unrecognized task_type: %s, valid task types are: chief, "
                         "worker, evaluator, ps", type);
  if (type[0] && spec_count(c, type) == 0 && strcmp(type, "evaluator") != 0)
    return ds_status_set(st, DS_VALUE_ERROR, "task_type \"%s\" not found in cluster_spec", type);
  if (c->chief > 1) return ds_status_set(st, DS_VALUE_ERROR, "There must be at most one 'chief' job");
  if (c->evaluators > 1)
    return ds_status_set(st, DS_VALUE_ERROR, "There must be at most one 'evaluator' job");
  if (type[0] && spec_count(c, type) > 0 && (c->task_index < 0 || c->task_index >= spec_count(c, type)))
    return ds_status_set(st, DS_VALUE_ERROR, "The task_id %d exceeds the maximum id of %s", c->task_index,
                         type);
  if (c->ps < 1) return ds_status_set(st, DS_VALUE_ERROR, "There must be at least one ps");
  if (c->workers < 1) return ds_status_set(st, DS_VALUE_ERROR, "There must be at least one worker");
  if (strcmp(type, "worker") == 0 || strcmp(type, "ps") == 0)
    return ds_status_set(st, DS_VALUE_ERROR, "coordinator name should not be 'worker' or 'ps' (task type "
                         "%s)", type);
  return 0;
}
