// ring.c: a token goes once around the ring; each rank adds its number to it.
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    fprintf(stderr, "ring needs at least 2 ranks, got %d: run it with mpiexec -n 2 or more\n", size);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  long token;
  if (rank == 0) {
    token = 0;
    MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
    MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long expected = (long)size * (size - 1) / 2;   // 0 + 1 + ... + (size-1)
    printf("ring of %d ranks: token %ld, expected %ld: %s\n", size, token, expected, token == expected ? "OK" : "WRONG");
    if (token != expected) MPI_Abort(MPI_COMM_WORLD, 3);
  } else {
    MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    token += rank;
    MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
