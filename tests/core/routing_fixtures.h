// A model of `layers` MoE layers (every layer MoE) for the routing tests: only the routing shape.
#pragma once

#include "model/model_spec.h"

namespace moex::test {

inline ModelSpec routingModel(int layers, int experts, int topK, int groups = 1, int groupsPerToken = 1)
{
    ModelSpec m;
    m.name = "test";
    m.num_layers = layers;
    for (int l = 0; l < layers; ++l)
        m.moe_layers.push_back(l);
    m.routed_experts = experts;
    m.experts_per_token = topK;
    m.expert_groups = groups;
    m.groups_per_token = groupsPerToken;
    return m;
}

}  // namespace moex::test
