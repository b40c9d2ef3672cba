/* units.c: see units.h. */
#include "scenarios/config/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_def {
  const char *name;
  int pow10;        /* decimal exponent applied to the number's text */
  double mult;      /* exact factor afterwards (powers of two, 60, 3600) */
  double div;       /* exact divisor afterwards (8 for bits, 60, 3600 for rates) */
} unit_def;

static const unit_def DURATIONS[] = {
  {"ns", -9, 1, 1}, {"us", -6, 1, 1}, {"\xc2\xb5s", -6, 1, 1}, {"ms", -3, 1, 1}, {"s", 0, 1, 1},
  {"min", 0, 60, 1}, {"h", 0, 3600, 1}, {"d", 0, 86400, 1}, {NULL, 0, 0, 0}};
#define KI 1024.0
#define SIZE_UNITS(sfx)                                                                     \
  {"B" sfx, 0, 1, 1}, {"KB" sfx, 3, 1, 1}, {"MB" sfx, 6, 1, 1}, {"GB" sfx, 9, 1, 1},          \
  {"TB" sfx, 12, 1, 1}, {"PB" sfx, 15, 1, 1}, {"KiB" sfx, 0, KI, 1},                          \
  {"MiB" sfx, 0, KI * KI, 1}, {"GiB" sfx, 0, KI * KI * KI, 1}, {"TiB" sfx, 0, KI * KI * KI * KI, 1}
static const unit_def SIZES[] = {SIZE_UNITS(""), {NULL, 0, 0, 0}};
static const unit_def BANDWIDTHS[] = {
  SIZE_UNITS("/s"),
  {"bps", 0, 1, 8}, {"Kbps", 3, 1, 8}, {"Mbps", 6, 1, 8}, {"Gbps", 9, 1, 8}, {"Tbps", 12, 1, 8},
  {"Kb/s", 3, 1, 8}, {"Mb/s", 6, 1, 8}, {"Gb/s", 9, 1, 8}, {"Tb/s", 12, 1, 8},
  {NULL, 0, 0, 0}};
static const unit_def FLOPS[] = {
  {"FLOP/s", 0, 1, 1}, {"KFLOP/s", 3, 1, 1}, {"MFLOP/s", 6, 1, 1}, {"GFLOP/s", 9, 1, 1},
  {"TFLOP/s", 12, 1, 1}, {"PFLOP/s", 15, 1, 1},
  {"FLOPS", 0, 1, 1}, {"KFLOPS", 3, 1, 1}, {"MFLOPS", 6, 1, 1}, {"GFLOPS", 9, 1, 1},
  {"TFLOPS", 12, 1, 1}, {"PFLOPS", 15, 1, 1}, {NULL, 0, 0, 0}};
static const unit_def RATES[] = {
  {"/s", 0, 1, 1}, {"/min", 0, 1, 60}, {"/h", 0, 1, 3600}, {"/d", 0, 1, 86400}, {NULL, 0, 0, 0}};

static const struct {
  const unit_def *units;
  const char *expected;
  const char *what;
  const char *list;
} KINDS[] = {
  [UNIT_DURATION] = {DURATIONS, "a duration with a unit such as 5us, 20ms or 12.5s", "duration",
                     "ns, us, ms, s, min, h, d"},
  [UNIT_SIZE] = {SIZES, "a size with a unit such as 512B, 100MB or 16GiB", "size",
                 "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"},
  [UNIT_BANDWIDTH] = {BANDWIDTHS, "a bandwidth with a unit such as 100GB/s or 25Gbps", "bandwidth",
                      "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s .. TiB/s, bps, Kbps, Mbps, Gbps, Tbps"},
  [UNIT_FLOPS] = {FLOPS, "a FLOP rate with a unit such as 50GFLOP/s or 275TFLOP/s", "FLOP rate",
                  "FLOP/s, KFLOP/s, MFLOP/s, GFLOP/s, TFLOP/s, PFLOP/s"},
  [UNIT_RATE] = {RATES, "a rate with a unit such as 0.5/h or 2/min", "rate", "/s, /min, /h, /d"},
};

const char *units_expected(unit_kind k) { return KINDS[k].expected; }

/* Length of the decimal number at S ([+-]digits[.digits][e[+-]digits]); sets where the
** mantissa ends and the exponent value. 0 when S does not start with a number. */
static size_t scan_number(const char *s, size_t *mant_end, long *exp10) {
  size_t i = 0, digits = 0;
  if (s[i] == '+' || s[i] == '-') i++;
  while (s[i] >= '0' && s[i] <= '9') { i++; digits++; }
  if (s[i] == '.') {
    i++;
    while (s[i] >= '0' && s[i] <= '9') { i++; digits++; }
  }
  if (!digits) return 0;
  *mant_end = i;
  *exp10 = 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-') j++;
    if (s[j] >= '0' && s[j] <= '9') {
      char *end;
      errno = 0;
      long e = strtol(s + i + 1, &end, 10);
      if (errno || e > 100000 || e < -100000) return 0;
      *exp10 = e;
      i = (size_t)(end - s);
    }
  }
  return i;
}

int units_parse(unit_kind k, const char *text, double *out, char *why, size_t whylen) {
  size_t mant_end;
  long exp10;
  size_t n = scan_number(text, &mant_end, &exp10);
  if (!n) {
    snprintf(why, whylen, "expected %s, found \"%s\"", KINDS[k].expected, text);
    return -1;
  }
  const char *u = text + n;
  while (*u == ' ') u++;
  if (!*u) {
    snprintf(why, whylen, "expected %s, found %s", KINDS[k].expected, text);
    return -1;
  }
  const unit_def *d = KINDS[k].units;
  for (; d->name; d++)
    if (!strcmp(d->name, u)) break;
  if (!d->name) {
    snprintf(why, whylen, "expected %s, found \"%s\" (%s units: %s)", KINDS[k].expected, text,
             KINDS[k].what, KINDS[k].list);
    return -1;
  }
  if (text[0] == '-') {
    snprintf(why, whylen, "expected a non-negative %s, found %s", KINDS[k].what, text);
    return -1;
  }
  char buf[128];
  if (mant_end >= 96) {
    snprintf(why, whylen, "expected %s, found a number too long: %s", KINDS[k].expected, text);
    return -1;
  }
  memcpy(buf, text, mant_end);
  snprintf(buf + mant_end, sizeof buf - mant_end, "e%ld", exp10 + d->pow10);
  double v = strtod(buf, NULL);
  v = v * d->mult / d->div;
  if (!isfinite(v)) {
    snprintf(why, whylen, "expected a finite %s, found %s", KINDS[k].what, text);
    return -1;
  }
  *out = v;
  return 0;
}

const char *units_base(unit_kind k) {
  static const char *const base[] = { "s", "B", "B/s", "FLOP/s", "/s" };
  return base[k];
}

const char *units_pattern(unit_kind k, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "^\\+?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][+-]?[0-9]+)? *(");
  for (const unit_def *d = KINDS[k].units; d->name && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s", d == KINDS[k].units ? "" : "|", d->name);
  if (used < len) snprintf(buf + used, len - used, ")$");
  return buf;
}
