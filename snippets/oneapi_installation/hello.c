// hello.c: every rank reports to rank 0, which prints one line per rank in rank order.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, len;
  char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  MPI_Get_library_version(lib, &len);
  // gather every rank's host name on rank 0, so the output comes in rank order (room for any number of ranks)
  char *all = NULL;
  if (rank == 0 && !(all = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME))) {
    fprintf(stderr, "hello: no memory for the host names of %d ranks\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    lib[strcspn(lib, "\n,")] = '\0';        // first line of the library's version string
    printf("%s\n", lib);
    for (int r = 0; r < size; r++)
      printf("rank %d of %d on %s host as rank 0\n", r, size,
             strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, host) ? "another" : "the same");
    free(all);
  }
  MPI_Finalize();
  return 0;
}
