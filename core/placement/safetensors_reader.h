// A strict reader for safetensors files (the format TensorRT-LLM dumps expert statistics in).
//
//   for (const SafetensorsTensor& t : parseSafetensors(bytes, path)) counts = safetensorsInts(t, path);
//
// Layout: u64 little-endian header length, a JSON header {name: {"dtype", "shape",
// "data_offsets": [begin, end]}, "__metadata__": {...}}, then the raw bytes, offsets relative to
// the end of the header. Every offset is checked: inside the data, sized dtype x shape, tensors
// neither overlapping nor leaving holes (as the safetensors library itself requires).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

struct SafetensorsTensor {
    std::string name;
    std::string dtype;  // "I64", "I32", "F32", ...
    std::vector<std::int64_t> shape;
    std::string_view data;   // view into the bytes given to parseSafetensors
    std::size_t offset = 0;  // byte offset of data in the file
};

// Tensors in header order. Throws InputError at `file` on any inconsistency.
std::vector<SafetensorsTensor> parseSafetensors(std::string_view bytes, const std::string& file);

// The elements of an I64 or I32 tensor; any other dtype is an InputError naming it.
std::vector<std::int64_t> safetensorsInts(const SafetensorsTensor& t, const std::string& file);

}  // namespace moex
