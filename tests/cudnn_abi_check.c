/* cudnn_abi_check.c: compiled (never run) by tests/cudnn.sh next to a real cuDNN header: every
 * value and prototype vendors/cudnn/cudnn_abi.h declares must equal cuDNN's own. */
#include <cudnn_backend.h>

#define FBDNN_ABI_LISTS_ONLY
#define FBDNN_ENUM(type) type
#include "cudnn/cudnn_abi.h"

#if CUDNN_MAJOR < 9
#error "cudnn_abi.h describes cuDNN 9; this header is older"
#endif

/* each enumerator's value */
#define CHECK_VALUE(name, value) _Static_assert((long long)(name) == (value), #name " is not " #value " in cuDNN's header");
#define CHECK_LIST(list, type) list(CHECK_VALUE)
FBDNN_ENUM_TYPES(CHECK_LIST)
#if CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 >= 90800
FBDNN_ENUM_TYPES_98(CHECK_LIST)
#endif

/* each enum type travels as an int */
#define CHECK_SIZE(list, type) _Static_assert(sizeof(type) == sizeof(int), #type " is not int-sized");
FBDNN_ENUM_TYPES(CHECK_SIZE)

/* each prototype, parameter by parameter (_Generic matches compatible types only) */
#define CHECK_FN(fn, ret, params, req) \
    _Static_assert(_Generic(&fn, fbdnn_##fn##_fn: 1, default: 0), #fn "'s prototype differs from cuDNN's header");
FBDNN_FUNC_LIST(CHECK_FN)

/* the handle and stream types are cuDNN's and CUDA's own */
_Static_assert(_Generic((cudnnHandle_t)0, fbdnn_handle: 1, default: 0), "cudnnHandle_t");
_Static_assert(_Generic((cudaStream_t)0, struct CUstream_st *: 1, default: 0), "cudaStream_t");
_Static_assert(_Generic((cudnnBackendDescriptor_t)0, fbdnn_desc: 1, default: 0), "cudnnBackendDescriptor_t");
