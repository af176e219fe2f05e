// A torch.save file opened without torch: the ZIP, its pickle (read strictly, never executed) and
// the raw storages its tensors point into.
//
//   TorchArchive a("expert_distribution_recorder.pt");
//   const PickleValue* t = a.root().get("logical_count");
//   std::vector<double> v = a.values(*t->tensor, "logical_count");   // row-major
#pragma once

#include "placement/pickle_reader.h"
#include "placement/zip_reader.h"

#include <string>
#include <vector>

namespace moex {

class TorchArchive {
public:
    // Reads and checks the whole file (at most 1 GiB); throws InputError naming it.
    explicit TorchArchive(const std::string& path);

    [[nodiscard]] const std::string& path() const { return m_path; }
    [[nodiscard]] const PickleValue& root() const { return m_root; }

    // The tensor's elements in row-major order of its size, converted to double. Integer and
    // float32/float64 storages are read; `what` names the tensor in errors.
    [[nodiscard]] std::vector<double> values(const TensorRef& t, const std::string& what) const;

private:
    std::string m_path;
    std::string m_bytes;
    std::string m_stem;  // the archive's top folder ("archive" in newer torch, the file stem in older)
    std::vector<ZipEntry> m_entries;
    PickleValue m_root;
};

}  // namespace moex
