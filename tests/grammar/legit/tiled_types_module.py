"""Stage 2: tiles of types.float32 in shared memory, dimension names spelled out."""
from numba import cuda, types

TILE = 8
ZERO = 0.0


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    tile_a = cuda.shared.array((TILE, TILE), types.float32)
    tile_b = cuda.shared.array((TILE, TILE), types.float32)
    local_col = cuda.threadIdx.x
    local_row = cuda.threadIdx.y
    global_row = cuda.blockIdx.y * cuda.blockDim.y + local_row
    global_col = cuda.blockIdx.x * cuda.blockDim.x + local_col
    result = types.float32(ZERO)
    for phase in range(cuda.gridDim.x):
        tile_a[local_row, local_col] = A[global_row, phase * TILE + local_col]
        tile_b[local_row, local_col] = B[phase * TILE + local_row, global_col]
        cuda.syncthreads()
        for k in range(TILE):
            result += tile_a[local_row, k] * tile_b[k, local_col]
        cuda.syncthreads()
    C[global_row, global_col] = result


def matmul_tiled(A, B, C):
    blocks = C.shape[0] // TILE
    matmul_tiled_kernel[(blocks, blocks), (TILE, TILE)](A, B, C)
