"""The check of ``auto``'s choice (``auto.py``'s module docstring, step 5): the choice timed over
whole cycles between two drains, against the reference (sync's step, predicted or raced), and the
verdict that keeps it or goes back to sync. A mixin of ``AutoAlgorithm``: it uses the
algorithm's ``_take``, ``_say``, ``_reference``, ``decision`` and options."""
import time

import mxnet as mx

from .costmodel import MAX_RESTARTS, window_step_time


class CheckWindows:
    """Timing windows over the running algorithm, and the verdict (mixed into ``AutoAlgorithm``)."""

    def _open_window(self, step, leg, cycle, race, sync_s, restarts=0, result=None, length=None):
        """Time the current algorithm for ``length`` steps (default: whole cycles of ``cycle``
        steps, at least ``measure_steps``), after ``verify_skip`` steps (default one cycle, at least
        2), starting on a cycle boundary; a pause of the loop inside the window restarts it."""
        skip = (max(cycle, 2) if self.verify_skip is None else self.verify_skip) if leg == "chosen" else 1
        first = step + 1 + skip if restarts == 0 else step + 1   # (in steps done)
        first += (-first) % cycle
        length = cycle * -(-self.measure_steps // cycle) if length is None else length
        self._window = {"leg": leg, "cycle": cycle, "from": first, "to": first + length,
                        "t": None, "gaps": [], "race": race, "sync_s": sync_s, "restarts": restarts,
                        "result": result or {}}
        if first == step + 1:     # a restart, at a cycle boundary: the engine was just drained
            self._window["t"] = time.perf_counter()

    def _window_step(self, step):
        w = self._window
        if step + 1 == w["from"]:      # the step before the window: drain, start the clock
            mx.nd.waitall()
            w["t"], w["gaps"] = time.perf_counter(), []
            return
        if step + 1 != w["to"] or w["t"] is None:
            return
        mx.nd.waitall()
        elapsed = time.perf_counter() - w["t"]
        # the last window allowed keeps its pauses out of its time: a window longer than the loop's
        # stretch between two evaluations would never be clean
        last = w["restarts"] >= MAX_RESTARTS
        mine, paused = window_step_time(elapsed, w["gaps"], w["to"] - w["from"], subtract=last)
        agreed = mx.nd.array([mine, 1.0 if paused else 0.0], dtype="float64")
        self.comm.allreduce_(agreed, average=True, name=f"auto.window.{w['leg']}")
        step_s, paused = (float(v) for v in agreed.asnumpy())
        if paused > 0 and w["restarts"] < MAX_RESTARTS:
            self._open_window(step, w["leg"], w["cycle"], w["race"], w["sync_s"], w["restarts"] + 1, w["result"],
                              w["to"] - w["from"])
            return
        res = dict(w["result"])
        res[w["leg"]] = step_s
        res["steps"] = w["to"] - w["from"]
        res["restarts"] = res.get("restarts", 0) + w["restarts"]
        self._window = None
        if w["leg"] == "chosen" and w["race"]:
            # a close call: time sync itself, from one model, for as many steps
            self._take(self._reference["algorithm"])
            self._racing = True   # a checkpoint now holds sync's state (restore() reads it)
            res["sync_from"] = step + 1
            self._open_window(step, "reference", 1, True, w["sync_s"], 0, res, w["to"] - w["from"])
            return
        self._verdict(step, res, w["sync_s"])

    def _verdict(self, step, res, sync_predicted):
        measured_sync = "reference" in res
        sync_s = res["reference"] if measured_sync else sync_predicted
        keep = mx.nd.array([1.0 if res["chosen"] <= (1.0 - self.verify_margin) * sync_s else 0.0], dtype="float64")
        self.comm.broadcast_(keep, 0, name="auto.verify.choice")
        kept = bool(keep.asscalar())
        self._racing = False
        dec = self.decision
        dec["verified"] = {"step_s": res["chosen"], "sync_step_s": sync_s,
                           "sync": "measured" if measured_sync else ("measured, drained" if not self.local_start
                                                                     else "predicted"),
                           "steps": res["steps"], "restarts": res["restarts"], "margin": self.verify_margin,
                           "kept": kept, "at": step + 1, **({"sync_from": res["sync_from"]} if "sync_from" in res else {})}
        was = dec["choice"]
        if kept:
            if measured_sync:    # the race ran sync last: back to the choice, from one model
                self._take(dec["algorithm"])
            self._say(f"auto: {was} kept from step {step + 1}: {1e3 * res['chosen']:.1f} ms/step against sync's "
                      f"{1e3 * sync_s:.1f} ms ({dec['verified']['sync']})")
            return
        if not measured_sync:
            self._take(self._reference["algorithm"])
        ref = self._reference
        dec.update(choice=ref["name"], algorithm=ref["algorithm"], flags=ref["flags"], reference=True,
                   reverted_from=was, reverted_at=step + 1)
        self._say(f"auto: back to sync from step {step + 1}: {was} measured {1e3 * res['chosen']:.1f} ms/step, "
                  f"not below {1 - self.verify_margin:.2f} x sync's {1e3 * sync_s:.1f} ms ({dec['verified']['sync']})")
