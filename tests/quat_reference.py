"""numpy references for quaternions (x, y, z, w), shared by the quat and transform builtin tests."""
import numpy as np


def qmul(a, b):
    """Hamilton product of quaternions (..., 4)."""
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack([aw * bx + bw * ax + ay * bz - by * az,
                     aw * by + bw * ay + az * bx - bz * ax,
                     aw * bz + bw * az + ax * by - bx * ay,
                     aw * bw - ax * bx - ay * by - az * bz], axis=-1)


def qmat(q):
    """Rotation matrix of unit quaternions q (..., 4) -> (..., 3, 3)."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)
