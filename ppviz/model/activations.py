"""Activation memory of one microbatch: per transformer layer, for the embedding and for the LM
head, in bytes, and the share of it the weight gradient still needs after the input gradient.

Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models" (arXiv 2205.05198), §4. With 16-bit activations and 1-byte dropout masks a GPT layer
stores 34·s·b·h + 5·a·s²·b bytes:

* attention, 11·s·b·h + 5·a·s²·b: the Q/K/V projection's input (2sbh), Q and K for Q·Kᵀ
  (4sbh), the softmax output (2as²b), its dropout mask (as²b) and output (2as²b) with V (2sbh)
  for the attention over values, the output projection's input (2sbh), the dropout mask (sbh);
* MLP, 19·s·b·h: the two linear layers' inputs (2sbh and 8sbh), GeLU's input (8sbh), the
  dropout mask (sbh);
* the two norms' inputs, 4·s·b·h.

Tensor parallelism (t) splits everything but the 10·s·b·h of norm inputs, the first linear
layers' inputs and the dropout masks, sequence parallelism splits those too (their Table 2):
sbh(10 + 24/t + 5as/(ht)) and sbh(34/t + 5as/(ht)). Selective recompute drops the 5as²b term
(the attention core is recomputed); full recompute keeps only each layer's input, 2·s·b·h.
Flash attention never stores the s² terms either (its small per-row softmax statistics are not
counted here). The same accounting, item by item, extends to grouped-query attention (K and V
are kv_heads · head size wide), gated MLPs (gate and up outputs and their product: 6·s·b·ffn)
and mixture of experts (each of the top-k copies of a token stores an expert's input and inner
activations; the router's own logits are not counted); without dropout the masks and the
dropout output go. Multi-head latent attention (DeepSeek-V2 §2.1) stores its latents twice (its
norms' inputs and its up-projections' inputs, kept whole by every tensor-parallel rank as the
down-projections are duplicated), the queries and keys a·(d_h + d_h^R) wide, the values and the
output projection's input a·d_h.

Input and output layers (§4.3 there): the embedding's dropout mask, s·b·h; the head stores
the final norm's and its own input (4·s·b·h) and the logits in 32 bits for the loss (4·s·b·V),
4·s·b·h·(1 + V/h) in all, divided by t under tensor parallelism (the norm inputs only with
sequence parallelism).

The weight gradient's share (zero-bubble paper, arXiv 2401.10241, Table 1: M_W = 32·s·b·h of
M_B = 34·s·b·h + 5·a·s²·b): W needs each weight product's input and output gradient, i.e. the
Q/K/V projection's input and output gradient (2sbh + 6sbh), the output projection's (2sbh +
2sbh), the first MLP layer's (2sbh + 8sbh) and the second's (8sbh + 2sbh).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import ConfigError
from .transformer import Transformer, checked_count

BYTES = 2  # 16-bit activations
MASK = 1  # a dropout mask element
LOGIT = 4  # the loss keeps the logits in 32 bits


@dataclass(frozen=True)
class Parallel:
    """How a layer's activations are split over the tensor-parallel group: ``tensor`` = t, and
    whether sequence parallelism splits the rest too."""

    tensor: int = 1
    sequence: bool = False

    def __post_init__(self):
        checked_count("tensor_parallel", self.tensor, minimum=1)  # bounded: rates are multiplied by it as floats
        if self.sequence and self.tensor == 1:
            raise ConfigError("sequence_parallel", self.sequence, "give tensor_parallel >= 2 for sequence "
                              "parallelism (it splits over the tensor-parallel group)")

    def split(self, replicated, partitioned) -> Fraction:
        """Bytes per device of a layer part: ``replicated`` is kept whole by every tensor-parallel
        rank unless sequence parallelism splits it, ``partitioned`` is always split."""
        t = self.tensor
        whole = Fraction(replicated, t) if self.sequence else Fraction(replicated)
        return whole + Fraction(partitioned, t)


@dataclass(frozen=True)
class LayerActivations:
    """One layer's stored bytes per microbatch, in the parts the options act on."""

    replicated: int  # norm inputs, first linear layers' inputs, dropout masks (kept whole under plain TP)
    partitioned: int  # Q, K, V, the output projection's input, the MLP's inner activations
    scores: int  # the a·s²·b-sized softmax output, its mask and its dropout output

    def stored(self, parallel: Parallel, *, flash_attention: bool, recompute: str | None, hidden_bytes: int) -> Fraction:
        """Bytes kept per microbatch after the forward, per device."""
        if recompute == "full":
            return parallel.split(hidden_bytes, 0)
        scores = 0 if flash_attention or recompute == "selective" else self.scores
        return parallel.split(self.replicated, self.partitioned + scores)


def layer(model: Transformer) -> LayerActivations:
    """The parts of one transformer layer's activations (Korthikanti et al. §4.1, generalised)."""
    sb, h, q, kv = model.tokens, model.hidden, model.query_size, model.kv_size
    mask = MASK * sb * h if model.dropout else 0
    replicated = BYTES * sb * h * 2 + BYTES * sb * h + mask + BYTES * sb * h + mask
    if model.mla:
        replicated += 2 * BYTES * sb * model.latent_size  # each latent: its norm's and up-projection's input
        partitioned = 2 * BYTES * sb * model.qk_size + 2 * BYTES * sb * q
    else:
        partitioned = BYTES * sb * (q + kv) + BYTES * sb * kv + BYTES * sb * q
    per_mlp = (3 if model.gated_mlp else 2) * BYTES * sb
    if model.moe:
        expert = BYTES * sb * h + per_mlp * model.expert_ffn
        partitioned += model.top_k * expert + model.shared_experts * per_mlp * model.expert_ffn
    else:
        partitioned += per_mlp * model.ffn
    a, s, b = model.heads, model.seq_len, model.micro_batch_size
    softmax = BYTES * a * s * s * b
    scores = softmax + (MASK * a * s * s * b + BYTES * a * s * s * b if model.dropout else 0)
    return LayerActivations(replicated, partitioned, scores)


def layer_bytes(model: Transformer, parallel: Parallel = Parallel(), *, flash_attention: bool = False,
                recompute: str | None = None) -> Fraction:
    """Bytes one layer keeps per microbatch on one device: 34·s·b·h + 5·a·s²·b for a GPT layer
    without parallelism, flash attention or recompute."""
    return layer(model).stored(parallel, flash_attention=flash_attention, recompute=recompute,
                               hidden_bytes=BYTES * model.tokens * model.hidden)


def boundary_bytes(model: Transformer, parallel: Parallel = Parallel()) -> int:
    """Bytes one stage sends the next per microbatch (and the same again for its gradient back),
    per device: the hidden states, s·b·h 16-bit values, split over the tensor-parallel group when
    sequence parallelism shards them. Megatron-LM's ``get_tensor_shapes``
    (megatron/core/pipeline_parallel/schedules.py) sends (seq_length / t under sequence
    parallelism, micro_batch_size, hidden_size) in the pipeline's 16-bit dtype."""
    return int(parallel.split(BYTES * model.tokens * model.hidden, 0))


def weight_gradient_bytes(model: Transformer) -> int:
    """M_W: bytes the weight gradients of one layer need after its input gradient (each weight
    product's input and output gradient), without parallelism; 32·s·b·h for a GPT layer."""
    sb, h = model.tokens, model.hidden

    def product(n_in: int, n_out: int) -> int:
        return BYTES * sb * (n_in + n_out)

    attention = sum(product(n_in, n_out) for _, n_in, n_out in model.projections())
    if model.moe:
        ffn, k = model.expert_ffn, model.top_k + model.shared_experts
        up = (2 if model.gated_mlp else 1) * ffn
        mlp = product(h, model.experts) + k * (product(h, up) + product(ffn, h))
    else:
        up = (2 if model.gated_mlp else 1) * model.ffn
        mlp = product(h, up) + product(model.ffn, h)
    return attention + mlp


def weight_gradient_share(model: Transformer, *, flash_attention: bool = False) -> float:
    """M_W / M_B: the share of a layer's activations W still needs after I (at most 1); 32/34
    for a GPT layer with flash attention, the default of ``Config.w_share``."""
    stored = layer_bytes(model, flash_attention=flash_attention)
    return min(1.0, float(Fraction(weight_gradient_bytes(model)) / stored))


def embedding_bytes(model: Transformer, parallel: Parallel = Parallel()) -> Fraction:
    """The embedding's dropout mask, s·b·h bytes (none without dropout)."""
    return parallel.split(MASK * model.tokens * model.hidden if model.dropout else 0, 0)


def head_bytes(model: Transformer, parallel: Parallel = Parallel()) -> Fraction:
    """The final norm's and the head's inputs and the 32-bit logits: 4·s·b·h·(1 + V/h)."""
    sb = model.tokens
    return parallel.split(2 * BYTES * sb * model.hidden, LOGIT * sb * model.vocab)


def mtp_bytes(model: Transformer, parallel: Parallel = Parallel(), *, flash_attention: bool = False,
              recompute: str | None = None) -> Fraction:
    """One MTP module: its two norms' inputs and the 2h-wide projection input, a layer and a head."""
    own = parallel.split(BYTES * model.tokens * model.hidden * 4, 0)
    return own + layer_bytes(model, parallel, flash_attention=flash_attention, recompute=recompute) \
        + head_bytes(model, parallel)
