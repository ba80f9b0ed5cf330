/* support: helpers more than one unit test needs, in test/unit/support.c.
 *
 * The Makefile links support.c into every unit test; a test includes this
 * header after unit.h.
 */
#ifndef RDMA_WEBHOOK_TEST_SUPPORT_H
#define RDMA_WEBHOOK_TEST_SUPPORT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "admission/select.h"

struct dynbuf;
struct profiles;

/* Relative to the repository root, where `make unit` runs the tests. */
#define SHIPPED_PROFILES "manifests/profiles.json"

/* Parses SHIPPED_PROFILES. On failure (file missing or rejected) says why on
 * stderr and returns NULL, so a group setup can return -1 and a test can
 * fail_msg(). Free the result with profiles_free(). */
struct profiles *load_shipped_profiles(void);

/* The shipped profiles for a group of tests that all read them:
 * support_shipped_setup() and support_shipped_teardown() are the group's
 * setup and teardown for cmocka_run_group_tests(), which load
 * SHIPPED_PROFILES into support_shipped (a failed load fails the group) and
 * free it. */
extern struct profiles *support_shipped;
int support_shipped_setup(void **state);
int support_shipped_teardown(void **state);

/* Writes the longest qualified name the apiserver accepts as a resource name,
 * 317 bytes: a 253-byte domain of 'd', '/', then a 63-byte name of 'n', so
 * out[253] is the '/' and out + 254 the name. Spelled out here rather than
 * from k8sname.h's limits, which test_k8sname checks against it. outlen must
 * exceed 317; returns out. */
char *longest_resource_name(char *out, size_t outlen);

/* Runs fn(arg) in a child process with its address space limited to what it
 * already uses and the malloc heap filled, so that every allocation fn makes
 * fails: the way to reach the out-of-memory paths. Returns fn's result (0 to
 * 255, the child's exit status), or -1 when the child did not exit normally.
 * Skips the calling test where the trick cannot work: under AddressSanitizer,
 * whose allocator aborts rather than fail. */
int run_out_of_memory(int (*fn)(void *arg), void *arg);

/* run_out_of_memory(fn, arg), failing the calling test unless fn returns 0,
 * with "doing: why": why[rc - 1] says what fn's result rc means (a
 * NULL-terminated list; a result past its end is named by its number, and
 * so is a child that did not exit). */
void support_assert_starved(int (*fn)(void *arg), void *arg, const char *doing,
                            const char *const *why);

/* What a test's log file (a tmpfile() the test's struct log writes to) holds
 * so far, NUL-terminated, at most 64 KiB; the file is left positioned at its
 * end for the next lines. The buffer is static: each call overwrites it. */
char *support_log_text(FILE *f);

/* A copy of in with every ' turned into ", so that a test can write JSON
 * without escapes. Never NULL (an allocation failure fails the test); free
 * it. */
char *support_unquote(const char *in);

/* cJSON_Parse of text written with ' for " (support_unquote); NULL when it
 * is not JSON. */
cJSON *support_json_parse(const char *text);

/* Parses a profiles document written with ' for " (support_unquote), its
 * problems appended to errors (NULL: not kept). NULL when it is rejected. */
struct profiles *support_profiles_parse(const char *text, struct dynbuf *errors);

/* support_profiles_parse for a document the test needs accepted: a rejected
 * one fails the calling test with the problems. Free with profiles_free(). */
struct profiles *support_profiles(const char *text);

/* support_profiles_parse for a document the test needs rejected: an
 * accepted one fails the calling test, and so does a rejection without a
 * problem. Returns the problems, one line each, in a static buffer that the
 * next call overwrites. */
const char *support_profiles_rejected(const char *text);

/* Fails the calling test unless select_profile() chose the profile named
 * name by rule, saying what it chose instead. */
void support_assert_selects(const struct select_result *r, const char *name, enum select_rule rule);

/* Everything written so far to the file fd (a test's struct log's), read
 * from its start, NUL-terminated, at most 1 MiB. The buffer is static: each
 * call overwrites it. */
const char *support_fd_text(int fd);

/* How many times needle starts in hay (overlapping matches count). */
size_t support_count(const char *hay, const char *needle);

/* Writes ca.crt, tls.crt and tls.key into dir (created) as `gen-certs`
 * does; a failure fails the test. */
void support_gen_certs(const char *dir);

/* Makes a new directory /tmp/NAME.XXXXXX, its path in root (rootlen bytes,
 * at least 64), holding two gen-certs sets of distinct CAs and keys in
 * root/a and root/b: what a test of a certificate change swaps between.
 * Remove it with support_remove_tree(). */
void support_two_cert_sets(char *root, size_t rootlen, const char *name);

/* rm -rf dir; a failure fails the test. */
void support_remove_tree(const char *dir);

/* Copies the bytes of from to to (created or truncated); a failure fails
 * the test. */
void support_copy_file(const char *from, const char *to);

#endif
