// Weight matrices as the engine stores them: in the model's number format, dequantised one row at
// a time inside the kernels (never as a whole tensor). Formats:
//   f32        4 bytes per element
//   bf16       2 bytes (round to nearest even)
//   fp8_block  1 byte e4m3 (finite max 448) + one fp32 scale per 128 x 128 block, as DeepSeek's
//              checkpoints store it (weight_scale_inv)
//   mxfp4      4-bit e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6) two per byte + one power-of-two (e8m0) scale
//              per 32 elements of a row (OCP MX, gpt-oss's checkpoints)
// Seeded generation gives every element from (seed, row, column) alone, so a rank that builds only
// its experts gets exactly the values a single rank would.
#pragma once

#include "common/huge_pages.h"
#include "model/dtype.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace moex::engine {

enum class WeightFormat { f32, bf16, fp8_block, mxfp4 };

// The storage format for a model dtype: fp32 -> f32; bf16, fp16 -> bf16; fp8 -> fp8_block; the
// 4-bit formats (mxfp4, nvfp4, int4) -> mxfp4.
WeightFormat weightFormatFor(DType t);
const char* toString(WeightFormat f);

class QuantMatrix {
public:
    QuantMatrix() = default;
    // rows x cols from `values` (row-major fp32), quantised to `fmt`.
    QuantMatrix(WeightFormat fmt, int rows, int cols, const std::vector<float>& values);
    // Element (r, c) = uniform in [-a, a] * sqrt(3) (variance a^2) from a counter-based hash of
    // (seed, r, c), then quantised.
    static QuantMatrix seeded(WeightFormat fmt, int rows, int cols, std::uint64_t seed, float a);
    // A matrix from bytes already in `fmt`'s storage (a checkpoint's, taken without going through
    // fp32): `data` rows x row bytes, `scales` laid out as scaleStorage() says. Throws
    // std::invalid_argument when the sizes do not fit rows x cols.
    static QuantMatrix fromStorage(WeightFormat fmt, int rows, int cols, std::vector<std::uint8_t> data,
                                   std::vector<float> scales);
    // Bytes a rows x cols matrix takes in `fmt`, scales included: what bytes() of one returns.
    static std::size_t storageBytes(WeightFormat fmt, int rows, int cols);

    [[nodiscard]] WeightFormat format() const { return m_fmt; }
    [[nodiscard]] int rows() const { return m_rows; }
    [[nodiscard]] int cols() const { return m_cols; }
    [[nodiscard]] std::size_t bytes() const { return m_data.size() + m_scales.size() * sizeof(float); }

    // Row r as fp32 into out[0..cols).
    void dequantRow(int r, float* out) const { dequantCols(r, 0, m_cols, out); }
    // Columns c0 .. c1 - 1 of row r as fp32 into out[0 .. c1 - c0).
    void dequantCols(int r, int c0, int c1, float* out) const;
    // The whole matrix as fp32 (tests and the NumPy reference only).
    [[nodiscard]] std::vector<float> dequantAll() const;
    // Bytes of row r's elements in storage (what a kernel streams for it), without scales.
    [[nodiscard]] const std::uint8_t* rowData(int r) const { return m_data.data() + static_cast<std::size_t>(r) * m_rowBytes; }
    // The scales that apply to row r: fp8_block one per 128 columns, mxfp4 one per 32; null for
    // f32 and bf16.
    [[nodiscard]] const float* rowScales(int r) const;
    // The stored elements, row-major, and the scales: fp8_block [ceil(rows/128)][ceil(cols/128)],
    // mxfp4 [rows][cols/32], none for f32 and bf16.
    [[nodiscard]] std::span<const std::uint8_t> storage() const { return m_data; }
    [[nodiscard]] std::span<const float> scaleStorage() const { return m_scales; }

private:
    WeightFormat m_fmt = WeightFormat::f32;
    int m_rows = 0;
    int m_cols = 0;
    std::size_t m_rowBytes = 0;
    // In 2 MiB pages where the system gives them (common/huge_pages.h): an expert's matrices are
    // streamed once per step, and a model's weights span gigabytes, far beyond what 4 KiB TLB
    // entries cover (docs/PERFORMANCE.md, CPU engine).
    std::vector<std::uint8_t, HugePageAllocator<std::uint8_t>> m_data;
    std::vector<float> m_scales;  // fp8_block: [ceil(rows/128)][ceil(cols/128)]; mxfp4: [rows][cols/32]

    // Sets the format and shape; the elements zero, the scales one.
    void allocate(WeightFormat fmt, int rows, int cols);
    // Every element from value(row, col) (each called once), rounded to the format in place.
    template <typename Value>
    void quantise(Value value);
    // Row bytes and scale count of a rows x cols matrix in `fmt`.
    static std::size_t rowBytesOf(WeightFormat fmt, int cols);
    static std::size_t scaleCountOf(WeightFormat fmt, int rows, int cols);
};

// Number conversions, exposed for tests.
std::uint16_t floatToBf16(float v);
float bf16ToFloat(std::uint16_t v);
std::uint8_t floatToE4m3(float v);  // saturating at +-448, round to nearest even
float e4m3ToFloat(std::uint8_t v);
std::uint8_t floatToE2m1(float v);  // nearest of +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}
float e2m1ToFloat(std::uint8_t v);

// Counter-based uniform in [-1, 1): the same value for the same (seed, index) everywhere. Inline:
// seeded weights call it once per element (the outer splitmix of the seed then leaves the loop).
namespace detail {
inline std::uint64_t splitmix(std::uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
}  // namespace detail

inline float hashUniform(std::uint64_t seed, std::uint64_t index)
{
    const std::uint64_t h = detail::splitmix(detail::splitmix(seed) ^ index);
    return static_cast<float>(static_cast<double>(h >> 40) * 0x1.0p-23 - 1.0);  // 24 bits -> [-1, 1)
}

}  // namespace moex::engine
