/* libFuzzer target: the offline input reader (`rdma-webhook mutate`), which
 * reads whatever file or pipe an admin points it at, YAML through libyaml.
 * An input is read or refused with a message, within the default limits;
 * and every document read, written back as YAML and as JSON, reads back as
 * the same value. */
#include "host/docs.h"
#include "base/dynbuf.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>

static void fuzz_docs_round_trip(const cJSON *v, enum docs_format f)
{
    struct dynbuf out;
    struct docs back;
    char err[ERR_LEN];

    dynbuf_init(&out, 1u << 26);
    docs_init(&back);
    if (docs_write(&out, v, f, err, sizeof(err)) != ERR_OK)
        abort();
    if (docs_read(&back, dynbuf_ptr(&out), dynbuf_len(&out), NULL, err, sizeof(err)) != ERR_OK)
        abort();
    /* A document of null is left out; no other value is. */
    if (back.n != (cJSON_IsNull(v) ? 0u : 1u) || (back.n && !cJSON_Compare(v, back.v[0], 1)))
        abort();
    docs_free(&back);
    dynbuf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct docs d;
    char err[ERR_LEN] = "";
    int rc;

    docs_init(&d);
    rc = docs_read(&d, (const char *)data, size, NULL, err, sizeof(err));
    if (rc != ERR_OK && (!err[0] || d.n != 0))
        abort();
    for (size_t i = 0; i < d.n; i++) {
        fuzz_docs_round_trip(d.v[i], DOCS_YAML);
        fuzz_docs_round_trip(d.v[i], DOCS_JSON);
    }
    docs_free(&d);
    return 0;
}
