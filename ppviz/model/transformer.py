"""``ppviz.Transformer``: a decoder-only transformer's dimensions, and published models as presets.

The description holds what the cost formulas need: layers, hidden size, attention heads (with
grouped-query attention's key/value heads), the MLP (plain or gated, e.g. SwiGLU), mixture of
experts (experts, top-k, expert hidden size), vocabulary, sequence length and micro-batch size.
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
        for name in ("ffn_hidden", "kv_heads", "head_dim", "expert_hidden"):
            if getattr(self, name) is not None:
                checked_count(name, getattr(self, name), minimum=1)
        for name in ("experts", "shared_experts"):
            checked_count(name, getattr(self, name), minimum=0)
        checked_count("mtp_layers", self.mtp_layers, minimum=0, maximum=MAX_LAYERS)
        checked_count("top_k", self.top_k, minimum=1)
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
        if not self.experts and (self.shared_experts or self.expert_hidden is not None):
            raise ConfigError("experts", self.experts, "give experts >= 1 for a mixture of experts (shared_experts "
                              "and expert_hidden describe MoE layers)")
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
    def query_size(self) -> int:
        """Width of the queries (and of the attention output): a · head size."""
        return self.heads * self.head_size

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

    def attention_params(self) -> int:
        h, q, kv = self.hidden, self.query_size, self.kv_size
        weights = h * (q + 2 * kv) + q * h
        return weights + (q + 2 * kv + h if self.bias else 0)

    def mlp_params(self, active: bool = False) -> int:
        """The MLP's parameters; for an MoE layer all experts (or, ``active``, the top-k and
        shared ones a token passes through) and the router."""
        h = self.hidden
        if not self.moe:
            return _mlp(h, self.ffn, self.mlp_matrices, self.bias)
        expert = _mlp(h, self.expert_ffn, self.mlp_matrices, self.bias)
        routed = self.top_k if active else self.experts
        return (routed + self.shared_experts) * expert + h * self.experts

    def layer_params(self, active: bool = False) -> int:
        """One transformer layer: attention, MLP and its two norms."""
        return self.attention_params() + self.mlp_params(active) + 2 * self._norm_params()

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
        return (self.embedding_params() + self.layers * self.layer_params() + self.head_params()
                + self.mtp_layers * self.mtp_params())

    @property
    def active_params(self) -> int:
        """Parameters one token passes through (all of them for a dense model)."""
        return (self.embedding_params() + self.layers * self.layer_params(active=True) + self.head_params()
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
}
