"""Links and topologies: what one point-to-point transfer between two devices costs, and the
settings of activation offload, whose copies cross each device's link to host memory.

A transfer of ``bytes`` over a :class:`Link` takes ``latency + bytes / bandwidth`` and keeps the
link busy for all of that time (NCCL runs the sends between two ranks one after another, so a
second transfer waits for the first). A :class:`Topology` groups devices into nodes of
``devices_per_node`` (device d is on node ``d // devices_per_node``): a transfer between devices
of one node crosses the ``intra`` link (NVLink), between nodes the ``inter`` link (InfiniBand,
RoCE). Each ordered pair of devices is its own link: traffic from 3 to 4 never waits for traffic
from 4 to 3 or from 2 to 3.

Times are in the config's time unit and bandwidths in bytes per that unit, unless the link says
which unit it was written in (``unit="s"``: latency in seconds, bandwidth in bytes per second):
then it is converted to the config's ``time_unit``, which must be set. The presets are written in
seconds, from the sources their docstrings give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError, checked_arguments

#: seconds in one of each time unit a link can be converted to
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}


def _float(name: str, value, accepted: str) -> float:
    """``value`` as a float; an int too large for one is refused, not taken as infinite."""
    try:
        return float(value)
    except OverflowError:
        raise ConfigError(name, value, accepted) from None


def _positive(name: str, value, *, allow_inf: bool = False, allow_zero: bool = False) -> float:
    """A number > 0 (>= 0 with ``allow_zero``), finite and at most 1e200 unless ``allow_inf``."""
    least = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(name, value, f"give a number {least}" + (" (math.inf for no limit)" if allow_inf else ""))
    accepted = f"give a finite number {least} and at most 1e200" + (", or math.inf for no limit" if allow_inf else "")
    x = _float(name, value, accepted)
    if math.isnan(x) or x < 0 or (x == 0 and not allow_zero) or (math.isinf(x) and not allow_inf) or (
            not math.isinf(x) and x > 1e200):
        raise ConfigError(name, value, accepted)
    return x


def seconds_per(time_unit: str | None, what: str) -> float:
    """Seconds in one ``time_unit``; a ConfigError naming ``what`` needs it when it is not one ppviz knows."""
    if time_unit is None:
        raise ConfigError("time_unit", None, f"set time_unit (one of {', '.join(SECONDS)}) to use {what}: ppviz "
                          f"converts its latency and bandwidth to the unit of f, b and w",
                          reason=f"{what} is in seconds and bytes per second, and f, b, w have no unit")
    if time_unit not in SECONDS:
        raise ConfigError("time_unit", time_unit, f"use one of {', '.join(SECONDS)} to use {what}, or give a "
                          f"Link in your time unit (unit=None)", reason=f"ppviz cannot convert seconds to {time_unit!r}")
    return SECONDS[time_unit]


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Link:
    """One directional connection between two devices.

    ``latency``: time before the first byte arrives (>= 0); ``bandwidth``: bytes per time unit
    (> 0; ``math.inf`` for a latency-only link). ``unit``: ``None`` when both are in the
    config's time unit, or the unit they were written in (``"s"``, ``"ms"``, ``"us"``, ``"ns"``),
    converted to the config's ``time_unit`` when simulated.
    """

    latency: float = field(kw_only=False)
    bandwidth: float
    unit: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "latency", _positive("latency", self.latency, allow_zero=True))
        object.__setattr__(self, "bandwidth", _positive("bandwidth", self.bandwidth, allow_inf=True))
        if self.unit is not None and self.unit not in SECONDS:
            raise ConfigError("unit", self.unit, f"give None (the config's time unit) or one of {', '.join(SECONDS)}")

    def duration(self, nbytes: float) -> float:
        """latency + nbytes / bandwidth, in this link's units."""
        return self.latency + nbytes / self.bandwidth

    def in_unit(self, time_unit: str | None, what: str | None = None) -> "Link":
        """This link with latency in ``time_unit`` and bandwidth in bytes per ``time_unit``."""
        if self.unit is None:
            return self
        scale = SECONDS[self.unit] / seconds_per(time_unit, what or f"a Link(unit={self.unit!r})")
        return Link(self.latency * scale, bandwidth=self.bandwidth / scale)

    def describe(self, time_unit: str | None = None, size: str = "bytes") -> str:
        """e.g. ``"latency 11.8 µs, 450 GB/s"``, in the units the link was written in; ``size``
        names what a unitless link's bandwidth carries (a host link's activation units when the
        config gives no ``activation_bytes``)."""
        unit = self.unit or time_unit or "time unit"
        if self.unit is not None:  # in seconds, then in the unit that reads best
            seconds = self.latency * SECONDS[self.unit]
            lat = (f"{seconds / SECONDS['us']:.3g} µs" if seconds < 1e-3 else
                   f"{seconds / SECONDS['ms']:.3g} ms" if seconds < 1 else f"{seconds:.3g} s")
            per_second = self.bandwidth / SECONDS[self.unit]
            bw = "no bandwidth limit" if math.isinf(self.bandwidth) else f"{per_second / 1e9:.3g} GB/s"
            return f"latency {lat}, {bw}"
        bw = "no bandwidth limit" if math.isinf(self.bandwidth) else f"{self.bandwidth:.6g} {size} per {unit}"
        return f"latency {self.latency:.6g} {unit}, {bw}"


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Offload:
    """Activation offload (PipeOffload, Wan et al. 2025, arXiv 2503.01328): ``share`` (0..1] of
    every activation a forward stores is copied to host memory over ``link`` after the forward,
    and back before the backward that needs it (:mod:`ppviz.core.offload` times the copies).

    ``link`` is each device's link to host memory (PCIe), one per direction: offloads queue on
    the device-to-host one, reloads on the host-to-device one. Its bandwidth is in bytes
    (activation units × ``Config.activation_bytes``, or activation units when the config gives
    no ``activation_bytes``) per time unit; ``unit="s"`` converts it to the config's
    ``time_unit``. ``Config.from_model(..., offload=share)`` takes the hardware's PCIe link.
    A share of 0 offloads nothing: the config then has ``offload=None``.
    """

    share: float = field(kw_only=False)
    link: Link

    def __post_init__(self):
        share = self.share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise ConfigError("share", share, "give the share of each activation offloaded to the host, from 0 to 1")
        object.__setattr__(self, "share", float(share))
        if not isinstance(self.link, Link):
            raise ConfigError("link", self.link, "give a ppviz.Link(latency, bandwidth=...) for each device's link to "
                              "host memory (one per direction)")

    def describe(self, time_unit: str | None, size: str = "bytes") -> str:
        return f"{self.share:g} of each activation to the host over {self.link.describe(time_unit, size)} " \
               "(per direction)"


@checked_arguments
@dataclass(frozen=True, kw_only=True)
class Topology:
    """Devices grouped into nodes: ``intra`` connects devices of one node, ``inter`` devices of
    different nodes (device d is on node ``d // devices_per_node``).

    ``Topology.preset(name)`` gives a common system (:data:`PRESETS`).
    """

    devices_per_node: int = field(kw_only=False)
    intra: Link
    inter: Link
    name: str | None = None

    def __post_init__(self):
        n = self.devices_per_node
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**9:
            raise ConfigError("devices_per_node", n, "give a whole number from 1 to 1,000,000,000")
        for name in ("intra", "inter"):
            if not isinstance(getattr(self, name), Link):
                raise ConfigError(name, getattr(self, name), "give a ppviz.Link(latency, bandwidth=...)")
        if self.name is not None and not isinstance(self.name, str):
            raise ConfigError("name", self.name, "give a string or None")

    @classmethod
    def preset(cls, name: str) -> "Topology":
        """A common system by name: ``"dgx-h100"``, ``"dgx-a100"``, ``"roce-h100"``, ``"dgx-b200"``,
        ``"gb200-nvl72"``, ``"h800-ib"`` (see :data:`PRESETS`)."""
        key = name.strip().lower() if isinstance(name, str) else None
        if key not in PRESETS:
            raise ConfigError("topology", name, f"use one of {', '.join(PRESETS)}",
                              reason="no topology preset has this name")
        return PRESETS[key]

    def node(self, device):
        """Node of a device (or of an array of devices)."""
        return device // self.devices_per_node

    def link(self, src: int, dst: int) -> Link:
        """The link a transfer from ``src`` to ``dst`` crosses."""
        return self.intra if self.node(src) == self.node(dst) else self.inter

    def in_unit(self, time_unit: str | None) -> "Topology":
        """This topology with both links converted to ``time_unit``."""
        what = f"the topology {self.name!r}" if self.name else None
        return Topology(self.devices_per_node, intra=self.intra.in_unit(time_unit, what),
                        inter=self.inter.in_unit(time_unit, what), name=self.name)

    def describe(self, time_unit: str | None = None) -> str:
        n = self.devices_per_node
        return (f"{self.name + ': ' if self.name else ''}{n} device{'s' if n > 1 else ''} per node; within a node "
                f"{self.intra.describe(time_unit)}; between nodes {self.inter.describe(time_unit)}")


def checked_topology(value: object) -> Topology | Link:
    """A Topology or Link as given (a preset name becomes its Topology); anything else is a ConfigError."""
    if isinstance(value, (Topology, Link)):
        return value
    if isinstance(value, str):
        return Topology.preset(value)
    raise ConfigError("topology", value, "give a ppviz.Topology, a ppviz.Link (one link between every pair of "
                      "devices) or a preset name such as 'dgx-h100'")


def durations(topology, time_unit: str | None, src: np.ndarray, dst: np.ndarray, nbytes: float) -> np.ndarray:
    """Duration of a transfer of ``nbytes`` from each ``src`` to each ``dst``, in ``time_unit``."""
    if isinstance(topology, Link):
        return np.full(len(src), topology.in_unit(time_unit).duration(nbytes))
    topo = topology.in_unit(time_unit)
    inter = topo.node(src) != topo.node(dst)
    return np.where(inter, topo.inter.duration(nbytes), topo.intra.duration(nbytes))


def describe(topology, time_unit: str | None = None) -> str:
    """A Topology's or a Link's one-line description."""
    if isinstance(topology, Link):
        return "one link between every pair of devices: " + topology.describe(time_unit)
    return topology.describe(time_unit)


# Presets ------------------------------------------------------------------------------------
#
# Latency: NCCL's cost model (NVIDIA/nccl src/graph/tuning.cc, commit 01afd20) gives one ring step
# with the Simple protocol (the one large point-to-point tensors use) a base latency of 8.4 µs
# plus a hardware latency of 3.4 µs over NVLink and 9.6 µs over the network: 11.8 µs within a
# node, 18 µs between nodes. Bandwidth: per GPU and per direction, from the vendors' figures.

_NVLINK_LATENCY = 11.8e-6
_NET_LATENCY = 18.0e-6

#: Topologies of common systems, in seconds and bytes per second (``unit="s"``):
#:
#: - ``"dgx-h100"``: NVIDIA DGX H100, 8 GPUs per node. NVLink 4: 18 links, 900 GB/s per GPU in
#:   both directions together, so 450 GB/s each way; between nodes one ConnectX-7 NDR
#:   InfiniBand port of 400 Gb/s per GPU, 50 GB/s each way (NVIDIA DGX H100 user guide and
#:   datasheet).
#: - ``"dgx-a100"``: NVIDIA DGX A100, 8 GPUs per node. NVLink 3: 12 links, 600 GB/s per GPU
#:   both ways, 300 GB/s each way; between nodes one ConnectX-6 HDR InfiniBand port of
#:   200 Gb/s per GPU, 25 GB/s each way (NVIDIA DGX A100 user guide).
#: - ``"roce-h100"``: an Ethernet cluster of H100 servers as Meta trained Llama 3 405B on:
#:   8 GPUs per server on NVLink (450 GB/s each way), servers joined by RoCE at 400 Gb/s per
#:   GPU, 50 GB/s each way (arXiv 2407.21783, §3.3.1). The same bandwidths as ``"dgx-h100"``
#:   from a different fabric; NCCL's model gives it the same network latency.
#: - ``"dgx-b200"``: NVIDIA DGX B200, 8 GPUs per node. NVLink 5: "1.8 TB/s per GPU bandwidth, 18
#:   Links per GPU", 900 GB/s each way; "Compute links: 8x 400 Gbit/s", 50 GB/s per GPU each way
#:   (NVIDIA dgxc-benchmarking README, "B200 Reference Architecture").
#: - ``"gb200-nvl72"``: NVIDIA GB200 NVL72, one NVLink domain of 72 GPUs (18 compute trays of 4):
#:   NVLink 5 at 1.8 TB/s per GPU, 900 GB/s each way (dgxc-benchmarking README, "GB200
#:   Reference Architecture"); between racks one ConnectX-7 (400 Gb/s, 50 GB/s each way) per GPU
#:   (NVIDIA Multi-Node NVLink Systems tuning guide, "Understanding Your Grace-Blackwell
#:   Systems": the 72x1 configuration's compute trays carry CX7 NICs).
#: - ``"h800-ib"``: DeepSeek's H800 cluster, on which it trained DeepSeek-V3: "Each node in the
#:   H800 cluster contains 8 GPUs connected by NVLink and NVSwitch within nodes. Across different
#:   nodes, InfiniBand (IB) interconnects are utilized" (arXiv 2412.19437, §3.1), "IB (50 GB/s)"
#:   per GPU (§3.2.2); the H800's NVLink is 400 GB/s both ways, 200 GB/s each way (NVIDIA/nccl
#:   issue 1374: "unidirectional peak BW 200GB/s"), of which the report reaches 160.
PRESETS = {
    name: Topology(per_node, intra=Link(_NVLINK_LATENCY, bandwidth=nvlink, unit="s"),
                   inter=Link(_NET_LATENCY, bandwidth=network, unit="s"), name=name)
    for name, per_node, nvlink, network in (("dgx-h100", 8, 450e9, 50e9), ("dgx-a100", 8, 300e9, 25e9),
                                            ("roce-h100", 8, 450e9, 50e9), ("dgx-b200", 8, 900e9, 50e9),
                                            ("gb200-nvl72", 72, 900e9, 50e9), ("h800-ib", 8, 200e9, 50e9))
}
