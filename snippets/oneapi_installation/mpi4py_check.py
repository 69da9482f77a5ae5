"""mpi4py on whatever MPI library it loaded: ranks, the library's name, an allreduce checked on every rank."""
# needs: oneapi-wheels
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
x = np.full(1 << 16, rank + 1, dtype=np.float64)        # rank r contributes r+1 everywhere
total = np.empty_like(x)
comm.Allreduce(x, total, op=MPI.SUM)                    # buffer interface: no pickling
expected = size * (size + 1) / 2
assert np.all(total == expected), f"rank {rank}: allreduce gave {total[:3]}..., expected {expected}"
ranks = comm.gather(rank, root=0)                       # a Python object, pickled
if rank == 0:
    print(MPI.Get_library_version().splitlines()[0].split(",")[0].strip())
    print(f"{size} ranks {ranks}: allreduce sum {total[0]:.0f} (expected {expected:.0f}) OK")
