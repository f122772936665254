#define _GNU_SOURCE
#include "CVPNShims.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int vpn_tun_set_iff(int fd, char *name, size_t name_len, int no_pi) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    /* IFF_TUN_EXCL: fail with EBUSY instead of attaching to a device that
       already exists (someone else's persistent tun). */
    ifr.ifr_flags = IFF_TUN | IFF_TUN_EXCL | (no_pi ? IFF_NO_PI : 0);
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

int vpn_terminal_columns(int fd) {
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
        return -1;
    return ws.ws_col;
}

#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <pthread.h>

int vpn_spawn(const char *path, char *const argv[], char *const envp[],
              const int *pass_fds, int n_pass_fds, int out_fd, int new_session) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int r;
    pid_t pid;
    sigset_t empty, defaults;

    if ((r = posix_spawn_file_actions_init(&fa)) != 0)
        return -r;
    if ((r = posix_spawnattr_init(&attr)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -r;
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    } else {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    /* dup2 onto a target fd that a source still needs would clobber it, so
       move every source above the target range first. */
    for (int i = 0; i < n_pass_fds; i++)
        posix_spawn_file_actions_adddup2(&fa, pass_fds[i], 100 + i);
    for (int i = 0; i < n_pass_fds; i++)
        posix_spawn_file_actions_adddup2(&fa, 100 + i, 3 + i);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3 + n_pass_fds);

    sigemptyset(&empty);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (new_session)
        flags |= POSIX_SPAWN_SETSID;
    posix_spawnattr_setflags(&attr, flags);

    r = posix_spawn(&pid, path, &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (r != 0)
        return -r;
    return pid;
}

int vpn_spawn_tied(const char *path, char *const argv[], char *const envp[],
                   const int *pass_fds, int n_pass_fds, int out_fd, int death_signal) {
    return vpn_spawn_tied_as(path, argv, envp, pass_fds, n_pass_fds, out_fd, death_signal, -1, -1);
}

int vpn_spawn_tied_as(const char *path, char *const argv[], char *const envp[],
                      const int *pass_fds, int n_pass_fds, int out_fd, int death_signal, int uid, int gid) {
    return vpn_spawn_tied_fd_as(path, -1, 0, argv, envp, pass_fds, n_pass_fds, out_fd, death_signal, uid, gid);
}

int vpn_spawn_tied_fd_as(const char *path, int exec_fd, int script, char *const argv[], char *const envp[],
                         const int *pass_fds, int n_pass_fds, int out_fd, int death_signal, int uid, int gid) {
    /* The child shares our memory until it execs: it only makes system
       calls, and reports a failure through this variable. */
    volatile int child_errno = 0;
    pid_t parent = getpid();
    sigset_t all, old, empty;
    sigfillset(&all);
    sigemptyset(&empty);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0) {
        int null_in = open("/dev/null", O_RDONLY);
        int null_out = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
        if (null_in < 0 || null_out < 0) { child_errno = errno; _exit(127); }
        /* The checked file rides above the passed fds until they are in place. */
        int exec_slot = 100 + n_pass_fds;
        if (exec_fd >= 0 && dup2(exec_fd, exec_slot) < 0) { child_errno = errno; _exit(127); }
        for (int i = 0; i < n_pass_fds; i++)
            if (dup2(pass_fds[i], 100 + i) < 0) { child_errno = errno; _exit(127); }
        /* A script's stdin is the checked file itself: the kernel hands the
           interpreter "/dev/fd/0", which reopens that inode, and the plugin
           gets no descriptor beyond 0-4. */
        int in = exec_fd >= 0 && script ? exec_slot : null_in;
        if (dup2(in, 0) < 0 || dup2(null_out, 1) < 0 || dup2(null_out, 2) < 0) { child_errno = errno; _exit(127); }
        for (int i = 0; i < n_pass_fds; i++)
            if (dup2(100 + i, 3 + i) < 0) { child_errno = errno; _exit(127); }
        int exec_at = 0;
        if (exec_fd >= 0 && !script) {
            /* A binary is run from a close-on-exec fd above the passed ones. */
            exec_at = 3 + n_pass_fds;
            if (dup2(exec_slot, exec_at) < 0 || fcntl(exec_at, F_SETFD, FD_CLOEXEC) < 0) { child_errno = errno; _exit(127); }
            closefrom(4 + n_pass_fds);
        } else {
            closefrom(3 + n_pass_fds);
        }
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);  /* our own table: vfork does not share it */
        if (uid >= 0) {
            /* Raw system calls: glibc's setuid() would try to change the
               credentials of the parent's other threads too (its setxid
               broadcast), which a vfork child must not. Groups, then the
               gid, then the uid; after that no capability is left. */
            gid_t g = (gid_t)gid;
            if (syscall(SYS_setgroups, 1, &g) < 0 || syscall(SYS_setresgid, g, g, g) < 0
                || syscall(SYS_setresuid, (uid_t)uid, (uid_t)uid, (uid_t)uid) < 0) { child_errno = errno; _exit(127); }
            if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) { child_errno = errno; _exit(127); }
            if (chdir("/") < 0) { child_errno = errno; _exit(127); }
        }
        /* After the credential change, which clears the parent-death signal. */
        if (prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0) < 0) { child_errno = errno; _exit(127); }
        if (getppid() != parent) _exit(127);
        pthread_sigmask(SIG_SETMASK, &empty, NULL);
        if (exec_fd >= 0)
            /* execveat(AT_EMPTY_PATH) runs the inode the fd holds: the one
               that was checked, not whatever the path names by now. */
            syscall(SYS_execveat, exec_at, "", argv, envp, AT_EMPTY_PATH);
        else
            execve(path, argv, envp);
        child_errno = errno;
        _exit(127);
    }
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return -fork_errno;
    if (child_errno != 0) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return -child_errno;
    }
    return pid;
}


int vpn_supervisor_signalfd(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
        return -errno;
    int fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int vpn_signalfd_read(int fd) {
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof si);
    if (n < 0)
        return errno == EAGAIN ? 0 : -errno;
    if (n != sizeof si)
        return 0;
    return (int)si.ssi_signo;
}

#include <sys/syscall.h>

int vpn_pidfd_open(int pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? -errno : (int)fd;
}

int vpn_flock_try_exclusive(int fd) {
    return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : -errno;
}

int vpn_link_facts(int sock, const char *name, int *ifindex, int *arphrd_type) {
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(sock, SIOCGIFINDEX, &ifr) < 0)
        return -errno;
    *ifindex = ifr.ifr_ifindex;
    if (ioctl(sock, SIOCGIFHWADDR, &ifr) < 0)
        return -errno;
    *arphrd_type = ifr.ifr_hwaddr.sa_family;
    return 0;
}

int vpn_link_driver(int sock, const char *name, char *driver, size_t driver_len, char *bus, size_t bus_len) {
    struct ifreq ifr;
    struct ethtool_drvinfo info;
    memset(&ifr, 0, sizeof ifr);
    memset(&info, 0, sizeof info);
    info.cmd = ETHTOOL_GDRVINFO;
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    ifr.ifr_data = (void *)&info;
    if (ioctl(sock, SIOCETHTOOL, &ifr) < 0)
        return -errno;
    snprintf(driver, driver_len, "%s", info.driver);
    snprintf(bus, bus_len, "%s", info.bus_info);
    return 0;
}

#include <sys/socket.h>
#include <sys/un.h>

int vpn_peer_credentials(int fd, int *pid, unsigned *uid, unsigned *gid) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -errno;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return 0;
}

int vpn_sd_notify(const char *address, const char *message) {
    struct sockaddr_un addr;
    size_t n = strlen(address);
    if (n == 0 || n >= sizeof addr.sun_path)
        return -EINVAL;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, address, n);
    if (address[0] == '@')
        addr.sun_path[0] = 0;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    ssize_t r = sendto(fd, message, strlen(message), MSG_NOSIGNAL, (struct sockaddr *)&addr, len);
    int e = errno;
    close(fd);
    return r < 0 ? -e : 0;
}

int vpn_accept(int listener) {
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    return fd < 0 ? -errno : fd;
}
