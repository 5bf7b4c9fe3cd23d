"""STP's schedule generator as its authors wrote it (MICLAB-BUPT/STP ``stp/schedule.py``,
``STPSchedule.generate`` and ``ScheduleBase.append_cmds``), transcribed statement for statement
with nothing of ppviz imported: the reference ``ppviz.schedules.stp`` must equal.

:func:`instructions` returns the authors' instruction list for one rank (name and keyword
arguments, as ``PipeInstruction`` stores them). :func:`compute_units` reads it as the trainer
(``stp/trainer.py``) runs it: ``phase`` k of rank r is stage r (k = 0) or 2p − 1 − r (k = 1),
the V; a backward run with ``enable_zb`` leaves its weight gradient in ``WeightGradStore``'s
FIFO queue, which each ``Weight`` and each ``ForwardAndWeight`` pops (``utils.py``; popping an
empty queue does nothing, which :func:`compute_units` refuses, as the trainer's closing assert
``WeightGradStore.funcs_queue.empty()`` would for the opposite case).
"""

# the authors' instruction classes (stp/schedule.py), by name
COMPUTE = ("Forward", "Backward", "Weight", "ForwardAndForward", "ForwardAndWeight", "ForwardAndBackward")


class _Instruction:
    def __init__(self, name, **kwargs):
        self.name = name
        self.kwargs = kwargs


def _maker(name):
    def make(**kwargs):
        return _Instruction(name, **kwargs)
    make.name = name
    return make


Forward, Backward, Weight = _maker("Forward"), _maker("Backward"), _maker("Weight")
ForwardAndForward, ForwardAndWeight = _maker("ForwardAndForward"), _maker("ForwardAndWeight")
ForwardAndBackward = _maker("ForwardAndBackward")
RecvForward, SendForward = _maker("RecvForward"), _maker("SendForward")
ActOffload, ActReload = _maker("ActOffload"), _maker("ActReload")


class STPSchedule:
    def __init__(self, rank, world_size, num_microbatches):
        self.rank = rank
        self.world_size = world_size
        self.mbs = num_microbatches

    def append_cmds(self, instruction, phase=0, counter=None, enable_zb=False, recv=True, send=True, offload=1,
                    mb_idx=None):
        if counter is None:
            self.exec_instructions.append(instruction(phase=phase, mb_idx=mb_idx, enable_zb=enable_zb, recv=recv,
                                                      send=send, offload=offload))
            return
        mb_idx = []
        for c in counter:
            mb_idx.append(c[phase])
        cmd = instruction(phase=phase, mb_idx=tuple(mb_idx), enable_zb=enable_zb, offload=offload, recv=recv,
                          send=send)
        self.exec_instructions.append(cmd)
        for c in counter:
            c[phase] += 1
            if cmd.name == "ForwardAndForward":
                c[phase] += 1

    def generate(self):
        self.exec_instructions = []
        rank = self.rank
        world_size = self.world_size
        mbs = self.mbs
        assert mbs > 0 and mbs >= world_size * 2, f"{mbs=}, {world_size=}"

        fw_idx = [0, 0]
        bw_idx = [0, 0]

        # Step 1: nF0
        step_1 = (world_size - rank - 1) * 2
        for i in range(step_1):
            offload = 1
            self.append_cmds(Forward, phase=0, counter=[fw_idx], offload=offload)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 1, offload=offload)

        # Step 2: nF0F1
        step_2 = rank + 1
        self.append_cmds(RecvForward, phase=0)
        for i in range(step_2):
            send = True
            self.append_cmds(Forward, phase=0, counter=[fw_idx], recv=False, send=False, offload=1)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 1, offload=1)
            self.append_cmds(RecvForward, phase=0)
            if i == step_2 - 1:
                send = False
            offload = 0
            self.append_cmds(Forward, phase=1, counter=[fw_idx], send=send, offload=offload)
            self.append_cmds(SendForward, phase=0)
            self.append_cmds(ActOffload, phase=1, mb_idx=fw_idx[1] - 1, offload=offload)

        step_3 = rank + 1
        single_F = step_3 % 2 == 1
        overlapped_F = step_3 // 2
        if single_F:
            self.append_cmds(Forward, phase=0, counter=[fw_idx], recv=False, offload=1)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 1)
        for i in range(overlapped_F):
            recv = 2
            if i == 0 and not single_F:
                recv = 1
            if i == overlapped_F - 1:
                self.append_cmds(SendForward, phase=1)
            self.append_cmds(ForwardAndForward, phase=0, counter=[fw_idx], recv=recv, offload=1)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 2, offload=1)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 1, offload=1)

        # one F1B1, one F0W1
        step_4 = world_size - rank - 1
        for i in range(step_4):
            offload = 0
            self.append_cmds(ForwardAndBackward, phase=1, counter=[fw_idx, bw_idx], enable_zb=True, offload=offload)
            offload = 1 if rank == 0 else 1  # noqa: RUF034 (the authors' own line)
            self.append_cmds(ForwardAndWeight, phase=0, counter=[fw_idx], offload=offload)
            self.append_cmds(ActOffload, phase=0, mb_idx=fw_idx[0] - 1, offload=offload)

        # Step 5: nB1F1 or B0F0
        step_5 = 2 * (mbs - 3 * world_size + 1) + 1 + rank * 2
        full_steps = 2 * (mbs - 3 * world_size + 1) + 1 + rank
        for i in range(step_5):
            enable_zb = True if i >= full_steps else False  # noqa: SIM210 (the authors' own line)
            phase = 1 if i % 2 == 0 else 0
            reload_phase = 1 if phase == 0 else 0
            if reload_phase == 0:
                self.append_cmds(ActReload, phase=reload_phase, mb_idx=bw_idx[reload_phase])
            offload = 0 if phase == 1 else 1
            self.append_cmds(ForwardAndBackward, phase=phase, counter=[fw_idx, bw_idx], enable_zb=enable_zb,
                             offload=offload)
            self.append_cmds(ActOffload, phase=phase, mb_idx=fw_idx[phase] - 1, offload=offload)

        # Step 6: n B0&F1B1
        step_6 = mbs - step_2 - step_4 - step_5 // 2 - 1
        for i in range(step_6):
            self.append_cmds(ActReload, phase=1, mb_idx=bw_idx[1])
            self.append_cmds(Backward, phase=0, counter=[bw_idx])
            self.append_cmds(ActReload, phase=0, mb_idx=bw_idx[0])
            offload = 0 if rank == 0 else 1
            self.append_cmds(ForwardAndBackward, phase=1, counter=[fw_idx, bw_idx], enable_zb=True, offload=offload)
            self.append_cmds(ActOffload, phase=1, mb_idx=fw_idx[1] - 1, offload=offload)

        # Step 7: n B0&B1
        step_7 = 1 + rank
        for i in range(step_7):
            self.append_cmds(ActReload, phase=1, mb_idx=bw_idx[1])
            self.append_cmds(Backward, phase=0, counter=[bw_idx])
            self.append_cmds(ActReload, phase=0, mb_idx=bw_idx[0])
            self.append_cmds(Backward, phase=1, counter=[bw_idx])

        # Step 8: nB0&WW
        step_8 = 1 + (world_size - rank - 1) * 2
        for i in range(step_8):
            if i % 2 == 0:
                self.append_cmds(Backward, phase=0, counter=[bw_idx])
            else:
                self.append_cmds(ActReload, phase=0, mb_idx=bw_idx[0])
                self.append_cmds(Weight)
                self.append_cmds(Weight)

        # Step 9: nW
        step_9 = rank * 2
        for i in range(step_9):
            self.append_cmds(Weight)

        return self.exec_instructions


def instructions(rank: int, world_size: int, microbatches: int) -> list:
    return STPSchedule(rank, world_size, microbatches).generate()


def compute_units(rank: int, world_size: int, microbatches: int) -> list[tuple]:
    """Rank ``rank``'s compute units in order, each a tuple of its passes, a pass being
    (kind, stage, microbatch) with kind "F", "B" (full backward), "I" (input gradient, its
    weight gradient deferred) or "W"; a braided unit (ForwardAndForward, ForwardAndWeight,
    ForwardAndBackward) is one tuple of two passes, the forward first."""
    p = world_size
    stage = (rank, 2 * p - 1 - rank)
    deferred = []  # WeightGradStore.funcs_queue: (stage, microbatch) of each zero-bubble backward

    def backward(phase, mb, zb):
        if zb:
            deferred.append((stage[phase], mb))
            return ("I", stage[phase], mb)
        return ("B", stage[phase], mb)

    def weight():
        assert deferred, "Weight pops an empty WeightGradStore queue"
        return ("W", *deferred.pop(0))

    units = []
    for cmd in instructions(rank, world_size, microbatches):
        if cmd.name not in COMPUTE:
            continue
        k, mb, zb = cmd.kwargs["phase"], cmd.kwargs["mb_idx"], cmd.kwargs["enable_zb"]
        if cmd.name == "Forward":
            units.append((("F", stage[k], mb[0]),))
        elif cmd.name == "Backward":
            units.append((backward(k, mb[0], zb),))
        elif cmd.name == "Weight":
            units.append((weight(),))
        elif cmd.name == "ForwardAndForward":
            units.append((("F", stage[k], mb[0]), ("F", stage[k], mb[0] + 1)))
        elif cmd.name == "ForwardAndWeight":
            units.append((("F", stage[k], mb[0]), weight()))
        else:  # ForwardAndBackward: the forward of microbatch mb[0], the backward of mb[1], one phase
            units.append((("F", stage[k], mb[0]), backward(k, mb[1], zb)))
    assert not deferred, "WeightGradStore.funcs_queue is not empty at the end of the step"
    return units
