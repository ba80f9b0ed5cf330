/* unit: what every cmocka unit test file includes first.
 *
 * cmocka.h needs these system headers before it, in this order.
 */
#ifndef RDMA_WEBHOOK_TEST_UNIT_H
#define RDMA_WEBHOOK_TEST_UNIT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#define TEST(name) static void name(void **state __attribute__((unused)))

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (strstr((hay), (needle)) == NULL)                                                       \
            fail_msg("expected \"%s\" in \"%s\"", (needle), (hay));                                \
    } while (0)

#endif
