"""Collective communication engines, one per backend: MPI (mpi.py) for cpu, NCCL (nccl.py) for
cuda, RCCL (rccl.py) for rocm. calls.py holds the runtime functions the generated Comm's arms
call (comm_<op>), the same for every engine: each forwards to the engine's communicator."""
