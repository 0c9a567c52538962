"""Call sites of @funcs with ref[T] parameters (simkit/kernels/refs.py): which arguments are storage,
and the copy-out that assigns each ref parameter's final value back to its argument."""
from __future__ import annotations

import ast

from .. import ir
from .. import types as T
from .builder import TupleValue


def takes_refs(fn) -> bool:
    """Does any overload of the @func ``fn`` have a ref[T] parameter?"""
    from ..decorators import _ref_names

    cached = getattr(fn, "_sk_takes_refs", None)
    if cached is None or cached[0] != len(fn.overloads):
        cached = (len(fn.overloads), any(_ref_names(f) for f, _, _ in fn.overloads))
        fn._sk_takes_refs = cached
    return cached[1]


class RefArgsMixin:
    def hoist_ref_args(self, node, hidden: list):
        """The call's argument nodes with index expressions evaluated once, into hidden locals (a ref
        argument is read before the call and written after it): (positional nodes, keyword nodes)."""
        pos = [self.hoist_target(a, hidden) if isinstance(a, (ast.Attribute, ast.Subscript)) else a
               for a in node.args]
        kw = {k.arg: self.hoist_target(k.value, hidden) if isinstance(k.value, (ast.Attribute, ast.Subscript))
              else k.value for k in node.keywords}
        return pos, kw

    def ref_targets(self, fn, spec, node, arg_nodes) -> list:
        """The argument node of each ref parameter of ``spec``, checked to name storage."""
        pos, kw = arg_nodes if arg_nodes is not None else (None, {})
        names = list(spec.param_types)
        if pos is not None and any(isinstance(a, ast.Starred) for a in pos):
            pos = None
        out = []
        for name in spec.ref_params:
            k = names.index(name)
            target = kw.get(name) if name in kw else (pos[k] if pos is not None and k < len(pos) else None)
            where = f"ref parameter '{name}' of '{fn.key}'"
            if target is None:
                raise self.error(f"{where} needs storage as its argument (a variable, an array element, a "
                                 f"field or component of one); a default value or an unpacked argument is none",
                                 node)
            self.check_storage(target, where)
            out.append(target)
        return out

    def check_storage(self, target, where: str):
        """``target`` names storage the callee may write: a variable not bound to an untyped literal, an
        array element, or a field/component of one of these. Otherwise a CompileError naming ``where``."""
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        text = ast.unparse(target)
        if not isinstance(root, ast.Name):
            raise self.error(f"{where} cannot take '{text}': it is a temporary value, not storage (pass a "
                             f"variable, an array element, or a field or component of one)", target)
        v = self.symbols.get(root.id)
        if isinstance(v, TupleValue) or not isinstance(v, ir.Var):
            raise self.error(f"{where} cannot take '{text}': '{root.id}' is not a local variable or array "
                             f"(a constant or a Python object), so it cannot be written", target)
        if root is target and v.is_const and getattr(v, "weak", False) and T.is_scalar(v.type):
            c = v.const
            lit = repr(float(c)) if T.is_float(v.type) else repr(int(c))
            raise self.error(f"{where} cannot take '{text}': it holds an untyped literal, a compile-time "
                             f"constant with no storage; declare it with its type, e.g. "
                             f"{root.id} = wp.{T.type_name(v.type)}({lit})", target)

    def write_back_refs(self, targets: list, values: list):
        """After the call: each ref argument is assigned its parameter's final value."""
        for target, v in zip(targets, values):
            self.assign_to(target, v)

    def call_ref_func(self, fn, node):
        """``f(args)`` where ``f`` has ref[T] parameters: the arguments' index expressions are evaluated
        once, the call made, and each ref argument assigned its final value (copy-out)."""
        hidden: list = []
        pos, kw_nodes = self.hoist_ref_args(node, hidden)
        try:
            args = [v for a in pos
                    for v in (self.unpack_starred(a) if isinstance(a, ast.Starred) else [self.eval(a)])]
            kw = {k: self.eval(v) for k, v in kw_nodes.items()}
            args = [self.type_arg(a) for a in args]
            kw = {k: self.type_arg(v) for k, v in kw.items()}
            return self.call_func(fn, args, kw, node, (pos, kw_nodes))
        finally:
            for name in hidden:
                self.symbols.pop(name, None)

    # ------------------------------------------------------------------ address_of(storage)

    def eval_address_of(self, node):
        """``address_of(x)``: the address (uint64) of storage, for native code to read or write. A local
        is first copied to a fresh variable that the name is rebound to (its address is that variable's);
        an array element's is its place in the array."""
        if len(node.args) != 1 or node.keywords:
            raise self.error("address_of() takes one argument: a variable, an array element, or a field or "
                             "component of one", node)
        target = node.args[0]
        self.check_storage(target, "wp.address_of()")
        chain = []
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            chain.append(root)
            root = root.value
        chain.reverse()
        v = self.symbols[root.id]
        args, params = [], []
        if isinstance(v.type, T.ArrayType):
            if not chain or not isinstance(chain[0], ast.Subscript):
                raise self.error(f"wp.address_of() takes an array element, not the array '{root.id}'", target)
            idx = self.index_values(chain[0].slice)
            if len(idx) != v.type.ndim or any(not isinstance(i, ir.Var) for i in idx):
                raise self.error(f"wp.address_of(): '{ast.unparse(chain[0])}' must index every dimension of the "
                                 f"{v.type.ndim}D array with integers", target)
            args, params = [v] + idx, ["const auto& _a"] + [f"auto _i{k}" for k in range(len(idx))]
            expr = f"(*sk::address<SKC>({', '.join(['_a'] + [f'_i{k}' for k in range(len(idx))])}))"
            t, chain = v.type.dtype, chain[1:]
        else:
            m = self.new_var(v.type, label=root.id, mutable=True)  # (the name now lives at a fixed place)
            self.emit(ir.Copy(out=m, src=v))
            self.symbols[root.id] = m
            args, params, expr, t = [m], ["auto& _r"], "_r", v.type
        for n in chain:
            expr, t = self.address_step(n, expr, t, args, params, target)
        out = self.new_var(T.uint64)
        lam = f"[&]({', '.join(params)}) {{ return reinterpret_cast<sk::uint64>(&{expr}); }}"
        self.emit(ir.Call(out=out, args=args, callee=lam, kind="builtin"))
        return out

    def address_step(self, n, expr, t, args, params, target):
        """One ``.field`` / ``.x`` / ``[k]`` step of an address_of() path: (C++ lvalue, its type)."""
        from .expressions import COMPONENTS

        if isinstance(n, ast.Attribute):
            if T.is_struct(t) and n.attr in t._simkit_struct.fields:
                return f"{expr}.{n.attr}", t._simkit_struct.fields[n.attr]
            if T.is_transform(t) and n.attr in ("p", "q"):
                return f"{expr}.{n.attr}", (T.vector(3, t._dtype) if n.attr == "p" else T.quaternion(t._dtype))
            if T.is_vector(t) and n.attr in COMPONENTS and COMPONENTS[n.attr] < t._shape[0]:
                return f"{expr}.c[{COMPONENTS[n.attr]}]", t._dtype
            if T.is_quat(t) and n.attr in COMPONENTS:
                return f"{expr}.{n.attr}", t._dtype
            raise self.error(f"wp.address_of(): {T.type_name(t)} has no field '{n.attr}'", target)
        idx = self.index_values(n.slice)
        dims = 2 if T.is_matrix(t) else 1
        if not T.is_value(t) or len(idx) != dims or T.is_transform(t):
            raise self.error(f"wp.address_of(): cannot index {T.type_name(t)} with '{ast.unparse(n.slice)}'", target)
        shape = list(t._shape) if not T.is_quat(t) else [4]
        subs = []
        for k, (i, size) in enumerate(zip(idx, shape)):
            if i.is_const:
                c = int(i.const)
                c = c + size if c < 0 else c
                if not 0 <= c < size:
                    raise self.error(f"wp.address_of(): index {int(i.const)} out of range for "
                                     f"{T.type_name(t)}", target)
                subs.append(f"[{c}]")
            else:
                params.append(f"int _k{len(args)}")
                subs.append(f"[_k{len(args)}]")
                args.append(i)
        if T.is_matrix(t):
            return f"{expr}.data{''.join(subs)}", t._dtype
        if T.is_quat(t):
            return f"(&{expr}.x){subs[0]}", t._dtype
        return f"{expr}.c{subs[0]}", t._dtype
