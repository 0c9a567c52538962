"""What every solver shares: scratch arrays that are fresh per step when gradients are taped, the
default control, and the particle HashGrid rebuilt where the Tape needs it."""
from __future__ import annotations

from ..kernels.backends import cpu_graph
from ..model import Control, Model, State
from ..runtime import array, declare, tape, zeros


class Solver:
    """Base class: ``step(model, state_in, state_out, control, dt)`` advances ``state_in`` by ``dt``
    [s] into ``state_out``. It never writes ``state_in`` nor any model array."""

    def __init__(self):
        self._buffers: dict = {}
        self._controls: dict = {}
        self._declared: set = set()

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers for step()

    def declare_once(self, model: Model, dry_run) -> None:
        """Once per model and device, before its first launches: ``dry_run()`` (a call of the step itself) with
        launches that only declare their kernels' specialisations, so that the first real launch compiles them
        all together (runtime/declare.py). Nothing inside is taped, a HashGrid build does nothing and the Bvh
        broad phase gives way to all pairs (nothing is read back). Not while a graph is being captured (the
        dry run's other operations, such as zeroing scratch arrays, would be captured too)."""
        key = (id(model), str(model.device))
        if key in self._declared or declare.active:
            return
        dev = model.device
        if cpu_graph.active or (dev.is_cuda and dev.is_capturing):
            return
        self._declared.add(key)
        with declare.declaring(), tape.paused():
            dry_run()

    @staticmethod
    def differentiable(model: Model, state: State) -> bool:
        """True when this step must keep every intermediate array (gradients are wanted)."""
        return model.requires_grad or state.requires_grad

    def scratch(self, model: Model, key: str, shape, dtype, *, fresh: bool, zero: bool = True,
                requires_grad: bool = True) -> array:
        """A work array: new (with a gradient) when ``fresh``, else one reused between steps
        (zeroed when ``zero``)."""
        if fresh:
            return zeros(shape, dtype=dtype, device=model.device, requires_grad=requires_grad)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        k = (id(model), key)
        a = self._buffers.get(k)
        dev = model.device
        if a is None or a.shape != shape or a.dtype is not dtype or (a.device is not dev and a.device != dev):
            a = self._buffers[k] = zeros(shape, dtype=dtype, device=dev)
        elif zero:
            a.zero_()
        return a

    def default_control(self, model: Model, control: Control | None) -> Control:
        if control is not None:
            return control
        c = self._controls.get(id(model))
        if c is None or c.spring_activation.shape[0] != model.spring_count or c.joint_target is None \
                or c.joint_target.shape[0] != model.joint_count:
            c = self._controls[id(model)] = model.control(requires_grad=False)
        return c

    @staticmethod
    def particle_contact_enabled(model: Model) -> bool:
        return (model.particle_contact and model.particle_grid is not None and model.particle_count > 1
                and model.particle_max_radius > 0.0)

    @staticmethod
    def build_particle_grid(model: Model, points: array, cell_width: float):
        """Bucket ``points`` into ``model.particle_grid`` (inside a Tape, ``backward()`` restores this
        grid before the adjoints of the launches that query it; see ``HashGrid.build``)."""
        model.particle_grid.build(points, cell_width)
        return model.particle_grid
