/* torch_proto.h: parsing the PyTorch adapter's answers (the 'hello'/'absent' line and the
 * 'result' lines); kept apart from the process handling so that tests can drive it. */
#ifndef FABENCH_TORCH_PROTO_H
#define FABENCH_TORCH_PROTO_H

#include "../vendor.h"

typedef struct {
    char versions[512]; /* "torch=2.11.0 cuda=13.0 cudnn=91900 ..." */
    char gpu[256];
    char impls[256];    /* comma separated */
    char reason[512];   /* when absent */
} torch_hello;

/* 0: hello parsed; 1: 'absent' (h->reason says why); -1: not the protocol. */
int torch_parse_hello(const char *line, torch_hello *h);
/* 0 and res filled (samples malloc'd when ok); -1: not a well-formed result line. */
int torch_parse_result(const char *line, vendor_result *res);

#endif
