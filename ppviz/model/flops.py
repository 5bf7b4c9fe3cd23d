"""FLOPs of one microbatch through each part of a transformer: forward, and the backward split
into its input-gradient (I) and weight-gradient (W) halves.

Counting (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", §5.1 and Appendix): only matrix multiplications count, 2 FLOPs per
multiply-add; a (T × n) by (n × k) product costs 2·T·n·k. For a GPT layer (h hidden, s
sequence, b micro-batch) the forward is 24·b·s·h² + 4·b·s²·h: Q, K, V and the output
projection 8·b·s·h², the MLP (h → 4h → h) 16·b·s·h², the attention scores Q·Kᵀ and the
attention over values 2·b·s²·h each. The LM head costs 2·b·s·h·V. Softmax, norms and other
element-wise work, and the embedding lookup, are not counted.

Backward = 2 × forward, split per product (the zero-bubble paper, Qi et al. 2024, arXiv
2401.10241, Table 1): a product with a weight matrix has an input gradient and a weight
gradient, each as costly as its forward; the attention score and value products multiply two
activations, so both gradients are input gradients and W gets none. A GPT layer's I is then
24·b·s·h² + 8·b·s²·h and its W 24·b·s·h², as that table gives.

Generalised to grouped-query attention (K and V of kv_heads · head size), gated MLPs (three
h × ffn matrices) and mixture of experts (a router h × experts; each token through ``top_k``
routed and all shared experts); the counts stay exact integers. Multi-head latent attention
(DeepSeek-V2, arXiv 2405.04434, §2.1) is its projections (:meth:`Transformer.projections`: the
down- and up-projections of the latents, the output) and a core whose scores are a·(d_h + d_h^R)
deep and whose values a·d_h wide, computed on the up-projected keys and values as training does.
A mixture of experts' dense first layers (``dense_layers``) count as the dense layers they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import ConfigError
from .transformer import Transformer

RECOMPUTE = (None, "selective", "full")


@dataclass(frozen=True)
class Flops:
    """FLOPs of one microbatch through part of the model: forward ``f``, input gradient ``i``
    and weight gradient ``w`` (the backward is ``i + w``)."""

    f: int
    i: int
    w: int

    def __add__(self, other: "Flops") -> "Flops":
        return Flops(self.f + other.f, self.i + other.i, self.w + other.w)

    def __mul__(self, k: int) -> "Flops":
        return Flops(self.f * k, self.i * k, self.w * k)

    __rmul__ = __mul__

    @property
    def backward(self) -> int:
        return self.i + self.w

    @property
    def total(self) -> int:
        return self.f + self.i + self.w


NONE = Flops(0, 0, 0)


def matmul(tokens: int, n_in: int, n_out: int) -> Flops:
    """A product with an n_in × n_out weight matrix: forward, input and weight gradient alike."""
    x = 2 * tokens * n_in * n_out
    return Flops(x, x, x)


def attention_core(model: Transformer) -> Flops:
    """Q·Kᵀ, 2·b·s²·(a·query head size), and the attention over values, 2·b·s²·(a·head size)
    (4·b·s²·a·head size together without MLA's rotary part): both operands are activations, so
    the backward is all input gradient (twice the forward)."""
    x = 2 * model.micro_batch_size * model.seq_len ** 2 * (model.qk_size + model.query_size)
    return Flops(x, 2 * x, 0)


def attention(model: Transformer) -> Flops:
    T = model.tokens
    *inputs, (_, q, h) = model.projections()
    return sum((matmul(T, n_in, n_out) for _, n_in, n_out in inputs), NONE) + attention_core(model) + matmul(T, q, h)


def mlp(model: Transformer) -> Flops:
    T, h = model.tokens, model.hidden
    if not model.moe:
        return model.mlp_matrices * matmul(T, h, model.ffn)
    expert = model.mlp_matrices * matmul(T, h, model.expert_ffn)
    return matmul(T, h, model.experts) + (model.top_k + model.shared_experts) * expert


def layer(model: Transformer) -> Flops:
    """One transformer layer."""
    return attention(model) + mlp(model)


def head(model: Transformer) -> Flops:
    """The LM head, 2·b·s·h·V forward (the loss's softmax is element-wise, not counted)."""
    return matmul(model.tokens, model.hidden, model.vocab)


def dense_layer(model: Transformer) -> Flops:
    """One of a mixture of experts' dense first layers (:meth:`Transformer.dense`)."""
    return layer(model.dense())


def mtp(model: Transformer) -> Flops:
    """One multi-token-prediction module: the 2h → h projection, a layer and the shared head."""
    return matmul(model.tokens, 2 * model.hidden, model.hidden) + layer(model) + head(model)


def recomputed(model: Transformer, recompute: str | None) -> int:
    """Forward FLOPs one layer runs again before its backward: all of its forward under full
    recompute, the attention core (Q·Kᵀ, softmax, attention over values) under selective
    recompute (Korthikanti et al. 2022, §5), none otherwise.

    This counts the products actually run again, 4·b·s²·h per GPT layer under selective
    recompute (0.9 % of a GPT-3 step). Korthikanti et al.'s hardware-FLOPs formula,
    72·B·s·l·h²·(1 + s/(3h) + V/(12·l·h)), charges 12·b·s²·h, the attention core's forward and
    backward, which gives their 2.7 % for GPT-3.
    """
    if recompute not in RECOMPUTE:
        raise ConfigError("recompute", recompute, "give None, 'selective' or 'full'")
    if recompute == "full":
        return layer(model).f
    if recompute == "selective":
        return attention_core(model).f
    return 0


def iteration(model: Transformer, microbatches: int, recompute: str | None = None) -> int:
    """FLOPs of one training iteration over ``microbatches`` microbatches: every layer's
    forward, backward and recompute, the LM head's forward and backward (MTP modules too).

    With a GPT model (plain MLP of 4h, no GQA) and full recompute this is Narayanan et al.'s
    equation for the FLOPs per iteration, 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with B the
    batch size.
    """
    per_layer = layer(model).total + recomputed(model, recompute)
    per_dense = dense_layer(model).total + recomputed(model.dense(), recompute)
    per_mtp = mtp(model).total + recomputed(model, recompute)
    layers = (model.layers - model.dense_layers) * per_layer + model.dense_layers * per_dense
    return microbatches * (layers + head(model).total + model.mtp_layers * per_mtp)
