// Number formats of weights and activations, with their real storage cost.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace moex {

enum class DType { bf16, fp16, fp8, nvfp4, mxfp4, int4, fp32 };

// Bytes per element including block-scale overhead:
//   bf16/fp16 2; fp32 4; fp8 1 + one fp32 scale per 128x128 block;
//   nvfp4 0.5 + one fp8 scale per 16 elements (= 0.5625); mxfp4 0.5 + one e8m0 scale per 32 (= 0.53125);
//   int4 0.5 + one bf16 scale per group of 32 (= 0.5625).
double bytesPerElement(DType t);
std::string_view toString(DType t);
std::optional<DType> parseDType(std::string_view s);
// True for the 4-bit formats (nvfp4, mxfp4, int4).
bool isFourBit(DType t);

}  // namespace moex
