// A strict pickle reader for what torch.save writes for plain dicts of tensors (protocol 2).
//
//   const PickleValue root = parsePickle(entry.data, path, entry.offset);
//   const PickleValue* counts = root.get("logical_count");   // a PickleValue::Kind::tensor
//
// It never executes anything: the only globals it accepts are torch._utils._rebuild_tensor_v2,
// torch.<Type>Storage and collections.OrderedDict, and it does not call them either: REDUCE of
// _rebuild_tensor_v2 yields a tensor description (storage key, dtype, offset, size, stride) and
// OrderedDict() an empty dict. Opcodes read: those FORMATS.md lists for the stat-mode dict, plus
// EMPTY_LIST / APPEND / APPENDS / SETITEM / LONG1, which torch.save writes for the per_pass and
// per_token dumps (lists of record dicts). Every other opcode or global is refused with an InputError naming
// the opcode (hex and name) and its byte offset. Stack, memo, nesting, strings and the copies made
// through the memo are bounded, so a hostile file cannot exhaust memory or the C++ stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moex {

// Element type of a torch storage, from its class name (torch.IntStorage -> i32).
enum class TorchDType { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };

[[nodiscard]] const char* toString(TorchDType t);
[[nodiscard]] std::size_t elementSize(TorchDType t);

// A tensor as torch.save describes it: a view (offset, size, stride, in elements) into a storage
// whose raw bytes are the archive entry "<stem>/data/<storage_key>".
struct TensorRef {
    std::string storage_key;
    std::string location;  // "cpu", "cuda:0", ...: where it lived; the bytes are the same
    TorchDType dtype = TorchDType::u8;
    std::int64_t storage_numel = 0;
    std::int64_t offset = 0;
    std::vector<std::int64_t> size;
    std::vector<std::int64_t> stride;

    [[nodiscard]] std::int64_t numel() const;
};

struct PickleValue {
    // storage and global appear only while the pickle runs (arguments of REDUCE); a finished value
    // holds the others.
    enum class Kind { none, boolean, integer, floating, string, tuple, list, dict, tensor, storage, global };

    Kind kind = Kind::none;
    std::int64_t i = 0;  // integer, boolean
    double f = 0;
    std::string s;       // string; global: "module name"
    std::vector<PickleValue> items;       // tuple, list; dict: the values
    std::vector<std::string> keys;        // dict keys, in insertion order (parallel to items)
    std::shared_ptr<const TensorRef> tensor;  // tensor, storage
    int depth = 1;                        // nesting depth, bounded while parsing

    [[nodiscard]] const PickleValue* get(std::string_view key) const;  // dict lookup, nullptr if absent
    [[nodiscard]] static const char* kindName(Kind k);
};

struct PickleLimits {
    std::size_t max_stack = 1u << 16;
    std::size_t max_marks = 256;
    std::size_t max_memo = 1u << 20;
    std::size_t max_string_bytes = 1u << 20;
    int max_depth = 64;
    // Values copied in or out of the memo, in nodes, plus two per byte of the pickle: each object
    // is built once by its own opcode, so only these copies could grow faster than the file.
    std::size_t max_copied_nodes = 1u << 20;
};

// Runs the pickle in `bytes`. Errors are InputError at `file`, saying "byte N" = fileOffset + the
// position in the pickle, so that an entry of a ZIP can be located in the file.
PickleValue parsePickle(std::string_view bytes, const std::string& file, std::size_t fileOffset = 0,
                        const PickleLimits& limits = {});

}  // namespace moex
