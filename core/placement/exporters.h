// Placement exports in the files serving systems load (the formats of FORMATS.md in the design notes), and the parse-back
// of each so tests (and later imports) can read them.
//
//   native       moex scenario `placement:` YAML ({strategy: explicit, layers: [...]}); loads back
//                through the scenario reader (keys strategy, layers, shares).
//   sglang       {"physical_to_logical_map": [num_layers][R]}, one row per decoder layer (dense
//                rows hold the trivial layout slot s -> expert s % E, valid and never used); no
//                other key, since SGLang passes the dict as keyword arguments.
//   trtllm       TensorRT-LLM load-balancer YAML: num_slots, initial_global_assignments keyed by the
//                absolute decoder-layer index of each MoE layer, layer_updates_per_iter: 0 (static).
//                A model with MTP layers (ModelSpec::mtp_layers) also gets keys num_layers,
//                num_layers + 1, ...: TensorRT-LLM asks the load balancer for the MTP layer too and
//                raises KeyError without it. moex simulates no MTP layer, so it gets the last MoE
//                layer's assignment (ExportOptions::mtp_layers turns this off).
//   vllm-ascend  {"moe_layer_count", "layer_list": [{"layer_id" (MoE ordinal), "device_count",
//                "device_list": [{"device_id", "device_expert"}]}]}. Refused while a GPU holds two
//                copies of one expert: vllm-ascend keeps one local slot per expert and counts rank 0's
//                distinct experts as the slots per rank, so the file would load and misroute
//                (separateColocatedReplicas in replica_separation.h repairs such a placement).
//   eplb         {"phy2log", "log2phy" (padded with -1), "logcnt"}, EPLB's tensors as JSON; replicas
//                of an expert listed in slot order (a Placement carries no replica ranks).
//
// Every export is checked first: the placement has one layer per MoE layer of the model, every
// expert has a slot in every layer, ids are in range, and (all but native) every GPU holds the
// same number of slots in every layer, so R = G * slots-per-GPU as each system requires. Native is
// moex's own format and allows uneven GPUs. Shares are not exported except by native: serving
// systems split a replicated expert's tokens evenly.
#pragma once

#include "model/model_spec.h"
#include "placement/eplb.h"
#include "placement/placement.h"
#include "placement/replica_separation.h"

#include <optional>

#include <string>
#include <string_view>
#include <vector>

namespace moex {

enum class ExportFormat { native, sglang, trtllm, vllm_ascend, eplb };

struct ExportOptions {
    // trtllm: MTP layers to write after the decoder layers; -1 = the model's (ModelSpec::mtp_layers).
    int mtp_layers = -1;
};

// True for formats whose consumer cannot load two copies of one expert on one GPU (vllm-ascend).
bool exportNeedsDistinctReplicas(ExportFormat f);

std::string_view toString(ExportFormat f);  // "native", "sglang", "trtllm", "vllm-ascend", "eplb"
// Throws std::invalid_argument naming the known formats when `name` is none of them.
ExportFormat exportFormatFromString(std::string_view name);
const std::vector<ExportFormat>& allExportFormats();

// The problems that stop `p` from being exported in `fmt` for `model` (empty = exportable).
std::vector<std::string> exportProblems(const Placement& p, const ModelSpec& model, ExportFormat fmt,
                                        const ExportOptions& options = {});

// The file content. Throws InputError listing every problem exportProblems finds.
std::string exportPlacement(const Placement& p, const ModelSpec& model, ExportFormat fmt,
                            const ExportOptions& options = {});

// Checks, renders and writes atomically (the old file survives any failure; nothing is created
// when the placement is refused). Throws InputError for a refused placement, std::runtime_error
// when the file cannot be written.
void writePlacementExport(const std::string& path, const Placement& p, const ModelSpec& model, ExportFormat fmt,
                          const ExportOptions& options = {});

// The placement as `fmt` can carry it: where the format needs distinct replicas and a GPU holds two
// copies of one expert, those are separated (separateColocatedReplicas with `load` and
// `gpusPerDomain`) and `separated` says what it cost; otherwise `p` as it is and `separated` empty.
Placement placementForExport(const Placement& p, ExportFormat fmt, const std::vector<std::vector<double>>& load,
                             int gpusPerDomain, std::optional<SeparationReport>& separated);

// EPLB's own tensors as JSON, keeping the reference's replica-rank order in log2phy.
std::string eplbResultToJson(const EplbResult& r);

// Reads an export back into a placement of the model's MoE layers, checking it against the
// format's rules (keys, shapes, layer indices, ids, every expert placed, R divisible by numGpus).
// Throws InputError naming `file` (or "<fmt export>") and what is wrong.
Placement parsePlacementExport(const std::string& text, const ModelSpec& model, int numGpus, ExportFormat fmt,
                               const std::string& file = {});

}  // namespace moex
