/*
** test_dataset.c: CSV datasets (a good file, then each error with its line:col), synthetic
** determinism and gather's wraparound. Each CSV is written next to its expectations.
*/
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>

#include "models/dataset.h"
#include "sim/rng.h"

static char temp_path[64];

/* Writes text to a fresh temporary file; returns its path (valid until the next call). */
static const char *write_temp(const char *text) {
  snprintf(temp_path, sizeof temp_path, "/tmp/podsim_md_XXXXXX");
  int fd = mkstemp(temp_path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return temp_path;
}

static md_dataset *load(const char *text, const char *label, int vocab, md_error *err) {
  md_dataset *d = md_dataset_load_csv(write_temp(text), label, vocab, 0, err);
  unlink(temp_path);
  return d;
}

/* The label sits in the middle; "1.0" is an integral label; floats go through strtof. */
static void test_load_good(void **state) {
  (void)state;
  md_error err = {0};
  const char *csv = "a,label,b\n1.5,2,3\n-0.25,0,4\n1e-3,1.0,5\n";
  md_dataset *d = load(csv, "label", 0, &err);
  if (d == NULL) fail_msg("%d:%d %s", err.line, err.col, err.msg);
  assert_int_equal(d->rows, 3);
  assert_int_equal(d->width, 2);
  assert_int_equal(d->is_ids, 0);
  assert_int_equal(d->classes, 3);
  assert_string_equal(d->columns[0], "a");
  assert_string_equal(d->columns[1], "b");
  const float x[6] = {1.5f, 3, -0.25f, 4, 1e-3f, 5};
  assert_memory_equal(d->x, x, sizeof x);
  assert_int_equal(d->labels[0], 2);
  assert_int_equal(d->labels[2], 1);
  md_dataset_free(d);

  /* No label name: the last column, here b = 3, 4, 5, so classes = 6. */
  d = load(csv, NULL, 0, &err);
  assert_non_null(d);
  assert_int_equal(d->classes, 6);
  assert_string_equal(d->columns[1], "label");
  md_dataset_free(d);

  /* Ids mode, quoted fields, CRLF line ends. */
  d = load("i0,i1,y\r\n0,3,1\r\n\"2\",2,0\r\n", "y", 4, &err);
  if (d == NULL) fail_msg("%d:%d %s", err.line, err.col, err.msg);
  assert_int_equal(d->is_ids, 1);
  const int32_t ids[4] = {0, 3, 2, 2};
  assert_memory_equal(d->ids, ids, sizeof ids);
  md_dataset_free(d);
}

static void expect_error(const char *csv, const char *label, int vocab, int line, int col,
                         const char *words) {
  md_error err = {0};
  md_dataset *d = load(csv, label, vocab, &err);
  if (d != NULL) fail_msg("loaded, expected an error at %d:%d", line, col);
  if (err.line != line || err.col != col || strstr(err.msg, words) == NULL)
    fail_msg("got %d:%d \"%s\", expected %d:%d \"...%s...\"", err.line, err.col, err.msg, line,
             col, words);
}

static void test_load_errors(void **state) {
  (void)state;
  /* x in line 3, field 2, which starts at column 3 */
  expect_error("a,b,label\n1,2,0\n3,x,1\n", "label", 0, 3, 3, "not a finite number");
  expect_error("a,b,label\n1,2,0\n3,inf,1\n", "label", 0, 3, 3, "not a finite number");
  /* too few fields: the missing field 3 would start just past "3,1" (column 4); too many: the
  ** extra field 4 starts at column 7 of "1,2,0,9" */
  expect_error("a,b,label\n1,2,0\n3,1\n", "label", 0, 3, 4, "expected 3 fields");
  expect_error("a,b,label\n1,2,0,9\n", "label", 0, 2, 7, "expected 3 fields");
  expect_error("a,b,label\n1,2,0\n", "nope", 0, 1, 0, "no label column \"nope\"");
  expect_error("a,label\n1,0\n2,-1\n", "label", 0, 3, 3, "negative");
  expect_error("a,label\n1,0.5\n", "label", 0, 2, 3, "not an integer");
  expect_error("a,label\n1,zero\n", "label", 0, 2, 3, "not a number");
  /* id 3 with a vocabulary of 3: line 2, field 2 at column 3 */
  expect_error("i0,i1,y\n0,3,1\n", "y", 3, 2, 3, "out of range [0, 3)");
  expect_error("", NULL, 0, 1, 0, "empty file");
  expect_error("a,label\n", NULL, 0, 2, 0, "no data rows");
  /* Blank lines are skipped but still counted: the bad field is on physical line 4. */
  expect_error("a,label\n1,0\n\n2,x\n", "label", 0, 4, 3, "not a number");
  /* With 3 classes, label 7 on physical line 4 (after a blank line) at column 5 is refused. */
  md_error lerr = {0};
  assert_null(md_dataset_load_csv(write_temp("a,b,label\n1,2,0\n\n3,4,7\n"), "label", 0, 3, &lerr));
  assert_int_equal(lerr.line, 4);
  assert_int_equal(lerr.col, 5);
  assert_non_null(strstr(lerr.msg, "out of range [0, 3)"));
  md_error err = {0};
  assert_null(md_dataset_load_csv("/nonexistent/podsim.csv", NULL, 0, 0, &err));
  assert_non_null(strstr(err.msg, "No such file"));
}

/* Same seed, same bits; the first features*classes draws are M and each label is the argmax. */
static void test_synthetic(void **state) {
  (void)state;
  gsl_rng *r1 = sim_rng_stream(7, "data"), *r2 = sim_rng_stream(7, "data"), *r3 = sim_rng_stream(8, "data");
  md_dataset *a = md_dataset_synthetic(100, 5, 4, r1);
  md_dataset *b = md_dataset_synthetic(100, 5, 4, r2);
  md_dataset *c = md_dataset_synthetic(100, 5, 4, r3);
  assert_memory_equal(a->x, b->x, sizeof(float) * 500);
  assert_memory_equal(a->labels, b->labels, sizeof(int32_t) * 100);
  assert_memory_not_equal(a->x, c->x, sizeof(float) * 500);
  assert_string_equal(a->columns[4], "f4");
  for (size_t i = 0; i < 100; i++) assert_true(a->labels[i] >= 0 && a->labels[i] < 4);
  assert_true(a->classes >= 1 && a->classes <= 4);
  /* Replay the stream: M [5,4] first, then row 0's five features; row 0's label is the argmax. */
  gsl_rng *ref = sim_rng_stream(7, "data");
  double map[20], score[4] = {0};
  for (int k = 0; k < 20; k++) map[k] = gsl_ran_gaussian(ref, 1.0);
  for (int j = 0; j < 5; j++) {
    float xj = (float)gsl_ran_gaussian(ref, 1.0);
    assert_true(xj == a->x[j]);
    for (int k = 0; k < 4; k++) score[k] += (double)xj * map[j * 4 + k];
  }
  int best = 0;
  for (int k = 1; k < 4; k++) best = score[k] > score[best] ? k : best;
  assert_int_equal(a->labels[0], best);
  gsl_rng_free(ref);
  md_dataset_free(a);
  md_dataset_free(b);
  md_dataset_free(c);
  gsl_rng_free(r1);
  gsl_rng_free(r2);
  gsl_rng_free(r3);
}

/* Five rows, gathering 4 from row 3: rows 3, 4, 0, 1. */
static void test_gather_wraps(void **state) {
  (void)state;
  md_error err = {0};
  md_dataset *d = load("a,label\n0,0\n1,1\n2,0\n3,1\n4,0\n", NULL, 0, &err);
  assert_non_null(d);
  float x[4];
  int32_t y[4];
  md_dataset_gather(d, 3, 4, x, NULL, y, NULL);
  const float wx[4] = {3, 4, 0, 1};
  const int32_t wy[4] = {1, 0, 0, 1};
  assert_memory_equal(x, wx, sizeof wx);
  assert_memory_equal(y, wy, sizeof wy);
  md_dataset_gather(d, 13, 1, x, NULL, y, NULL);
  assert_true(x[0] == 3.0f);
  md_dataset_free(d);
}

/* Target columns by name (any order in the file, features the rest in file order), by default
** the last ones; a missing or repeated name is an error at the header. */
static void test_dataset_targets(void **state) {
  (void)state;
  const char *path = write_temp("a,y1,b,y0\n1,0.5,2,0.25\n3,1,4,0\n");
  md_error err = {0};
  md_dataset *d = md_dataset_load_csv_targets(path, (const char *const[]){"y0", "y1"}, 2, 0, &err);
  if (d == NULL) fail_msg("%s", err.msg);
  assert_int_equal(d->width, 2);
  assert_string_equal(d->columns[1], "b");
  float x[4], t[4];
  md_dataset_gather(d, 1, 2, x, NULL, NULL, t);
  const float want_t[4] = {0, 1, 0.25f, 0.5f}, want_x[4] = {3, 4, 1, 2};
  for (int i = 0; i < 4; i++) assert_true(t[i] == want_t[i] && x[i] == want_x[i]);
  md_dataset_free(d);

  d = md_dataset_load_csv_targets(path, NULL, 2, 0, &err);
  assert_string_equal(d->columns[1], "y1");
  assert_true(d->targets[0] == 2 && d->targets[1] == 0.25f);
  md_dataset_free(d);

  assert_null(md_dataset_load_csv_targets(path, (const char *const[]){"y0", "z"}, 2, 0, &err));
  assert_string_equal(err.msg, "no label column \"z\" in the header");
  assert_null(md_dataset_load_csv_targets(path, (const char *const[]){"y0", "y0"}, 2, 0, &err));
  assert_int_equal(err.col, 8);  /* the character where the repeated column's field starts */
  unlink(path);
}

/* Shapes-only data holds no row, yet a gather hands one out: id columns drawn in [0, vocab) from
** (seed, row, column) alone, the same row the same ids whichever gather asks, float columns,
** labels and targets 0. 4000 draws over a vocab of 4: each id between 900 and 1100 times (1000
** expected, sd sqrt(4000 x 0.25 x 0.75) = 27: a draw that ignored the row or column fails). */
static void test_shapes_draws_ids(void **state) {
  (void)state;
  const int vocab[3] = {0, 4, 4};  /* a float column, then two id columns (model.inputs) */
  md_dataset *d = md_dataset_shapes(2000, 3, 2, 0, 0, vocab, 7);
  assert_null(d->x);
  float x[2000 * 3];
  int32_t labels[2000];
  memset(labels, 0xff, sizeof labels);
  md_dataset_gather(d, 0, 2000, x, NULL, labels, NULL);
  int count[4] = {0};
  for (int i = 0; i < 2000; i++) {
    assert_true(x[i * 3] == 0.0f && labels[i] == 0);
    for (int c = 1; c < 3; c++) {
      float id = x[i * 3 + c];
      assert_true(id >= 0 && id < 4 && id == (float)(int)id);
      count[(int)id]++;
    }
  }
  for (int k = 0; k < 4; k++) assert_in_range(count[k], 900, 1100);
  float again[3];
  int64_t row = 1234;
  md_dataset_gather_rows(d, &row, 1, again, NULL, NULL, NULL);
  assert_memory_equal(again, x + 1234 * 3, sizeof again);
  md_dataset_free(d);

  /* An id dataset (model.input ids) fills the ids buffer, and another seed draws other ids. */
  const int ids_vocab[2] = {1000, 1000};
  md_dataset *a = md_dataset_shapes(10, 2, 2, 0, 1, ids_vocab, 7), *b = md_dataset_shapes(10, 2, 2, 0, 1, ids_vocab, 8);
  int32_t ia[20], ib[20];
  md_dataset_gather(a, 0, 10, NULL, ia, NULL, NULL);
  md_dataset_gather(b, 0, 10, NULL, ib, NULL, NULL);
  int differ = 0;
  for (int i = 0; i < 20; i++) {
    assert_true(ia[i] >= 0 && ia[i] < 1000);
    differ += ia[i] != ib[i];
  }
  assert_true(differ > 15);
  md_dataset_free(a);
  md_dataset_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_good),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_synthetic),
      cmocka_unit_test(test_gather_wraps),
      cmocka_unit_test(test_dataset_targets),
      cmocka_unit_test(test_shapes_draws_ids),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
