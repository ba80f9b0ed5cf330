/*
 * Unit tests for webhook/base/k8sname.c against the apiserver's rules
 * (k8s.io/apimachinery/pkg/util/validation): DNS-1123 labels and subdomains,
 * qualified names, and their length limits.
 */
#include "unit.h"
#include "support.h"

#include <string.h>

#include "base/k8sname.h"

static const char *repeat(char c, size_t n)
{
    static char buf[600];

    assert_true(n < sizeof(buf));
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

TEST(test_label)
{
    assert_true(k8sname_label("a"));
    assert_true(k8sname_label("kube-system"));
    assert_true(k8sname_label("0abc9"));
    assert_true(k8sname_label(repeat('a', 63)));
    assert_false(k8sname_label(repeat('a', 64)));
    assert_false(k8sname_label(""));
    assert_false(k8sname_label("-a"));
    assert_false(k8sname_label("a-"));
    assert_false(k8sname_label("A"));
    assert_false(k8sname_label("a.b"));
    assert_false(k8sname_label("a_b"));
}

TEST(test_subdomain)
{
    assert_true(k8sname_subdomain("node-1"));
    assert_true(k8sname_subdomain("ip-10-0-0-1.ec2.internal"));
    assert_true(k8sname_subdomain(repeat('a', 253)));
    assert_false(k8sname_subdomain(repeat('a', 254)));
    assert_false(k8sname_subdomain(""));
    assert_false(k8sname_subdomain("a..b"));
    assert_false(k8sname_subdomain(".a"));
    assert_false(k8sname_subdomain("a."));
    assert_false(k8sname_subdomain("a.-b"));
    assert_false(k8sname_subdomain("a/b"));
    assert_false(k8sname_subdomain("a%2Fb"));
    assert_false(k8sname_subdomain("Node"));
}

TEST(test_qualified)
{
    char s[600];

    assert_true(k8sname_qualified("rdma/hca"));
    assert_true(k8sname_qualified("rdma/hca_shared_devices_a"));
    assert_true(k8sname_qualified("nvidia.com/gpu"));
    assert_true(k8sname_qualified("example.com/My.Name-1"));
    assert_true(k8sname_qualified("no-prefix"));
    assert_false(k8sname_qualified(""));
    assert_false(k8sname_qualified("rdma/"));
    assert_false(k8sname_qualified("/hca"));
    assert_false(k8sname_qualified("RDMA/hca"));
    assert_false(k8sname_qualified("rdma/_hca"));
    assert_false(k8sname_qualified("rdma/hca."));
    assert_false(k8sname_qualified("rdma/h~a"));
    assert_false(k8sname_qualified("rdma/h a"));
    assert_false(k8sname_qualified("a/b/c"));
    assert_false(k8sname_qualified("rdma/a/b"));
    assert_false(k8sname_qualified("rdma/-hca"));
    assert_false(k8sname_qualified("RDMA.io/hca"));
    assert_false(k8sname_qualified("rdma..io/hca"));

    /* A 253-byte prefix and a 63-byte name are the limits. */
    longest_resource_name(s, sizeof(s));
    assert_int_equal(strlen(s), K8SNAME_QUALIFIED_MAX);
    assert_true(k8sname_qualified(s));
    s[317] = 'n';
    s[318] = '\0';
    assert_false(k8sname_qualified(s));
    memset(s, 'd', 254);
    memcpy(s + 254, "/n", 3);
    assert_false(k8sname_qualified(s));
}

TEST(test_label_value)
{
    char s[80];

    assert_true(k8sname_label_value(""));
    assert_true(k8sname_label_value("8"));
    assert_true(k8sname_label_value("H100_80GB.v-2"));
    assert_false(k8sname_label_value("-a"));
    assert_false(k8sname_label_value("a."));
    assert_false(k8sname_label_value("a/b"));
    assert_false(k8sname_label_value("a b"));
    memset(s, 'v', 63);
    s[63] = '\0';
    assert_true(k8sname_label_value(s));
    s[63] = 'v';
    s[64] = '\0';
    assert_false(k8sname_label_value(s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label),
        cmocka_unit_test(test_subdomain),
        cmocka_unit_test(test_qualified),
        cmocka_unit_test(test_label_value),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
