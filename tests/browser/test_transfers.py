"""Transfers in the real bundle (Debian's Chromium, the page Result.to_html writes): the lane
under each row, its switch, the tooltip of a transfer and of an op that waited for one, and the
exposed communication beside the bubble, all read against what Python simulated."""

import numpy as np

import ppviz
from ppviz.core.numbers import number
from ppviz.core.numbers import share as percent

from .conftest import ARTIFACTS, op_centre, open_chart

SHOTS = ARTIFACTS / "transfers"
#: an activation of micro-batch 1 × sequence 4096 × hidden 8192 in bf16: 64 MiB
ACTIVATION = 4096 * 8192 * 2


def across_nodes(p=8, m=16, per_node=2):
    """Interleaved 1F1B on DGX-H100 links with `per_node` GPUs per node, so stages cross nodes."""
    dgx = ppviz.Topology.preset("dgx-h100")
    topology = ppviz.Topology(devices_per_node=per_node, intra=dgx.intra, inter=dgx.inter, name="dgx-h100")
    return ppviz.simulate(ppviz.Config(schedule="interleaved-1f1b", devices=p, microbatches=m, stages_per_device=2,
                                       f=4.0, b=8.0, time_unit="ms", topology=topology, comm_bytes=ACTIVATION))


def text_of(page) -> str:
    tip = page.locator(".ppviz-tooltip")
    tip.wait_for(state="visible")
    return " ".join(tip.inner_text().split())


def transfer_box(page, i, half):
    return page.evaluate(f"document.querySelector('.ppviz-gantt').ppviz.transferBox({i}, '{half}')")


def ms(x) -> str:
    """A time as the tooltips give it: the float32 sent, to six significant digits (format.ts's PRECISE)."""
    return number(float(np.float32(x)), "ms", digits=6)


def test_hovering_a_transfer_and_the_op_that_waited_for_it(page, tmp_path):
    res = across_nodes()
    t = res.transfers
    root = open_chart(page, res, tmp_path, name="transfers")
    assert root.get_attribute("data-transfers") == "shown"
    # an inter-node activation that its consumer waited for (devices 1 -> 2 are on nodes 0 and 1)
    inter = (t.src // 2 != t.dst // 2) & (t.kind == "F")
    waited = res.ops.waited_for[t.consumer] == t.producer
    i = int(np.flatnonzero(inter & waited & (t.src == 1))[0])
    p, c = int(t.producer[i]), int(t.consumer[i])
    action = lambda k: f"{res.ops.stage[k]}{res.ops.kind[k]}{res.ops.microbatch[k]}"  # noqa: E731
    for half in ("out", "in"):
        box = transfer_box(page, i, half)
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        text = text_of(page)
        assert f"activation transfer · {action(p)} → {action(c)}" in text
        assert "from → to device 1 → device 2" in text
        assert "link inter-node (node 0 → 1) · latency 18 µs, 50 GB/s" in text
        assert "bytes 64 MiB" in text
        assert f"start {ms(t.start[i])}" in text and f"end {ms(t.end[i])}" in text
        # 18 µs + 64 MiB / 50 GB/s
        assert abs((t.end[i] - t.start[i]) - (0.018 + ACTIVATION / 50e9 * 1e3)) < 1e-9
        assert f"sent by {action(p)} on device 1" in text
        assert f"needed by {action(c)} on device 2, started {ms(res.ops.start[c])} (waited for it)" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "transfer_tooltip.png"))
    # the op that waited names the transfer
    page.mouse.move(*op_centre(page, c))
    text = text_of(page)
    assert f"waited for {action(p)} on device 1, done at {ms(res.ops.end[p])}, then its transfer until {ms(t.end[i])}" \
        in text
    assert (f"input transfer device 1 → 2, inter-node, 64 MiB, {float(np.float32(t.start[i])):.6g}–{ms(t.end[i])}, "
            f"queued {ms(t.start[i] - t.ready[i])} · it waited for this transfer") in text
    # an intra-node transfer says so
    j = int(np.flatnonzero((t.src == 0) & (t.dst == 1))[0])
    box = transfer_box(page, j, "out")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert "link intra-node (node 0) · latency 11.8 µs, 450 GB/s" in text_of(page)


def test_a_queued_transfer_says_how_long_it_waited_for_the_link(page, tmp_path):
    # blocking P2P off: transfers overlap compute, so two sends on one slow link queue
    topology = ppviz.Topology(devices_per_node=1, intra=ppviz.Link(0.0, bandwidth=1.0), inter=ppviz.Link(0.25, bandwidth=1.0))
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=2, microbatches=4, f=1.0, b=2.0, topology=topology,
                                      comm_bytes=1.5, p2p="overlapped"))
    t = res.transfers
    queued = np.flatnonzero(t.start > t.ready)
    assert len(queued), "the link never queued"
    i = int(queued[0])
    open_chart(page, res, tmp_path, name="transfers")
    box = transfer_box(page, i, "out")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    text = text_of(page)
    assert f"queued {t.start[i] - t.ready[i]:.6g} for a busy link" in text
    assert f"ready {t.ready[i]:.6g} start {t.start[i]:.6g}" in text


def test_the_lane_switch_hides_and_shows_the_transfers(page, tmp_path):
    res = across_nodes()
    root = open_chart(page, res, tmp_path, name="transfers")
    canvas = root.locator("canvas")
    tall = canvas.bounding_box()["height"]
    toggle = root.locator(".ppviz-transfer-toggle input")
    assert toggle.is_checked()
    legend = " ".join(root.locator(".ppviz-legend").inner_text().split())
    assert "transfers (under each row: sends, then receives)" in legend and "activation" in legend
    toggle.click()
    page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.transfers === 'hidden'")
    short = canvas.bounding_box()["height"]
    # ten pixels of lane per device at p = 8
    assert tall - short == 8 * 10
    assert transfer_box(page, 0, "out") is None
    toggle.click()
    page.wait_for_function("document.querySelector('.ppviz-gantt').dataset.transfers === 'shown'")
    assert canvas.bounding_box()["height"] == tall


def test_exposed_communication_stands_beside_the_bubble(page, tmp_path):
    res = across_nodes()
    root = open_chart(page, res, tmp_path, name="transfers")
    metrics = [" ".join(m.split()) for m in root.locator(".ppviz-metric").all_inner_texts()]
    labels = [m.split(" ")[0].lower() for m in metrics]
    assert labels.index("exposed") == labels.index("bubble") + 1
    card = metrics[labels.index("exposed")]
    share = res.exposed_comm.sum() / (res.devices * res.makespan)
    assert card.upper().startswith("EXPOSED COMM") or card.startswith("exposed comm")
    assert f"{number(float(res.exposed_comm.max()), 'ms')} max per device · {percent(share)} of all" in card
    # a run without transfers has no such card and no lane
    plain = open_chart(page, ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8, comm=0.25)),
                       tmp_path, name="plain")
    assert "exposed comm" not in plain.locator(".ppviz-header").inner_text().lower()
    assert plain.get_attribute("data-transfers") == "none"


def test_at_64_devices_the_lanes_stay_drawn_and_fast(page, tmp_path):
    res = across_nodes(p=64, m=128, per_node=8)
    root = open_chart(page, res, tmp_path, name="transfers")
    assert root.get_attribute("data-transfers") == "shown"
    assert float(root.get_attribute("data-draw-ms")) < 1000
    # the inter-node sends of device 7 (to device 8, on the next node) colour its lane
    t = res.transfers
    i = int(np.flatnonzero((t.src == 7) & (t.dst == 8))[0])
    box = transfer_box(page, i, "out")
    assert box["height"] >= 1.5
    page.mouse.move(box["x"] + 0.5, box["y"] + box["height"] / 2)
    text = text_of(page)
    assert "from → to device 7 → device 8" in text and "inter-node (node 0 → 1)" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(SHOTS / "p64.png"))


def test_offloads_host_copies_show_in_the_lanes_with_what_they_copy(page, tmp_path):
    # 1F1B offloading half of each activation over a PCIe-like link (a copy takes 1.5 of an F's 4 ms)
    host_link = ppviz.Link(0.0, bandwidth=ACTIVATION / 2 / 1.5, unit="ms")
    res = ppviz.simulate(ppviz.Config(schedule="1f1b", devices=4, microbatches=8, f=4.0, b=8.0, time_unit="ms",
                                      activation_bytes=ACTIVATION, offload=ppviz.Offload(0.5, link=host_link)))
    h = res.host_copies
    root = open_chart(page, res, tmp_path, name="offload")
    assert root.get_attribute("data-transfers") == "shown"
    assert "host copies (under each row: offloads, then reloads)" in page.locator(".ppviz-legend").inner_text()
    action = lambda k: f"{res.ops.stage[k]}{res.ops.kind[k]}{res.ops.microbatch[k]}"  # noqa: E731
    offload = int(np.flatnonzero((h.kind == "offload") & (h.device == 1))[0])
    reload = int(np.flatnonzero((h.kind == "reload") & (h.device == 1))[-1])
    # an offload has only its sending half, a reload only its receiving half
    assert transfer_box(page, offload, "out") is not None
    for i, half, title, rows in (
        (offload, "out", f"offload to host · after {action(h.op[offload])}",
         ["kind 50 % of the activation to host memory (offload)", "from → to device 1 → host",
          f"after {action(h.op[offload])}, done at {ms(res.ops.end[h.op[offload]])}"]),
        (reload, "in", f"reload from host · for {action(h.op[reload])}",
         ["kind 50 % of the activation back from host memory (reload)", "to host → device 1",
          f"for {action(h.op[reload])}, started {ms(res.ops.start[h.op[reload]])}"]),
    ):
        box = transfer_box(page, i, half)
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        text = text_of(page)
        assert title in text and all(row in text for row in rows), text
        assert f"start {ms(h.start[i])}" in text and f"end {ms(h.end[i])}" in text
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "offload_tooltip.png"))
    # the backward's own tooltip names its reload
    page.mouse.move(*op_centre(page, int(h.op[reload])))
    assert f"reload host → device 1, {float(np.float32(h.start[reload])):.6g}–{ms(h.end[reload])}" in text_of(page)
