"""``ppviz.Transformer``: a decoder-only transformer's dimensions, and published models as presets.

The description holds what the cost formulas need: layers, hidden size, attention heads (with
grouped-query attention's key/value heads, or multi-head latent attention's compressed latents),
the MLP (plain or gated, e.g. SwiGLU), mixture of experts (experts, top-k, expert hidden size,
shared experts, dense first layers, node-limited routing), vocabulary, sequence length and
micro-batch size.
Parameter counts follow from it (:attr:`Transformer.params`); the presets' counts equal the
published figures within their rounding (``tests/test_model_papers.py``).

Symbols used across ``ppviz.model`` (Narayanan et al. 2021; Korthikanti et al. 2022): ``h``
hidden size, ``a`` attention heads, ``s`` sequence length, ``b`` micro-batch size, ``V``
vocabulary, ``l`` layers, ``T = b·s`` tokens per microbatch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..core.errors import ConfigError, checked_arguments
from .catalog import from_catalog

#: Largest layer count accepted (the largest published models have a few hundred): the balancer's
#: work grows with it.
MAX_LAYERS = 100_000
#: Largest width, vocabulary, sequence or batch accepted: FLOPs of such sizes stay finite floats.
MAX_SIZE = 10**9
#: Sixteen-bit types: the activation and static-memory formulas (Korthikanti et al.; ZeRO) assume them.
DTYPES = ("bf16", "fp16")
NORMS = ("layernorm", "rmsnorm")


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Transformer:
    """A decoder-only transformer, trained in 16-bit mixed precision.

    Parameters
    ----------
    layers : l, the transformer layers.
    hidden : h, the model (residual stream) width.
    heads : a, the attention (query) heads.
    ffn_hidden : the MLP's inner width (per expert for MoE layers unless ``expert_hidden`` is
        given); ``None`` means 4h.
    kv_heads : key/value heads for grouped-query attention; ``None`` means ``heads`` (plain
        multi-head attention). Must divide ``heads``.
    vocab : V, the vocabulary (the embedding and LM-head rows).
    seq_len : s, tokens per sequence.
    micro_batch_size : b, sequences per microbatch.
    gated_mlp : a gated MLP (SwiGLU, GeGLU): three matrices h×ffn instead of two.
    dtype : ``"bf16"`` or ``"fp16"``: 2-byte activations, weights and gradients.
    head_dim : width of one head; ``None`` means h / a (then ``heads`` must divide ``hidden``).
    experts : routed experts per MoE layer; 0 for a dense model.
    top_k : experts each token is routed to.
    expert_hidden : an expert's MLP width; ``None`` means ``ffn_hidden``.
    shared_experts : experts every token also passes through (DeepSeek-style), of ``expert_hidden``.
    routed_nodes : node-limited routing (DeepSeek-V3 §2.1.2: M = 4): each token's routed experts
        lie on at most this many of the expert-parallel group's nodes, each node holding one of the
        router's expert groups, and its dispatch crosses the network once per node
        (:meth:`ppviz.model.collectives.Groups.node_limited_all_to_all`); ``None``, any expert.
    dense_layers : the first k layers of a mixture of experts have a dense MLP of ``ffn_hidden``
        instead (DeepSeek's ``first_k_dense_replace``: 3 in DeepSeek-V3).
    kv_lora_rank : d_c, multi-head latent attention (MLA; DeepSeek-V2, arXiv 2405.04434, §2.1): keys
        and values are up-projected from one compressed latent of this width per token (with its
        RMSNorm), queries and keys carry a decoupled rotary part of ``rope_head_dim`` per head,
        values are ``head_dim`` wide; ``None`` is ordinary (grouped-query) attention.
    q_lora_rank : d_c', MLA's query compression (a latent of this width with its RMSNorm, then
        the up-projection); ``None`` projects the queries from the hidden state directly.
    rope_head_dim : d_h^R, MLA's decoupled rotary part of each query and key head (and of the
        one rotary key all heads share).
    mtp_layers : multi-token-prediction modules after the last layer (DeepSeek-V3), each a
        projection of 2h → h, one transformer layer and the shared LM head.
    tied_embeddings : the LM head shares the input embedding's matrix (counted once).
    bias : linear layers carry biases (GPT-2/3 style).
    norm : ``"layernorm"`` (weight and bias) or ``"rmsnorm"`` (weight only).
    learned_positions : a learned position embedding of s×h (GPT-style); rotary embeddings have none.
    dropout : the model trains with dropout, whose masks are stored (1 byte per element;
        Korthikanti et al. count them). Llama- and Mixtral-style training uses none.
    name, source : a label, and where the figures come from.
    """

    layers: int = field(kw_only=False)
    hidden: int
    heads: int
    ffn_hidden: int | None = None
    kv_heads: int | None = None
    vocab: int = 51200
    seq_len: int = 2048
    micro_batch_size: int = 1
    gated_mlp: bool = False
    dtype: str = "bf16"
    head_dim: int | None = None
    experts: int = 0
    top_k: int = 1
    expert_hidden: int | None = None
    shared_experts: int = 0
    mtp_layers: int = 0
    routed_nodes: int | None = None
    dense_layers: int = 0
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    rope_head_dim: int = 0
    tied_embeddings: bool = False
    bias: bool = False
    norm: str = "rmsnorm"
    learned_positions: bool = False
    dropout: bool = False
    name: str | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        checked_count("layers", self.layers, minimum=1, maximum=MAX_LAYERS)
        for name in ("hidden", "heads", "vocab", "seq_len", "micro_batch_size"):
            checked_count(name, getattr(self, name), minimum=1)
        for name in ("ffn_hidden", "kv_heads", "head_dim", "expert_hidden", "kv_lora_rank", "q_lora_rank",
                     "routed_nodes"):
            if getattr(self, name) is not None:
                checked_count(name, getattr(self, name), minimum=1)
        for name in ("experts", "shared_experts"):
            checked_count(name, getattr(self, name), minimum=0)
        checked_count("mtp_layers", self.mtp_layers, minimum=0, maximum=MAX_LAYERS)
        checked_count("top_k", self.top_k, minimum=1)
        checked_count("rope_head_dim", self.rope_head_dim, minimum=0)
        checked_count("dense_layers", self.dense_layers, minimum=0, maximum=self.layers)
        if self.dense_layers and not self.experts:
            raise ConfigError("dense_layers", self.dense_layers, "give experts >= 1 too, or leave dense_layers at 0 "
                              "(it says how many of a mixture of experts' first layers are dense)")
        if self.kv_lora_rank is None:
            for name in ("q_lora_rank", "rope_head_dim"):
                if getattr(self, name):
                    raise ConfigError(name, getattr(self, name), "give kv_lora_rank too (multi-head latent "
                                      "attention), or leave it out", reason="it describes multi-head latent attention")
        elif self.kv_heads is not None:
            raise ConfigError("kv_heads", self.kv_heads, "leave kv_heads out with kv_lora_rank: multi-head latent "
                              "attention up-projects a key and a value for every head")
        if self.head_dim is None and self.hidden % self.heads:
            raise ConfigError("heads", self.heads, f"give a number of heads that divides hidden={self.hidden} "
                              "(or give head_dim)", reason="the heads do not divide the hidden size")
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ConfigError("kv_heads", self.kv_heads, f"give a divisor of heads={self.heads} (query heads are "
                              "grouped evenly over key/value heads)", reason="kv_heads does not divide heads")
        if self.kv_heads is not None and self.kv_heads > self.heads:
            raise ConfigError("kv_heads", self.kv_heads, f"give at most heads={self.heads}")
        if self.experts and self.top_k > self.experts:
            raise ConfigError("top_k", self.top_k, f"give at most experts={self.experts}")
        if not self.experts and (self.shared_experts or self.expert_hidden is not None or self.routed_nodes):
            raise ConfigError("experts", self.experts, "give experts >= 1 for a mixture of experts (shared_experts, "
                              "expert_hidden and routed_nodes describe MoE layers)")
        if self.dtype not in DTYPES:
            raise ConfigError("dtype", self.dtype, f"give one of {', '.join(DTYPES)}: the activation and optimizer "
                              "formulas are for 16-bit mixed-precision training")
        if self.norm not in NORMS:
            raise ConfigError("norm", self.norm, f"give one of {', '.join(NORMS)}")
        for name in ("gated_mlp", "tied_embeddings", "bias", "learned_positions", "dropout"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, getattr(self, name), "give True or False")

    # Derived sizes ----------------------------------------------------------------------

    @property
    def head_size(self) -> int:
        return self.head_dim if self.head_dim is not None else self.hidden // self.heads

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (``kv_lora_rank`` given)."""
        return self.kv_lora_rank is not None

    @property
    def query_size(self) -> int:
        """Width of the attention output (and of the values): a · head size."""
        return self.heads * self.head_size

    @property
    def qk_size(self) -> int:
        """Width of the queries (and of the keys under MLA): a · (head size + MLA's rotary part)."""
        return self.heads * (self.head_size + self.rope_head_dim)

    @property
    def kv_size(self) -> int:
        """Width of the keys (and of the values): kv_heads · head size."""
        return (self.kv_heads if self.kv_heads is not None else self.heads) * self.head_size

    @property
    def ffn(self) -> int:
        return self.ffn_hidden if self.ffn_hidden is not None else 4 * self.hidden

    @property
    def expert_ffn(self) -> int:
        return self.expert_hidden if self.expert_hidden is not None else self.ffn

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def tokens(self) -> int:
        """T = b·s, the tokens of one microbatch."""
        return self.micro_batch_size * self.seq_len

    @property
    def mlp_matrices(self) -> int:
        """Matrices of h × ffn in one MLP (or expert): 3 when gated, else 2."""
        return 3 if self.gated_mlp else 2

    # Parameters -------------------------------------------------------------------------

    def _norm_params(self) -> int:
        return (2 if self.norm == "layernorm" else 1) * self.hidden

    def projections(self) -> tuple[tuple[str, int, int], ...]:
        """The attention's weight matrices in the order they run, as (name, inputs, outputs):
        the fused QKV and the output projection, or under MLA (DeepSeek-V2 §2.1; DeepSeek-V3
        §2.1.1) the query down- and up-projection (or one query projection), the joint key/value
        down-projection with the shared rotary key, its up-projection to every head's key and
        value, and the output projection."""
        h, q, latent = self.hidden, self.query_size, self.kv_lora_rank
        if latent is None:
            return (("QKV", h, q + 2 * self.kv_size), ("output projection", q, h))
        qr = self.q_lora_rank
        queries = ((("Q down-projection", h, qr), ("Q up-projection", qr, self.qk_size)) if qr is not None
                   else (("Q projection", h, self.qk_size),))
        return (*queries, ("KV down-projection", h, latent + self.rope_head_dim), ("KV up-projection", latent, 2 * q),
                ("output projection", q, h))

    @property
    def latent_size(self) -> int:
        """Width of MLA's compressed latents together, d_c' + d_c (each with its norm); 0 without MLA."""
        return (self.q_lora_rank or 0) + (self.kv_lora_rank or 0)

    def attention_params(self) -> int:
        weights = sum(n_in * n_out for _, n_in, n_out in self.projections())
        biases = sum(n_out for _, _, n_out in self.projections()) if self.bias else 0
        return weights + biases + self._norm_params() // self.hidden * self.latent_size

    def mlp_params(self, active: bool = False) -> int:
        """The MLP's parameters; for an MoE layer all experts (or, ``active``, the top-k and
        shared ones a token passes through) and the router."""
        h = self.hidden
        if not self.moe:
            return _mlp(h, self.ffn, self.mlp_matrices, self.bias)
        expert = _mlp(h, self.expert_ffn, self.mlp_matrices, self.bias)
        routed = self.top_k if active else self.experts
        return (routed + self.shared_experts) * expert + h * self.experts

    def expert_params(self) -> int:
        """The routed experts' parameters of one MoE layer (0 for a dense model): what expert
        parallelism splits."""
        return self.experts * _mlp(self.hidden, self.expert_ffn, self.mlp_matrices, self.bias) if self.moe else 0

    def layer_params(self, active: bool = False) -> int:
        """One transformer layer: attention, MLP and its two norms (an MoE layer for a mixture
        of experts; :meth:`dense` describes its dense first layers)."""
        return self.attention_params() + self.mlp_params(active) + 2 * self._norm_params()

    def dense(self) -> "Transformer":
        """The model its dense first layers belong to: the same attention with a dense MLP of
        ``ffn_hidden`` (for a dense model, the model itself)."""
        if not self.moe:
            return self
        return dataclasses.replace(self, experts=0, top_k=1, expert_hidden=None, shared_experts=0, dense_layers=0,
                                   routed_nodes=None)

    def _layers_params(self, active: bool) -> int:
        dense = self.dense_layers * self.dense().layer_params() if self.dense_layers else 0
        return dense + (self.layers - self.dense_layers) * self.layer_params(active)

    def embedding_params(self) -> int:
        """The input embedding (and the learned position embedding, if any)."""
        return self.vocab * self.hidden + (self.seq_len * self.hidden if self.learned_positions else 0)

    def head_params(self) -> int:
        """The final norm and the LM head (no matrix when it is tied to the embedding)."""
        return self._norm_params() + (0 if self.tied_embeddings else self.vocab * self.hidden)

    def mtp_params(self) -> int:
        """One MTP module: two norms, the 2h → h projection and a transformer layer (the
        embedding and the head are shared with the main model)."""
        return 2 * self._norm_params() + 2 * self.hidden * self.hidden + self.layer_params()

    @property
    def params(self) -> int:
        """Every parameter, counted once (tied matrices once)."""
        return (self.embedding_params() + self._layers_params(False) + self.head_params()
                + self.mtp_layers * self.mtp_params())

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (all of them for a dense model)."""
        return (self.embedding_params() + self._layers_params(True) + self.head_params()
                + self.mtp_layers * self.mtp_params())

    # Presets ----------------------------------------------------------------------------

    def replace(self, **changes) -> "Transformer":
        """A copy with some fields changed (validated again), e.g. ``model.replace(seq_len=4096)``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str, **changes) -> "Transformer":
        """A published model by name (see :meth:`presets`), with optional changes such as
        ``seq_len=4096`` or ``micro_batch_size=2``."""
        return from_catalog(PRESETS, "model", name, cls, changes)

    @staticmethod
    def presets() -> dict[str, str]:
        """The preset names, each with its source."""
        return {name: entry["source"] for name, entry in PRESETS.items()}


def _mlp(h: int, ffn: int, matrices: int, bias: bool) -> int:
    weights = matrices * h * ffn
    return weights + ((matrices - 1) * ffn + h if bias else 0)


def checked_count(name: str, value, *, minimum: int, maximum: int = MAX_SIZE) -> int:
    """``value``, a whole number from ``minimum`` to ``maximum``, or a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ConfigError(name, value, f"give a whole number from {minimum} to {maximum:,}")
    return value


_LLAMA3 = ("Dubey et al. 2024, 'The Llama 3 Herd of Models' (arXiv 2407.21783), Table 3; vocabulary 128,256 "
           "and sequence length 8,192 (pre-training before the long-context stage) from the released config.json")

#: Published models. Each entry: its dimensions and ``source``. The parameter counts these give
#: are checked against the published ones in ``tests/test_model_papers.py``.
PRESETS: dict[str, dict] = {
    "gpt-3-175b": dict(
        layers=96, hidden=12288, heads=96, vocab=50257, seq_len=2048, tied_embeddings=True, bias=True,
        norm="layernorm", learned_positions=True, dropout=True,
        source="Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1 (96 layers, d_model 12288, "
               "96 heads, context 2048); GPT-2's 50,257-token vocabulary; dropout as in Korthikanti et al. 2022"),
    "llama-3-8b": dict(
        layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256, seq_len=8192,
        gated_mlp=True, source=_LLAMA3),
    "llama-3-70b": dict(
        layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=128256, seq_len=8192,
        gated_mlp=True, source=_LLAMA3),
    "llama-3-405b": dict(
        layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248, vocab=128256, seq_len=8192,
        gated_mlp=True, source=_LLAMA3),
    "gemma-2-9b": dict(
        layers=42, hidden=3584, heads=16, kv_heads=8, head_dim=256, ffn_hidden=14336, vocab=256128, seq_len=8192,
        gated_mlp=True, tied_embeddings=True,
        source="Gemma Team 2024, 'Gemma 2: Improving Open Language Models at a Practical Size' (arXiv 2408.00118), "
               "Table 1 (d_model 3584, 42 layers, GeGLU feedforward 2 x 14336, 16 heads, 8 KV heads, head size 256, "
               "vocabulary 256,128, tied embeddings, context 8192) and Table 2 (917,962,752 embedding "
               "parameters); its local sliding-window attention, logit soft-capping and extra norms are not modelled: "
               "a 256k vocabulary at 9B, where the output layer weighs as much as several transformer layers"),
    "mixtral-8x7b": dict(
        layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=32000, seq_len=32768,
        gated_mlp=True, experts=8, top_k=2,
        source="Jiang et al. 2024, 'Mixtral of Experts' (arXiv 2401.04088), Table 1 (dim 4096, 32 layers, "
               "32 heads, 8 kv heads, hidden 14336, 8 experts, top 2, vocabulary 32000, context 32768)"),
    "deepseek-v3": dict(
        layers=61, hidden=7168, heads=128, head_dim=128, kv_lora_rank=512, q_lora_rank=1536, rope_head_dim=64,
        ffn_hidden=18432, dense_layers=3, experts=256, top_k=8, shared_experts=1, expert_hidden=2048, routed_nodes=4,
        vocab=129280, seq_len=4096, gated_mlp=True, mtp_layers=1,
        source="DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report' (arXiv 2412.19437), §4.2: 61 layers, hidden 7168, "
               "128 heads of 128, KV compression 512, query compression 1536, decoupled rotary 64 per head, every "
               "FFN but the first three layers an MoE of 1 shared and 256 routed experts of width 2048, 8 routed "
               "per token on at most 4 nodes, MTP depth 1, sequence 4K in pre-training; 671B parameters, 37B "
               "activated per token. "
               "deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json: vocab_size 129280, inter_dim 18432, "
               "n_dense_layers 3, n_expert_groups 8, n_limited_groups 4, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; SwiGLU experts, RMSNorm, "
               "an untied head (inference/model.py)"),
}
