"""The kernels one microbatch runs through each item of the model — the embedding ``E``, a
transformer layer ``t`` (dense or mixture of experts), a multi-token-prediction module ``m``, the
final norm with the LM head and the loss ``L`` — on one device of its tensor-parallel group, phase
by phase: ``F`` (forward), ``I`` (input-gradient backward), ``W`` (weight-gradient backward) and
``R`` (what recompute runs again before the backward). Each phase is a list of :class:`Kernel`
and, where they sit among them, the :class:`Collective` s it issues (data only: their time is the
communication model's); :mod:`ppviz.model.roofline` times the kernels.

What runs follows Megatron-LM's GPT model on Transformer Engine (megatron/core):

- *Tensor parallelism* (Shoeybi et al. 2019; Korthikanti et al. 2022, §4.2): Q/K/V and the MLP's
  first matrices are column-parallel (output split over the t ranks), the attention output
  projection and the MLP's last matrix row-parallel (input split); without sequence parallelism
  the norms, dropouts and residual adds run on all T = b·s tokens on every rank, a row-parallel
  output is all-reduced in F and a column-parallel input gradient in I; with sequence
  parallelism they run on T/t tokens, a column-parallel input is all-gathered (in F, and again in
  I for its weight gradient, as Transformer Engine gathers its saved shard again in the backward)
  and a row-parallel output reduce-scattered, a column-parallel input gradient reduce-scattered
  and a row-parallel output gradient all-gathered.
- *Grouped-query attention*: K and V are kv_heads · head size wide. *Gated MLPs* (SwiGLU): the
  gate and up matrices are one GEMM of 2·ffn outputs. *Multi-head latent attention* (DeepSeek-V2
  §2.1; Megatron-LM's ``MLASelfAttention``): the down-projections of the queries and of the
  joint key/value latent (with the shared rotary key) are duplicated on every tensor-parallel
  rank and run on its tokens, each latent has its RMSNorm, the up-projections are column-parallel
  (under sequence parallelism gathering the latent), the rotary embedding applies to the
  decoupled rotary parts, and the core's queries and keys are head size + rotary part deep.
- *Attention core*. Flash attention (FlashAttention-2, Dao 2023, arXiv 2307.08691, Algorithms 1–2):
  one forward kernel; a backward preprocessing kernel (the row sums of dO ∘ O), the backward
  kernel, which recomputes the scores and so runs 5 GEMMs against the forward's 2, and the
  conversion of dQ's 32-bit accumulator; with grouped-query attention dK and dV are computed per
  query head and summed over each group. A causal mask executes about half of the products: the
  executed FLOPs are half of the model FLOPs, and the backward's 2.5 times the forward's, as
  FlashAttention's own benchmark counts them (benchmarks/benchmark_flash_attention.py,
  ``flops``), against which its measured shares of the peak are stated. Without flash attention:
  Megatron's unfused core — K and V repeated to the query heads, the batched Q·Kᵀ GEMM, the fused
  scale-mask-softmax over the s × s scores, attention dropout, the batched GEMM with V — which
  computes every score of the causal mask.
- *Mixture of experts* (megatron/core/transformer/moe, the all-to-all token dispatcher): the
  router GEMM on the rank's tokens and its softmax/top-k, the permutation of each token's top-k
  copies, the all-to-all over the expert-parallel group (size e) and, with t > 1 and expert tensor
  parallelism equal to t (Megatron's default), the all-gather over the tensor-parallel group, the
  sort by local expert, the experts as grouped GEMMs of M = T · top_k · e / experts tokens each on
  average (experts / e of them per device, their weights split over t), then the reduce-scatter,
  the all-to-all back and the weighted un-permutation. With expert tensor parallelism 1
  (``--expert-tensor-parallel-size 1``) each rank sends its own T / t tokens' copies to whole
  experts: no tensor-parallel collective, M = (T / t) · top_k · e / experts, and the expert-
  parallel group is drawn from the tensor- and data-parallel ranks together. Shared experts are
  one dense MLP of shared · expert width.
  Megatron requires sequence parallelism for MoE with t > 1 (its arguments check), and so does
  this module.
- *Embedding* (VocabParallelEmbedding): the lookup into the rank's vocabulary shard, the masking
  of the other rows, the all-reduce (reduce-scatter under sequence parallelism); its backward is
  all weight gradient: the scatter-add into a dense gradient of the shard and its accumulation
  into the 32-bit main gradient.
- *Head and loss*: the final norm, the column-parallel LM head over the vocabulary shard (padded
  to a multiple of 128·t, Megatron's ``--make-vocab-size-divisible-by``), and Megatron's fused
  vocab-parallel cross entropy in 32 bits (``fused_vocab_parallel_cross_entropy``): the cast of the
  logits, the max and its all-reduce, exp and sum and the all-reduce of the predicted logits with
  the sums, the softmax kept for the backward; the backward scales it in place and casts it for
  the GEMM. The LM head is Megatron's own ColumnParallelLinear, not Transformer Engine's, so it
  stays 16-bit under FP8, as the router does.
- *MTP module* (MultiTokenPredictionLayer, DeepSeek-V3 §2.2): its own embedding lookup, the two
  norms, the concatenation, the column-parallel 2h → h projection with its output all-gathered
  over the hidden dimension, a transformer layer and the shared head with its loss.
- *FP8* (Transformer Engine): Transformer Engine's GEMMs (every linear layer of a transformer
  layer, the experts, the MTP projection) run at the FP8 rate with 1-byte operands, a column-
  parallel input is all-gathered in FP8, an input not produced by a fused norm or activation is
  cast (to FP8 and its transpose) and every output gradient cast-transposed before its GEMMs;
  everything else stays 16-bit.
- Weight-gradient GEMMs accumulate into 32-bit main gradients (Megatron's
  ``gradient_accumulation_fusion``): their output is read and written in 32 bits. Biases are added
  in the GEMMs' epilogues and their gradients reduced there.

Bytes are what a kernel reads and writes in HBM. FLOPs come twice: ``flops`` as executed (causal
halving, flash attention's recomputation, shapes padded to whole ranks) and ``model_flops``, the
kernel's share of :mod:`ppviz.model.flops`' count (the model FLOPs, divided evenly over the t
ranks); the model FLOPs of each phase, summed over its kernels and multiplied by t, equal that
module's figures exactly (``tests/test_model_kernels.py``).

Not here: context parallelism, the pipeline's sends and receives, the data-parallel gradient
reduction, the tied embedding's gradient all-reduce between the first and last stage, and the
optimizer — the step model's other parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import ConfigError
from .transformer import Transformer

ITEMS = ("E", "t", "m", "L")
PHASES = ("F", "I", "W", "R")
KINDS = ("gemm", "attention", "attention_backward", "memory")

HALF = 2  # bytes of a 16-bit element
FP8 = 1
FULL = 4  # 32-bit: the loss's logits, softmax statistics, main gradients
INDEX = 8  # token ids and routing indices (int64)
#: Megatron pads the vocabulary to a multiple of this × t (``--make-vocab-size-divisible-by``).
VOCAB_DIVISOR = 128
#: Executed share of a causal mask's score products, as FlashAttention's benchmark counts it.
CAUSAL = Fraction(1, 2)
#: Flash attention's backward runs 5 GEMMs against the forward's 2 (it recomputes the scores).
FLASH_BACKWARD = Fraction(5, 2)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Kernel:
    """One kernel: ``kind`` is ``"gemm"`` (M × N × K, ``batch`` of them in one launch),
    ``"attention"`` / ``"attention_backward"`` (flash attention's forward and backward kernels)
    or ``"memory"`` (bound by its ``bytes``); ``flops`` as executed, ``model_flops`` its share of
    :mod:`ppviz.model.flops`' count, ``bytes`` read and written in HBM, ``fp8`` whether it runs
    at the FP8 rate."""

    name: str
    kind: str
    flops: int = 0
    model_flops: Fraction = Fraction(0)
    bytes: int = 0
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    fp8: bool = False

    @property
    def shape(self) -> str:
        """The GEMM's M × N × K (with its batch count), or '' for other kernels."""
        if self.kind != "gemm":
            return ""
        mnk = f"{self.m} × {self.n} × {self.k}"
        return f"{self.batch} × ({mnk})" if self.batch > 1 else mnk


@dataclass(frozen=True)
class Collective:
    """A collective a phase issues: ``kind`` (one of :data:`ppviz.model.collectives.KINDS`:
    all-reduce, all-gather, reduce-scatter, all-to-all), ``bytes`` as nccl-tests' size S counts them (the whole buffer: an all-gather's
    output, a reduce-scatter's input, an all-to-all's send buffer), over ``group`` ("tp", the
    tensor-parallel group, or "ep", the expert-parallel one), issued after the first ``after``
    kernels of the phase; ``name`` says which tensor it moves."""

    kind: str
    bytes: int
    group: str
    name: str
    after: int = 0


@dataclass(frozen=True)
class Phase:
    """One phase of one item: its kernels in order and the collectives between them."""

    kernels: tuple
    collectives: tuple

    @classmethod
    def of(cls, steps) -> "Phase":
        kernels, collectives = [], []
        for step in steps:
            if isinstance(step, Kernel):
                kernels.append(step)
            else:
                collectives.append(Collective(step.kind, step.bytes, step.group, step.name, len(kernels)))
        return cls(tuple(kernels), tuple(collectives))

    @property
    def model_flops(self) -> Fraction:
        return sum((k.model_flops for k in self.kernels), Fraction(0))

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels)


@dataclass(frozen=True)
class _Comm:
    kind: str
    bytes: int
    group: str
    name: str


@dataclass
class _Block:
    """A part of an item: its forward steps, and its backward steps (input gradient, weight
    gradient) in the order they run once the backward reaches it."""

    f: list
    i: list
    w: list


def _assemble(blocks: list) -> tuple[list, list, list]:
    """F runs the blocks in order, I and W in reverse."""
    f = [s for b in blocks for s in b.f]
    i = [s for b in reversed(blocks) for s in b.i]
    w = [s for b in reversed(blocks) for s in b.w]
    return f, i, w


def _memory(name: str, read: int, write: int) -> Kernel:
    return Kernel(name, "memory", bytes=int(read + write))


class _Shapes:
    """The per-rank sizes of one model trained one way."""

    def __init__(self, model: Transformer, training):
        par = training.parallel
        self.model = model
        self.t, self.sp = par.tensor, par.sequence
        self.e = training.expert_parallel
        self.et = training.expert_tp
        self.fp8 = training.fp8
        self.flash = training.flash_attention
        self.recompute = training.recompute
        t = self.t
        self.T = model.tokens
        self.tokens = _ceil(self.T, t) if self.sp else self.T  # norms, dropouts, residual adds
        self.h = model.hidden
        if model.moe:
            if model.experts % self.e:
                raise ConfigError("expert_parallel", self.e, f"give a divisor of the model's {model.experts} experts",
                                  reason="the experts do not split evenly over the expert-parallel group")
            if t > 1 and not self.sp:
                raise ConfigError("sequence_parallel", False, "give sequence_parallel=True (or None) with "
                                  "tensor_parallel > 1 for a mixture of experts", reason="Megatron-LM requires "
                                  "sequence parallelism for MoE layers under tensor parallelism")
        elif self.e > 1:
            raise ConfigError("expert_parallel", self.e, "give 1 for a dense model",
                              reason="expert parallelism splits the experts of MoE layers")
        self.vocab_rank = _ceil(model.vocab, VOCAB_DIVISOR * t) * VOCAB_DIVISOR

    def comm(self, kind: str, nbytes: int, name: str, group: str = "tp") -> list:
        """The collective, if its group has more than one device; ``"etp"`` is the experts' tensor-
        parallel group: the tensor-parallel one, or no group with whole experts."""
        size = {"tp": self.t, "etp": self.et, "ep": self.e}[group]
        return [_Comm(kind, int(nbytes), "tp" if group == "etp" else group, name)] if size > 1 else []

    # -- linear layers ------------------------------------------------------------------

    def gemm(self, name: str, m: int, n: int, k: int, model: Fraction, *, batch: int = 1, fp8: bool = False,
             accumulate: bool = False) -> Kernel:
        """C (m × n) = A (m × k) · B (k × n), ``batch`` times; ``accumulate``: a weight gradient
        added into its 32-bit main gradient."""
        operand = FP8 if fp8 else HALF
        out = 2 * FULL if accumulate else HALF
        nbytes = batch * ((m * k + k * n) * operand + m * n * out)
        return Kernel(name, "gemm", flops=2 * m * n * k * batch, model_flops=model, bytes=nbytes,
                      m=m, n=n, k=k, batch=batch, fp8=fp8)

    def linear(self, name: str, n_in: int, n_out: int, split: str, *, fp8_ok: bool = True,
               fused_input: bool = True, n_rank: int | None = None) -> _Block:
        """A linear layer on the microbatch's T tokens, ``split`` "column" or "row" over the t
        ranks, with its collectives (module docstring). ``fused_input``: its input comes from a
        norm or activation that writes it in FP8 itself; ``n_rank``: a column-parallel layer's
        outputs per rank when padded (the vocabulary)."""
        t, T, sp = self.t, self.T, self.sp
        fp8 = self.fp8 and fp8_ok
        model = Fraction(2 * T * n_in * n_out, t)
        if split == "column":
            k_in, n_out_rank = n_in, n_rank or _ceil(n_out, t)
        else:
            k_in, n_out_rank = _ceil(n_in, t), n_out
        f, i, w = [], [], []
        if split == "column" and sp:
            f += self.comm("all-gather", T * n_in * (FP8 if fp8 else HALF), f"{name} input")
        if fp8 and not fused_input:
            f.append(_memory(f"{name} input FP8 cast", T * k_in * HALF, 2 * T * k_in * FP8))
        f.append(self.gemm(name, T, n_out_rank, k_in, model, fp8=fp8))
        if split == "row":
            f += self.comm("reduce-scatter" if sp else "all-reduce", T * n_out * HALF, f"{name} output")
        if split == "column" and sp:
            i += self.comm("all-gather", T * n_in * (FP8 if fp8 else HALF), f"{name} input (for W)")
        if split == "row" and sp:
            i += self.comm("all-gather", T * n_out * HALF, f"{name} output gradient")
        if fp8:
            i.append(_memory(f"{name} gradient FP8 cast-transpose", T * n_out_rank * HALF, 2 * T * n_out_rank * FP8))
        i.append(self.gemm(f"{name} dgrad", T, k_in, n_out_rank, model, fp8=fp8))
        if split == "column":
            i += self.comm("reduce-scatter" if sp else "all-reduce", T * n_in * HALF, f"{name} input gradient")
        w.append(self.gemm(f"{name} wgrad", k_in, n_out_rank, T, model, fp8=fp8, accumulate=True))
        return _Block(f, i, w)

    # -- element-wise parts -------------------------------------------------------------

    def norm(self, name: str, tokens: int | None = None, *, residual: bool = True, width: int | None = None) -> _Block:
        """A LayerNorm/RMSNorm on the rank's tokens (``width`` wide: h unless given); its
        backward, and (``residual``) the add of its input gradient to the residual stream's."""
        n = (self.tokens if tokens is None else tokens) * (self.h if width is None else width)
        stats = (2 if self.model.norm == "layernorm" else 1) * FULL * (self.tokens if tokens is None else tokens)
        i = [_memory(f"{name} backward", 2 * n * HALF + stats, n * HALF)]
        if residual:
            i.append(_memory(f"{name} residual gradient add", 2 * n * HALF, n * HALF))
        return _Block([_memory(name, n * HALF, n * HALF + stats)], i, [])

    def residual(self, name: str) -> _Block:
        """Bias-dropout-add into the residual stream; the dropout's backward."""
        n = self.tokens * self.h
        if self.model.dropout:
            return _Block([_memory(f"{name} dropout-add", 2 * n * HALF, n * HALF + n)],
                          [_memory(f"{name} dropout backward", n * HALF + n, n * HALF)], [])
        return _Block([_memory(f"{name} add", 2 * n * HALF, n * HALF)], [], [])

    def activation(self, name: str, tokens: int, width: int) -> _Block:
        """SwiGLU (gated) or GeLU over tokens × width (the rank's share of the inner width)."""
        n = tokens * width
        if self.model.gated_mlp:
            return _Block([_memory(f"{name} SwiGLU", 2 * n * HALF, n * HALF)],
                          [_memory(f"{name} SwiGLU backward", 3 * n * HALF, 2 * n * HALF)], [])
        return _Block([_memory(f"{name} GeLU", n * HALF, n * HALF)],
                      [_memory(f"{name} GeLU backward", 2 * n * HALF, n * HALF)], [])

    # -- attention ----------------------------------------------------------------------

    def heads(self) -> tuple[int, int, int, int]:
        """Query heads and key/value heads on this rank, a query's (and key's) width per head and
        a value's."""
        m = self.model
        kv = m.kv_heads if m.kv_heads is not None else m.heads
        return _ceil(m.heads, self.t), _ceil(kv, self.t), m.head_size + m.rope_head_dim, m.head_size

    def attention_core(self) -> _Block:
        m = self.model
        b, s = m.micro_batch_size, m.seq_len
        a, g, dqk, dv = self.heads()
        model_f = Fraction(2 * b * s * s * (m.qk_size + m.query_size), self.t)
        # elements on this rank of Q, K, V and O (O and dO are V-wide per query head)
        q, k, v, o = b * s * a * dqk, b * s * g * dqk, b * s * g * dv, b * s * a * dv
        if self.flash:
            executed = CAUSAL * 2 * b * s * s * a * (dqk + dv)
            f = [Kernel("flash attention", "attention", flops=int(executed), model_flops=model_f,
                        bytes=(q + k + v) * HALF + o * HALF + b * s * a * FULL)]
            i = [_memory("flash attention backward preprocess", 2 * o * HALF, b * s * a * FULL + q * FULL),
                 Kernel("flash attention backward", "attention_backward", flops=int(executed * FLASH_BACKWARD),
                        model_flops=2 * model_f,
                        bytes=(q + 2 * o + k + v) * HALF + 2 * b * s * a * FULL + 2 * q * FULL
                        + (q + o if g < a else k + v) * HALF),
                 _memory("flash attention dQ conversion", q * FULL, q * HALF)]
            if g < a:
                i.append(_memory("dK, dV sum over query groups", (q + o) * HALF, (k + v) * HALF))
            return _Block(f, i, [])
        scores = b * a * s * s
        # each batched GEMM's model FLOPs: the scores' products are a query head deep, the values' a value wide
        per_qk, per_v = Fraction(2 * b * s * s * m.qk_size, self.t), Fraction(2 * b * s * s * m.query_size, self.t)
        f, i = [], []
        if g < a:
            f.append(_memory("K, V repeat to query heads", (k + v) * HALF, (q + o) * HALF))
        f.append(self.gemm("attention scores Q·Kᵀ", s, s, dqk, per_qk, batch=b * a))
        f.append(_memory("scale-mask-softmax", scores * HALF, scores * HALF))
        if m.dropout:
            f.append(_memory("attention dropout", scores * HALF, scores * HALF + scores))
        f.append(self.gemm("attention over values P·V", s, dv, s, per_v, batch=b * a))
        i.append(self.gemm("attention dP = dO·Vᵀ", s, s, dv, per_v, batch=b * a))
        i.append(self.gemm("attention dV = Pᵀ·dO", s, dv, s, per_v, batch=b * a))
        if m.dropout:
            i.append(_memory("attention dropout backward", scores * HALF + scores, scores * HALF))
        i.append(_memory("softmax backward", 2 * scores * HALF, scores * HALF))
        i.append(self.gemm("attention dQ = dS·K", s, dqk, s, per_qk, batch=b * a))
        i.append(self.gemm("attention dK = dSᵀ·Q", s, dqk, s, per_qk, batch=b * a))
        if g < a:
            i.append(_memory("dK, dV sum over query groups", (q + o) * HALF, (k + v) * HALF))
        return _Block(f, i, [])

    def rotary(self) -> list:
        """Rotary embedding of the queries and keys (under MLA, of their decoupled rotary parts:
        each query head's and the one key all heads share)."""
        if self.model.learned_positions:
            return []
        a, g, d, _ = self.heads()
        n = self.T * (a + 1) * self.model.rope_head_dim if self.model.mla else self.T * (a + g) * d
        return [_Block([_memory("rotary embedding", n * HALF, n * HALF)],
                       [_memory("rotary embedding backward", n * HALF, n * HALF)], [])]

    def duplicated(self, name: str, n_in: int, n_out: int) -> _Block:
        """A linear layer every tensor-parallel rank holds whole and runs on its own tokens (MLA's
        down-projections: Megatron-LM's ``parallel_mode="duplicated"``); no collective of its own,
        the column-parallel up-projection after it gathers (and reduces) its latent."""
        model, n = Fraction(2 * self.T * n_in * n_out, self.t), self.tokens
        fp8 = self.fp8
        cast = [_memory(f"{name} gradient FP8 cast-transpose", n * n_out * HALF, 2 * n * n_out * FP8)] if fp8 else []
        return _Block([self.gemm(name, n, n_out, n_in, model, fp8=fp8)],
                      cast + [self.gemm(f"{name} dgrad", n, n_in, n_out, model, fp8=fp8)],
                      [self.gemm(f"{name} wgrad", n_in, n_out, n, model, fp8=fp8, accumulate=True)])

    def projections(self) -> list:
        """The attention's projections before its core (:meth:`Transformer.projections`): the fused
        QKV, or MLA's down-projections, latent norms and up-projections, the rotary embedding."""
        m = self.model
        if not m.mla:
            (name, n_in, n_out), _ = m.projections()
            return [self.linear(name, n_in, n_out, "column"), *self.rotary()]
        blocks = []
        for name, n_in, n_out in m.projections()[:-1]:
            if n_in == m.hidden:
                blocks.append(self.duplicated(name, n_in, n_out))
                latent = n_out - (m.rope_head_dim if name.startswith("KV") else 0)
                if name != "Q projection":
                    blocks.append(self.norm(f"{name[:-len(' down-projection')]} latent norm", residual=False,
                                            width=latent))
            else:
                blocks.append(self.linear(name, n_in, n_out, "column"))
        return blocks + self.rotary()

    def attention(self) -> tuple[list, _Block]:
        """The attention half of a layer, and its core (what selective recompute runs again)."""
        m = self.model
        core = self.attention_core()
        blocks = [self.norm("attention norm"), *self.projections(), core,
                  self.linear("output projection", m.query_size, m.hidden, "row", fused_input=False),
                  self.residual("attention residual")]
        return blocks, core

    # -- MLP ----------------------------------------------------------------------------

    def mlp(self, name: str, width: int) -> list:
        """A dense (or shared-expert) MLP of inner width ``width``, tensor-parallel."""
        m = self.model
        up = (2 if m.gated_mlp else 1) * width
        return [self.linear(f"{name} FC1", m.hidden, up, "column"),
                self.activation(name, self.T, _ceil(width, self.t)),
                self.linear(f"{name} FC2", width, m.hidden, "row")]

    def moe(self) -> list:
        m = self.model
        t, e, T, n, h = self.t, self.e, self.T, self.tokens, self.h
        et = self.et  # expert tensor parallelism: t, or 1 (each rank's own tokens to whole experts)
        E, k, width = m.experts, m.top_k, m.expert_ffn
        local = E // e
        entering = T if et > 1 else n  # tokens whose copies reach a rank's experts: gathered over TP, or its own
        per_expert = _ceil(entering * k * e, E)  # tokens each local expert receives on average
        copies = n * k * h  # elements of the rank's permuted token copies
        gathered = entering * k * h  # the same over the tensor-parallel group (when the experts are split over it)
        fp8 = self.fp8
        blocks = []
        router = Fraction(2 * T * h * E, t)
        blocks.append(_Block(
            [self.gemm("router", n, E, h, router),
             _memory("router softmax and top-k", n * E * HALF, n * E * FULL + n * k * (FULL + INDEX))],
            [_memory("router softmax backward", 2 * n * E * FULL, n * E * HALF),
             self.gemm("router dgrad", n, h, E, router),
             _memory("router input gradient add", 2 * n * h * HALF, n * h * HALF)],
            [self.gemm("router wgrad", h, E, n, router, accumulate=True)]))
        sort = local > 1 and e * et > 1
        dispatch_f = [_memory("permute", n * h * HALF + n * k * INDEX, copies * HALF)]
        dispatch_f += self.comm("all-to-all", copies * HALF, "dispatch", "ep")
        dispatch_f += self.comm("all-gather", gathered * HALF, "dispatched tokens", "etp")
        if sort:
            dispatch_f.append(_memory("sort by local expert", gathered * HALF, gathered * HALF))
        dispatch_i = [_memory("sort backward", gathered * HALF, gathered * HALF)] if sort else []
        dispatch_i += self.comm("reduce-scatter", gathered * HALF, "dispatched tokens' gradient", "etp")
        dispatch_i += self.comm("all-to-all", copies * HALF, "dispatch gradient", "ep")
        dispatch_i.append(_memory("permute backward", copies * HALF, n * h * HALF))
        blocks.append(_Block(dispatch_f, dispatch_i, []))
        up = (2 if m.gated_mlp else 1) * width
        for name, n_in, n_out, split in (("expert FC1", h, up, "column"), ("expert FC2", width, h, "row")):
            model = Fraction(2 * T * k * n_in * n_out, t)  # a rank's share, whichever way the experts split
            k_in, n_rank = (n_in, _ceil(n_out, et)) if split == "column" else (_ceil(n_in, et), n_out)
            rows = local * per_expert
            cast = [_memory(f"{name} gradient FP8 cast-transpose", rows * n_rank * HALF,
                            2 * rows * n_rank * FP8)] if fp8 else []
            # the dispatched tokens arrive in 16 bits; FC2's input comes from the fused activation
            cast_in = [_memory(f"{name} input FP8 cast", rows * k_in * HALF, 2 * rows * k_in * FP8)] \
                if fp8 and split == "column" else []
            blocks.append(_Block(
                cast_in + [self.gemm(name, per_expert, n_rank, k_in, model, batch=local, fp8=fp8)],
                cast + [self.gemm(f"{name} dgrad", per_expert, k_in, n_rank, model, batch=local, fp8=fp8)],
                [self.gemm(f"{name} wgrad", k_in, n_rank, per_expert, model, batch=local, fp8=fp8,
                           accumulate=True)]))
            if split == "column":
                blocks.append(self.activation("expert", local * per_expert, _ceil(width, et)))
        combine_f = [_memory("sort back", gathered * HALF, gathered * HALF)] if sort else []
        combine_f += self.comm("reduce-scatter", gathered * HALF, "expert outputs", "etp")
        combine_f += self.comm("all-to-all", copies * HALF, "combine", "ep")
        combine_f.append(_memory("unpermute (weighted sum)", copies * HALF + n * k * FULL, n * h * HALF))
        combine_i = [_memory("unpermute backward", n * h * HALF + copies * HALF, copies * HALF + n * k * FULL)]
        combine_i += self.comm("all-to-all", copies * HALF, "combine gradient", "ep")
        combine_i += self.comm("all-gather", gathered * HALF, "expert outputs' gradient", "etp")
        if sort:
            combine_i.append(_memory("sort back backward", gathered * HALF, gathered * HALF))
        blocks.append(_Block(combine_f, combine_i, []))
        if m.shared_experts:
            blocks += self.mlp("shared expert", m.shared_experts * width)
            blocks.append(_Block([_memory("shared and routed add", 2 * n * h * HALF, n * h * HALF)],
                                 [_memory("shared expert input gradient add", 2 * n * h * HALF, n * h * HALF)], []))
        return blocks

    # -- items --------------------------------------------------------------------------

    def layer(self) -> dict:
        m = self.model
        blocks, core = self.attention()
        blocks += [self.norm("MLP norm")]
        blocks += self.moe() if m.moe else self.mlp("MLP", m.ffn)
        blocks.append(self.residual("MLP residual"))
        f, i, w = _assemble(blocks)
        again = {None: [], "selective": core.f, "full": f}[self.recompute]
        return {"F": f, "I": i, "W": w, "R": list(again)}

    def embedding(self) -> dict:
        t, T, h, n = self.t, self.T, self.h, self.tokens
        rows = self.vocab_rank * h
        f = [_memory("embedding lookup", T * h * HALF + T * INDEX, T * h * HALF)]
        if t > 1:
            f.append(_memory("embedding mask of other shards' rows", T * h * HALF + T * INDEX, T * h * HALF))
        f += self.comm("reduce-scatter" if self.sp else "all-reduce", T * h * HALF, "embedding output")
        w = []
        if self.model.learned_positions:
            f.append(_memory("position embedding add", 2 * n * h * HALF, n * h * HALF))
        if self.model.dropout:
            f.append(_memory("embedding dropout", n * h * HALF, n * h * HALF + n * h))
            w.append(_memory("embedding dropout backward", n * h * HALF + n * h, n * h * HALF))
        if self.model.learned_positions:
            positions = self.model.seq_len * h  # summed over the batch into the 32-bit main gradient
            w.append(_memory("position embedding gradient", n * h * HALF + positions * FULL, positions * FULL))
        if self.sp:
            w += self.comm("all-gather", T * h * HALF, "embedding output gradient")
        w.append(_memory("embedding scatter-add", T * h * HALF + T * INDEX, rows * HALF))
        w.append(_memory("embedding main-gradient accumulation", rows * (HALF + FULL), rows * FULL))
        return {"F": f, "I": [], "W": w, "R": []}

    def head(self) -> dict:
        m, T = self.model, self.T
        logits = T * self.vocab_rank  # elements of this rank's logits
        norm = self.norm("final norm", residual=False)
        lm = self.linear("LM head", m.hidden, m.vocab, "column", fp8_ok=False, n_rank=self.vocab_rank)
        loss_f = [_memory("logits to FP32", logits * HALF, logits * FULL),
                  _memory("cross entropy max", logits * FULL, T * FULL)]
        loss_f += self.comm("all-reduce", T * FULL, "logits max")
        loss_f.append(_memory("cross entropy exp and sum", logits * FULL, logits * FULL + T * FULL))
        loss_f += self.comm("all-reduce", 2 * T * FULL, "predicted logits and sums")
        loss_f.append(_memory("cross entropy softmax", logits * FULL, logits * FULL))
        loss_i = [_memory("cross entropy backward", logits * FULL, logits * FULL),
                  _memory("logits gradient to 16 bits", logits * FULL, logits * HALF)]
        f, i, w = _assemble([norm, lm, _Block(loss_f, loss_i, [])])
        return {"F": f, "I": i, "W": w, "R": []}

    def mtp(self) -> dict:
        T, h = self.T, self.h
        embed = self.embedding()
        norms = [self.norm("MTP embedding norm", residual=False), self.norm("MTP hidden norm")]
        concat = _Block([_memory("MTP concatenation", 2 * self.tokens * h * HALF, 2 * self.tokens * h * HALF)], [], [])
        proj = self.linear("MTP projection", 2 * h, h, "column", fused_input=False)
        proj.f += self.comm("all-gather", T * h * HALF, "MTP projection output")
        if self.sp:  # the output, scattered back to the sequence shards, comes back all-gathered
            proj.i[:0] = self.comm("all-gather", T * h * HALF, "MTP projection output gradient")
        layer, head = self.layer(), self.head()
        f, i, w = _assemble([*norms, concat, proj])
        return {"F": embed["F"] + f + layer["F"] + head["F"], "I": head["I"] + layer["I"] + i,
                "W": head["W"] + layer["W"] + w + embed["W"], "R": layer["R"]}


def item_kernels(model: Transformer, training) -> dict[str, dict[str, Phase]]:
    """``{item: {phase: Phase}}`` for the items ``E``, ``t``, ``m`` and ``L`` (as
    :func:`ppviz.model.costs.item_costs` uses them) and the phases ``F``, ``I``, ``W`` and ``R``,
    on one device of the tensor-parallel group; ``training`` is a
    :class:`ppviz.model.costs.Training`. An MTP item exists for every model (the kernels of one
    module), whether or not the model has any."""
    shapes = _Shapes(model, training)
    items = {"E": shapes.embedding(), "t": shapes.layer(), "m": shapes.mtp(), "L": shapes.head()}
    return {item: {phase: Phase.of(steps) for phase, steps in phases.items()} for item, phases in items.items()}
