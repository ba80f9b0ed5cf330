/* lib_floor: the memory the webhook's required libraries take by themselves.
 *
 * Does at start what `rdma-webhook serve` must do with its libraries before it
 * serves anything: initializes libcurl (for the Kubernetes API), checks the
 * certificate and key with OpenSSL, and loads them into GnuTLS for
 * libmicrohttpd. It links the same libraries, then prints its own memory:
 *   vmhwm_kb=N rss_anon_kb=N rss_file_kb=N
 * Most of it is library pages (libcrypto alone is several MiB once OpenSSL
 * initializes), which no code of the webhook can give back.
 *
 * Usage: lib_floor CERT KEY
 */
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long v = -1;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

static int openssl_check(const char *cert_file, const char *key_file)
{
    FILE *cf = fopen(cert_file, "r"), *kf = fopen(key_file, "r");
    X509 *x = cf ? PEM_read_X509(cf, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kf ? PEM_read_PrivateKey(kf, NULL, NULL, NULL) : NULL;
    int ok = x && k && X509_check_private_key(x, k) == 1;

    X509_free(x);
    EVP_PKEY_free(k);
    if (cf)
        fclose(cf);
    if (kf)
        fclose(kf);
    return ok;
}

int main(int argc, char **argv)
{
    gnutls_certificate_credentials_t creds;

    if (argc != 3) {
        fprintf(stderr, "usage: %s CERT KEY\n", argv[0]);
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || gnutls_global_init() < 0 ||
        gnutls_certificate_allocate_credentials(&creds) < 0) {
        fprintf(stderr, "lib_floor: cannot initialize libcurl or GnuTLS\n");
        return 1;
    }
    if (!openssl_check(argv[1], argv[2]) ||
        gnutls_certificate_set_x509_key_file(creds, argv[1], argv[2], GNUTLS_X509_FMT_PEM) < 0) {
        fprintf(stderr, "lib_floor: cannot load %s and %s\n", argv[1], argv[2]);
        return 1;
    }
    printf("vmhwm_kb=%ld rss_anon_kb=%ld rss_file_kb=%ld\n", status_kb("VmHWM"),
           status_kb("RssAnon"), status_kb("RssFile"));
    gnutls_certificate_free_credentials(creds);
    gnutls_global_deinit();
    curl_global_cleanup();
    return 0;
}
