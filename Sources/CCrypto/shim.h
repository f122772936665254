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
#include <openssl/rand.h>
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
/* The iteration count a password-based encryption algorithm asks for
 * (PKCS#12 PBE or PBES2 with PBKDF2): -1 when it is neither, INT64_MAX when
 * the count does not fit. */
static inline int64_t vpnctl_pbe_iterations(const X509_ALGOR *alg) {
    const ASN1_OBJECT *oid; int ptype; const void *pval;
    int64_t it = -1;
    if (!alg) return -1;
    X509_ALGOR_get0(&oid, &ptype, &pval, alg);
    if (ptype != V_ASN1_SEQUENCE || !pval) return -1;
    if (OBJ_obj2nid(oid) == NID_pbes2) {
        PBE2PARAM *p2 = ASN1_item_unpack((const ASN1_STRING *)pval, ASN1_ITEM_rptr(PBE2PARAM));
        if (!p2) return -1;
        if (p2->keyfunc && OBJ_obj2nid(p2->keyfunc->algorithm) == NID_id_pbkdf2 && p2->keyfunc->parameter
            && p2->keyfunc->parameter->type == V_ASN1_SEQUENCE) {
            PBKDF2PARAM *kdf = ASN1_item_unpack(p2->keyfunc->parameter->value.sequence, ASN1_ITEM_rptr(PBKDF2PARAM));
            if (kdf) {
                if (ASN1_INTEGER_get_int64(&it, kdf->iter) != 1) it = INT64_MAX;
                PBKDF2PARAM_free(kdf);
            }
        }
        PBE2PARAM_free(p2);
        return it;
    }
    PBEPARAM *pbe = ASN1_item_unpack((const ASN1_STRING *)pval, ASN1_ITEM_rptr(PBEPARAM));
    if (!pbe) return -1;
    if (ASN1_INTEGER_get_int64(&it, pbe->iter) != 1) it = INT64_MAX;
    PBEPARAM_free(pbe);
    return it;
}

/* The most iterations any encrypted part of a PKCS#12 file asks for (its
 * encrypted safes and its shrouded key bags), before anything is decrypted;
 * -1 when the file's safes cannot be read. */
static inline int64_t vpnctl_pkcs12_max_iterations(PKCS12 *p12) {
    STACK_OF(PKCS7) *safes = PKCS12_unpack_authsafes(p12);
    int64_t most = 0;
    if (!safes) return -1;
    for (int i = 0; i < sk_PKCS7_num(safes); i++) {
        PKCS7 *p7 = sk_PKCS7_value(safes, i);
        int nid = OBJ_obj2nid(p7->type);
        if (nid == NID_pkcs7_encrypted && p7->d.encrypted && p7->d.encrypted->enc_data) {
            int64_t it = vpnctl_pbe_iterations(p7->d.encrypted->enc_data->algorithm);
            if (it > most) most = it;
        } else if (nid == NID_pkcs7_data) {
            STACK_OF(PKCS12_SAFEBAG) *bags = PKCS12_unpack_p7data(p7);
            for (int j = 0; bags && j < sk_PKCS12_SAFEBAG_num(bags); j++) {
                PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(bags, j);
                if (PKCS12_SAFEBAG_get_nid(bag) == NID_pkcs8ShroudedKeyBag) {
                    const X509_ALGOR *alg = NULL;
                    X509_SIG_get0(PKCS12_SAFEBAG_get0_pkcs8(bag), &alg, NULL);
                    int64_t it = vpnctl_pbe_iterations(alg);
                    if (it > most) most = it;
                }
            }
            sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
        }
    }
    sk_PKCS7_pop_free(safes, PKCS7_free);
    return most;
}
#endif
