#ifndef VPNCTL_CCRYPTO_SHIM_H
#define VPNCTL_CCRYPTO_SHIM_H
#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* Macros and stack accessors Swift cannot import. */
static inline long vpnctl_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
static inline unsigned long vpnctl_name_flags(void) { return XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB; }
static inline int vpnctl_x509_stack_count(STACK_OF(X509) *s) { return s ? sk_X509_num(s) : 0; }
static inline X509 *vpnctl_x509_stack_at(STACK_OF(X509) *s, int i) { return sk_X509_value(s, i); }
static inline void vpnctl_x509_stack_free(STACK_OF(X509) *s) { sk_X509_free(s); }
static inline void vpnctl_x509_stack_pop_free(STACK_OF(X509) *s) { sk_X509_pop_free(s, X509_free); }
static inline STACK_OF(X509) *vpnctl_x509_stack_new(void) { return sk_X509_new_null(); }
static inline int vpnctl_x509_stack_push(STACK_OF(X509) *s, X509 *x) { return sk_X509_push(s, x); }
static inline int vpnctl_cms_is_signed_data(CMS_ContentInfo *cms) {
    return OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed;
}
static inline int vpnctl_cms_is_enveloped(CMS_ContentInfo *cms) {
    int nid = OBJ_obj2nid(CMS_get0_type(cms));
    return nid == NID_pkcs7_enveloped || nid == NID_id_smime_ct_authEnvelopedData;
}
#endif
