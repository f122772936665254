#define _GNU_SOURCE
#include "CVPNShims.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

int vpn_tun_set_iff(int fd, char *name, size_t name_len, int no_pi) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | (no_pi ? IFF_NO_PI : 0);
    if (name && name[0])
        strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        return -errno;
    if (name && name_len > 0) {
        strncpy(name, ifr.ifr_name, name_len - 1);
        name[name_len - 1] = 0;
    }
    return 0;
}

int vpn_tun_set_persist(int fd, int persist) {
    if (ioctl(fd, TUNSETPERSIST, persist ? 1 : 0) < 0)
        return -errno;
    return 0;
}

int vpn_flock_exclusive(int fd) {
    for (;;) {
        if (flock(fd, LOCK_EX) == 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int vpn_isatty(int fd) {
    return isatty(fd) ? 1 : 0;
}
