// allreduce.c: sum and max over all ranks of a 1 Mi-element vector, checked element by element.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 20)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double *x = malloc(N * sizeof *x), *sum = malloc(N * sizeof *sum), *max = malloc(N * sizeof *max);
  for (int i = 0; i < N; i++) x[i] = (rank + 1) * (double)(i % 7);   // differs per rank and per element
  MPI_Allreduce(x, sum, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(x, max, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  long bad = 0;
  double ranks = size * (size + 1) / 2.0;                           // 1 + 2 + ... + size
  for (int i = 0; i < N; i++)
    bad += sum[i] != ranks * (i % 7) || max[i] != size * (double)(i % 7);
  long bad_all;
  MPI_Reduce(&bad, &bad_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);   // every rank checked its copy
  if (rank == 0) {
    printf("allreduce of %d doubles over %d ranks: %ld wrong elements: %s\n", N, size, bad_all, bad_all ? "WRONG" : "OK");
    if (bad_all) MPI_Abort(MPI_COMM_WORLD, 4);
  }
  free(x); free(sum); free(max);
  MPI_Finalize();
  return 0;
}
