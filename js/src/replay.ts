// The replay bar under a chart: play/pause, a scrubber over [0, makespan] and the time read-out.
// It owns the replay cursor; the view draws the cursor and each device's memory at it.

import { number } from "./format";

/** Milliseconds a replay of the whole run takes, whatever its makespan. */
const PLAY_MS = 8000;

export class Replay {
  readonly el = document.createElement("div");
  /** the replayed time, or null when the replay is not in use */
  cursor: number | null = null;
  private readonly play = document.createElement("button");
  private readonly scrub = document.createElement("input");
  private readonly timeText = document.createElement("span");
  private playing = false;
  private lastTick = 0;
  private frame = 0;
  private readonly disposers: (() => void)[] = [];

  /** `makespan()` is the run's end (0 while there is no run), `unit()` its time unit; `changed()`
   * asks for a repaint. */
  constructor(
    private readonly makespan: () => number,
    private readonly changed: () => void,
    private readonly unit: () => string = () => "",
  ) {
    this.el.className = "ppviz-player";
    this.play.className = "ppviz-play";
    this.play.type = "button";
    this.scrub.className = "ppviz-scrub";
    this.scrub.type = "range";
    this.scrub.min = "0";
    this.scrub.max = "1000";
    this.scrub.value = "0";
    this.scrub.setAttribute("aria-label", "time");
    this.timeText.className = "ppviz-time";
    this.el.append(this.play, this.scrub, this.timeText);
    const onPlay = () => (this.playing ? this.pause() : this.start());
    const onScrub = () => {
      const share = Number(this.scrub.value) / 1000; // read before pause() redraws the bar
      this.pause();
      const makespan = this.makespan();
      if (makespan <= 0) return;
      this.cursor = share * makespan;
      this.update();
      this.changed();
    };
    this.play.addEventListener("click", onPlay);
    this.scrub.addEventListener("input", onScrub);
    this.disposers.push(() => this.play.removeEventListener("click", onPlay));
    this.disposers.push(() => this.scrub.removeEventListener("input", onScrub));
    this.update();
  }

  /** A new run: keep the cursor inside it. */
  rescale(): void {
    if (this.cursor !== null) this.cursor = Math.min(this.cursor, this.makespan());
    this.update();
  }

  /** Stop and forget the cursor; false when there was nothing to clear. */
  clear(): boolean {
    if (this.cursor === null) return false;
    this.pause();
    this.cursor = null;
    this.update();
    this.changed();
    return true;
  }

  private start(): void {
    const makespan = this.makespan();
    if (makespan <= 0) return;
    if (this.cursor === null || this.cursor >= makespan) this.cursor = 0;
    this.playing = true;
    this.lastTick = performance.now();
    this.frame = requestAnimationFrame(this.tick);
    this.update();
  }

  private pause(): void {
    this.playing = false;
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.update();
  }

  private tick = (now: number): void => {
    const makespan = this.makespan();
    if (!this.playing || makespan <= 0) return;
    this.cursor = Math.min(makespan, (this.cursor ?? 0) + ((now - this.lastTick) / PLAY_MS) * makespan);
    this.lastTick = now;
    if (this.cursor >= makespan) this.pause();
    else this.frame = requestAnimationFrame(this.tick);
    this.update();
    this.changed();
  };

  private update(): void {
    this.play.textContent = this.playing ? "❚❚" : "▶";
    this.play.setAttribute("aria-label", this.playing ? "pause" : "play");
    this.play.title = this.playing ? "pause" : "replay the schedule";
    const makespan = this.makespan();
    if (this.cursor === null) {
      this.scrub.value = "0";
      this.timeText.textContent = "replay: memory at t per device";
    } else {
      this.scrub.value = String(makespan > 0 ? Math.round((this.cursor / makespan) * 1000) : 0);
      this.timeText.textContent = `t = ${number(this.cursor, this.unit())} of ${number(makespan, this.unit())}`;
    }
  }

  destroy(): void {
    this.playing = false;
    cancelAnimationFrame(this.frame);
    for (const dispose of this.disposers.splice(0)) dispose();
  }
}
