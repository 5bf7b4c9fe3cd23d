"""The Vocabulary Parallelism authors' 1F1B schedule, transcribed line for line with the tensors
taken out: what each pipeline rank calls, in order.

Source: sail-sg/VocabularyParallelism, commit 6191c3bff018e2407d0c2d543be840fb3bd437f6,
``megatron/core/pipeline_parallel/vocab_parallel_schedule.py``,
``forward_backward_pipelining_with_vocab_parallel``. ``fusion=False`` is its
``--disable-backward-fusion`` (two all-reduce barriers), ``fusion=True`` the default (one).
``f``, ``b``, ``c`` are its timer's estimates before profiling (1, 2, 0), which place the S
passes (``is_bsf``, ``offsets``).

Nothing of ppviz is imported: each rank's trace is a list of (call, microbatch) with the calls
``"F"`` (forward_step_helper), ``"B"`` (backward_step_helper), ``"LM"``
(lm_head_step_helper: the output layer's backward of microbatch − 1 then its forward of
microbatch, i.e. T then S), ``"IF"``/``"IB"`` (the input embedding's passes), ``"LOSS"``
(loss_calculation_helper, last rank) and ``"REDUCE"`` (reduce_lm_head_res_*: the all-reduce
barriers, launched on their own stream).
"""


def vocab_1f1b_trace(rank, p, m, fusion=True, f=1, b=2, c=0):
    assert f >= c and b >= f
    last = rank == p - 1
    trace = []
    emit = trace.append
    # is_bsf and offsets (the FSM placing each rank's S pass)
    offset = 0
    is_bsf = [True]
    offsets = [0]
    while len(is_bsf) < p:
        if offset - f >= -b:
            offset = offset - f
            is_bsf.append(True)
            offsets.append(offset)
        else:
            is_bsf.append(False)
            offsets.append(offset)
            offset = offset + (b - f)
            is_bsf.append(True)
            offsets.append(offset)
    if len(is_bsf) > p:
        is_bsf.pop()
        offsets.pop()
    is_bsf.reverse()
    offsets.reverse()
    num_warmup_s_pass = [0] * p
    for r in range(p - 2, -1, -1):
        if (not is_bsf[r + 1]) and is_bsf[r]:
            num_warmup_s_pass[r] = num_warmup_s_pass[r + 1]
        else:
            num_warmup_s_pass[r] = num_warmup_s_pass[r + 1] + 1

    num_warmup = min(p - rank, m)
    first_stage_num_warmup = min(p, m)
    remaining = max(0, m - num_warmup - 1)
    if not fusion:
        remaining = max(0, remaining - 1)

    def lm_head(mb):
        emit(("LM", mb))

    def forward(mb):
        emit(("F", mb))

    def backward(mb):
        emit(("B", mb))

    def reduce_(mb=None):
        emit(("REDUCE", mb))

    def loss(mb):
        emit(("LOSS", mb))

    def ie_forward(mb):
        return lambda: emit(("IF", mb))

    def ie_backward(mb):
        return lambda: emit(("IB", mb))

    def noop():
        return None

    if_left = m
    ib_left = m
    for _ in range(first_stage_num_warmup - num_warmup + 1):
        ie_forward(m - if_left)()
        if_left -= 1
    for i in range(num_warmup):
        ie_forward(m - if_left)()
        if_left -= 1
        forward(i)
    s_left = m
    lm_head(0)
    s_left -= 1
    reduce_(0)
    if not fusion:
        ie_forward(m - if_left)()
        if_left -= 1
    if num_warmup + 1 <= m:
        forward(num_warmup)
    if not fusion:
        if last:
            loss(0)
        lm_head(1)
        s_left -= 1
        reduce_(1)
        if num_warmup + 2 <= m:
            forward(num_warmup + 1)
    warm_s = num_warmup_s_pass[rank]
    warmup_offset = 0 if fusion else 1
    ie_f_cb = noop
    for i in range(warm_s):
        if s_left >= 1 - warmup_offset:
            lm_head(i + 1 + warmup_offset)
            if (i + 1 >= num_warmup_s_pass[0]) and if_left > 0:
                ie_f_cb = ie_forward(m - if_left)
                if_left -= 1
            else:
                ie_f_cb = noop
            if rank == p - 2 or not is_bsf[rank + 1]:
                ie_f_cb()
                reduce_(i + 2)
            if rank != p - 2 and is_bsf[rank + 1]:
                ie_f_cb()
                reduce_(i + 2)
            s_left -= 1

    ie_b_cb = noop
    recv_cb = False
    for i in range(remaining):
        if is_bsf[rank] or offsets[rank] - f > -b:
            if m - s_left >= num_warmup_s_pass[0] + 2 + warmup_offset:
                ie_b_cb = ie_backward(m - ib_left)
                ib_left -= 1
            else:
                ie_b_cb = noop
            recv_cb = m - s_left
        if not fusion and last:
            loss(i + 1)
        backward(i)
        if is_bsf[rank]:
            lm_head(m - s_left)
            if m - s_left >= num_warmup_s_pass[0] + warmup_offset and if_left > 0:
                ie_f_cb = ie_forward(m - if_left)
                if_left -= 1
            else:
                ie_f_cb = noop
            ie_b_cb()
            s_left -= 1
        if is_bsf[rank] and offsets[rank] + f >= 0:
            ie_f_cb()
            reduce_()
        if (not is_bsf[rank]) and offsets[rank] - f <= -b:
            if m - s_left >= num_warmup_s_pass[0] + 2 + warmup_offset:
                ie_b_cb = ie_backward(m - ib_left)
                ib_left -= 1
            else:
                ie_b_cb = noop
            recv_cb = m - s_left
        forward(i + num_warmup + 1 + warmup_offset)
        if not is_bsf[rank]:
            lm_head(m - s_left)
            if m - s_left >= num_warmup_s_pass[0] + warmup_offset and if_left > 0:
                ie_f_cb = ie_forward(m - if_left)
                if_left -= 1
            else:
                ie_f_cb = noop
            ie_b_cb()
            s_left -= 1
        if (not is_bsf[rank]) or offsets[rank] + f < 0:
            ie_f_cb()
            reduce_()

    for i in range(m - remaining):
        if is_bsf[rank] or offsets[rank] - f > -b:
            if m - s_left >= num_warmup_s_pass[0] + 2 + warmup_offset:
                ie_b_cb = ie_backward(m - ib_left)
                ib_left -= 1
            else:
                ie_b_cb = noop
            if s_left >= 1 - warmup_offset:
                recv_cb = m - s_left
        if not fusion and last and i + remaining + 1 < m:
            loss(i + remaining + 1)
        backward(i + remaining)
        s_executed = False
        if is_bsf[rank]:
            if s_left >= 1 - warmup_offset:
                lm_head(m - s_left)
                s_left -= 1
                s_executed = True
            ie_b_cb()
        if s_executed and offsets[rank] + f >= 0:
            reduce_()
            s_executed = False
        if (not is_bsf[rank]) and offsets[rank] - f <= -b:
            if m - s_left >= num_warmup_s_pass[0] + 2 + warmup_offset:
                ie_b_cb = ie_backward(m - ib_left)
                ib_left -= 1
            else:
                ie_b_cb = noop
            if s_left >= 1 - warmup_offset:
                recv_cb = m - s_left
        if not is_bsf[rank]:
            if s_left >= 1 - warmup_offset:
                lm_head(m - s_left)
                s_left -= 1
                s_executed = True
            ie_b_cb()
        if s_executed:
            reduce_()
    while ib_left > 0:
        ie_backward(m - ib_left)()
        ib_left -= 1
    if fusion:
        lm_head(m)
    return trace


def vocab_1f1b_passes(rank, p, m, fusion=True):
    """The trace's transformer and output-layer passes as (kind, microbatch): F, B, and each
    lm_head step's T of microbatch − 1 (when > 0) then S of microbatch (when < m)."""
    out = []
    for call, mb in vocab_1f1b_trace(rank, p, m, fusion):
        if call in ("F", "B"):
            out.append((call, mb))
        elif call == "LM":
            if mb > 0:
                out.append(("T", mb - 1))
            if mb < m:
                out.append(("S", mb))
    return out


def interlaced_trace(rank, p, m):
    """The same repository's interlaced pipeline (Lin et al., OSDI'24, the nnScaler paper's
    tensor-parallel-style output layer), ``megatron/core/pipeline_parallel/interlaced_schedule.py``,
    ``forward_backward_pipelining_with_interlaced_schedule`` (``--use-interlaced-schedule``), with
    the tensors taken out: ``"LM"`` is lm_head_step_helper (the output layer's forward and
    backward of one microbatch, synchronous over the pipeline group), ``"IF"``/``"IB"`` the input
    embedding's passes (a fused step counts as both, forward first)."""
    trace = []
    emit = trace.append
    warmup = min(p * 3 // 2 - rank, m)
    first_warmup = min(p * 3 // 2, m)
    cooldown = min(p - rank, m)
    first_cooldown = min(p, m)
    waiting = max(0, warmup - cooldown - (p - rank - 1) // 2)
    remaining = m - warmup
    if_left = m
    ib_left = m
    for i in range(first_warmup - warmup + 1):
        emit(("IF", i))
        if_left -= 1
    for i in range(warmup):
        emit(("IF", m - if_left))
        if_left -= 1
        emit(("F", i))
    is_fbs = rank % 2 == p % 2
    first_is_fbs = p % 2 == 0

    def embedding_passes(mb):
        nonlocal if_left, ib_left
        forward = mb >= first_cooldown - 1 and if_left > 0
        backward = mb >= first_cooldown + 1 or ((not first_is_fbs) and mb == first_cooldown)
        if forward:
            emit(("IF", m - if_left))
            if_left -= 1
        if backward:
            emit(("IB", m - ib_left))
            ib_left -= 1

    for i in range(cooldown):
        emit(("LM", i))
        if i >= first_cooldown - 1 and if_left > 0:
            emit(("IF", m - if_left))
            if_left -= 1
    for i in range(waiting):
        emit(("B", i))
        emit(("LM", i + cooldown))
        embedding_passes(i + cooldown)
    for i in range(remaining):
        if is_fbs:
            emit(("F", i + warmup))
            emit(("B", i + waiting))
        else:
            emit(("B", i + waiting))
            emit(("F", i + warmup))
        emit(("LM", i + cooldown + waiting))
        embedding_passes(i + cooldown + waiting)
    for i in range(warmup - cooldown - waiting):
        emit(("B", i + waiting))
        emit(("LM", i + cooldown + waiting + remaining))
        if ib_left > 0:
            emit(("IB", m - ib_left))
            ib_left -= 1
    for i in range(cooldown):
        emit(("B", i + m - cooldown))
        if ib_left > 0:
            emit(("IB", m - ib_left))
            ib_left -= 1
    while ib_left > 0:
        emit(("IB", m - ib_left))
        ib_left -= 1
    return trace


def interlaced_passes(rank, p, m):
    """The interlaced trace's passes as (kind, microbatch): F, B, and each output-layer step as
    its S then its T. A backward runs the oldest stored microbatch (backward_step_helper pops
    ``input_tensors[0]`` and ``output_tensors[0]`` from the front): the id the loop passes it
    only names its profiler range (and the last one's grad sync), and repeats in the third
    loop, so the backwards are numbered in the order they are called."""
    out = []
    backwards = 0
    for call, mb in interlaced_trace(rank, p, m):
        if call == "B":
            out.append(("B", backwards))
            backwards += 1
        elif call == "F":
            out.append((call, mb))
        elif call == "LM":
            out += [("S", mb), ("T", mb)]
    return out
