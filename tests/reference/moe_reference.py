#!/usr/bin/python3
"""Independent NumPy reference of one MoE block per model family, written from the semantics of the
Hugging Face modeling code (not from moex's C++):

  softmax   MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock: softmax over the router logits, top-k,
            divided by their sum when norm_topk_prob.
  sigmoid   DeepseekV3MoE + DeepseekV3TopkRouter (noaux_tc): sigmoid scores; choice = scores +
            e_score_correction_bias; each group scored by the sum of its two best choices; the best
            topk_group groups kept (others masked to 0.0); top-k of the choice; weights = the
            unbiased scores gathered, divided by (sum + 1e-20) when norm_topk_prob, times
            routed_scaling_factor; plus the shared experts' MLP.
  Qwen2MoeSparseMoeBlock / Qwen3NextSparseMoeBlock (meta["shared_expert_gate"]): the shared expert's
            output times sigmoid(shared_expert_gate(x)), a Linear(hidden, 1) without bias.
  gpt_oss   GptOssTopKRouter + GptOssExperts: logits = x W^T + b, top-k on logits, softmax over the
            k; expert: gate = min(xWg + bg, limit), up = clip(xWu + bu, -limit, limit),
            glu = gate * sigmoid(alpha * gate), out = ((up + 1) * glu) Wd + bd.
  Experts otherwise by meta["activation"]: swiglu down(silu(gate x) * up x), geglu
  down(gelu_tanh(gate x) * up x), relu2 down(relu(up x)^2), gelu down(gelu_tanh(up x)) (the last
  two have no gate matrix).

Usage: moe_reference.py DIR. DIR holds meta.json and raw little-endian float32 arrays written by
tst_engine_reference: the weights exactly as the engine used them (dequantised), the hidden states, and the
engine's output. Computes the block in float64, compares with the engine's output and exits 1 when
the normwise relative error ||engine - ref|| / ||ref|| exceeds meta["tolerance"].
"""
import json
import os
import sys

import numpy as np


def load(d, name, shape):
    a = np.fromfile(os.path.join(d, name + ".f32"), dtype="<f4").astype(np.float64)
    return a.reshape(shape)


def silu(v):
    return v / (1.0 + np.exp(-v))


def gelu_tanh(v):
    return 0.5 * v * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (v + 0.044715 * v ** 3)))


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def topk(v, k):
    # largest first; ties to the lower index (stable sort on the negated values)
    return np.argsort(-v, kind="stable")[:k]


def route(meta, logits):
    kind, k = meta["router"], meta["topk"]
    if kind == "softmax":
        p = np.exp(logits - logits.max())
        p /= p.sum()
        ids = topk(p, k)
        w = p[ids]
        if meta["norm_topk_prob"]:
            w = w / w.sum()
        return ids, w
    if kind == "gpt_oss":
        ids = topk(logits, k)
        v = logits[ids]
        e = np.exp(v - v.max())
        return ids, e / e.sum()
    # sigmoid with correction bias and group-limited top-k
    scores = sigmoid(logits)
    choice = scores + meta["correction"]
    groups, kg = meta["groups"], meta["topk_groups"]
    if groups > 1 and kg < groups:
        per = len(choice) // groups
        gscore = np.array([np.sort(choice[g * per:(g + 1) * per])[::-1][:2].sum() for g in range(groups)])
        keep = topk(gscore, kg)
        mask = np.zeros(groups, dtype=bool)
        mask[keep] = True
        choice = np.where(np.repeat(mask, per), choice, 0.0)
    ids = topk(choice, k)
    w = scores[ids]
    if meta["norm_topk_prob"]:
        w = w / (w.sum() + 1e-20)
    return ids, w * meta["scaling"]


def ffn(meta, x, wg, wu, wd, bg=None, bu=None, bd=None):
    u = wu @ x
    act = meta.get("activation", "swiglu")
    if act == "relu2":
        return wd @ (np.maximum(u, 0.0) ** 2)
    if act == "gelu":
        return wd @ gelu_tanh(u)
    g = wg @ x
    if act == "geglu":
        return wd @ (gelu_tanh(g) * u)
    limit = meta["swiglu_limit"]
    if limit > 0:
        g = np.minimum(g + bg, limit)
        u = np.clip(u + bu, -limit, limit)
        h = (u + 1.0) * (g * sigmoid(meta["swiglu_alpha"] * g))
        return wd @ h + bd
    return wd @ (silu(g) * u)


def main(d):
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    H, I, E, T = meta["hidden"], meta["inter"], meta["experts"], meta["tokens"]
    x = load(d, "hidden", (T, H))
    router = load(d, "router", (E, H))
    rbias = load(d, "router_bias", (E,)) if meta["router"] == "gpt_oss" else np.zeros(E)
    if meta["router"] == "sigmoid":
        meta["correction"] = load(d, "correction", (E,))
    experts = []
    for e in range(E):
        gated = meta.get("activation", "swiglu") in ("swiglu", "geglu")
        w = [load(d, f"e{e}_gate", (I, H)) if gated else None, load(d, f"e{e}_up", (I, H)), load(d, f"e{e}_down", (H, I))]
        if meta["swiglu_limit"] > 0:
            w += [load(d, f"e{e}_gate_bias", (I,)), load(d, f"e{e}_up_bias", (I,)), load(d, f"e{e}_down_bias", (H,))]
        experts.append(w)
    S = meta["shared_inter"]
    shared = None
    if S > 0:
        gated = meta.get("activation", "swiglu") in ("swiglu", "geglu")
        shared = [load(d, "shared_gate", (S, H)) if gated else None, load(d, "shared_up", (S, H)),
                  load(d, "shared_down", (H, S))]
    shared_gate = load(d, "shared_expert_gate", (1, H)) if meta.get("shared_expert_gate") else None
    out = np.zeros((T, H))
    for t in range(T):
        ids, w = route(meta, router @ x[t] + rbias)
        for j, e in enumerate(ids):
            out[t] += w[j] * ffn(meta, x[t], *experts[e])
        if shared is not None:
            y = ffn(meta, x[t], *shared)
            if shared_gate is not None:
                y = sigmoid(shared_gate @ x[t]) * y
            out[t] += y
    engine = load(d, "output", (T, H))
    err = np.linalg.norm(engine - out) / np.linalg.norm(out)
    print(f"{meta['name']}: normwise relative error {err:.3e} (tolerance {meta['tolerance']:.0e})")
    return 0 if err <= meta["tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
