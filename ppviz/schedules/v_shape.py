"""V-shape schedules: two stages per device, placed 0..p−1 then p−1..0 (torch's "v" style).

Device d holds stage d (the "down" leg) and stage 2p−1−d (the "up" leg), so the first and the
last stage share device 0 and the turn of the V is local to device p−1. A stage is half of
1/p of the model: its passes cost f/2, b/2, w/2 and hold half an activation unit (a "chunk").
All three schedules split the backward into I and W.

``zb-v`` — ZB-V, Qi et al., "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241) §6, in the
order torch's ``ScheduleZBVZeroBubble`` builds (op for op, on every (p, m) torch accepts).
Rank r: 2(p−r)−1 down forwards; r × (up F, down F); p−r × (up F, up I, up W); steady rounds
(down F, down I, down W, up F, up I, up W); r × (down I, up I); p−r × (down I, down W); the
remaining W's, up leg first. Below 2p−1 microbatches torch builds the order for 2p−1 and drops
the ops of microbatches that do not exist; so does ppviz.

* Bubble: the paper and torch say zero when f = b = w. What is left is the fill: device p−1
  cannot start before p−1 half-stage forwards, so idle is (p−1)·f/2 per device; exact when
  m >= 2p−1, f = b and f/2 <= w <= f (checked by simulation).
* Memory: p activation units (2p chunks) on every device when m >= 2p−1, 1F1B's peak.

``v-half`` and ``v-min`` — Qi et al., "Pipeline Parallelism with Controllable Memory"
(arXiv 2405.15362). Construction: the authors' V-shape building blocks with their greedy
reordering (sail-sg/zero-bubble-pipeline-parallelism, the "vhalf / vmin" ``PipelineGraph``),
rewritten here step for step, so each device's order is theirs:

1. the building block gives device d a slot for each of one microbatch's passes (down F, up
   F, up I, down I): V-Half 2d, 3p−d−2, 3p+g+2d−1, 6p+g−d−2 with g = 3 for even p (else 0);
   V-Min d, 2p−d−1, 2p+g+d, 4p+g−d−1 with g = 2 when 3 divides p (else 0);
2. the block repeats every 6 slots (a microbatch's F, F, I, I, W, W on one device);
3. W's fill free slots, oldest first; then, in slot order, every pass outside the steady phase
   (from device 0's first down-leg I to the last microbatch's first down-leg F) moves to the
   earliest free slot its dependencies allow that keeps its device at or below the highest
   device's peak; everything is squeezed to unit time;
4. the W's are taken out (a W is then assumed to fill any free slot), the cool-down is
   reordered and squeezed again, and the W's go back into free slots, the up leg's first;
5. each device runs its passes in slot order.

The authors' greedy visits the passes one by one; here it runs for all devices at once, slot by
slot (a pass waits only for passes in earlier slots), with what each visit needs kept so that it
is found in a few array operations instead of by scanning the schedule: about p + m steps of
work on arrays of p, where the pass-by-pass search took about p²·m. The orders are the same
(tests/v_shape_reference.py keeps the search pass by pass, and the tests compare them).

The memory figures are the point (activation held from F to W, ``w_share = 1``, as the
authors count; both are exact once m >= p+1):

* V-Half: (p+2)//2 activation units on every device, against 1F1B's p (any w_share).
* V-Min: (p+4)//3 on every device; device 0 holds half a unit less when p mod 3 = 2.

Bubble, published as ≈ p/(2m) (V-Half) and ≈ 2p/(3m) (V-Min) of the makespan for f = b = w
(1F1B: ≈ p/m). Read off the construction and checked by simulation for p <= 32, with
f = b = w: idle per device (6⌈p/2⌉ − 7)·f/2 for V-Half (p >= 3; f/2 at p = 2) once m >= p+2,
and (4p − 5 − 2·[3 divides p])·f/2 for V-Min (p >= 2) once m >= p+1.
"""

from __future__ import annotations

import functools

import numpy as np

from ..core.program import F, I, W, DeviceOps, Program
from ..core.placement import Placement
from ..core.closed_form import ClosedForm, base, held
from ..core.registry import ScheduleSpec, register, require
from .splice import spliced_builder


def _program(devices: list[DeviceOps], p: int, m: int) -> Program:
    return Program.from_device_ops(devices, stages=2 * p, microbatches=m, placement=Placement.v_shape(p, 2))


# ZB-V (torch ScheduleZBVZeroBubble) ----------------------------------------------------------

def _zb_v_device(rank: int, p: int, m: int) -> DeviceOps:
    ops = DeviceOps()
    n = max(2 * p - 1, m)
    down, up = rank, 2 * p - 1 - rank
    count = {(kind, stage): 0 for kind in "fiw" for stage in (down, up)}

    def done(kind: str, stage: int) -> int:
        return count[kind, stage]

    def repeat(pattern: tuple[tuple[str, int], ...], times: int) -> None:
        """``times`` rounds of the pattern's passes. torch builds for max(2p−1, m) microbatches
        and drops the ops of those that do not exist (so does ppviz): once a round has none left
        to add, the rest are only counted (looping over them made a small m cost p² steps)."""
        for round_ in range(times):
            if all(count[key] >= m for key in pattern):
                for key in pattern:
                    count[key] += times - round_
                return
            for kind, stage in pattern:
                mb = count[kind, stage]
                count[kind, stage] = mb + 1
                if mb < m:
                    getattr(ops, kind)(stage, mb)

    repeat((("f", down),), 2 * (p - rank) - 1)
    repeat((("f", up), ("f", down)), rank)
    repeat((("f", up), ("i", up), ("w", up)), p - rank)
    # the steady rounds; once every pass of every microbatch is in, nothing after adds one
    while (done("f", up) < done("f", down) or done("f", down) < n) and min(count.values()) < m:
        if done("f", down) < n:
            repeat((("f", down),), 1)
        repeat((("i", down), ("w", down), ("f", up), ("i", up), ("w", up)), 1)
    repeat((("i", down), ("i", up)), rank)
    repeat((("i", down), ("w", down)), p - rank)
    for stage in (up, down):
        repeat((("w", stage),), max(0, done("i", stage) - done("w", stage)))
    return ops


def build_zb_v(config) -> Program:
    p, m = config.devices, config.microbatches
    return _program([_zb_v_device(r, p, m) for r in range(p)], p, m)


# V-Half / V-Min (sail-sg building blocks + greedy reordering) ------------------------------

# the six passes of one microbatch on one device, in the authors' order "FfBbWw"
F_DOWN, F_UP, I_UP, I_DOWN, W_UP, W_DOWN = range(6)
_PERIOD = 6


def _block_v_half(p: int) -> np.ndarray:
    """(p, 4): each device's slots for one microbatch's down F, up F, up I, down I."""
    gap = 3 if p % 2 == 0 else 0
    d = np.arange(p, dtype=np.int64)
    return np.stack([2 * d, 3 * p - d - 2, 3 * p + gap + 2 * d - 1, 6 * p + gap - d - 2], axis=1)


def _block_v_min(p: int) -> np.ndarray:
    gap = 2 if p % 3 == 0 else 0
    d = np.arange(p, dtype=np.int64)
    return np.stack([d, 2 * p - d - 1, 2 * p + gap + d, 4 * p + gap - d - 1], axis=1)


# The construction is computed for all devices at once, slot by slot: within a slot each device
# has at most one pass, and every pass waits only for passes in earlier slots, so the passes of
# one slot never depend on each other. ``pos[d, kind, mb]`` is the slot of device d's pass of that
# kind (F_DOWN, F_UP, I_UP, I_DOWN) and microbatch; W's are arrays of their own.

def _occupancy(pos: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(forward, arrival): per device and slot, whether an F runs there, whether an I does."""
    rows = np.arange(pos.shape[0])[:, None]
    forward = np.zeros((pos.shape[0], width), bool)
    arrival = np.zeros((pos.shape[0], width), bool)
    forward[rows, pos[:, F_DOWN]] = forward[rows, pos[:, F_UP]] = True
    arrival[rows, pos[:, I_UP]] = arrival[rows, pos[:, I_DOWN]] = True
    return forward, arrival


def _served(arrival: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The free slots at which a W runs: each serves the oldest I still waiting. Departures by
    slot t are D(t) = S(t) + min(0, min over j <= t of (A(j) − S(j))), A the I's and S the free
    slots counted up to each slot."""
    # in place and in int32: these are (p, width) arrays, and their memory is most of the cost
    s = np.cumsum(free, axis=1, dtype=np.int32)
    drained = np.cumsum(arrival, axis=1, dtype=np.int32)
    drained -= s
    np.minimum.accumulate(drained, axis=1, out=drained)
    np.minimum(drained, 0, out=drained)
    drained += s
    departs = np.empty(drained.shape, bool)
    departs[:, 0] = drained[:, 0] > 0
    np.greater(drained[:, 1:], drained[:, :-1], out=departs[:, 1:])
    return departs


def _columns(mask: np.ndarray, count: int, end: np.ndarray, after) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the columns where mask holds, in order, then end+after+1, end+after+2 … up to
    ``count`` of them; and how many came from the mask."""
    n = mask.sum(axis=1)
    out = np.empty((mask.shape[0], count), np.int64)
    rows, cols = np.divmod(mask.ravel().nonzero()[0], mask.shape[1])  # faster than a 2-D nonzero
    out[rows, np.arange(len(rows)) - (np.cumsum(n) - n)[rows]] = cols
    k = np.arange(count)[None, :]
    return np.where(k >= n[:, None], (end + 1 + after - n)[:, None] + k, out), n


def _add_ws(pos: np.ndarray, split: bool):
    """Add the W slots: each free slot up to the device's last pass runs the oldest pending W,
    the rest follow that last pass. ``split``: the up leg's W's and the down leg's are two lists
    and a free slot serves the up leg first (the authors' rule); otherwise one list of 2m."""
    p, _, m = pos.shape
    end = pos.reshape(p, -1).max(axis=1)
    width = int(end.max()) + 1
    forward, arrival = _occupancy(pos, width)
    free = ~(forward | arrival) & (np.arange(width)[None, :] <= end[:, None])
    served = _served(arrival, free)
    if not split:
        return _columns(served, 2 * m, end, 0)[0]
    up_arrival = np.zeros_like(arrival)
    up_arrival[np.arange(p)[:, None], pos[:, I_UP]] = True
    up = _served(up_arrival, free)  # the up leg has first call on every free slot
    ups, n_up = _columns(up, m, end, 0)
    downs, _ = _columns(served & ~up, m, end, m - n_up)
    return ups, downs


def _peak_placed(pos: np.ndarray, w: np.ndarray) -> int:
    """Highest level, in chunks, of any device whose W's are placed: an F takes a chunk, a W
    gives it back."""
    width = int(max(pos.max(), w.max())) + 1
    rows = np.arange(pos.shape[0])[:, None]
    # a slot holds one pass, so one byte per slot; the levels in int32 (memory is most of the cost)
    delta = np.zeros((pos.shape[0], width), np.int8)
    delta[rows, pos[:, F_DOWN]] = 1
    delta[rows, pos[:, F_UP]] = 1
    delta[rows, w] = -1
    return max(0, int(np.cumsum(delta, axis=1, dtype=np.int32).max()))


# the class of each pass kind, by which the loops below group a slot's passes: F, I, W
_CLASS = np.array([0, 0, 1, 1, 2, 2], np.int8)


class _Slots:
    """All passes of a schedule, one row per pass, sorted by (slot, device): the order the
    authors visit them in. ``phase`` is 0 before device 0's first down-leg I, 1 from it to the
    next last-microbatch down-leg F (both included), 2 after.

    ``by_class``: within each slot the F's come first, then the I's, then the W's (devices
    ascending in each), and ``classes`` says where each slot's I's and W's begin. A slot's passes
    are on distinct devices and wait only for passes in earlier slots, so the authors' results do
    not depend on the order within a slot, and a loop over slots then finds each class in one
    stretch."""

    def __init__(self, lists: list[tuple[int, np.ndarray]], m: int, by_class: bool = False):
        p = lists[0][1].shape[0]
        per_kind = max(arr.shape[1] for _, arr in lists)
        # each pass has a (slot, device) of its own: a table indexed by both (and by class, between
        # them, for ``by_class``), holding the pass's kind and microbatch, lists them in that order
        # (no sort needed)
        classes = 3 if by_class else 1
        rows = classes * p
        # (int16 where kinds × microbatches fit: this is the largest array here, and fresh memory is
        # much of what it costs)
        held_type = np.int16 if len(_CLASS) * per_kind < 2**15 else np.int32
        table = np.full((max(int(arr.max()) for _, arr in lists) + 1) * rows, -1, held_type)
        for kind, arr in lists:
            column = int(_CLASS[kind]) * p if by_class else 0
            table[arr * rows + (np.arange(column, column + p))[:, None]] = kind * per_kind + np.arange(arr.shape[1])
        at = (table >= 0).nonzero()[0]
        held = table[at]
        # int32 where the table fits (the arrays here have one entry per pass, and int32 arithmetic
        # on them is several times faster)
        at = at.astype(np.int32 if len(table) < 2**31 // 3 else np.int64)
        key = at // p  # slot × classes + class
        slot = key // classes if by_class else key
        self.slot, self.device = slot, (at - key * p).astype(np.intp)
        self.kind = held // per_kind
        self.mb = held - self.kind * per_kind
        # where each slot's passes begin, for the slots that have any
        bounds = slot.searchsorted(np.arange(int(slot[-1]) + 2))
        self.starts = np.r_[bounds[:-1][bounds[1:] > bounds[:-1]], len(at)]
        if by_class:
            first = key[self.starts[:-1]] - key[self.starts[:-1]] % 3
            self.classes = key.searchsorted(first + 1), key.searchsorted(first + 2)
            at = slot * p + self.device  # by (slot, device), for the phases
        # the phases, by (slot, device) whatever the order within slots
        self.phase = np.zeros(len(at), np.int8)
        first = np.flatnonzero((self.kind == I_DOWN) & (self.device == 0))
        if len(first):
            begin = int(self.slot[first[0]])
            after = self.slot >= begin
            last = np.flatnonzero((self.kind == F_DOWN) & (self.mb == m - 1) & after)
            if len(last):
                end = int(at[last].min())  # the first one, by (slot, device)
                self.phase[after] = 1
                self.phase[at > end] = 2
            else:
                self.phase[after] = 1


class _NextFree:
    """Per row (a device), the first slot at or after x that is still open; slots close one by
    one. A union-find with path halving over all rows at once, on cells (row × (width + 1) +
    slot) so that each step is one gather; slot ``width`` stays open."""

    def __init__(self, p: int, width: int, closed: np.ndarray | None = None):
        """``p`` rows; ``closed``: (p, width + 1), the slots closed from the start (none if not
        given)."""
        self.size = width + 1
        # intp, though int32 would do: every step reads links as indices, and numpy gathers by an
        # int32 index several times slower (the extra memory costs less, measured)
        self.parent = np.arange(p * self.size, dtype=np.intp)
        self.head = np.full(p, -1)  # per row, the first cell of the run ``close_frontier`` extends
        if closed is not None:
            # each closed slot links straight to the first open one after it, in its own row (the
            # row's last slot is open); in place, as this array is among the largest built
            self.parent[closed.ravel()] = len(self.parent)
            backwards = self.parent[::-1]
            np.minimum.accumulate(backwards, out=backwards)

    def find_flat(self, found: np.ndarray) -> np.ndarray:
        """The first open cell at or after each of these cells, in its row (overwrites them)."""
        parent = self.parent
        up = parent[found]
        far = (up != found).nonzero()[0]
        at, up = found[far], up[far]
        while len(at):
            skip = parent[up]
            parent[at] = skip  # path halving
            found[far] = skip
            ahead = parent[skip]
            going = ahead != skip
            far, at, up = far[going], skip[going], ahead[going]
        return found

    def close(self, rows: np.ndarray, x: np.ndarray) -> None:
        self.close_flat(rows * self.size + x)

    def close_flat(self, at: np.ndarray) -> None:
        # the slot after is open or links past closed slots only: either way a valid link
        self.parent[at] = self.parent[at + 1]

    def close_frontier(self, closing: np.ndarray, x: int) -> None:
        """Close slot x in the rows where ``closing`` holds, when every slot after x is open.

        Slots closed this way one after the other would make a chain one link longer at every
        slot, walked by every later search from before them. Instead each run of them links to
        its first slot (``head``), and only that one links on, to x + 1."""
        rows = closing.nonzero()[0]
        at = rows * self.size + x
        first = self.head[rows]
        np.copyto(first, at, where=first < 0)
        self.parent[at] = first
        self.parent[first] = at + 1
        self.head.fill(-1)
        self.head[rows] = first


def _squeeze(pos: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start every pass as early as its device and its upstream neighbour allow, in unit time,
    keeping each device's order (the W's have no upstream neighbour)."""
    p, _, m = pos.shape
    passes = _Slots([(k, pos[:, k]) for k in range(4)] + [(W_UP, w)], m)
    d = passes.device
    size, n_w = p * 4 * m, p * 2 * m
    at, upstream = _cells(passes, p, m, size + n_w)
    out = np.zeros(size + n_w + 1, np.int64)
    out[-1] = -1
    free = np.zeros(p, np.int64)
    for lo, hi in zip(passes.starts[:-1].tolist(), passes.starts[1:].tolist()):
        rows = d[lo:hi]
        ready = out.take(upstream[lo:hi])
        ready += 1
        np.maximum(ready, free.take(rows), out=ready)
        out[at[lo:hi]] = ready
        ready += 1
        free[rows] = ready
    return out[:size].reshape(p, 4, m), out[size:-1].reshape(p, 2 * m)


class _Sorted:
    """Per device, a sorted list of slots that grows by one value at a time (anywhere in it).
    Each device's slots are kept offset by device × 2^32, and unused places hold that offset's
    top, so that all rows read as one sorted array: one ``searchsorted`` places every value."""

    SPAN = np.int64(1 << 32)  # a numpy integer, so that int32 rows times it are int64

    def __init__(self, p: int, capacity: int):
        self.offset = np.arange(p, dtype=np.int64)[:, None] * self.SPAN
        self.keys = np.repeat(self.offset + self.SPAN - 1, capacity, axis=1)
        self.count = np.zeros(p, np.int64)

    def insert(self, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Insert values[i] into row rows[i] (rows distinct); returns where each landed."""
        flat = self.keys.ravel()
        row_start = rows * self.keys.shape[1]
        keys = values + rows * self.SPAN
        at = self.count[rows]
        # most values go after all of their row's: only the others are searched for (an empty row
        # reads the row before it, whose keys are all smaller, or for row 0 the last row's top,
        # which sends the value to the search: either way it lands at 0)
        inside = (flat[row_start + at - 1] > keys).nonzero()[0]
        if len(inside):
            at[inside] = flat.searchsorted(keys[inside]) - row_start[inside]
            # the values they go before move up one place
            inside_at = at[inside]
            moving = _ranges((row_start[inside] + inside_at), self.count[rows[inside]] - inside_at)
            flat[moving + 1] = flat[moving]
        flat[row_start + at] = keys
        self.count[rows] += 1
        return at

    def append(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Append values after all of their rows' (rows in any order, values ascending per row)."""
        order = np.argsort(rows, kind="stable")
        rows, values = rows[order], values[order]
        added = np.bincount(rows, minlength=len(self.count))
        rank = np.arange(len(rows)) - (np.cumsum(added) - added)[rows]
        self.keys[rows, self.count[rows] + rank] = values + self.offset[rows, 0]
        self.count += added


def _ranges(first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """first[i], first[i] + 1, … (lengths[i] of them) for each i, laid end to end."""
    ends = lengths.cumsum()
    return np.arange(int(ends[-1]) if len(ends) else 0) + (first + lengths - ends).repeat(lengths)


# per pass kind (F down, F up, I up, I down), which way its upstream neighbour lies: d − 1 or d + 1
_UPSTREAM = np.array([1, -1, 1, -1])


def _cells(passes: _Slots, p: int, m: int, none: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pass's cell in one flat array of the F/I slots as (p, 4, m) and then the W slots as
    (p, 2m), and the cell of its upstream neighbour's pass of the same kind (``none``, a cell
    holding −1, for a W or where there is no neighbour). int32 where the cells fit: these are
    among the largest arrays built, and both their memory and their arithmetic cost less so."""
    dtype = np.int32 if none < 2**31 else np.int64
    d, kind, mb = passes.device.astype(dtype), passes.kind.astype(dtype), passes.mb.astype(dtype)
    is_w = kind >= W_UP
    k = np.minimum(kind, I_DOWN)
    own = np.where(is_w, d * (2 * m) + (p * 4 * m + mb), d * (4 * m) + k * m + mb)
    # the upstream neighbour: device d − 1 on the way down (F down, I up), d + 1 on the way up
    step = _UPSTREAM.astype(dtype)[k]
    d -= step
    return own, np.where(is_w | (d < 0) | (d >= p), none, own - step * (4 * m))


def _dependency_slots(passes: _Slots, p: int, m: int, none: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pass's cell (see :func:`_cells`) and (three rows) those of the passes it waits for
    in the authors' model: the upstream neighbour's pass of the same kind, its own previous kind
    and its own previous microbatch (for a W, the W before it; the W's own I is looked up where
    it is needed); ``none`` for none."""
    own, upstream = _cells(passes, p, m, none)
    deps = np.empty((3, len(own)), own.dtype)
    deps[0] = upstream
    np.copyto(deps[1], np.where((passes.kind > F_DOWN) & (passes.kind < W_UP), own - m, none))
    np.copyto(deps[2], np.where(passes.mb > 0, own - 1, none))
    return own, deps


def _reorder_placed(pos: np.ndarray, w: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 with the W's placed: outside the steady phase every pass, in slot order, takes the
    earliest free slot after what it waits for; an F only where no slot from there to its own
    is at the highest device's level c (it would go above c there).

    The last slot at level c is found without levels: between W's a device's level only rises,
    so a stretch at c ends just before a W, and the n-th F (by slot) is at c exactly when the
    (n−c+1)-th W comes after it. Those ranks only rise as passes move earlier, so the latest such
    W (``bound``) is where the last stretch at c ends: an F may not start before it."""
    p = pos.shape[0]
    c = _peak_placed(pos, w)
    n_fi, n_w = p * 4 * m, p * 2 * m
    passes = _Slots([(k, pos[:, k]) for k in range(4)] + [(W_UP, w)], m, by_class=True)
    d, kind, mb = passes.device, passes.kind, passes.mb
    is_w = kind == W_UP
    # each pass's cell in the output: the F/I slots as (p, 4, m), then the W slots as (p, 2m); a W
    # waits for the W before it, and for the I of the same rank (by slot): looked up below
    own, deps = _dependency_slots(passes, p, m, n_fi + n_w)
    # ``state`` holds every pass's slot at its cell, then −1 (for "waits for nothing") and, for the
    # passes that stay (the steady phase), a slot later than any
    stay = passes.phase == 1
    deps[0, stay] = n_fi + n_w + 1
    group_lo, group_hi = passes.starts[:-1].tolist(), passes.starts[1:].tolist()
    group_i, group_w = (x.tolist() for x in passes.classes)
    group_slot = passes.slot[passes.starts[:-1]].tolist()
    state = np.empty(n_fi + n_w + 2, np.int64)
    state[-2], state[-1] = -1, np.iinfo(np.int64).max // 2
    # per device, the F's slots (row 2d) and the I's (row 2d + 1), each sorted
    width = int(max(pos.max(), w.max())) + 1
    ranked = _Sorted(2 * p, 2 * m)
    cap = ranked.keys.shape[1]
    w_slots = np.zeros(n_w, np.int64)  # device d's W of rank k (by slot) at d × 2m + k, once placed
    open_slots = _NextFree(p, width)
    n_placed_w = np.zeros(p, np.int64)
    bound = np.zeros(p, np.int64)  # per device, the W that ends its last stretch at c (0: none)
    f_count = ranked.count[0::2]

    def at_level_c(rows, ranks):
        """Move ``bound`` to the W that ends a stretch at c where the F of that rank is at c."""
        ws = w_slots[rows * 2 * m + ranks - c]
        at = ws > ranked.keys.ravel()[2 * rows * cap + ranks - 1] - 2 * rows * _Sorted.SPAN
        np.maximum.at(bound, rows[at], ws[at])

    # the steady phase stays as built: the slots wholly inside it are taken in one go
    whole = np.logical_and.reduceat(stay, passes.starts[:-1]).tolist() if stay.any() else None
    g, n_groups = 0, len(group_lo)
    while g < n_groups:
        lo, i_lo, w_lo, hi = group_lo[g], group_i[g], group_w[g], group_hi[g]
        if whole is not None and whole[g]:
            while g + 1 < n_groups and whole[g + 1]:
                g += 1
            hi = group_hi[g]
            g += 1
            rows, slots = d[lo:hi], passes.slot[lo:hi]
            state[own[lo:hi]] = slots
            open_slots.close(rows, slots)
            before_f, before_w = f_count.copy(), n_placed_w.copy()
            fi = (~is_w[lo:hi]).nonzero()[0]
            ranked.append(2 * rows[fi] + (kind[lo:hi][fi] >= I_UP), slots[fi])
            ws = is_w[lo:hi].nonzero()[0]
            w_slots[rows[ws] * (2 * m) + mb[lo:hi][ws]] = slots[ws]
            n_placed_w += np.bincount(rows[ws], minlength=p)
            # every (F rank, W rank) pair with one of the two new, as one by one they would be
            first = np.maximum(c, np.minimum(before_f + 1, before_w + c))
            last = np.minimum(f_count, n_placed_w + c - 1)
            devices = np.flatnonzero(last >= first)
            lengths = last[devices] - first[devices] + 1
            at_level_c(devices.repeat(lengths), _ranges(first[devices], lengths))
            continue
        g += 1
        rows = d[lo:hi]
        start = state.take(deps[:, lo:hi]).max(axis=0)
        if w_lo < hi:
            i_row = 2 * rows[w_lo - lo:] + 1  # a W's I of the same rank, among its device's I's
            np.maximum(start[w_lo - lo:], ranked.keys.ravel()[i_row * cap + mb[w_lo:hi]] - i_row * _Sorted.SPAN,
                       out=start[w_lo - lo:])
        start += 1
        f = start[:i_lo - lo]
        np.maximum(f, bound[rows[:i_lo - lo]], out=f)
        # the pass's own slot is still open, so the search ends there at the latest
        np.minimum(start, group_slot[g - 1], out=start)
        row0 = rows * open_slots.size
        found = open_slots.find_flat(row0 + start)
        open_slots.close_flat(found)
        placed = found - row0
        state[own[lo:hi]] = placed
        if w_lo > lo:
            ranked_row = 2 * rows[:w_lo - lo]
            ranked_row[i_lo - lo:] += 1
            landed = ranked.insert(ranked_row, placed[:w_lo - lo])
        else:
            landed = placed[:0]
        # the F's whose rank rose (the new one and those after it) and, for a new W, the F of the
        # rank it now pairs with: each may be at c against a placed W
        fr, wr = rows[:i_lo - lo], rows[w_lo - lo:]
        low = np.maximum(landed[:i_lo - lo] + 1, c)
        high = np.minimum(f_count[fr], n_placed_w[fr] + c - 1)
        if w_lo < hi:
            w_slots[wr * (2 * m) + mb[w_lo:hi]] = placed[w_lo - lo:]
            n_placed_w[wr] += 1
            paired = n_placed_w[wr] + c - 1
            fr, low, high = (np.concatenate([fr, wr]), np.concatenate([low, paired]),
                             np.concatenate([high, np.minimum(paired, f_count[wr])]))
        lengths = np.maximum(high - low + 1, 0)
        if lengths.any():
            at_level_c(fr.repeat(lengths), _ranges(low, lengths))
    return state[:n_fi].reshape(p, 4, m).copy(), state[n_fi:-2].reshape(p, 2 * m).copy()


#: levels c, c−1, … whose last slot is bounded per device (six leave about one move in ten to be
#: checked against the levels themselves)
_BOUNDS = 6


def _reorder_queued(pos: np.ndarray, m: int) -> np.ndarray:
    """Step 4: the W's taken out and assumed to run in every free slot while one is pending;
    after the steady phase every pass, in slot order, takes the earliest free slot after what
    it waits for that keeps its device at or below the highest device's peak c.

    The past is kept as levels: ``base[d, j]`` the level after slot j when j joined the past,
    plus the changes since, recorded as +v at a and −v at b for "v more on [a, b)" in
    ``change``. Moving a pass from slot t to a free slot s changes the W's only between them:
    an F or an I at a slot where a W ran pushes that W to the next idle free slot u1; an I
    brings a W of its own, which runs at the next idle one (u1, or u2 after it). So the level
    rises by 1 on [s, t) for an F, by one more on [s, u1) if s was busy; for an I it rises by 1
    on [s, u1) if s was busy and falls by 1 from the slot where its own W now runs. The move is
    allowed when no slot it raises goes above c. Per device an upper bound on the last slot at
    each level c, c−1, … (``last``) settles most moves without looking at the levels."""
    p = pos.shape[0]
    passes = _Slots([(k, pos[:, k]) for k in range(4)], m)
    d, kind, phase = passes.device, passes.kind, passes.phase
    n_cells = pos.size
    # every pass's slot at its cell, then −1 (for "waits for nothing") and, for the passes before
    # the cool-down, which stay, a slot later than any
    state = np.concatenate([pos.ravel(), [-1, np.iinfo(np.int64).max // 2]])
    cur = state[:n_cells].reshape(pos.shape)
    own, deps = _dependency_slots(passes, p, m, n_cells)
    deps[0, phase != 2] = n_cells + 1
    width = int(pos.max()) + 2
    first_mover = int(np.argmax(phase == 2))
    begin = int(passes.slot[first_mover]) if phase[first_mover] == 2 else width
    bounds = passes.slot.searchsorted(np.arange(begin, width + 1)).tolist()
    del passes  # its other arrays are not needed below, and memory is most of the cost here
    forward = kind < I_UP
    # the (device, slot) arrays below are read through their flat cells, device × (width + 1) +
    # slot: a pass's device starts at ``row0``
    row0 = d * (width + 1)
    # the levels as the schedule stands (W's run in every free slot up to the device's last pass):
    # their peak is c, and before the first pass that may move they are the past (every device's
    # last pass comes after it, and the W's depend only on what came before them)
    at_f, at_i = _occupancy(pos, width + 1)
    taken = at_f | at_i
    served = _served(at_i, ~taken & (np.arange(width + 1) <= pos.reshape(p, -1).max(axis=1)[:, None]))
    base = np.cumsum(at_f, axis=1, dtype=np.int32)
    base -= np.cumsum(served, axis=1, dtype=np.int32)
    c = max(0, int(base.max()))
    taken[:, begin:] = served[:, begin:] = False
    pending = at_i[:, :begin].sum(axis=1) - served.sum(axis=1)
    change = np.zeros((p, width + 1), np.int32)
    # the open slots (no pass) and the idle ones (no pass, no W) as one search structure: the idle
    # slots' rows follow the open slots', ``idle`` cells on
    slots = _NextFree(2 * p, width, np.concatenate([taken, taken | served]))
    idle = p * slots.size
    del at_f, at_i, taken
    at_or_above = c - np.arange(_BOUNDS)  # the levels c, c − 1, … that ``last`` bounds
    # the last slot at each of those levels or above: the highest level from each slot on only
    # falls, so the slots where it reaches a level come first, and they are counted
    highest = np.maximum.accumulate(base[:, begin - 1::-1], axis=1)[:, ::-1] if begin else base[:, :0]
    last = np.stack([(highest >= level).sum(axis=1) - 1 for level in at_or_above.tolist()], axis=1)
    for slot, lo, hi in zip(range(begin, width), bounds[:-1], bounds[1:]):
        rows, is_f = d[lo:hi], forward[lo:hi]
        if lo < hi:
            earliest = state.take(deps[:, lo:hi]).max(axis=0)
            s, u1, busy = _place_queued(slot, rows, row0[lo:hi], is_f, earliest, c, base, change, served, last,
                                        slots, idle)
            went = (s < slot).nonzero()[0]
            if len(went):
                _move_queued(slot, rows[went], row0[lo:hi][went], is_f[went], s[went], u1[went], busy[went],
                             change, served, pending, last, slots, idle)
                state[own[lo:hi][went]] = s[went]
                kept = (s == slot).nonzero()[0]
                rows, is_f = rows[kept], is_f[kept]
        # the slot joins the past on every device: a pass that stayed, or a free slot where a W
        # runs if one is pending
        departs = pending > 0
        departs[rows] = False
        served[:, slot] = departs
        pending -= departs
        pending[rows] += ~is_f  # an I that stayed waits for its W
        level = base[:, slot - 1] - change[:, slot]
        level -= departs
        level[rows] += is_f
        base[:, slot] = level
        near = (level >= at_or_above[-1]).nonzero()[0]  # the devices some bound is about
        if len(near):
            last[near] = np.where(level[near, None] >= at_or_above, slot, last[near])
        occupied = np.zeros(p, bool)
        occupied[rows] = True
        slots.close_frontier(np.concatenate([occupied, occupied | departs]), slot)
    return cur.copy()


def _place_queued(slot, rows, row0, forward, earliest, c, base, change, served, last, slots, idle):
    """For each pass leaving ``slot`` (``forward``: it is an F; ``row0``: its device's first
    cell): the slot it moves to (``slot`` if none fits), u1 there, and whether a W ran there.
    ``slots`` searches the open slots, and ``idle`` cells on the idle ones."""
    placed = np.full(len(rows), slot, np.int64)
    u1s = placed.copy()
    busys = np.zeros(len(rows), bool)
    # the pass's own slot is open (in both searches) until the slot is done, so every search from
    # before it ends there at the latest; the searches run on cells
    at = slots.find_flat(row0 + np.minimum(earliest + 1, slot))
    limit = row0 + slot
    todo = (at < limit).nonzero()[0]
    is_served = served.ravel()
    while len(todo):
        r, r0, f, cell = rows[todo], row0[todo], forward[todo], at[todo]
        busy = is_served[cell]
        # u1, the next idle slot, for the passes that move a W there (an F into an idle slot moves
        # none, and its u1 is not read)
        s = cell - r0
        u1 = s.copy()
        moving_w = (busy | ~f).nonzero()[0]
        u1[moving_w] = slots.find_flat(cell[moving_w] + (idle + 1)) - (r0[moving_w] + idle)
        # how far below c the slots must be: on [s, u1) and on [u1, slot)
        room_rest = f.astype(np.int64)
        room_first = room_rest + busy
        # settled by the bounds: an F into a busy slot fits if nothing from s on is at c − 1 or above
        # and nothing from u1 on at c; an F into an idle slot, or an I into a busy one, if nothing
        # from s on is at c; an I into an idle slot always fits
        bound = last[r, :2]
        at_c = bound[:, 0]
        fits = np.where(f & busy, (bound[:, 1] < s) & (at_c < u1), (at_c < s) | (room_first == 0))
        look = (~fits).nonzero()[0]
        if len(look):
            _scan_levels(slot, r[look], s[look], u1[look], room_first[look], room_rest[look], c, base, change,
                         last, fits, look)
        done = todo[fits]
        placed[done], u1s[done], busys[done] = s[fits], u1[fits], busy[fits]
        again = todo[~fits]
        if not len(again):
            break
        at[again] = slots.find_flat(at[again] + 1)
        todo = again[at[again] < limit[again]]
    return placed, u1s, busys


def _scan_levels(slot, rows, s, u1, room_first, room_rest, c, base, change, last, fits, look):
    """Settle the moves the bounds could not (``fits[look]``) by the levels themselves on [s, slot),
    and tighten the bounds with what was seen (``last`` for s on, else before s)."""
    # one rectangle, rows × [earliest s, slot), rather than a ragged run per pass: the s's lie close
    # together, and whole rows are a few large array operations where ragged runs take many
    lo = int(s.min())
    # the level after slot j: as recorded, less the changes recorded after j (up to this slot)
    after = change[rows, slot:lo:-1].cumsum(axis=1, dtype=change.dtype)[:, ::-1]
    level = base[rows, lo:slot] - after
    # a bound or a move can only be about the slots at c − _BOUNDS + 1 or above, from s on: few
    # (a flat search: numpy's nonzero of a 2-D mask takes several times longer)
    seg, col = np.divmod((level >= c - _BOUNDS + 1).ravel().nonzero()[0], slot - lo)
    j = col + lo
    mine = (j >= s[seg]).nonzero()[0]
    seg, j, near_level = seg[mine], j[mine], level[seg[mine], col[mine]]
    room = np.where(j < u1[seg], room_first[seg], room_rest[seg])
    over = np.zeros(len(rows), bool)
    over[seg[near_level + room > c]] = True
    fits[look] = ~over
    # per pass and level c − b, the last slot seen at it or above: the highest slot at exactly c − b
    # (c or above for b = 0), then the highest of those at c − b, c − b + 1, …, c
    seen = np.full(len(rows) * _BOUNDS, -1)
    np.maximum.at(seen, seg * _BOUNDS + np.maximum(c - near_level, 0), j)  # near: c − near_level < _BOUNDS
    seen = np.maximum.accumulate(seen.reshape(len(rows), _BOUNDS), axis=1)
    last[rows] = np.where(seen >= 0, seen, np.minimum(last[rows], (s - 1)[:, None]))


def _move_queued(slot, r, row0, forward, s, u1, busy, change, served, pending, last, slots, idle):
    """Record the moves of the passes leaving ``slot`` for s (see ``_reorder_queued``); ``busy``:
    a W ran at s."""
    is_served = served.ravel()  # served and change share their shape, and their cells
    s_cell, u1_cell, end_cell = row0 + s, row0 + u1, row0 + slot
    # an I into a busy slot brings its own W to the next idle slot after u1: u2
    u2_cell = end_cell.copy()
    second = (~forward & busy & (u1 < slot)).nonzero()[0]
    if len(second):
        u2_cell[second] = slots.find_flat(u1_cell[second] + (idle + 1)) - idle
    w_cell = np.where(busy, u2_cell, u1_cell)  # where an I's own W now runs
    # +1 on [s, slot) for an F, +1 on [s, u1) into a busy slot, −1 for an I from where its own W
    # now runs to the slot; in change's own dtype, as ufunc.at takes a loop many times slower
    # when it must cast
    f, b = forward.astype(change.dtype), busy.astype(change.dtype)
    np.add.at(change.ravel(), np.concatenate([s_cell, u1_cell, w_cell, end_cell]),
              np.concatenate([f + b, -b, f - 1, 1 - 2 * f]))
    # the bounds follow the rises: 1 on [s, slot) for an F into an idle slot; for one into a busy
    # slot 2 on [s, u1) and 1 on [u1, slot); 1 on [s, u1) for an I into a busy one
    two_to = np.where(forward & busy, u1, s)  # also where the rise by 1 begins
    one_to = np.where(forward, slot, np.where(busy, u1, s))
    # (an I's own W lowers the levels from where it runs, which the bounds, being bounds, ignore:
    # the scans tighten them instead, and they cost less than following every fall)
    old = last[r]
    last[r] = np.maximum(old, np.maximum(_lifted(old, two_to, one_to, 1), _lifted(old, s, two_to, 2)))
    is_served[s_cell[busy]] = False
    # W's now run at u1 (an F into an idle slot moves none) and, for an I into a busy slot, at u2
    to_u1 = (u1 < slot) & (busy | ~forward)
    to_u2 = u2_cell < end_cell  # (only where an I went into a busy slot can u2 come before the slot)
    # pending: an I's own W and the W pushed out of a busy slot, less those that found a slot
    pending[r] += busy.astype(np.int64) + ~forward - to_u1 - to_u2
    filled = np.concatenate([u1_cell[to_u1], u2_cell[to_u2]])
    is_served[filled] = True
    slots.close_flat(np.concatenate([s_cell, s_cell + idle, filled + idle]))


def _lifted(old: np.ndarray, a: np.ndarray, b: np.ndarray, rise: int) -> np.ndarray:
    """Per row and level c − k, a bound on the last slot in [a, b) at that level or above once
    the levels there rise by ``rise``: where the bound for c − k − rise was, if that is in [a, b);
    anywhere in [a, b) for a level whose source has no bound; −1 when none."""
    top = b[:, None] - 1
    below = np.empty_like(old)
    np.minimum(old[:, rise:], top, out=below[:, :-rise])
    below[:, -rise:] = top
    return np.where(below >= a[:, None], below, -1)


@functools.lru_cache(maxsize=16)
def v_schedule_order(p: int, m: int, block) -> tuple[np.ndarray, np.ndarray]:
    """Each device's passes in slot order, per the construction above: (kind, microbatch), two
    read-only (p, 6m) arrays, int8 and int32. Cached: the same sizes are built again for every
    change of costs (a few sizes at a time: at the size budget one entry holds about 20 MB). Many
    microbatches are spliced from few (``splice.spliced_builder``): the construction runs at a few
    sizes past the warm-up, about p + m slot steps of array work each."""
    pos = block(p)[:, :, None] + _PERIOD * np.arange(m)[None, None, :]
    placed, ws = _reorder_placed(pos, _add_ws(pos, split=False), m)
    first, _ = _squeeze(placed, ws)
    second = _reorder_queued(first, m)
    final, _ = _squeeze(second, _add_ws(second, split=False))
    ups, downs = _add_ws(final, split=True)
    slots = np.concatenate([final.reshape(p, 4 * m), ups, downs], axis=1)
    order = np.argsort(slots, axis=1, kind="stable")
    kinds = np.repeat(np.arange(6, dtype=np.int8), m)[order]
    microbatches = np.tile(np.arange(m, dtype=np.int32), 6)[order]
    kinds.flags.writeable = microbatches.flags.writeable = False
    return kinds, microbatches


# each pass kind as the op it is and its leg: 0 the down stage (d), 1 the up stage (2p−1−d)
_OP = np.array([F, F, I, I, W, W], np.int8)
_LEG = np.array([0, 1, 1, 0, 1, 0])


def _build_v(config, block) -> Program:
    p, m = config.devices, config.microbatches
    kinds, microbatches = v_schedule_order(p, m, block)
    down = np.arange(p)[:, None]
    stages = np.where(_LEG[kinds] == 0, down, 2 * p - 1 - down)
    return Program.from_arrays([(_OP[kinds[d]], stages[d], microbatches[d]) for d in range(p)], stages=2 * p,
                               microbatches=m, placement=Placement.v_shape(p, 2))


@spliced_builder
def build_v_half(config) -> Program:
    return _build_v(config, _block_v_half)


@spliced_builder
def build_v_min(config) -> Program:
    return _build_v(config, _block_v_min)


# Registry -----------------------------------------------------------------------------------

def _validate_two_stages(config) -> None:
    require(config.stages_per_device == 2, config, "stages_per_device", "use 2 (leave it unset)",
            "places exactly two stages per device in a V")


# Closed forms, from the papers' formulas (independent of the builders above) ----------

def zb_v_closed_form(config) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    full = m >= 2 * p - 1
    return ClosedForm(
        schedule="zb-v",
        idle=(p - 1) * f / 2,
        ideal=m * (f + b + w),
        peak_activation=tuple(p * a for _ in range(p)) if full else None,
        bubble_formula="(p−1)·f/2: only the fill, p−1 half-stage forwards before device p−1 starts",
        memory_formula="p on every device (2p chunks of ½), 1F1B's peak",
        source=("ZB-V, Zero Bubble PP (arXiv 2401.10241) §6, as torch ScheduleZBVZeroBubble orders it; the "
                "published bubble 0 (f = b = w) leaves out the fill; this form is checked by simulation"),
        assumptions="uniform stage costs, comm = 0, m >= 2p−1, f = b, f/2 <= w <= f",
        **held(config, {"m >= 2p−1": full, "f = b": f == b, "f/2 <= w <= f": f / 2 <= w <= f}),
    )


def _v_family_closed_form(config, name: str, passes: int, peaks: tuple | None, least_m: int, bubble: str,
              memory: str) -> ClosedForm:
    p, m, _, f, b, w, a = base(config)
    return ClosedForm(
        schedule=name,
        idle=passes * f / 2,
        ideal=m * (f + b + w),
        peak_activation=None if peaks is None else tuple(x * a for x in peaks),
        bubble_formula=bubble,
        memory_formula=memory,
        source=("Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) and its HF Space: memory as "
                "published, bubble published only as a rate; the exact idle is read off the authors' "
                "construction and checked by simulation for p <= 32"),
        assumptions=f"uniform stage costs, comm = 0, f = b = w, m >= {least_m}",
        **held(config, {"f = b = w": f == b == w, f"m >= {least_m}": m >= least_m}),
    )


def v_half_closed_form(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 1 if p == 2 else 6 * ((p + 1) // 2) - 7
    return _v_family_closed_form(
        config, "v-half", passes, tuple((p + 2) // 2 for _ in range(p)), p + 2,
        bubble="(6⌈p/2⌉ − 7)·f/2 for p >= 3 (f/2 at p = 2): ≈ p/(2m) of the makespan",
        memory="(p+2)//2 on every device, ≈ half of 1F1B's p (any w_share)")


def v_min_closed_form(config) -> ClosedForm:
    p = config.devices
    passes = 0 if p == 1 else 4 * p - 5 - 2 * (p % 3 == 0)
    base = (p + 4) // 3
    peaks = None
    if config.w_share == 1 or p % 3 != 2:
        peaks = tuple(base - 0.5 if (d == 0 and p % 3 == 2) else base for d in range(p))
    return _v_family_closed_form(
        config, "v-min", passes, peaks, p + 1,
        bubble="(4p − 5 − 2·[3 divides p])·f/2 for p >= 2: ≈ 2p/(3m) of the makespan",
        memory=("(p+4)//3 on every device, ≈ a third of 1F1B's p; device 0 holds half a unit less when "
                "p mod 3 = 2 (the figures count an activation until its W: w_share = 1)"))


def _grid(block):
    """The slots the construction lays out for all devices, for the size budget: the block's span
    plus one period per further microbatch."""
    def cells(p: int, m: int) -> int:
        return p * (int(block(p).max()) + 1 + _PERIOD * (m - 1))
    return cells


def _register_v(name: str, summary: str, reference: str, builder, aliases: tuple[str, ...], closed_form,
                grid_cells=None) -> None:
    """The three V-shaped schedules share their shape: two stages per device, split backward."""
    register(ScheduleSpec(name=name, summary=summary, reference=reference, builder=builder, aliases=aliases,
                          default_v=2, v_min=2, v_max=2, validate=_validate_two_stages, closed_form=closed_form,
                          constraints="v = 2", split_backward=True, grid_cells=grid_cells))


_register_v("zb-v", "zero bubble in a V: two stages per device, 1F1B memory",
            "Zero Bubble PP (arXiv 2401.10241) §6 ZB-V; torch ScheduleZBVZeroBubble", spliced_builder(build_zb_v),
            ("ZBVZeroBubble", "ScheduleZBVZeroBubble", "ZBV", "zero-bubble-v"), zb_v_closed_form)
_register_v("v-half", "V-shape at half of 1F1B's activation memory",
            "Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) V-Half; sail-sg building block",
            build_v_half, ("V-Half",), v_half_closed_form, _grid(_block_v_half))
_register_v("v-min", "V-shape at a third of 1F1B's activation memory",
            "Pipeline Parallelism with Controllable Memory (arXiv 2405.15362) V-Min; sail-sg building block",
            build_v_min, ("V-Min",), v_min_closed_form, _grid(_block_v_min))
