// Strong index types: a GpuId cannot be passed where an ExpertId is meant.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>

namespace moex {

template <class Tag>
struct StrongId {
    std::int32_t value = -1;

    constexpr StrongId() = default;
    constexpr explicit StrongId(std::int32_t v) : value(v) {}

    [[nodiscard]] constexpr bool valid() const { return value >= 0; }
    [[nodiscard]] constexpr std::size_t index() const { return static_cast<std::size_t>(value); }
    constexpr auto operator<=>(const StrongId&) const = default;
};

using GpuId = StrongId<struct GpuTag>;
using ExpertId = StrongId<struct ExpertTag>;
// A MoE layer by its ordinal among the model's MoE layers (0 = the first MoE layer), which is what
// a Placement's layers and every export are indexed by; the decoder-layer index (LayerMetrics::
// decoder_layer, ModelSpec::moe_layers) is a different number whenever dense layers come first.
using MoeLayerId = StrongId<struct MoeLayerTag>;
using NodeId = StrongId<struct NodeTag>;   // any vertex of the topology graph
using LinkId = StrongId<struct LinkTag>;   // a directed link of the topology graph

// The MoE layers an edit (or a view) applies to: one, by its MoE ordinal, or every one (an edit is
// applied in each layer where it can be, refused only if it can be in none).
class MoeLayers {
public:
    // Qt's signal spies and queued calls need a default; it means every layer, as all() says.
    MoeLayers() = default;
    static MoeLayers all() { return MoeLayers(); }
    static MoeLayers only(MoeLayerId layer) { return MoeLayers(layer); }
    [[nodiscard]] bool isAll() const { return !m_only.has_value(); }
    [[nodiscard]] MoeLayerId layer() const { return m_only.value(); }  // only when !isAll()
    [[nodiscard]] bool operator==(const MoeLayers&) const = default;

private:
    explicit MoeLayers(MoeLayerId layer) : m_only(layer) {}
    std::optional<MoeLayerId> m_only;
};

}  // namespace moex

template <class Tag>
struct std::hash<moex::StrongId<Tag>> {
    std::size_t operator()(moex::StrongId<Tag> id) const noexcept { return std::hash<std::int32_t>{}(id.value); }
};
