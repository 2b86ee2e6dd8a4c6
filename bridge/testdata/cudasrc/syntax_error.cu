// syntax_error.cu: an adapter that does not compile (bridge/cudasrc_test.go):
// difftest must exit 125 with one line naming this file and line 8.
#include <kd_adapter.h>

int kd_adapter_topk_transform(const kd_topk_params *p, cudaStream_t stream)
{
    (void)stream;
    return p->no_such_field;
}
