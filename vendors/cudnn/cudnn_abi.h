/* cudnn_abi.h: the part of cuDNN 9's C ABI (cudnn_graph.h: the backend graph API) that the
 * cuDNN vendor uses, declared here so that building needs no cuDNN or CUDA header. The values
 * are lists (X-macros), so tests/cudnn.sh can check every one, and every prototype, against a
 * real cudnn_backend.h with _Static_assert wherever one is installed.
 *
 * Including this file declares the enumerators under cuDNN's own names, the opaque handle
 * types and one function-pointer type per function (fbdnn_<function>_fn). With
 * FBDNN_ABI_LISTS_ONLY defined it declares no enumerators (so it can sit next to the real
 * header), and FBDNN_ENUM(type) may be defined to spell enum parameters with cuDNN's types. */
#ifndef FBDNN_ABI_H
#define FBDNN_ABI_H

#include <stddef.h>
#include <stdint.h>

/* X(name, value) for each enumerator we use, one list per cuDNN enum type. */

#define FBDNN_STATUS_LIST(X)                                                                   \
    X(CUDNN_STATUS_SUCCESS, 0)                                                                 \
    X(CUDNN_STATUS_NOT_INITIALIZED, 1001)                                                      \
    X(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, 1008)                                            \
    X(CUDNN_STATUS_BAD_PARAM, 2000)                                                            \
    X(CUDNN_STATUS_NOT_SUPPORTED, 3000)                                                        \
    X(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, 3001)                                          \
    X(CUDNN_STATUS_NOT_SUPPORTED_SHAPE, 3002)                                                  \
    X(CUDNN_STATUS_INTERNAL_ERROR, 4000)                                                       \
    X(CUDNN_STATUS_EXECUTION_FAILED, 5000)

#define FBDNN_DATA_TYPE_LIST(X)                                                                \
    X(CUDNN_DATA_FLOAT, 0)                                                                     \
    X(CUDNN_DATA_DOUBLE, 1)                                                                    \
    X(CUDNN_DATA_HALF, 2)                                                                      \
    X(CUDNN_DATA_INT32, 4)                                                                     \
    X(CUDNN_DATA_BFLOAT16, 9)                                                                  \
    X(CUDNN_DATA_INT64, 10)                                                                    \
    X(CUDNN_DATA_BOOLEAN, 11)

#define FBDNN_POINTWISE_MODE_LIST(X)                                                           \
    X(CUDNN_POINTWISE_ADD, 0)                                                                  \
    X(CUDNN_POINTWISE_MUL, 1)                                                                  \
    X(CUDNN_POINTWISE_DIV, 6)                                                                  \
    X(CUDNN_POINTWISE_SUB, 9)                                                                  \
    X(CUDNN_POINTWISE_EXP, 13)                                                                 \
    X(CUDNN_POINTWISE_LOG, 15)                                                                 \
    X(CUDNN_POINTWISE_CMP_GE, 303)                                                             \
    X(CUDNN_POINTWISE_CMP_LT, 304)                                                             \
    X(CUDNN_POINTWISE_LOGICAL_AND, 400)                                                        \
    X(CUDNN_POINTWISE_GEN_INDEX, 501)                                                          \
    X(CUDNN_POINTWISE_BINARY_SELECT, 601)

#define FBDNN_REDUCE_OP_LIST(X)                                                                \
    X(CUDNN_REDUCE_TENSOR_ADD, 0)                                                              \
    X(CUDNN_REDUCE_TENSOR_MAX, 3)

#define FBDNN_HEUR_MODE_LIST(X)                                                                \
    X(CUDNN_HEUR_MODE_INSTANT, 0)                                                              \
    X(CUDNN_HEUR_MODE_B, 1)                                                                    \
    X(CUDNN_HEUR_MODE_FALLBACK, 2)                                                             \
    X(CUDNN_HEUR_MODE_A, 3)

#define FBDNN_DESCRIPTOR_TYPE_LIST(X)                                                          \
    X(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, 0)                                                   \
    X(CUDNN_BACKEND_ENGINE_DESCRIPTOR, 2)                                                      \
    X(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 3)                                                   \
    X(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                                                  \
    X(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                                              \
    X(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, 7)                                                 \
    X(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 13)                                        \
    X(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                                             \
    X(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                                               \
    X(CUDNN_BACKEND_TENSOR_DESCRIPTOR, 17)                                                     \
    X(CUDNN_BACKEND_MATMUL_DESCRIPTOR, 18)                                                     \
    X(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, 19)                                           \
    X(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, 21)                                                  \
    X(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, 22)

#define FBDNN_ATTR_TYPE_LIST(X)                                                                \
    X(CUDNN_TYPE_HANDLE, 0)                                                                    \
    X(CUDNN_TYPE_DATA_TYPE, 1)                                                                 \
    X(CUDNN_TYPE_BOOLEAN, 2)                                                                   \
    X(CUDNN_TYPE_INT64, 3)                                                                     \
    X(CUDNN_TYPE_FLOAT, 4)                                                                     \
    X(CUDNN_TYPE_DOUBLE, 5)                                                                    \
    X(CUDNN_TYPE_VOID_PTR, 6)                                                                  \
    X(CUDNN_TYPE_HEUR_MODE, 8)                                                                 \
    X(CUDNN_TYPE_KNOB_TYPE, 9)                                                                 \
    X(CUDNN_TYPE_POINTWISE_MODE, 14)                                                           \
    X(CUDNN_TYPE_BACKEND_DESCRIPTOR, 15)                                                       \
    X(CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 18)                                                  \
    X(CUDNN_TYPE_CHAR, 24)

#define FBDNN_ATTR_NAME_LIST(X)                                                                \
    X(CUDNN_ATTR_POINTWISE_MODE, 0)                                                            \
    X(CUDNN_ATTR_POINTWISE_MATH_PREC, 1)                                                       \
    X(CUDNN_ATTR_POINTWISE_AXIS, 9)                                                            \
    X(CUDNN_ATTR_ENGINEHEUR_MODE, 200)                                                         \
    X(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                                              \
    X(CUDNN_ATTR_ENGINEHEUR_RESULTS, 202)                                                      \
    X(CUDNN_ATTR_ENGINECFG_ENGINE, 300)                                                        \
    X(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, 302)                                                  \
    X(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 400)                                                   \
    X(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)                                            \
    X(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)                                           \
    X(CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, 405)                                      \
    X(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, 600)                                                   \
    X(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, 601)                                                  \
    X(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, 750)                                       \
    X(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, 751)                                               \
    X(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, 752)                                               \
    X(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, 753)                                               \
    X(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 754)                                              \
    X(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 755)                                              \
    X(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, 758)                                               \
    X(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 800)                                                   \
    X(CUDNN_ATTR_OPERATIONGRAPH_OPS, 801)                                                      \
    X(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, 802)                                      \
    X(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 900)                                                   \
    X(CUDNN_ATTR_TENSOR_DATA_TYPE, 901)                                                        \
    X(CUDNN_ATTR_TENSOR_DIMENSIONS, 902)                                                       \
    X(CUDNN_ATTR_TENSOR_STRIDES, 903)                                                          \
    X(CUDNN_ATTR_TENSOR_UNIQUE_ID, 906)                                                        \
    X(CUDNN_ATTR_TENSOR_IS_VIRTUAL, 907)                                                       \
    X(CUDNN_ATTR_TENSOR_IS_BY_VALUE, 908)                                                      \
    X(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                                                \
    X(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                                             \
    X(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 1003)                                                 \
    X(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1301)                                                    \
    X(CUDNN_ATTR_MATMUL_COMP_TYPE, 1500)                                                       \
    X(CUDNN_ATTR_OPERATION_MATMUL_ADESC, 1520)                                                 \
    X(CUDNN_ATTR_OPERATION_MATMUL_BDESC, 1521)                                                 \
    X(CUDNN_ATTR_OPERATION_MATMUL_CDESC, 1522)                                                 \
    X(CUDNN_ATTR_OPERATION_MATMUL_DESC, 1523)                                                  \
    X(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, 1525)                                  \
    X(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, 1526)                                  \
    X(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, 1527)                                  \
    X(CUDNN_ATTR_REDUCTION_OPERATOR, 1600)                                                     \
    X(CUDNN_ATTR_REDUCTION_COMP_TYPE, 1601)                                                    \
    X(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, 1610)                                              \
    X(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, 1611)                                              \
    X(CUDNN_ATTR_OPERATION_REDUCTION_DESC, 1612)

/* Since cuDNN 9.8: device properties, serializable, for plans built without the device;
 * and (since 9.5) the paged cache load that reads K and V through a page table. */
#define FBDNN_DESCRIPTOR_TYPE_LIST_98(X)                                                       \
    X(CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, 35)                                 \
    X(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, 38)
#define FBDNN_ATTR_NAME_LIST_98(X)                                                             \
    X(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, 1950)                              \
    X(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, 1951)                                       \
    X(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, 1952)                               \
    X(CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, 1953)                             \
    X(CUDNN_ATTR_DEVICEPROP_DEVICE_ID, 2700)                                                   \
    X(CUDNN_ATTR_DEVICEPROP_HANDLE, 2701)                                                      \
    X(CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, 2702)

/* X(list, cuDNN's enum type) for the ABI check: each list's values belong to that type. */
#define FBDNN_ENUM_TYPES(X)                                                                    \
    X(FBDNN_STATUS_LIST, cudnnStatus_t)                                                        \
    X(FBDNN_DATA_TYPE_LIST, cudnnDataType_t)                                                   \
    X(FBDNN_POINTWISE_MODE_LIST, cudnnPointwiseMode_t)                                         \
    X(FBDNN_REDUCE_OP_LIST, cudnnReduceTensorOp_t)                                             \
    X(FBDNN_HEUR_MODE_LIST, cudnnBackendHeurMode_t)                                            \
    X(FBDNN_DESCRIPTOR_TYPE_LIST, cudnnBackendDescriptorType_t)                                \
    X(FBDNN_ATTR_TYPE_LIST, cudnnBackendAttributeType_t)                                       \
    X(FBDNN_ATTR_NAME_LIST, cudnnBackendAttributeName_t)                                       \
    X(FBDNN_KNOB_TYPE_ONLY, cudnnBackendKnobType_t)
#define FBDNN_ENUM_TYPES_98(X)                                                                 \
    X(FBDNN_DESCRIPTOR_TYPE_LIST_98, cudnnBackendDescriptorType_t)                             \
    X(FBDNN_ATTR_NAME_LIST_98, cudnnBackendAttributeName_t)

/* knob types are only read back and printed as numbers; the list exists for the size check */
#define FBDNN_KNOB_TYPE_ONLY(X) X(CUDNN_KNOB_TYPE_SWIZZLE, 1)

/* How an enum travels in a prototype: int here (cuDNN's enums are int-sized, which the ABI
 * check asserts); the check spells the real types to compare prototypes. */
#ifndef FBDNN_ENUM
#define FBDNN_ENUM(type) int
#endif

/* cuDNN's and CUDA's opaque handles, by their own struct tags. */
struct cudnnContext;
struct CUstream_st;
typedef struct cudnnContext *fbdnn_handle;
typedef void *fbdnn_desc;

/* X(function, return type, parameters, required): the functions the vendor loads. */
#define FBDNN_FUNC_LIST(X)                                                                     \
    X(cudnnGetVersion, size_t, (void), 1)                                                      \
    X(cudnnGetCudartVersion, size_t, (void), 0)                                                \
    X(cudnnGetErrorString, const char *, (FBDNN_ENUM(cudnnStatus_t)), 1)                       \
    X(cudnnGetLastErrorString, void, (char *, size_t), 0)                                      \
    X(cudnnCreate, FBDNN_ENUM(cudnnStatus_t), (struct cudnnContext **), 1)                     \
    X(cudnnDestroy, FBDNN_ENUM(cudnnStatus_t), (struct cudnnContext *), 1)                     \
    X(cudnnSetStream, FBDNN_ENUM(cudnnStatus_t), (struct cudnnContext *, struct CUstream_st *), 1) \
    X(cudnnBackendCreateDescriptor, FBDNN_ENUM(cudnnStatus_t),                                 \
      (FBDNN_ENUM(cudnnBackendDescriptorType_t), void **), 1)                                  \
    X(cudnnBackendDestroyDescriptor, FBDNN_ENUM(cudnnStatus_t), (void *), 1)                   \
    X(cudnnBackendFinalize, FBDNN_ENUM(cudnnStatus_t), (void *), 1)                            \
    X(cudnnBackendSetAttribute, FBDNN_ENUM(cudnnStatus_t),                                     \
      (void *, FBDNN_ENUM(cudnnBackendAttributeName_t), FBDNN_ENUM(cudnnBackendAttributeType_t), \
       int64_t, const void *), 1)                                                              \
    X(cudnnBackendGetAttribute, FBDNN_ENUM(cudnnStatus_t),                                     \
      (void *, FBDNN_ENUM(cudnnBackendAttributeName_t), FBDNN_ENUM(cudnnBackendAttributeType_t), \
       int64_t, int64_t *, void *), 1)                                                         \
    X(cudnnBackendExecute, FBDNN_ENUM(cudnnStatus_t), (struct cudnnContext *, void *, void *), 1)

#define FBDNN_X_FNTYPE(fn, ret, params, req) typedef ret(*fbdnn_##fn##_fn) params;
FBDNN_FUNC_LIST(FBDNN_X_FNTYPE)
#undef FBDNN_X_FNTYPE

#ifndef FBDNN_ABI_LISTS_ONLY
#define FBDNN_X_ENUMERATOR(name, value) name = value,
enum { FBDNN_STATUS_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_DATA_TYPE_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_POINTWISE_MODE_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_REDUCE_OP_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_HEUR_MODE_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_DESCRIPTOR_TYPE_LIST(FBDNN_X_ENUMERATOR) FBDNN_DESCRIPTOR_TYPE_LIST_98(FBDNN_X_ENUMERATOR) };
enum { FBDNN_ATTR_TYPE_LIST(FBDNN_X_ENUMERATOR) };
enum { FBDNN_ATTR_NAME_LIST(FBDNN_X_ENUMERATOR) FBDNN_ATTR_NAME_LIST_98(FBDNN_X_ENUMERATOR) };
#undef FBDNN_X_ENUMERATOR
#endif

#endif
