#include "engine/checkpoint_convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace moex::engine {

// Tensor bytes are read as the little-endian values safetensors stores; the mapped data is not
// aligned (a header's length is arbitrary), hence memcpy rather than casts.
static_assert(std::endian::native == std::endian::little, "checkpoint reading assumes a little-endian host");

namespace {

constexpr int kBand = 128;  // rows converted at a time: one fp8 block row

std::size_t elementSize(const std::string& dtype)
{
    if (dtype == "F32")
        return 4;
    if (dtype == "BF16" || dtype == "F16")
        return 2;
    return 1;  // F8_E4M3, U8
}

const char* at(const Checkpoint::Found& f, std::size_t element, std::size_t size)
{
    return f.tensor->data.data() + element * size;
}

float elementAt(const Checkpoint::Found& f, const std::string& dtype, std::size_t element)
{
    if (dtype == "F32") {
        float v;
        std::memcpy(&v, at(f, element, 4), 4);
        return v;
    }
    std::uint16_t u;
    std::memcpy(&u, at(f, element, 2), 2);
    return dtype == "BF16" ? bf16ToFloat(u) : f16ToFloat(u);
}

float e8m0ToFloat(std::uint8_t s)
{
    return s == 255 ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, static_cast<int>(s) - 127);
}

// The fp8 block scales, [ceil(rows/128)][ceil(cols/128)], as fp32.
std::vector<float> fp8Scales(const MatrixSource& m)
{
    std::vector<float> s(static_cast<std::size_t>(m.scales.tensor->data.size() / elementSize(m.scales.tensor->dtype)));
    for (std::size_t i = 0; i < s.size(); ++i)
        s[i] = elementAt(m.scales, m.scales.tensor->dtype, i);
    return s;
}

// Row r of the matrix as fp32.
void decodeRow(const MatrixSource& m, int r, float* out)
{
    const auto C = static_cast<std::size_t>(m.cols);
    if (m.dtype == "MXFP4") {
        const std::size_t row = m.first + static_cast<std::size_t>(r) * m.rowStride;
        const auto* q = reinterpret_cast<const std::uint8_t*>(at(m.data, row * (C / 2), 1));
        const auto* e = reinterpret_cast<const std::uint8_t*>(at(m.scales, row * (C / 32), 1));
        for (std::size_t c = 0; c < C; c += 2) {
            const float s = e8m0ToFloat(e[c / 32]);
            out[c] = e2m1ToFloat(q[c / 2] & 15u) * s;
            out[c + 1] = e2m1ToFloat(q[c / 2] >> 4) * s;
        }
        return;
    }
    const std::size_t base = m.first + static_cast<std::size_t>(r) * m.rowStride;
    if (m.dtype == "F8_E4M3") {
        const std::size_t bc = (C + kBand - 1) / kBand;
        const std::size_t blockRow = static_cast<std::size_t>(r / kBand) * bc;
        for (std::size_t c = 0; c < C; ++c) {
            const auto q = static_cast<std::uint8_t>(*at(m.data, base + c * m.colStride, 1));
            out[c] = e4m3ToFloat(q) * elementAt(m.scales, m.scales.tensor->dtype, blockRow + c / kBand);
        }
        return;
    }
    for (std::size_t c = 0; c < C; ++c)
        out[c] = elementAt(m.data, m.dtype, base + c * m.colStride);
}

// Elements of `size` bytes, row by row, as the tensor stores them (a row copy when contiguous).
std::vector<std::uint8_t> gatherRows(const MatrixSource& m, std::size_t size, std::size_t rowBytes)
{
    const auto R = static_cast<std::size_t>(m.rows), C = static_cast<std::size_t>(m.cols);
    std::vector<std::uint8_t> data(R * rowBytes);
    for (std::size_t r = 0; r < R; ++r) {
        std::uint8_t* dst = data.data() + r * rowBytes;
        if (m.dtype == "MXFP4") {
            std::memcpy(dst, at(m.data, (m.first + r * m.rowStride) * rowBytes, 1), rowBytes);
        } else if (m.colStride == 1) {
            std::memcpy(dst, at(m.data, m.first + r * m.rowStride, size), rowBytes);
        } else {
            for (std::size_t c = 0; c < C; ++c)
                std::memcpy(dst + c * size, at(m.data, m.first + r * m.rowStride + c * m.colStride, size), size);
        }
    }
    return data;
}

}  // namespace

float f16ToFloat(std::uint16_t h)
{
    const int exp = (h >> 10) & 0x1f;
    const auto man = static_cast<float>(h & 0x3ffu);
    float f;
    if (exp == 0)
        f = std::ldexp(man, -24);
    else if (exp == 31)
        f = man != 0 ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        f = std::ldexp(man + 1024.0f, exp - 25);
    return (h & 0x8000u) ? -f : f;
}

std::size_t loadedBytes(const MatrixSource& m, WeightFormat engine)
{
    return QuantMatrix::storageBytes(storedFormat(m.dtype, engine), m.rows, m.cols);
}

QuantMatrix loadMatrix(const MatrixSource& m, WeightFormat engine)
{
    const WeightFormat fmt = storedFormat(m.dtype, engine);
    const auto R = static_cast<std::size_t>(m.rows), C = static_cast<std::size_t>(m.cols);
    // The file's own format: its bytes and scales as they are.
    if (fmt == WeightFormat::bf16 && m.dtype == "BF16")
        return QuantMatrix::fromStorage(fmt, m.rows, m.cols, gatherRows(m, 2, C * 2), {});
    if (fmt == WeightFormat::f32 && m.dtype == "F32")
        return QuantMatrix::fromStorage(fmt, m.rows, m.cols, gatherRows(m, 4, C * 4), {});
    if (fmt == WeightFormat::fp8_block && m.dtype == "F8_E4M3")
        return QuantMatrix::fromStorage(fmt, m.rows, m.cols, gatherRows(m, 1, C), fp8Scales(m));
    if (fmt == WeightFormat::mxfp4 && m.dtype == "MXFP4") {
        const std::size_t blocks = C / 32;
        std::vector<float> scales(R * blocks);
        for (std::size_t r = 0; r < R; ++r) {
            const auto* e = reinterpret_cast<const std::uint8_t*>(at(m.scales, (m.first + r * m.rowStride) * blocks, 1));
            for (std::size_t b = 0; b < blocks; ++b)
                scales[r * blocks + b] = e8m0ToFloat(e[b]);
        }
        return QuantMatrix::fromStorage(fmt, m.rows, m.cols, gatherRows(m, 1, C / 2), std::move(scales));
    }
    // Another format: a band of rows through fp32, quantised as the engine quantises (an fp8 band
    // is one block row, so its scales are the matrix's for those rows).
    std::vector<std::uint8_t> data;
    std::vector<float> scales;
    std::vector<float> band;
    for (std::size_t r0 = 0; r0 < R; r0 += kBand) {
        const std::size_t n = std::min<std::size_t>(kBand, R - r0);
        band.resize(n * C);
        for (std::size_t i = 0; i < n; ++i)
            decodeRow(m, static_cast<int>(r0 + i), band.data() + i * C);
        const QuantMatrix q(fmt, static_cast<int>(n), m.cols, band);
        data.insert(data.end(), q.storage().begin(), q.storage().end());
        scales.insert(scales.end(), q.scaleStorage().begin(), q.scaleStorage().end());
    }
    return QuantMatrix::fromStorage(fmt, m.rows, m.cols, std::move(data), std::move(scales));
}

std::vector<float> loadVector(const VectorSource& v)
{
    std::vector<float> out(v.n);
    for (std::size_t i = 0; i < v.n; ++i)
        out[i] = elementAt(v.data, v.data.tensor->dtype, v.first + i * v.stride);
    return out;
}

}  // namespace moex::engine
