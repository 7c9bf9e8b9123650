/* arrayc/arrayc.h: umbrella header of the arrayc library.
 *
 *   core.h     contexts, errors, status codes, scalar kinds
 *   module.h   modules: parse, verify, print
 *   builder.h  the C embedding API (graphs of values, sharing recovery)
 *   runtime.h  arrays, flattened values, functions and calls
 */
#ifndef ARRAYC_ARRAYC_H
#define ARRAYC_ARRAYC_H

#include "arrayc/core.h"
#include "arrayc/module.h"
#include "arrayc/builder.h"
#include "arrayc/runtime.h"

#define ARRAYC_VERSION_MAJOR 0
#define ARRAYC_VERSION_MINOR 1
#define ARRAYC_VERSION_PATCH 0
#define ARRAYC_VERSION_STRING "0.1.0"

#endif
