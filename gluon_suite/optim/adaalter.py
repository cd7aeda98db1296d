"""AdaAlter: AdaGrad with the order alternated (docs/methods.md, "AdaAlter and Local AdaAlter").
Registered as ``'adaalter'``.

    w <- w - lr * ( g / sqrt(B + eps) + wd*w ) ;  B <- B + g^2

The denominator uses the accumulator from *before* the current gradient, which lets Local
AdaAlter (``algorithm='local_adaalter'``) freeze it between synchronisations.
"""
import mxnet as mx
from mxnet.optimizer import Optimizer, register

from .common import check_hyperparameters


@register
class AdaAlter(Optimizer):
    """AdaAlter (see the module docstring). The accumulator B starts at 0 and ``epsilon`` sits
    inside the root, so eps is the accumulator's initial value (the authors' "initial history
    accumulation"): the first step is ``lr*g/sqrt(eps)``. It is not a tiny guard against division by
    zero: with eps = 1e-6 the first steps are 1000x the gradient and AdaAlter is unstable. The
    published recipe uses eps = 1 on a loss summed over the BPTT window and averaged over the batch;
    scaling the loss by c acts like dividing eps by c^2, so pick eps for the loss's scale. The
    default is the published value, 1."""

    def __init__(self, learning_rate=None, epsilon=1.0, **kwargs):
        check_hyperparameters(learning_rate, epsilon=epsilon, wd=kwargs.get("wd"))
        if learning_rate is None and kwargs.get("lr_scheduler") is None:
            learning_rate = 0.01
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.epsilon = epsilon

    def create_state(self, index, weight):
        """The accumulator of squared gradients B."""
        return mx.nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def prepare_grad(self, grad):
        """The gradient after rescaling and clipping."""
        g = grad * self.rescale_grad
        if self.clip_gradient:
            g = mx.nd.clip(g, -self.clip_gradient, self.clip_gradient)
        return g

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = self.prepare_grad(grad)
        step = g / mx.nd.sqrt(state + self.epsilon)
        if wd:
            step = step + wd * weight
        weight -= lr * step
        state += mx.nd.square(g)
