// Where one engine matrix or vector lies in a checkpoint tensor, and its conversion into the
// engine's storage (internal to checkpoint_weights.cpp; tested through Checkpoint).
#pragma once

#include "engine/checkpoint.h"
#include "engine/quant_matrix.h"

#include <cstddef>
#include <string>
#include <vector>

namespace moex::engine {

// An engine matrix [rows][cols]. Element dtypes (BF16, F16, F32, F8_E4M3): element (r, c) is
// element first + r * rowStride + c * colStride of the tensor; that covers a plain [rows][cols]
// weight, one expert of a fused [experts, ...] tensor, gpt-oss's interleaved gate and up rows and its
// transposed dequantised layout. "MXFP4": row r is packed row first + r * rowStride of the blocks
// (cols / 2 bytes a row, low nibble first) and of the e8m0 scales (cols / 32 bytes a row).
struct MatrixSource {
    std::string name;            // the tensor, for messages
    Checkpoint::Found data;
    Checkpoint::Found scales;    // F8_E4M3: scale_inv [ceil(rows/128)][ceil(cols/128)]; MXFP4: e8m0
    std::string dtype;           // the data's dtype, or "MXFP4" for blocks + scales
    int rows = 0;
    int cols = 0;
    std::size_t first = 0;
    std::size_t rowStride = 0;
    std::size_t colStride = 1;
};

// n values; element i is element first + i * stride of a BF16, F16 or F32 tensor.
struct VectorSource {
    Checkpoint::Found data;
    std::size_t first = 0;
    std::size_t stride = 1;
    std::size_t n = 0;
};

// The matrix in storedFormat(m.dtype, engine): stored bytes and scales copied where that is the
// file's own format, else converted 128 rows at a time (one fp8 block row) through fp32.
QuantMatrix loadMatrix(const MatrixSource& m, WeightFormat engine);
// Bytes loadMatrix's result takes.
std::size_t loadedBytes(const MatrixSource& m, WeightFormat engine);
std::vector<float> loadVector(const VectorSource& v);

// IEEE binary16 to float, exact (subnormals, infinities and NaN included).
float f16ToFloat(std::uint16_t h);

}  // namespace moex::engine
