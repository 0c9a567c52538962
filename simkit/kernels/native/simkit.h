// Umbrella header included by every generated module.
#pragma once
#include "core.h"
#include "error.h"
#include "scalar.h"
#include "vec.h"
#include "mat.h"
#include "quat.h"
#include "transform.h"
#include "spatial.h"
#include "array.h"
#include "fixed_array.h"
#include "atomic.h"
#include "slots.h"
#include "rand.h"
#include "utility.h"
#include "stack.h"
#include "bfloat16.h"
#include "warp_names.h"  // (namespace wp: Warp's names for snippets written for Warp)
