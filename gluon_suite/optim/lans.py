"""LANS: LAMB with per-block gradient normalisation and a Nesterov-style combination of two
LAMB-like steps (docs/methods.md, "LANS and LAMB"). Registered as ``'lans'``.

Per parameter tensor w (a block), step t, gradient g (after rescaling and allreduce):

    g~  = g / ||g||                               (0 stays 0)
    m   = b1*m + (1-b1)*g~ ;  v = b2*v + (1-b2)*g~^2
    d   = sqrt(v / (1-b2^t)) + eps
    u_m = (m / (1-b1^t)) / d + wd*w ;  u_g = g~ / d + wd*w          (both with the pre-update w)
    r_m = ||w|| / ||u_m|| ;  r_g = ||w|| / ||u_g||                  (1 when a norm is 0)
    w  <- w - lr*b1*r_m*u_m - lr*(1-b1)*r_g*u_g

Built on MXNet's fused LAMB kernels: ``lamb_update_phase1`` gives u_m (and updates the moments);
called once more with b1 = 0, b2 = 1 and no bias correction on the updated v, with the gradient
and epsilon scaled by sqrt(1-b2^t), it gives u_g without touching the moments; two
``lamb_update_phase2`` calls apply both steps with the pre-update norm of w.
"""
import math

import mxnet as mx
from mxnet.optimizer import Optimizer, register

from .common import check_hyperparameters


@register
class LANS(Optimizer):
    """The LANS optimizer (see the module docstring for the rule). Defaults: beta1 0.9, beta2 0.999,
    epsilon 1e-6. Use ``wd_mult = 0`` (``exclude_from_weight_decay``) for LayerNorm and biases.
    ``multi_precision=True`` keeps fp32 master weights for fp16 parameters."""

    def __init__(self, learning_rate=None, beta1=0.9, beta2=0.999, epsilon=1e-6, **kwargs):
        check_hyperparameters(learning_rate, beta1, beta2, epsilon, kwargs.get("wd"))
        if learning_rate is None and kwargs.get("lr_scheduler") is None:
            learning_rate = 0.001
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        """Moments m and v, and a scratch buffer for the second phase-1 call."""
        z = lambda: mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)  # noqa: E731
        return (z(), z(), z())

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        mean, var, scratch = state
        b1, b2, eps = self.beta1, self.beta2, self.epsilon

        g = grad * self.rescale_grad if self.rescale_grad != 1.0 else grad
        if self.clip_gradient:
            g = mx.nd.clip(g, -self.clip_gradient, self.clip_gradient)
        gnorm = mx.nd.norm(g)
        g_n = mx.nd.broadcast_div(g, gnorm + (gnorm == 0))          # g~; zero stays zero
        w_norm = mx.nd.norm(weight)                                   # ||w|| before the update
        u_m = mx.nd.lamb_update_phase1(weight, g_n, mean, var, beta1=b1, beta2=b2, epsilon=eps,
                                       t=t, bias_correction=True, wd=wd, rescale_grad=1.0)
        # u_g = g~/(sqrt(v/(1-b2^t)) + eps) + wd*w = c*g~/(sqrt(v) + eps*c) + wd*w, c = sqrt(1-b2^t):
        # phase 1 with b1 = 0 (the "mean" is c*g~), b2 = 1 (v unchanged), no bias correction
        c = math.sqrt(1.0 - b2 ** t)
        u_g = mx.nd.lamb_update_phase1(weight, g_n, scratch, var, beta1=0.0, beta2=1.0,
                                       epsilon=eps * c, t=t, bias_correction=False, wd=wd,
                                       rescale_grad=c)
        mx.nd.lamb_update_phase2(weight, u_m, w_norm, mx.nd.norm(u_m), lr=lr * b1, out=weight)
        mx.nd.lamb_update_phase2(weight, u_g, w_norm, mx.nd.norm(u_g), lr=lr * (1.0 - b1), out=weight)
