/* base64: standard RFC 4648 encoding with padding and no line breaks, the form
 * the apiserver expects in AdmissionResponse.patch. */
#ifndef RDMA_WEBHOOK_BASE64_H
#define RDMA_WEBHOOK_BASE64_H

#include "base/dynbuf.h"
#include "base/err.h"

#include <stddef.h>

/* Appends the encoding of data to out: ERR_OK, ERR_TOO_BIG (out's cap) or
 * ERR_NOMEM, with out as it was after an error. */
int base64_append(struct dynbuf *out, const void *data, size_t len);

/* Appends the bytes that text (len bytes, standard alphabet, padded, no
 * whitespace: a Secret's data as the apiserver writes it) encodes to out:
 * ERR_OK, ERR_FAIL (not that form; out as it was), ERR_TOO_BIG or ERR_NOMEM. */
int base64_decode_append(struct dynbuf *out, const char *text, size_t len);

#endif
