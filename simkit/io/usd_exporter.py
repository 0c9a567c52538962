"""Export simulations to USD (usd-core) with time samples that any USD viewer plays back.

Example::

    with sk.io.UsdExporter("cloth.usda", fps=60, up_axis="Y") as usd:
        usd.render_mesh("sphere", sphere_points, sphere_indices)        # outside a frame: static
        for frame in range(120):
            simulate_one_frame()
            usd.begin_frame(frame / 60.0)                                # time [s]
            usd.render_mesh("cloth", state.particle_q.numpy(), cloth_indices)
            usd.render_points("particles", points, radius=0.01)
            usd.render_transform("ball", pos, rot)                       # rot: quaternion (x, y, z, w)
            usd.end_frame()
    # the stage is written on close(): startTimeCode/endTimeCode span the frames,
    # timeCodesPerSecond = fps, one time code per frame.

Prim names are paths below ``/World`` (``"ball/geom"`` puts a mesh under the ``ball`` transform).
Mesh topology and constant point widths are written once (topology is time-sampled from the first
frame that changes it); positions are time-sampled, and a sample equal to the previous one is
skipped (a rigid mesh moved by a transform costs one sample).

``.usda`` files are text, ``.usd``/``.usdc`` binary. Without usd-core (``pip install -e
'.[io]'``) only ``render_points`` is available: it falls back to the dependency-free
:class:`~simkit.io.usda_writer.UsdaPointsWriter` format (``.usda`` only); meshes and transforms
then raise ``ImportError``. ``backend="usda"`` forces that fallback.
"""
from __future__ import annotations

import os
import re

import numpy as np

__all__ = ["UsdExporter"]


def have_pxr() -> bool:
    try:
        import pxr.Usd  # noqa: F401
    except ImportError:
        return False
    return True


def _check_writable(path: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise OSError(f"cannot write '{path}': directory '{d}' does not exist or is not writable")
    if os.path.isdir(path):
        raise OSError(f"cannot write '{path}': it is a directory")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise OSError(f"cannot write '{path}': the file is not writable")


class UsdExporter:
    """Collects frames of points, meshes and transforms; writes one USD stage on ``close()``.

    ``path``: output file (``.usda``, ``.usd``, ``.usdc``). ``fps``: time codes per second (each
    frame at time ``t`` [s] lands on time code ``round(t * fps)``). ``up_axis``: ``"Y"`` or ``"Z"``.
    ``backend``: ``"auto"`` (usd-core when installed), ``"pxr"`` or ``"usda"`` (points only).
    """

    def __init__(self, path, *, fps: float = 60.0, up_axis: str = "Y", root: str = "World",
                 backend: str = "auto"):
        path = os.fspath(path)
        if up_axis not in ("Y", "Z"):
            raise ValueError(f"up_axis must be 'Y' or 'Z', got {up_axis!r}")
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        if backend not in ("auto", "pxr", "usda"):
            raise ValueError(f"backend must be 'auto', 'pxr' or 'usda', got {backend!r}")
        ext = os.path.splitext(path)[1].lower()
        if ext not in (".usda", ".usd", ".usdc"):
            raise ValueError(f"cannot write '{path}': the extension must be .usda, .usd or .usdc")
        _check_writable(path)
        if backend == "auto":
            backend = "pxr" if have_pxr() else "usda"
        if backend == "pxr" and not have_pxr():
            raise ImportError("UsdExporter needs usd-core: pip install -e '.[io]' (or pip install usd-core)")
        if backend == "usda" and ext != ".usda":
            raise ValueError(f"cannot write '{path}' without usd-core: only .usda is supported (pip install usd-core)")
        self.path, self.fps, self.up_axis, self.root, self.backend = path, float(fps), up_axis, root, backend
        self.times: list = []          # time code of every frame so far
        self._time = None              # time code of the open frame, None outside a frame
        self._last: dict = {}          # (prim path, attribute) -> last written value, to skip repeats
        self.start_time_code = None    # the stage's startTimeCode when set (else the first frame's)
        self._closed = False
        if backend == "pxr":
            from pxr import Usd, UsdGeom

            self._stage = Usd.Stage.CreateInMemory()
            UsdGeom.SetStageUpAxis(self._stage, UsdGeom.Tokens.y if up_axis == "Y" else UsdGeom.Tokens.z)
            UsdGeom.SetStageMetersPerUnit(self._stage, 1.0)
            self._stage.SetTimeCodesPerSecond(self.fps)
            self._stage.SetFramesPerSecond(self.fps)
            world = UsdGeom.Xform.Define(self._stage, f"/{root}")
            self._stage.SetDefaultPrim(world.GetPrim())
        else:
            self._points: dict = {}    # prim path -> (list of per-frame arrays or None, radius)

    # ------------------------------------------------------------------ frames

    def begin_frame(self, time: float | None = None) -> None:
        """Start a frame at ``time`` [s] (default: one frame after the previous one)."""
        self._check_open()
        if self._time is not None:
            raise RuntimeError("begin_frame() called twice without end_frame()")
        code = (self.times[-1] + 1 if self.times else 0) if time is None else round(float(time) * self.fps, 6)
        if self.times and code <= self.times[-1]:
            raise ValueError(f"frame time {time} (time code {code:g}) is not after the previous frame "
                             f"(time code {self.times[-1]:g})")
        self._time = code
        self.times.append(code)
        if self.backend == "usda":
            for frames, _ in self._points.values():
                frames.append(None)

    def end_frame(self) -> None:
        if self._time is None:
            raise RuntimeError("end_frame() without begin_frame()")
        self._time = None

    @property
    def frame_count(self) -> int:
        return len(self.times)

    # ------------------------------------------------------------------ prims

    def render_points(self, name: str, points, radius=0.01) -> None:
        """Particles as ``UsdGeom.Points``: ``points`` [m] shape (n, 3); ``radius`` [m] a float or one
        per point (written as widths = 2 * radius)."""
        self._check_open()
        pts = _as_points(points, name)
        r = np.asarray(radius, dtype=np.float32)
        if self.backend == "usda":
            if r.ndim:
                raise ValueError("per-point radii need usd-core (pip install usd-core)")
            if self._time is None:
                raise RuntimeError("without usd-core, points can only be rendered inside begin_frame()/end_frame()")
            path = self._path(name)
            frames, _ = self._points.setdefault(path, ([None] * len(self.times), float(r)))
            frames[-1] = pts.copy()
            self._points[path] = (frames, float(r))
            return
        from pxr import UsdGeom, Vt

        path = self._path(name)
        prim = UsdGeom.Points.Define(self._stage, path)
        self._set(prim.GetPointsAttr(), path, "points", pts, Vt.Vec3fArray)
        widths = np.broadcast_to(2.0 * r, (len(pts),)).astype(np.float32)
        self._set(prim.GetWidthsAttr(), path, "widths", widths, Vt.FloatArray, constant=r.ndim == 0)
        self._extent(prim, path, pts, float(r.max()) if r.size else 0.0)

    def render_mesh(self, name: str, points, indices=None, *, pos=None, rot=None, scale=None,
                    color=None) -> None:
        """A triangle mesh as ``UsdGeom.Mesh``: ``points`` [m] shape (n, 3), ``indices`` shape (3m,) or
        (m, 3). Called outside a frame the mesh is static; inside, its points are time-sampled
        (deforming). ``pos``/``rot``/``scale`` set the mesh prim's own transform. Topology is written
        on the first call; later calls may pass ``indices=None`` (same topology) or new indices with
        any number of points (time-sampled topology: a re-meshed surface; an empty mesh is
        ``points`` and ``indices`` both empty)."""
        self._check_open()
        self._need_pxr("render_mesh")
        from pxr import Gf, UsdGeom, Vt

        path = self._path(name)
        pts = _as_points(points, name)
        prim = UsdGeom.Mesh.Define(self._stage, path)
        first = (path, "topology") not in self._last
        if indices is not None:
            idx = np.asarray(indices, dtype=np.int32).reshape(-1)
            if idx.size % 3 or (idx.size == 0 and len(pts)):
                raise ValueError(f"mesh '{name}': {idx.size} indices is not a positive multiple of 3")
            if idx.size and (idx.min() < 0 or idx.max() >= len(pts)):
                raise ValueError(f"mesh '{name}': indices out of range [0, {len(pts)})")
            # held like any other attribute: static until it changes, then time-sampled (a surface
            # re-meshed every frame), so each frame reads back its own topology
            self._set(prim.GetFaceVertexIndicesAttr(), path, "faceVertexIndices", idx, Vt.IntArray, constant=True)
            self._set(prim.GetFaceVertexCountsAttr(), path, "faceVertexCounts",
                      np.full(idx.size // 3, 3, np.int32), Vt.IntArray, constant=True)
            self._last[(path, "topology")] = (idx.size, len(pts))
        elif first:
            raise ValueError(f"mesh '{name}': indices are needed on the first render_mesh()")
        if first:
            prim.GetSubdivisionSchemeAttr().Set(UsdGeom.Tokens.none)
            prim.GetOrientationAttr().Set(UsdGeom.Tokens.rightHanded)
            if color is not None:
                prim.GetDisplayColorAttr().Set(Vt.Vec3fArray([Gf.Vec3f(*map(float, color))]))
        if len(pts) != self._last[(path, "topology")][1]:
            raise ValueError(f"mesh '{name}': {len(pts)} points, the topology has "
                             f"{self._last[(path, 'topology')][1]}")
        self._set(prim.GetPointsAttr(), path, "points", pts, Vt.Vec3fArray)
        self._extent(prim, path, pts, 0.0)
        if pos is not None or rot is not None or scale is not None:
            self._xform(prim, path, pos, rot, scale)

    def render_transform(self, name: str, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), scale=None) -> None:
        """An ``UsdGeom.Xform`` at ``pos`` [m] with rotation ``rot`` (quaternion x, y, z, w); prims
        rendered under ``"name/child"`` move with it. Static outside a frame, time-sampled inside."""
        self._check_open()
        self._need_pxr("render_transform")
        from pxr import UsdGeom

        path = self._path(name)
        self._xform(UsdGeom.Xform.Define(self._stage, path), path, pos, rot, scale)

    def render_rigid_shapes(self, model, name: str = "bodies", color=(0.7, 0.5, 0.3)) -> None:
        """The model's rigid shapes as meshes (call once, outside a frame): a body's shapes under
        ``name/body<i>`` (moved by ``render_bodies``), static shapes under ``name/static``."""
        from .shape_meshes import shape_mesh

        self.render_transform(f"{name}/static")
        for b, q in enumerate(model.body_q.numpy() if model.body_count else []):
            self.render_transform(f"{name}/body{b}", pos=q[:3], rot=q[3:])
        kinds, sizes = model.rigid_shape_type.numpy(), model.rigid_shape_size.numpy()
        bodies, xforms = model.rigid_shape_body.numpy(), model.rigid_shape_xform.numpy()
        for s, (kind, size, body, xf) in enumerate(zip(kinds, sizes, bodies, xforms)):
            points, indices = shape_mesh(int(kind), size)
            parent = f"{name}/body{body}" if body >= 0 else f"{name}/static"
            self.render_mesh(f"{parent}/shape{s}", points, indices, pos=xf[:3], rot=xf[3:], color=color)

    def render_bodies(self, body_q, name: str = "bodies") -> None:
        """Rigid body frames as the transforms of ``name/body<i>`` (time samples inside a frame),
        which move the meshes of ``render_rigid_shapes``. ``body_q``: a ``State``, its ``body_q``
        array, or a numpy array (bodies, 7)."""
        body_q = getattr(body_q, "body_q", body_q)
        for b, q in enumerate(body_q.numpy() if hasattr(body_q, "numpy") else np.asarray(body_q)):
            self.render_transform(f"{name}/body{b}", pos=q[:3], rot=q[3:])

    def render_body_motion(self, model, frames, dt: float, name: str = "bodies") -> None:
        """A recorded rigid-body motion: the model's shapes (``render_rigid_shapes``), then one frame
        of body transforms per ``1 / fps`` s, taken from ``frames`` (body frames recorded every
        ``dt`` [s]: ``State``s, ``body_q`` arrays or numpy arrays, the first at time 0)."""
        self.render_rigid_shapes(model, name=name)
        every = max(int(round(1.0 / (self.fps * dt))), 1)
        for k, q in enumerate(frames[::every]):
            self.begin_frame(k * every * dt)
            self.render_bodies(q, name=name)
            self.end_frame()

    # ------------------------------------------------------------------ output

    def close(self) -> str:
        """Write the stage (atomically: temp file + rename); returns the path."""
        if self._closed:
            return self.path
        if self._time is not None:
            self.end_frame()
        self._closed = True
        _check_writable(self.path)
        if self.backend == "usda":
            from .usda_writer import write_points_stage

            if not self._points:
                raise ValueError("no points were rendered")
            prims = {p: (frames, r) for p, (frames, r) in self._points.items()}
            return write_points_stage(self.path, prims, fps=self.fps, up_axis=self.up_axis,
                                      times=self.times or [0])
        start, end = (self.times[0], self.times[-1]) if self.times else (0, 0)
        if self.start_time_code is not None:
            start = min(start, self.start_time_code)
        self._stage.SetStartTimeCode(start)
        self._stage.SetEndTimeCode(end)
        d, base = os.path.split(os.path.abspath(self.path))
        stem, ext = os.path.splitext(base)
        tmp = os.path.join(d, f".{stem}.{os.getpid()}.tmp{ext}")
        try:
            if not self._stage.GetRootLayer().Export(tmp):
                raise OSError(f"cannot write '{self.path}'")
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return self.path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._closed = True  # don't write a partial stage over a good one
        return False

    # ------------------------------------------------------------------ helpers

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"the exporter of '{self.path}' is closed")

    def _need_pxr(self, what: str):
        if self.backend != "pxr":
            raise ImportError(f"{what} needs usd-core: pip install -e '.[io]' (the fallback writer does "
                              "points only)")

    def _path(self, name: str) -> str:
        parts = [p for p in str(name).strip("/").split("/") if p]
        if not parts:
            raise ValueError("prim name must not be empty")
        clean = [re.sub(r"\W", "_", p) if not p[0].isdigit() else "_" + re.sub(r"\W", "_", p) for p in parts]
        return "/" + "/".join([self.root] + clean)

    def _set(self, attr, path: str, key: str, value: np.ndarray, vt_type, constant: bool = False):
        self._put(lambda v, t: attr.Set(vt_type.FromNumpy(v)) if t is None else attr.Set(vt_type.FromNumpy(v), t),
                  path, key, value, lambda a, b: a.shape == b.shape and np.array_equal(a, b), constant)

    def _put(self, setter, path: str, key: str, value, equal, constant: bool = False):
        """Static value outside a frame (or a first ``constant`` one), else a time sample. A value equal
        to the last one is skipped; when a held value changes, it is also sampled at the previous frame
        so that linear interpolation does not start before the change."""
        last = self._last.get((path, key))
        if last is not None and equal(last[0], value):
            return
        t = None if self._time is None or (constant and last is None) else self._time
        if t is not None and last is not None and len(self.times) >= 2 and last[1] != self.times[-2]:
            setter(last[0], self.times[-2])
        setter(value, t)
        self._last[(path, key)] = (value.copy() if isinstance(value, np.ndarray) else value, t)

    def _extent(self, prim, path: str, pts: np.ndarray, pad: float):
        from pxr import Vt

        ext = np.stack([pts.min(axis=0) - pad, pts.max(axis=0) + pad]).astype(np.float32) if len(pts) \
            else np.zeros((2, 3), np.float32)
        self._set(prim.GetExtentAttr(), path, "extent", ext, Vt.Vec3fArray)

    def _xform(self, xf, path: str, pos, rot, scale):
        from pxr import Gf, UsdGeom

        if (path, "xform") not in self._last:
            xf.ClearXformOpOrder()
            ops = (xf.AddTranslateOp(), xf.AddOrientOp(UsdGeom.XformOp.PrecisionFloat),
                   xf.AddScaleOp(UsdGeom.XformOp.PrecisionFloat))
            self._last[(path, "xform")] = ops
        t_op, r_op, s_op = self._last[(path, "xform")]
        pos = (0.0, 0.0, 0.0) if pos is None else pos
        rot = (0.0, 0.0, 0.0, 1.0) if rot is None else rot
        scale = (1.0, 1.0, 1.0) if scale is None else (np.broadcast_to(np.asarray(scale, np.float32), (3,)))
        x, y, z, w = (float(c) for c in np.asarray(rot, dtype=np.float64).reshape(4))
        for op, key, value in ((t_op, "translate", Gf.Vec3d(*(float(c) for c in np.asarray(pos).reshape(3)))),
                               (r_op, "orient", Gf.Quatf(w, x, y, z)),
                               (s_op, "scale", Gf.Vec3f(*(float(c) for c in scale)))):
            self._put(lambda v, t, op=op: op.Set(v) if t is None else op.Set(v, t), path, key, value,
                      lambda a, b: a == b)


def _as_points(points, name: str) -> np.ndarray:
    if hasattr(points, "numpy") and not isinstance(points, np.ndarray):
        points = points.numpy()
    p = np.ascontiguousarray(np.asarray(points, dtype=np.float32))
    if p.size % 3 or (p.ndim == 2 and p.shape[1] != 3) or p.ndim > 2:
        raise ValueError(f"'{name}': points must have shape (n, 3), got {p.shape}")
    return p.reshape(-1, 3)
