"""The decision of ``auto`` (``auto.py``'s module docstring, steps 2-4): the workers agree on the
measured times, every candidate's step is predicted by the cost model (``costmodel.py``), rank 0's
choice is broadcast, and the chosen algorithm takes over. A mixin of ``AutoAlgorithm``."""
import math

import mxnet as mx
import numpy as np

from .costmodel import RACE_BELOW, candidate_list, choose, link_model, predict_candidates


class Decision:
    """Agreeing on the measurements and deciding (mixed into ``AutoAlgorithm``)."""

    def _agree(self):
        """Each time's median over this worker's measured steps (the small probe: also its
        minimum, the fixed cost without waiting), averaged over the workers (one collective)."""
        arr = np.array(self._samples, dtype=np.float64)

        def med(c, f=np.median):
            c = c[~np.isnan(c)]
            return float(f(c)) if c.size else -1.0
        mine = [med(c) for c in arr.T] + [med(arr[:, 4], np.min), -1.0 if self._reset is None else self._reset]
        agreed = mx.nd.array(mine, dtype="float64")
        self.comm.allreduce_(agreed, average=True, name="auto.measured")
        return [float(v) for v in agreed.asnumpy()]

    def _decide(self, step):
        comm = self.comm
        compute, optimizer, wait, allreduce, small, whole, small_min, reset = self._agree()
        n = comm.size
        sizes = [float(b.nbytes) for b in self.buckets]
        k, wire = len(sizes), sum(2.0 * (n - 1) / n * s for s in sizes)
        measured = {"compute_s": compute, "optimizer_s": optimizer, "probe_s": small,
                    "steps": len(self._samples), "start": "local" if self.local_start else "sync"}
        if self.local_start:
            # small probe: t0 + waiting (its fastest: t0); the models' average: waiting + K t0 + W / B
            t0 = max(small_min, 0.0)
            wait_s = max(small - t0, 0.0)
            average = max(reset - optimizer, 0.0)
            s_per_byte = max(average - wait_s - k * t0, 0.0) / wire
            measured.update(probe_min_s=small_min, average_s=average, local_step_s=whole, wait_s=wait_s)
        else:
            t0, s_per_byte = link_model(allreduce, small, sizes, n)
            wait_s = max(wait - t0, 0.0)      # the barrier's own fixed cost is not waiting
            measured.update(allreduce_s=allreduce, sync_step_s=whole, wait_s=wait_s)
        source = "measured"
        if self.link_mbit is not None:
            s_per_byte, source = 8.0 / (self.link_mbit * 1e6), "given"
        if self.latency_s is not None:   # a given per-collective cost: all a collective costs beyond its bytes
            t0, wait_s = self.latency_s, 0.0
        dtype = "float16" if any(b.dtype == np.float16 for b in self.buckets) else "float32"
        cands = candidate_list(self.kinds, dtype, self.cser_ratios, self.period, self.pl_ratios, self.pl_periods)
        rows = predict_candidates(cands, compute + optimizer, sizes, n, t0, s_per_byte, wait_s)
        index, reached = choose(rows, self.target_sf)
        chosen = mx.nd.array([index], dtype="float64")
        comm.broadcast_(chosen, 0, name="auto.choice")   # rank 0's word is final on every worker
        index = int(chosen.asscalar())
        row = rows[index]
        mbit = 8e-6 / s_per_byte if s_per_byte > 0 else float("inf")
        sync_row = next((r for r in rows if r["reference"]), None)
        reason = (f"predicted SF {row['scaling_factor']:.3f} {'>=' if reached else '< (none reaches)'} target "
                  f"{self.target_sf:g} at ratio {row['ratio']:.2f} on {n} workers"
                  + (f" (sync: {sync_row['scaling_factor']:.3f})" if sync_row is not None else "")
                  + f"; compute {1e3 * (compute + optimizer):.1f} ms/step, {sum(sizes) / 1e6:.3g} MB of gradients "
                  f"in {len(sizes)} bucket(s): link {mbit:.4g} Mbit/s ({source}) + {1e3 * t0:.2f} ms per "
                  f"collective + {1e3 * wait_s:.2f} ms waiting")
        self.decision = {"choice": row["name"], "algorithm": row["algorithm"], "flags": row["flags"],
                         "reached": reached, "target_sf": self.target_sf, "workers": n, "step": step + 1,
                         "reference": row["reference"],
                         "measured": measured,
                         "link": {"mbit": mbit, "per_collective_s": t0, "source": source},
                         "gradient_bytes": sum(sizes), "buckets": len(sizes), "reason": reason,
                         "candidates": rows}
        self._say(f"auto: {row['name']} from step {step + 1} ({row['flags']}): {reason}")
        # with local steps the models were averaged on this very step: only the momenta differ
        self._take(row["algorithm"], continue_local=True, models_equal=self.local_start)
        if self.verify and not row["reference"]:
            # the reference: sync's measured step (a synchronous measuring phase), else its prediction
            sync_s = whole if not self.local_start else (sync_row["step_s"] if sync_row else math.inf)
            race = sync_row is not None and sync_row["step_s"] < RACE_BELOW * row["step_s"]
            cycle = len(cands[index]["cycle"])
            self._open_window(step, "chosen", cycle, race=race, sync_s=sync_s)
