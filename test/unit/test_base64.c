/*
 * Unit tests for webhook/base/base64.c: the RFC 4648 section 10 test vectors, and
 * every length and byte value checked against OpenSSL's independent encoder
 * (EVP_EncodeBlock: standard alphabet, padding, no line breaks).
 */
#include "unit.h"

#include <openssl/evp.h>
#include <string.h>

#include "base/base64.h"
#include "base/dynbuf.h"

static void assert_encodes(const char *in, const char *want)
{
    struct dynbuf b;

    dynbuf_init(&b, 1024);
    assert_int_equal(base64_append(&b, in, strlen(in)), 0);
    assert_string_equal(dynbuf_ptr(&b), want);
    dynbuf_free(&b);
}

TEST(test_rfc4648_empty)
{
    assert_encodes("", "");
}

TEST(test_rfc4648_f)
{
    assert_encodes("f", "Zg==");
}

TEST(test_rfc4648_fo)
{
    assert_encodes("fo", "Zm8=");
}

TEST(test_rfc4648_foo)
{
    assert_encodes("foo", "Zm9v");
}

TEST(test_rfc4648_foob)
{
    assert_encodes("foob", "Zm9vYg==");
}

TEST(test_rfc4648_fooba)
{
    assert_encodes("fooba", "Zm9vYmE=");
}

TEST(test_rfc4648_foobar)
{
    assert_encodes("foobar", "Zm9vYmFy");
}

TEST(test_high_bytes_use_plus_and_slash)
{
    struct dynbuf b;
    const unsigned char in[] = {0xfb, 0xff, 0xfe};

    dynbuf_init(&b, 64);
    assert_int_equal(base64_append(&b, in, sizeof(in)), 0);
    /* 111110 111111 111111 111110 */
    assert_string_equal(dynbuf_ptr(&b), "+//+");
    dynbuf_free(&b);
}

TEST(test_appends_after_existing_contents)
{
    struct dynbuf b;

    dynbuf_init(&b, 64);
    assert_int_equal(dynbuf_addstr(&b, "patch:"), 0);
    assert_int_equal(base64_append(&b, "foo", 3), 0);
    assert_string_equal(dynbuf_ptr(&b), "patch:Zm9v");
    dynbuf_free(&b);
}

TEST(test_matches_openssl_for_every_length_and_byte)
{
    unsigned char in[600];
    unsigned char want[1000];

    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7 + 3); /* every byte value appears */
    for (size_t len = 0; len <= sizeof(in); len++) {
        struct dynbuf b;
        int n = EVP_EncodeBlock(want, in, (int)len);

        dynbuf_init(&b, 1000);
        assert_int_equal(base64_append(&b, in, len), 0);
        assert_int_equal(dynbuf_len(&b), (size_t)n);
        assert_memory_equal(dynbuf_ptr(&b), want, (size_t)n);
        dynbuf_free(&b);
    }
}

TEST(test_output_over_cap_is_refused)
{
    struct dynbuf b;

    dynbuf_init(&b, 3);
    assert_int_equal(base64_append(&b, "f", 1), ERR_TOO_BIG);
    assert_int_equal(dynbuf_len(&b), 0);
    dynbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_empty),
        cmocka_unit_test(test_rfc4648_f),
        cmocka_unit_test(test_rfc4648_fo),
        cmocka_unit_test(test_rfc4648_foo),
        cmocka_unit_test(test_rfc4648_foob),
        cmocka_unit_test(test_rfc4648_fooba),
        cmocka_unit_test(test_rfc4648_foobar),
        cmocka_unit_test(test_high_bytes_use_plus_and_slash),
        cmocka_unit_test(test_appends_after_existing_contents),
        cmocka_unit_test(test_matches_openssl_for_every_length_and_byte),
        cmocka_unit_test(test_output_over_cap_is_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
