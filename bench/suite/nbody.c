/* Floating point: an N-body simulation (five bodies, symplectic Euler steps,
 * pairwise gravity with sqrt) for SIZE steps; prints the energy before and
 * after and the bits of the final positions. */
#include <math.h>
#include "common.h"

enum { NB = 5 };
typedef struct { double x[3], v[3], m; } Body;

static double energy(const Body *b) {
  double e = 0;
  for (int i = 0; i < NB; i++) {
    e += 0.5 * b[i].m * (b[i].v[0] * b[i].v[0] + b[i].v[1] * b[i].v[1] + b[i].v[2] * b[i].v[2]);
    for (int j = i + 1; j < NB; j++) {
      double d[3] = {b[i].x[0] - b[j].x[0], b[i].x[1] - b[j].x[1], b[i].x[2] - b[j].x[2]};
      e -= b[i].m * b[j].m / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
  }
  return e;
}

static void step(Body *b, double dt) {
  for (int i = 0; i < NB; i++)
    for (int j = i + 1; j < NB; j++) {
      double d[3] = {b[i].x[0] - b[j].x[0], b[i].x[1] - b[j].x[1], b[i].x[2] - b[j].x[2]};
      double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      double mag = dt / (r2 * sqrt(r2));
      for (int k = 0; k < 3; k++) {
        b[i].v[k] -= d[k] * b[j].m * mag;
        b[j].v[k] += d[k] * b[i].m * mag;
      }
    }
  for (int i = 0; i < NB; i++)
    for (int k = 0; k < 3; k++) b[i].x[k] += dt * b[i].v[k];
}

int main(int argc, char **argv) {
  long steps = suite_size(argc, argv, 1500000);
  /* A made-up planetary system: a heavy centre and four orbiters (units with G = 1). */
  Body b[NB] = {
      {{0, 0, 0}, {0, 0, 0}, 40.0},
      {{4.8, -1.1, -0.1}, {0.6, 2.8, -0.02}, 0.04},
      {{8.3, 4.1, -0.4}, {-1.0, 1.8, 0.008}, 0.011},
      {{12.9, -15.1, -0.2}, {1.08, 0.87, -0.01}, 0.0017},
      {{15.4, -25.9, 0.2}, {0.98, 0.59, -0.03}, 0.002},
  };
  /* Zero the total momentum so the centre stays put. */
  double p[3] = {0, 0, 0};
  for (int i = 1; i < NB; i++)
    for (int k = 0; k < 3; k++) p[k] += b[i].v[k] * b[i].m;
  for (int k = 0; k < 3; k++) b[0].v[k] = -p[k] / b[0].m;
  double e0 = energy(b);
  for (long s = 0; s < steps; s++) step(b, 0.001);
  double e1 = energy(b);
  uint64_t h = SUITE_FOLD_INIT;
  for (int i = 0; i < NB; i++) h = suite_fold(h, b[i].x, sizeof b[i].x);
  printf("nbody: e0=%.9f e1=%.9f bits=%016llx\n", e0, e1, (unsigned long long)h);
  return 0;
}
