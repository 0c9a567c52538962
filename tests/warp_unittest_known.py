"""Which of warp-lang's unit-test files run under simkit (tests/test_warp_unittests*.py), and the tests
in them that do not pass, each with the reason.

A key of ``KNOWN[file]`` matches every test method whose name contains it. Reasons say what simkit
lacks or does differently; a test of Warp's internals (its ``Kernel.adj``, ``Module`` methods, codegen
exception classes, source rewriting) is listed as such. Every key must still match a test, so the list
shrinks as the tests are fixed or renamed.
"""
import os

WARP_WRONG_GRAD = ("Warp's expected gradient keeps the adjoint of a matrix entry that a later slice assignment "
                   "overwrote (z[0, :2] = x; z[:2, 1:] = y: x[1] has no influence); simkit's gradient is what "
                   "central finite differences give (tests/test_tape_inplace.py)")
INTERNALS = "tests Warp's internals (Kernel.adj, Module methods, codegen exception classes)"
STRICT_CTOR = ("typed constructors refusing a variable of another precision (vec3d(a_float32)); "
               "simkit converts it")
PY_INT_POW = "int ** int between simkit's integer scalars (numpy scalars) does not raise TypeError"
MOD_GRAD = ("the adjoint of x % y with respect to y: simkit's is -trunc(x / y), what central finite "
            "differences give; Warp's test expects 0")
WARP_STREAMS = ("compares with images of Warp's noise: simkit's lattice hash differs (streams need not match "
                "Warp's bit for bit, ../shared/LANGUAGE.md)")
SCALAR_VALUE = "simkit's scalar values are numpy scalars (no ctypes .value)"
VALUE_NAME = "Warp's own names in messages (vec3f; simkit says vec3)"
NATIVE_QUIET = "silences errors through Warp's native runtime (runtime.core, None under simkit)"
USER_OPERATOR = ("a @func named add / sub in the kernel's module does not replace + and - between float32 values "
                 "(simkit takes user operators for structs)")
KERNEL_NAME = "Warp-only kernel options (kernel(name=...), entry_point_abi)"
WARP_ONLY_OPTION = "Warp-only options (deterministic modes, cuda_max_registers, enable_cuda_smem_spilling)"
DET_ORDERED = ("Warp's WarpDeterminismError for reading or writing a target of deterministic atomics in the same "
               "kernel (its records are added after the kernel); simkit's ordered launches give such accesses their "
               "sequential meaning (kernels/deterministic.py)")
DET_SLOTS = ("Warp's WarpDeterminismError and wording; simkit refuses this backward pass too, in every mode, with a "
             "TapeError naming the line (tests/test_atomic_results_backward.py)")
DET_RECORDS = "Warp's record-and-sort internals of deterministic atomics (Module.resolve_options, its native sources)"
SIBLINGS = ("by design: a kernel that fails to build fails alone (its module's other kernels build and run); "
            "Warp fails the module")
REF_TAPE = ("refused on a Tape: a ref argument that is an array element is read (copy in), written (copy out) "
            "and read again, which the adjoint cannot replay (TapeError)")
REF_GRAD = ("by design: simkit differentiates @func ref[T] parameters exactly (copy in, copy out) where Warp refuses "
            "them in kernels with a backward pass")
TILES = "tiles (wp.launch_tiled, tile_* builtins; out of scope, ../shared/LANGUAGE.md)"
EXTENT_2_31 = ("launch extents of 2**31 and more in a dimension: simkit's launch bounds hold int32 extents (2**31 - 1 "
               "at most, a 1D launch excepted); Warp's bounds objects (.size, .shape, .coord_mult) and wording")

KNOWN = {
    "test_func_inline": {
        "codegen_emits_inline_attrs": INTERNALS + " (Function.module, Warp's WP_FORCEINLINE; simkit: "
                                      "tests/test_func_inline_hint.py)",
        "inline_attr_applied_to": INTERNALS, "inline_macros_defined_in_builtin_header": INTERNALS + " (builtin.h)",
        "native_snippet_codegen_unaffected": INTERNALS,
    },
    "test_factory_style_array_annotations": {
        "annotation_metadata": INTERNALS + " (warp._src.types.array_type_id of simkit's types)",
        "geometry_array_metadata": INTERNALS, "struct_element_metadata": INTERNALS,
        "vector_matrix_quaternion_transform_array_metadata": INTERNALS,
        "indexedarray_struct_metadata": INTERNALS + " (a struct's .vars)",
        "any_metadata": "array(dtype=Any).dtype is simkit's generic marker, not typing.Any",
        "func_return_annotation_error": "Warp's wording (simkit: \"@func 'f' is annotated to return array(dtype=int32, "
                                        "ndim=2) but this returns fixedarray(...)\", at the return's line)",
        "noncontiguous_array_metadata": "Fabric arrays (wp.fabricarray)", "texture_array_metadata": "textures",
    },
    "test_compile_consts": {
        "captured_value_unknown_attribute": "a CompileError naming the value and the attribute (Warp: AttributeError "
                                            "and its wording)",
        "hash_redefine_constant_only": INTERNALS + " (Module.hash_module)", "hash_redefine_kernel": INTERNALS,
        "hash_shadowed_var": INTERNALS, "negative_constant_codegen": INTERNALS,
    },
    "test_modules_lite": {
        "load_no_warp_content": "load_module of an imported module without kernels does nothing (Warp raises)",
        "load_nonexistent": "Warp's wording (simkit: \"module '...' does not contain any kernels, functions or "
                            "structs (no module of that name is imported)\")",
    },
    "test_logger": {
        "cuda_build_honors_debug_log_level": INTERNALS + " (warp._src.build.build_cuda)",
        "from_ptr_deprecation_warning": "wp.from_ptr (deprecated in Warp; simkit has sk.array(ptr=...))",
    },
    "deterministic.test_deterministic_scatter": {"scatter_target_access_rejected": DET_ORDERED},
    "deterministic.test_deterministic_counter": {"counter_target_access_rejected": DET_ORDERED},
    "deterministic.test_deterministic_backward": {
        "counter_store_rejected": DET_SLOTS, "custom_adjoint_consumed_counter_rejected": DET_SLOTS,
        "overlapping_arguments_backward_rejected": "simkit's tape refuses, when it is recorded, a launch that "
                                                   "overwrites an array another argument reads (the same memory)",
    },
    "deterministic.test_deterministic_options": {
        "config_deterministic_max_records_default": DET_RECORDS, "deterministic_mode_validation": DET_RECORDS,
        "metadata_refresh_struct_tile_stack": DET_RECORDS, "run_sort_reduce_uses_emitted_record_count": DET_RECORDS,
        "scatter_capacity_overflow_rejected": DET_RECORDS, "deterministic_enum_parity": DET_RECORDS,
        "cpu_cache_hit_refreshes": "runs Warp's test module in a subprocess (run_python_subprocess)",
    },
    "test_arithmetic": {"test_binary_ops_": MOD_GRAD},
    "test_quat": {},
    "matrix.test_mat": {
        "slicing_assign_backward": WARP_WRONG_GRAD,
        "test_shape_mismatch": "expect_neq between values of different shapes (a compile error in simkit)",
    },
    "test_vec": {
        "assign_inplace_errors": "Warp's errors for a float64 value assigned into a float32 vector's slice",
        "test_length_mismatch": "expect_neq between values of different lengths (a compile error in simkit)",
    },
    "test_operators": {},
    "test_bool": {"typing": "vectors and matrices of bool"},
    "test_atomic_cas": {},
    "test_conditional": {
        "branch_local_merge_codegen": INTERNALS,
        "conditional_unequal_types": "simkit refuses x == y == z of int and bool with a CompileError, not a "
                                     "TypeError (and the test then edits Warp's module registry)",
    },
    "test_constant_precision": {
        "rejects_": STRICT_CTOR,
    },
    "test_generics": {
        "custom_named_overload_stub": "kernel(name=...)",
        "eager_generic_func_does_not_retain_array": INTERNALS,
        "type_attribute_error": "Warp's error (an AttributeError naming Warp's float32 class)",
        "overload_stub_return_annotation": "a return annotation on an @overload stub is not refused",
        "type_operator_misspell": "Warp's wording of the error",
    },
    "test_func": {
        "cpython_call_user_function_with_error": "a @func called from Python runs compiled: 1 / 0 gives inf",
        "cpython_call_user_function_with_wrong_argument_types": "float32 arguments are not converted to float64",
        "func_decorator_has_overloads": "typing overloads of the decorator (for static type checkers)",
        "native_function_error_resolution": "Warp's wording of the error (simkit: a TypeError naming the operator)",
    },
    "test_lvalue": {
        "swizzle_error_invalid_attribute": VALUE_NAME,
    },
    "test_codegen_continue": {
        "unrolling_policy": INTERNALS,
    },
    "test_enum": {},
    "test_bit_count": {
        "test_python_scope": "bit_count from Python of a value that overflows its type",
        "unsupported_types": "Warp's wording of the error",
    },
    "test_fp16": {},
    "test_quat_assign_copy": {},
    "matrix.test_mat_assign_copy": {},
    "geometry.test_grouped_bvh": {
        "bvh_new_del": "calls Bvh.__del__ on an instance made without __init__ (Warp's object lifetime)",
    },
    "geometry.test_bvh": {
        "bvh_query_aabb_tiled": TILES, "bvh_query_ray_tiled": TILES, "tile_bvh_query_": TILES,
        "bvh_new_del": "calls Bvh.__del__ on an instance made without __init__ (Warp's object lifetime)",
        "sah_depth_fits_query_stack": "reads Warp's native BVH header (node_parents, max_depth) through ctypes",
    },
    "geometry.test_mesh": {
        "mesh_new_del": "calls Mesh.__del__ on an instance made without __init__ (Warp's object lifetime)",
        "raises_on_native": "injects failures into Warp's native library (wp._src.context.runtime.core)",
    },
    "geometry.test_mesh_query_aabb": {"tile_mesh_query_aabb": TILES, "mesh_query_aabb_tiled": TILES},
    "geometry.test_mesh_query_point": {}, "geometry.test_mesh_query_ray": {},
    "geometry.test_swept_volume": {}, "geometry.test_delaunay": {}, "geometry.test_sparse_marching_cubes": {},
    "geometry.test_surface_nets": {
        "matches_reference_replica": "pins the SHA-256 of OpenVDB's transcribed tables; simkit derives its tables "
                                     "(the same sheets per cell, numbered by their lowest edge; the rest of this "
                                     "test's replica agrees: tests/test_surface_nets.py)",
    },
    "geometry.test_marching_cubes": {
        "deprecated_top_level_alias": ("wp.MarchingCubes is a core class of simkit (LANGUAGE.md), the same class "
                                       "as wp.geometry.IsoSurfaceMarchingCubes: no deprecation warning"),
    },
    "geometry.test_hash_grid": {
        "query_public_type_surface": "Warp's internals (wp._src.types.hash_grid_query_type, wp._src.context.type_str)",
        "saveable_capture_unsupported": "Warp's saveable (apic) graph capture and its wording of the error",
    },
    "matrix.test_mat_basics": {}, "matrix.test_mat_elementwise_ops": {}, "matrix.test_mat_linalg": {},
    "matrix.test_mat_constructors": {
        "anon_constructor_error_invalid_arg_count": "Warp's wording and class of the error (simkit: a CompileError)",
        "anon_constructor_error_shape_": "Warp's wording and class of the errors (simkit: a CompileError)",
        "anon_constructor_error_type_mismatch": STRICT_CTOR,
        "tpl_constructor_error_": "Warp's wording and class of the errors (simkit: a CompileError)",
    },
    "matrix.test_mat_lite": {}, "test_vec_lite": {},
    "test_scalar_ops": {"test_py_pow_ops_": PY_INT_POW},
    "test_vec_scalar_ops": {},
    "test_spatial": {
        "copy_dtype_mismatch": STRICT_CTOR,
        "invalid_kernel_arity": "Warp's wording of the error",
    },
    "test_array": {
        "4d_array_transposed": INTERNALS, "alloc_strides": INTERNALS, "array_aliasing_from_numpy": INTERNALS,
        "array_inplace_non_diff_ops": INTERNALS, "array_new_del": INTERNALS, "array_of_structs_cpu": INTERNALS,
        "numpy_array_interface_empty": "the strides an empty array reports through __array_interface__",
        "retain_grad_slice_view_store": ("a slice taken inside a kernel of a retain_grad array keeps its "
                                         "gradient in simkit; Warp's in-kernel view drops retain_grad"),
        "runtime_zero_step": "runs Warp's subprocess helpers (run_python_subprocess)",
        "literal_zero_step_slice": "Warp's exception class (WarpCodegenValueError); simkit raises a CompileError",
        "test_reshape_cpu": "a bad reshape raises ValueError (numpy's); Warp raises RuntimeError",
        "empty_array": "an empty array's ptr is 0, not None",
        "fill_scalar": SCALAR_VALUE, "full_matrix": INTERNALS, "full_vector": INTERNALS,
        "to_list_matrix": "list() gives simkit's values, not ctypes arrays",
        "to_list_vector": "list() gives simkit's values, not ctypes arrays",
        "to_list_struct": "array fields of struct elements read back in Python are None",
        "test_view_cpu": VALUE_NAME,
    },
    "test_tape": {
        "copy_adjoint_fallback_warning": "Warp's warning for a self-overlapping copy (simkit's adjoint is exact)",
        "copy_adjoint_out_of_scope": ("an overlapping copy's adjoint: simkit gives the analytic gradient, where "
                                      "Warp keeps the gradient in place"),
    },
    "test_unpack": {"non_constant_bounds": "Warp's wording of the error"},
    "test_tuple": {},
    "test_overwrite": {"test_atomic_operations": INTERNALS},
    "test_template_launch_bounds": {
        # (passing: 1-4D launches, tid() arities other than the launch's (leading indices, padding), aliased tid)
        "test_tiled": TILES, "launch_rejects_negative_dim": TILES + " (launch_tiled's half; launch's passes)",
        "aliased_scalar_tid_rejects_oversized": INTERNALS + " (Module.get_module_hash)",
        "aliased_tid_in_user_function": INTERNALS + " (Module.get_module_hash)",
        "aliased_tuple_tid_coordinates_and_limits": EXTENT_2_31,
        "scalar_tid_empty_dim_uses_padded_extent": INTERNALS + " (Module.get_module_hash)",
        "small_launch_skips_exact_tid_resolution": INTERNALS + " (Module.get_module_hash)",
        "launch_normalizes_dim_once": INTERNALS + " (context._canonicalize_dim)",
        "accepts_oversized": EXTENT_2_31, "rejects_oversized": EXTENT_2_31, "accepts_max_extent": EXTENT_2_31,
        "set_dim_validates": EXTENT_2_31, "validates_first_dimension": EXTENT_2_31,
        "validates_every_dimension": EXTENT_2_31, "accepts_large_total_with_safe_extents": EXTENT_2_31,
        "set_dim_accepts_compile_time_dead_scalar_tid": EXTENT_2_31, "mixed_tid_arities_reject_oversized": EXTENT_2_31,
    },
    "test_launch": {
        "cmd_composite_defaults": INTERNALS + " (cmd.kernel.adj.args; the zero composite defaults it checks first "
                                              "pass)",
        "cmd_set_ctype": "Warp's ctypes internals (struct/array __ctype__())",
        "numpy_and_boolean_scalar_to_composite_param_deprecated": (
            "numpy scalars and bools for a composite parameter: simkit refuses them (Warp still takes numpy ones, "
            "with a deprecation warning)"),
    },
    "test_large": {} if os.environ.get("SIMKIT_WARP_TESTS") == "all" else {
        "test_large_arrays": "2.6 min and 2.2 GB on 2 cores: runs with SIMKIT_WARP_TESTS=all (launches of more "
                             "than 2**31 threads: tests/test_cpu_large_launch.py)",
    },
    "test_rand": {"test_rand_": "compares Warp's random streams bit for bit (streams need not match, LANGUAGE.md)",
                  "test_randn": "compares Warp's random streams bit for bit (streams need not match, LANGUAGE.md)"},
    "test_atomic_bitwise": {},
    "test_codegen": {
        "array_slot_augassign_uses_user_operator": USER_OPERATOR,
        "overloaded_slot_update_backward_rejected": USER_OPERATOR,
        "assign_static_function_to_local": INTERNALS,
        "rebind_observed_through_shared_source": INTERNALS,
        "shared_source_across_redeclarations": INTERNALS,
        "replace_static_expressions": INTERNALS,
        "recompiled_equal_code_object_reextracts": "writes a module that imports warp itself (not rewritten)",
        "is_tid_call_requires_warp_receiver": INTERNALS,
        "direct_tid_reference_scan_avoids_fallback_scans": INTERNALS,
        "namespaced_tid_call_sets_kernel_dim": INTERNALS,
        "max_unroll_uses_range_trip_count": INTERNALS,
        "empty_constant_loop_does_not_hide_outer_mutation": INTERNALS,
        "module_enable_backward_controls_function_adjoint_codegen": INTERNALS,
        "module_build_options": INTERNALS, "extra_cpu_preamble": INTERNALS, "extra_cuda_preamble": INTERNALS,
        "include_dirs": INTERNALS, "line_directive": INTERNALS, "grid_stride_precedence": INTERNALS,
        "entry_point_abi": KERNEL_NAME, "external_constant_params": KERNEL_NAME, "kernel_name": KERNEL_NAME,
        "error_collection_construct": "a list literal in a kernel is taken as a tuple (Warp refuses it)",
        "error_global_var": "Warp's error class and wording (simkit: a CompileError, 'cannot index array(...) in a "
                            "kernel')",
        "error_return_annotation_mismatch": "Warp's wording of the error (simkit checks the annotation too)",
        "error_unmatched_arguments": "Warp's error class and wording (simkit: a CompileTypeError naming the operator)",
        "invalid_namespace_path": "Warp's error class (AttributeError; simkit: a CompileError naming the attribute)",
        "error_kernel_return": "the same error class and rule; Warp's message starts with 'Warp kernels'",
        "error_generic_kernel_return": "the same error class and rule; Warp's message starts with 'Warp kernels'",
        "error_mutating_constant_in_dynamic_loop": "simkit carries a value reassigned in a dynamic loop correctly "
                                                   "(s = 0.0; for i in range(n): s += a[i]), where Warp refuses it",
        "rebind_function_local": "simkit follows Python's order when a function-valued local is rebound outside "
                                 "loops (inside a dynamic loop it is an error)",
        "rebind_gradwrapper_local": "simkit follows Python's rebinding of a grad() callable",
        "unresolved_func": "a CompileError, not Warp's AttributeError and wording",
        "unresolved_symbol": "Warp's wording ('Referencing undefined symbol')",
        "multiple_return_values": "svd3 in float32 differs from Warp's in the 6th decimal (assertAlmostEqual places=5)",
    },
    "test_static": {
        "invalid_static_expression": "Warp's wording of the error",
        "static_expression_return_types": "an unused static() of an array is not refused",
        "nested_static_single_evaluation": INTERNALS + " (evaluated once, then reads k.adj)",
        "static_deferred_outer_resolvable_inner": INTERNALS + " (semantics: tests/test_static_exprs.py)",
        "static_failure_divergence_on_shared_tree": INTERNALS + " (simkit reports the error when it builds)",
        "static_for_loop": INTERNALS + " (the results are right, then hasattr(kernel.adj, ...))",
        "static_if_else_elif": INTERNALS + " (the results are right, then hasattr(kernel.adj, ...))",
        "static_function_hash": INTERNALS, "static_builtin_function_hash": INTERNALS,
        "static_constant_hash": INTERNALS, "static_transformer": INTERNALS,
        "static_function_in_while_after_unrolled_loop": INTERNALS, "static_unary_minus_literal_fold": INTERNALS,
        "static_loop_bound_emits_no_dead_constant": INTERNALS,
    },
    "test_assert": {
        "TestAssertDebug": "starts a subprocess importing the rewritten test module (not importable there) and "
                           "expects SIGABRT; simkit raises a RuntimeError naming the line",
        "TestAssertModeSwitch": "starts a subprocess importing the rewritten test module (not importable there) "
                                "and expects SIGABRT; simkit raises a RuntimeError naming the line",
        "TestAssertRelease": "its setUpClass saves the per-module option 'mode' and config.cache_kernels (simkit's build "
                             "mode is config.mode, for every module; kernels are always cached)",
    },
    "test_types": {
        "test_vector_error_invalid_arg_count": "Warp's wording (simkit: 'vec3 needs 3 values, got 2')",
        "test_matrix_error_invalid_arg_count": "Warp's wording (simkit: 'mat22 needs 4 values, got 3')",
        "test_matrix_error_invalid_set_row_index": "Warp's wording (simkit: 'row 2 out of range for mat22')",
        "test_numpy_dtype_metadata": "simkit's scalar values are numpy scalars (they have .dtype); np.dtype(bfloat16) "
                                     "and dtype_to_numpy(bfloat16) are ml_dtypes.bfloat16 (Warp: object / uint16)",
        "test_numpy_dtype_scalar_inference": "simkit's scalar values are numpy scalars (np.asarray gives their "
                                             "dtype, not object)",
        "test_constant": SCALAR_VALUE,
        "test_composite_types_repr": "Warp's repr (vec3f([...]), float64(...) items; simkit: vec3(1.0, 2.0, 3.0))",
        "test_introspection": "wp.types.is_int / is_scalar ... take types in simkit; Warp's take instances",
        "test_legacy_scalar_return_types": "wp.config.legacy_scalar_return_types",
        "test_tuple_type_code_generation": INTERNALS,
        "test_types_equal_generic": INTERNALS,
    },
    "test_coloring": {
        "balance_native_rejects_negative_max_iterations": NATIVE_QUIET,
        "balance_native_rejects_negative_num_nodes": "runs Warp's native entry in a subprocess (run_python_subprocess)",
        "balance_terminates_equal_ratio_cycle": "a subprocess importing warp.tests.test_coloring "
                                                "(run_python_subprocess); simkit gives the expected [1, 2, 4], ratio 4",
        "native_failures_replace_error_string": INTERNALS,
        "native_rejects_invalid_edge_shapes": INTERNALS,
        "balance_zero_iterations_preserves_coloring": "expects Warp's logger text on stderr ('Warp UserWarning: ...'); "
                                                      "simkit warns with a UserWarning of the same message",
    },
    "test_bf16": {
        "test_bf16_math_builtins": "wp.div_approx (no such simkit builtin)",
        "test_dtype_from_numpy": "imports Warp's own dtype_from_numpy from warp._src.types (returns warp.bfloat16)",
    },
    "test_atomic": {
        "test_atomic_add_unsupported_dtypes": "simkit's atomic_add also takes 8/16-bit integer arrays; Warp refuses",
        "test_atomic_min_unsupported_dtypes": "simkit's atomic_min also takes 8/16-bit integers and float16; Warp "
                                              "refuses",
        "test_atomic_max_unsupported_dtypes": "simkit's atomic_max also takes 8/16-bit integers and float16; Warp "
                                              "refuses",
    },
    "test_codegen_instancing": {
        "create_kernel_loop_hooks_bounded": INTERNALS + " (Module.execs; identical kernels are reused, never reloaded)",
        "garbage_collection": INTERNALS + " (Module.load(device=); simkit's modules hold kernels weakly)",
    },
    "test_unique_module": {
        "global_deterministic_captured": "config.deterministic is read at each launch (so it also applies to modules "
                                         "made before it was set, such as simkit's solvers); Warp captures it when a "
                                         "module is made (and Module.get_module_hash)",
        "generic_kernel_options_disambiguation": WARP_ONLY_OPTION,
        "module_options_multiple_keys": "'mode' is global in simkit (config.mode), not a module option",
        "generic_multiple_overloads": INTERNALS, "reuse_does_not_retain_temporary_dependents": INTERNALS,
    },
    "test_module_contamination": {
        "launch_releases_failed_kernel": "a[i] = None raises a CompileError (Warp: CodegenTypeError), and the kept "
                                         "traceback holds the kernel",
        "load_module_releases_failed_kernel": "a[i] = None raises a CompileError (Warp: CodegenTypeError), and the "
                                              "kept traceback holds the kernel",
        "launch_tiled_releases_failed_kernel": TILES,
        "native_failure_fails_the_module": SIBLINGS, "validation_failure_fails_the_module": SIBLINGS,
        "validation_failure_names_the_annotation": "Warp's wording of the return-annotation error",
        "validation_failure_repeats_on_relaunch": "Warp's wording (the error does repeat)",
        "redefinition_recovers_failed_module": "a[i] = None raises a CompileError, not a CompileTypeError (recovery "
                                               "works: tests/test_module_recovery.py)",
    },
    "test_module_variants": {
        "deferred_helper_variant_symbols": INTERNALS, "retained_executable_late_alias": INTERNALS,
        "unique_helper_static_evaluation_timing": "Warp-only config.cache_kernels",
    },
    "test_reload": {"reference_through_local": INTERNALS},
    "test_ref": {
        "native_ref_param_adjoint_array_2d_direct": REF_TAPE, "native_ref_param_adjoint_array_slice": REF_TAPE,
        "native_ref_param_adjoint_array_nested_slice": REF_TAPE,
        "native_ref_param_adjoint_struct_array_components": REF_TAPE,
        "native_ref_param_adjoint_nested_struct_array_field": REF_TAPE,
        "ref_augassign_user_operator_result_type_checked": INTERNALS + " (Function.func) and a @func 'add' "
                                                             "replacing + between floats",
        "ref_backward_enabled_kernel_raises": REF_GRAD, "ref_shared_helper_backward_raises": REF_GRAD,
    },
    "test_kernel_cache": {},
    "test_sanitize": {},
    "test_verify_fp": {"test_nan": "verify_fp reports through Python's warnings (NonFiniteWarning, stderr), not "
                                   "printf from the kernel (stdout)",
                       "composite_slot_overflow": "verify_fp reports through Python's warnings (NonFiniteWarning, "
                                                  "stderr), not printf from the kernel (stdout)"},
    "test_snippet": {},
    "test_implicit_init": {},
    "test_devices": {
        "unmap_": "wp.map_cuda_device / unmap_cuda_device (aliases for external CUDA contexts)",
        "verify_cuda_device": INTERNALS,
    },
    "test_compilation": {"linker": "config.legacy_cpu_linker (Warp's LLVM linker; simkit links with the system "
                                   "compiler)"},
    "test_print": {
        "print_adjoint": ("printing in the backward pass: simkit's adjoint replay has no side effects "
                          "(docs/autodiff.md), so print has no 'adj:' output"),
        "print_numeric": ("a @func called from Python asserts repr(wp.int8(-1)) == 'int8(-1)': simkit runs such "
                          "calls compiled, and its Python scalars are numpy's"),
    },
    "test_math": {}, "test_lerp": {}, "test_smoothstep": {}, "test_rounding": {}, "test_intersect": {},
    "test_iter": {}, "test_closest_point_edge_edge": {}, "test_triangle_closest_point": {},
    "test_future_annotations": {},
    "test_snippet": {}, "test_vec_assign_copy": {}, "test_spatial_assign_copy": {}, "test_special_values": {},
    "test_grad": {},
    "test_grad_customs": {"tile_matmul": "tiles (wp.launch_tiled, wp.tile_*)"},
    "test_copy": {"copy_offset_unsupported": "Warp's wording of an error ('indexed or Fabric arrays')"},
    "test_vec_constructors": {
        "anon_constructor_error_length": "Warp's wording of the errors", "numeric_arg_missing": "Warp's wording",
        "incompatible_sizes": "Warp's wording of the error",
        "numeric_args_mismatch": STRICT_CTOR + " (and vector(1.0, 2) takes the 2 as a float)",
    },
    "test_noise": {
        "test_pnoise": WARP_STREAMS, "test_curlnoise_cpu": WARP_STREAMS,
        "autodiff_reimpl": "re-implements Warp's noise lattice in a kernel (simkit's lattice hash differs)",
    },
    "test_struct": {
        "assign_view": "Warp's wording of the error", "struct_attribute_error": "Warp's error class (AttributeError)",
        "nested_struct": INTERNALS, "gc_replacement_clears_grad_keepalive": INTERNALS, "struct_array_hash": INTERNALS,
        "array_field_assignment_validation": "Warp's wording of the errors",
        "inheritance_error": "Warp's wording of the error",
        "scalar_to_composite_field_deprecated": ("numpy scalars and bools assigned to a vector field: simkit refuses "
                                                 "them (Warp still takes them, with a deprecation warning)"),
        "scalar_to_composite_field_rejected": VALUE_NAME,
    },
    "test_indexedarray": {"fill_scalar": SCALAR_VALUE,
                          "in_struct_numpy": "Warp's form of a struct's numpy dtype (a dict)"},
    "test_adam": {}, "test_sgd": {},
    "test_array_reduce": {}, "test_runlength_encode": {},
    "test_utils": {
        "segmented_sort_pairs_invalid_": NATIVE_QUIET,
        "segmented_sort_pairs_cpu_error_preserves_inputs": NATIVE_QUIET,
        "create_warp_function": "Warp's wp.map internals (wp.utils.create_warp_function, a subprocess importing warp)",
        "mesh_adjacency": INTERNALS + " (wp._src.utils.MeshAdjacency)",
    },
    "test_diagnostics": {"init_banner_at_debug_log_level": "runs warp-lang itself in a subprocess (a script importing "
                                                           "warp, which the rewriting does not reach)"},
    "interop.test_torch": {"apic_storage_alias": "Warp's saveable (apic) graph capture"},
    "interop.test_dlpack": {
        "test_dlpack_incompatible_dtype_error": "Warp's wording (simkit raises the same classes: 'bool data does not "
                                                "match element type float32; converting would copy')",
        "test_dlpack_unsupported_source_device_error": "Warp's wording (simkit refuses the device before calling "
                                                       "__dlpack__, with a TypeError/BufferError of its own words)",
        "test_invalid_capsule_error": "Warp's wording (simkit: '__dlpack__ must return a DLPack capsule, got object')",
        "test_dlpack_stream_arg": "calls Warp's internal wp._src.dlpack._from_dlpack (simkit checks the same stream "
                                  "arguments, in its own words)",
    },
    "interop.test_jax": {
        "test_jax_kernel_scalar_ffi": "passes, but compiles a generic kernel for every scalar type through JAX (about "
                                      "50 s of CI): Kernel.add_overload is tested in tests/test_generic_overloads.py",
        "test_jax_kernel_vecmat_ffi": "passes, but compiles a generic kernel for every vector and matrix type (about "
                                      "50 s of CI): Kernel.add_overload is tested in tests/test_generic_overloads.py",
        "test_ffi_jax_kernel_block_dim_autodiff_cpu_blocks": "Warp's wp.config.enable_cpu_blocks (several threads per "
                                                             "block on the CPU)",
        "test_ffi_jax_kernel_block_dim_tile": TILES,
        "test_ffi_jax_kernel_cpu_shaped_tile_store": TILES,
        "test_ffi_jax_kernel_rejects_oversized": "Warp's exact error wording ('Warp cannot launch a kernel using "
                                                 "wp.tid() ...'); simkit raises the ValueError while tracing, in its "
                                                 "own words (tests/test_interop_jax_ffi.py)",
        "test_ffi_jax_kernel_validates_all_target_block_dims": "tests Warp's internals (patches warp._src.context."
                                                               "_build_kernel_launch_bounds and counts Warp's calls)",
        "test_ffi_jax_module_load_failure": "Warp's Module.load(device, block_dim) returning an executable or None; "
                                            "simkit's Module.load compiles a kernel spec and raises on failure",
        "test_ffi_module_preload_all_devices_block_dim": "tests Warp's own _preload_ffi_module with "
                                                         "wp.config.enable_cpu_blocks, which simkit's config lacks",
    },
    "test_composite_component_adjoint": {
        "test_array_composite_slot_multiply_assign_backward_rejected": (
            "by design: simkit differentiates arr[i].x *= v exactly (read, multiply, store the part; "
            "tests/test_component_adjoints.py) where Warp refuses it with a backward pass"),
        "test_composite_slot_type_mismatch_reports_error": (
            "Warp's wording (simkit: \"cannot assign a vec3 value to 'y[i].y', which is a float32\")"),
        "test_slot_write_rejects_non_integer_array_index": (
            INTERNALS + "; Module.load(device=) and Warp's wording (simkit: 'index 0 is float32; indices must be "
            "integers')"),
    },
    "test_ctypes": {},
    # CUDA-only files: their CPU tests run here; with a GPU present, all of them (tests/warp_unittests_gpu.py runs
    # their CUDA tests on the emulated GPU otherwise)
    "cuda.test_streams": {}, "cuda.test_pinned": {},
    "cuda.test_array_fill_capture": {"oversized_value_fallback": INTERNALS + " (a struct's __ctype__)"},
    "cuda.test_conditional_captures": {}, "cuda.test_capture_mode": {}, "cuda.test_capture_release": {},
    "cuda.test_peer": {},
    "deterministic.test_deterministic_graph_capture": {},
    "cuda.test_mempool": {"graph_capture_allocation_capability": INTERNALS + " (warp._src.context)"},
    "test_graph": {
        "graph_memory_bindings": INTERNALS + " (runtime.core's ctypes signatures)",
        "_cpu_rejected": ("Warp refuses non-contiguous and indexed fills and copies in a CPU capture "
                          "(NotImplementedError); simkit's CPU capture records them (tests/test_capture_conditional.py)"),
    },
    "test_fast_math": {
        "test_approx_div_ptx_verification": ("reads the PTX of Warp's Module._compile for div.approx / rcp.approx; "
                                             "simkit's div_approx is exact (CUDA only)"),
    },
    "test_func_parameter_targets": {
        "affects_module_hash": INTERNALS + " (Module.hash_module, Function.defaults / get_overload)",
        "updates_module_dependents": INTERNALS + " (Module.references, Function.module)",
        "update_dependents": INTERNALS + " (Module.references, Function.module)",
        "python_scope": ("a @func taking a Function called from Python with a lambda: simkit runs such calls "
                         "compiled, so it takes @funcs and builtins only"),
        "wrong_return_annotation_reports_error": "Warp's wording of the error",
    },
    "test_grad_debug": {},
    "test_fixedarray": {"invalid_func_return_annotation": "Warp's wording of the error"},
    "test_map": {
        "input_validity": "Warp's wording of errors (its mangled function names, 'warp.array')",
        "output_validity": "Warp's wording of an error ('Warp arrays')",
    },
}


# Each group of files is one test file, tests/test_warp_unittests_<group>.py, so that pytest-xdist's
# --dist loadfile spreads them over its workers; a file named in no group runs in tests/test_warp_unittests.py.
GROUPS = {
    "matrix": lambda name: name.startswith("matrix."),
    "math": lambda name: name in {"test_arithmetic", "test_spatial", "test_grad", "test_quat", "test_scalar_ops",
                                  "test_vec", "test_vec_scalar_ops"},
    "interop": lambda name: name.startswith("interop."),
    "geometry": lambda name: name.startswith("geometry.") or name in {
        "test_closest_point_edge_edge", "test_triangle_closest_point", "test_intersect"},
}


# The slowest files (about fifteen minutes of CI's compile and NVRTC time between them, most of it matrix.test_mat's
# one large module; their ground is also covered by tests/test_builtins_*.py and tests/test_grad_builtins.py) run
# only with SIMKIT_WARP_TESTS=all.
SLOW = {"test_arithmetic", "test_spatial", "test_grad", "matrix.test_mat"}


def files(group: str | None) -> list:
    """The files of ``group`` (None: the files of no group), sorted; without SIMKIT_WARP_TESTS=all, not the SLOW."""
    def group_of(name):
        return next((g for g, member in GROUPS.items() if member(name)), None)
    run_slow = os.environ.get("SIMKIT_WARP_TESTS") == "all"
    return sorted(name for name in KNOWN if group_of(name) == group and (run_slow or name not in SLOW))
