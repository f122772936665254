#ifndef VPNCTL_CVPNSHIMS_H
#define VPNCTL_CVPNSHIMS_H
#include <stddef.h>

/// Creates (or attaches to) a tun interface through TUNSETIFF on an open
/// /dev/net/tun descriptor. `name` is in/out (IFNAMSIZ). Returns 0 or -errno.
int vpn_tun_set_iff(int fd, char *name, size_t name_len, int no_pi);

/// TUNSETPERSIST. Returns 0 or -errno.
int vpn_tun_set_persist(int fd, int persist);

/// flock(LOCK_EX) that retries on EINTR. Returns 0 or -errno.
int vpn_flock_exclusive(int fd);

/// Returns 1 when fd refers to a terminal, 0 otherwise.
int vpn_isatty(int fd);
#endif
