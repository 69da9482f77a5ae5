// bench.c: ping-pong and allreduce timings, the same program built against each MPI.
// Prints CSV lines: test,bytes,usec,MB/s (ping-pong: half a round trip, as IMB reports it;
// allreduce: average time per call on rank 0). Usage: bench [max_bytes] [iterations]
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long max_bytes = argc > 1 ? atol(argv[1]) : 1 << 22;
  int iters = argc > 2 ? atoi(argv[2]) : 200;
  if (max_bytes < 8 || iters < 1) {
    if (rank == 0) fprintf(stderr, "usage: bench [max_bytes >= 8] [iterations >= 1]\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char *a = malloc(max_bytes), *b = malloc(max_bytes);
  memset(a, rank + 1, max_bytes);
  for (long n = 1; n <= max_bytes; n *= 4) {          // ping-pong between ranks 0 and 1
    int reps = n >= (1 << 20) ? iters / 10 + 1 : iters;
    for (int warm = 0; warm < 2; warm++) {             // first pass warms up, second is timed
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < reps && rank < 2; i++) {
        if (rank == 0) {
          MPI_Send(a, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(b, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
      }
      double us = (MPI_Wtime() - t0) / reps / 2 * 1e6;
      if (warm && rank == 0) printf("pingpong,%ld,%.3f,%.1f\n", n, us, n / us);
    }
  }
  for (long n = 8; n <= max_bytes; n *= 4) {           // allreduce of doubles, all ranks
    int reps = n >= (1 << 20) ? iters / 10 + 1 : iters;
    for (int warm = 0; warm < 2; warm++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int i = 0; i < reps; i++)
        MPI_Allreduce(a, b, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      double us = (MPI_Wtime() - t0) / reps * 1e6;
      if (warm && rank == 0) printf("allreduce,%ld,%.3f,%.1f\n", n, us, n / us);
    }
  }
  free(a); free(b);
  MPI_Finalize();
  return 0;
}
