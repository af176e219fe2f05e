#include "model/routing_prior.h"

namespace moex {

std::optional<RoutingPrior> routingPriorForFamily(std::string_view modelType)
{
    if (modelType.find("deepseek_v3") != std::string_view::npos || modelType.find("kimi_k2") != std::string_view::npos)
        return kDeepSeekRouting;
    if (modelType.find("mixtral") != std::string_view::npos)
        return kMixtralRouting;
    return std::nullopt;
}

}  // namespace moex
