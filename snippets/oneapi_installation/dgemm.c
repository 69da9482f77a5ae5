// dgemm.c: C = A*B in double precision through oneMKL's CBLAS interface, checked, then timed.
// Usage: dgemm [n] [repetitions]; prints "n,best_seconds,GFLOP/s".
#include <math.h>
#include <mkl.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 5;
  if (n < 1 || reps < 1) { fprintf(stderr, "usage: dgemm [n >= 1] [repetitions >= 1]\n"); return 1; }
  double *A = mkl_malloc(sizeof(double) * n * n, 64), *B = mkl_malloc(sizeof(double) * n * n, 64),
         *C = mkl_malloc(sizeof(double) * n * n, 64);
  srand(1);
  for (long i = 0; i < (long)n * n; i++) { A[i] = rand() / (double)RAND_MAX - 0.5; B[i] = rand() / (double)RAND_MAX - 0.5; }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
  for (int k = 0; k < 16; k++) {                     // spot-check 16 entries against a plain dot product
    int i = (k * 7919) % n, j = (k * 104729) % n;
    double ref = 0;
    for (int l = 0; l < n; l++) ref += A[(long)i * n + l] * B[(long)l * n + j];
    if (fabs(C[(long)i * n + j] - ref) > 1e-9 * n) { fprintf(stderr, "wrong result at (%d,%d)\n", i, j); return 2; }
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = dsecnd();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
    double t = dsecnd() - t0;
    if (t < best) best = t;
  }
  printf("%d,%.6f,%.2f\n", n, best, 2.0 * n * n * n / best / 1e9);
  mkl_free(A); mkl_free(B); mkl_free(C);
  return 0;
}
