// The per-format readers behind readLoadStats (load_stats.cpp detects which one a path needs).
// Internal to core/placement: callers use readLoadStats.
#pragma once

#include "placement/load_stats.h"

#include <string>
#include <string_view>
#include <vector>

namespace moex::detail {

// Snapshots kept of a file (SGLang's non-empty buffer rows, TensorRT-LLM's iterations): each is a
// layers x experts matrix for the report's windows. Real recordings hold hundreds to a few
// thousand; a file of millions of one-cell rows took 100 times its size in memory. Rows beyond
// count in the totals, and the reader's detail says so.
inline constexpr std::size_t kMaxSnapshots = std::size_t{1} << 16;

// SGLang expert distribution recorder dumps (torch.save): one file, or several (one per rank in
// per_pass / per_token mode) that are summed.
LoadStats readSglangStats(const std::vector<std::string>& files);

// TensorRT-LLM: a folder with meta_info.json and rank{r}.safetensors.
LoadStats readTrtllmStats(const std::string& folder);

// vLLM eplb_load_stats JSONL records, summed (physical loads mapped through p2l_map).
LoadStats parseVllmStats(std::string_view text, const std::string& file);

}  // namespace moex::detail
